#include "sim/webhook_caller.h"

#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>

namespace commgate::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

// An AdmissionReview answer larger than this is not a webhook's: refused, not buffered.
constexpr std::size_t kMaxReplyBytes = 16 * 1024 * 1024;

std::string lowercase_first(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

// Why the handshake failed, in Go's crypto/x509 words where they exist, from the
// verification result OpenSSL kept.
std::string tls_failure(SSL* ssl, const std::string& server_name, const beast::error_code& ec) {
  const long v = SSL_get_verify_result(ssl);
  const std::string prefix = "tls: failed to verify certificate: x509: ";
  switch (v) {
    case X509_V_OK:
      return "remote error: tls: " + ec.message();
    case X509_V_ERR_HOSTNAME_MISMATCH:
      return prefix + "certificate is not valid for " + server_name;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
      return prefix + "certificate signed by unknown authority";
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return prefix + "certificate has expired or is not yet valid";
    default:
      return prefix + X509_verify_cert_error_string(v);
  }
}

// The Host header Go sends: the URL's host part.
std::string url_host(const std::string& url) {
  const auto start = url.find("://");
  const std::string rest = start == std::string::npos ? url : url.substr(start + 3);
  return rest.substr(0, rest.find('/'));
}

}  // namespace

WebhookReply post_webhook(const WebhookEndpoint& endpoint, const std::string& body,
                          std::chrono::milliseconds timeout) {
  const std::string prefix = "Post \"" + endpoint.url + "\": ";
  ssl::context ctx(ssl::context::tls_client);
  ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                  ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  beast::error_code ec;
  if (endpoint.ca_pem.empty()) {
    ctx.set_default_verify_paths(ec);
  } else {
    ctx.add_certificate_authority(asio::buffer(endpoint.ca_pem), ec);
  }
  if (ec)
    throw WebhookCallError(prefix +
                           "unable to load root certificates: unable to parse bytes as PEM block");
  ctx.set_verify_mode(ssl::verify_peer);

  const auto address = asio::ip::make_address(endpoint.connect_host, ec);
  if (ec)
    throw WebhookCallError(prefix + "dial tcp: lookup " + endpoint.connect_host +
                           ": not an IP address");
  const tcp::endpoint target(address, endpoint.connect_port);
  const std::string target_text =
      endpoint.connect_host + ":" + std::to_string(endpoint.connect_port);

  asio::io_context ioc;
  beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
  SSL* native = stream.native_handle();
  // SNI, and the name the certificate must be valid for (checked during verification).
  // SSL_set_tlsext_host_name is a macro with a C cast; this is what it expands to.
  if (SSL_ctrl(native, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(endpoint.server_name.c_str())) != 1 ||
      SSL_set1_host(native, endpoint.server_name.c_str()) != 1)
    throw WebhookCallError(prefix + "invalid server name " + endpoint.server_name);

  http::request<http::string_body> request{http::verb::post, endpoint.target, 11};
  request.set(http::field::host, url_host(endpoint.url));
  request.set(http::field::user_agent, "kube-apiserver-admission");
  request.set(http::field::content_type, "application/json");
  request.set(http::field::accept, "application/json, */*");
  request.body() = body;
  request.prepare_payload();

  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxReplyBytes);
  beast::flat_buffer buffer;
  bool done = false;
  std::string failure;
  auto fail = [&](std::string why) {
    if (!done) failure = std::move(why);
    done = true;
  };

  beast::get_lowest_layer(stream).async_connect(target, [&](beast::error_code connected) {
    if (connected)
      return fail("dial tcp " + target_text + ": connect: " + lowercase_first(connected.message()));
    stream.async_handshake(ssl::stream_base::client, [&](beast::error_code shook) {
      if (shook) return fail(tls_failure(native, endpoint.server_name, shook));
      http::async_write(stream, request, [&](beast::error_code written, std::size_t) {
        if (written) return fail("write: " + written.message());
        http::async_read(stream, buffer, parser, [&](beast::error_code read, std::size_t) {
          if (read) return fail("read: " + read.message());
          done = true;
        });
      });
    });
  });

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    ioc.run_until(deadline);
    if (ioc.stopped() && !done) break;
  }
  if (!done) {
    // Cancel what is pending and let the handlers see it before the locals go.
    fail("context deadline exceeded");
    beast::get_lowest_layer(stream).close();
    ioc.restart();
    ioc.run();
  }
  beast::get_lowest_layer(stream).close();
  if (!failure.empty()) throw WebhookCallError(prefix + failure);
  WebhookReply reply;
  reply.status = static_cast<int>(parser.get().result_int());
  reply.body = std::move(parser.get().body());
  return reply;
}

}  // namespace commgate::sim
