#include "sim/http_probe.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>

namespace commgate::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

// Runs `ioc` until `done` or the deadline; false when the deadline came first.
bool run_until(asio::io_context& ioc, const bool& done,
               std::chrono::steady_clock::time_point deadline) {
  while (!done && std::chrono::steady_clock::now() < deadline) {
    ioc.run_until(deadline);
    if (ioc.stopped()) break;
  }
  return done;
}

template <class Stream>
std::optional<int> get(Stream& stream, asio::io_context& ioc, const HttpProbe& probe,
                       std::chrono::steady_clock::time_point deadline) {
  http::request<http::empty_body> request{http::verb::get, probe.path, 11};
  request.set(http::field::host, probe.host + ":" + std::to_string(probe.port));
  request.set(http::field::user_agent, "kube-probe/1.32");
  request.set(http::field::accept, "*/*");
  http::response<http::string_body> response;
  beast::flat_buffer buffer;
  bool done = false, ok = false;
  http::async_write(stream, request, [&](beast::error_code ec, std::size_t) {
    if (ec) {
      done = true;
      return;
    }
    http::async_read(stream, buffer, response, [&](beast::error_code read, std::size_t) {
      ok = !read;
      done = true;
    });
  });
  if (!run_until(ioc, done, deadline)) {
    // Cancel what is pending and let its handlers run before the locals go.
    beast::get_lowest_layer(stream).close();
    ioc.restart();
    ioc.run();
    return std::nullopt;
  }
  if (!ok) return std::nullopt;
  return response.result_int();
}

}  // namespace

bool run_http_probe(const HttpProbe& probe, std::chrono::milliseconds timeout) {
  try {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    asio::io_context ioc;
    beast::error_code ec;
    const tcp::endpoint target(asio::ip::make_address(probe.host, ec), probe.port);
    if (ec) return false;
    beast::tcp_stream tcp_stream(ioc);
    bool connected = false, done = false;
    tcp_stream.async_connect(target, [&](beast::error_code c) {
      connected = !c;
      done = true;
    });
    const bool in_time = run_until(ioc, done, deadline);
    if (!in_time) {
      tcp_stream.close();
      ioc.restart();
      ioc.run();
    }
    if (!in_time || !connected) return false;
    ioc.restart();
    std::optional<int> status;
    if (probe.https) {
      ssl::context ctx(ssl::context::tls_client);
      ctx.set_verify_mode(ssl::verify_none);  // the kubelet does not verify probe targets
      beast::ssl_stream<beast::tcp_stream> stream(std::move(tcp_stream), ctx);
      bool shook = false;
      done = false;
      stream.async_handshake(ssl::stream_base::client, [&](beast::error_code h) {
        shook = !h;
        done = true;
      });
      const bool shook_in_time = run_until(ioc, done, deadline);
      if (!shook_in_time) {
        beast::get_lowest_layer(stream).close();
        ioc.restart();
        ioc.run();
      }
      if (!shook_in_time || !shook) return false;
      ioc.restart();
      status = get(stream, ioc, probe, deadline);
      beast::get_lowest_layer(stream).close();
    } else {
      status = get(tcp_stream, ioc, probe, deadline);
      tcp_stream.close();
    }
    return status && *status >= 200 && *status < 400;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace commgate::sim
