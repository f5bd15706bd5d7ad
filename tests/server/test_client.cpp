#include "tests/server/test_client.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <stdexcept>

namespace commgate::server::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

std::string Reply::header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (beast::iequals(k, name)) return v;
  }
  return {};
}

Client::Client(uint16_t port, std::string ca_file) : port_(port), ca_file_(std::move(ca_file)) {}

Client::~Client() {
  close();
}

beast::tcp_stream& Client::lowest() {
  return tls_ ? beast::get_lowest_layer(*tls_) : *plain_;
}

// Runs one async operation on the private io_context, at most `timeout`.
template <class Start>
error_code Client::run(Start start, ms timeout) {
  error_code result;
  bool done = false;
  start([&](error_code ec, auto&&...) {
    result = ec;
    done = true;
  });
  ioc_.restart();
  ioc_.run_for(timeout);
  if (!done) {
    lowest().socket().close();
    ioc_.restart();
    ioc_.run();
    return beast::error::timeout;
  }
  return result;
}

std::string Client::connect(ms timeout) {
  close();
  const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), port_);
  if (!ca_file_.empty()) {
    ctx_.emplace(ssl::context::tls_client);
    ctx_->set_verify_mode(ssl::verify_peer);
    ctx_->load_verify_file(ca_file_);
    ctx_->set_verify_callback(ssl::host_name_verification("127.0.0.1"));
    tls_.emplace(ioc_, *ctx_);
  } else {
    plain_.emplace(ioc_);
  }
  error_code ec = run([&](auto h) { lowest().async_connect(ep, h); }, timeout);
  if (ec) return "connect: " + ec.message();
  if (tls_) {
    ec = run([&](auto h) { tls_->async_handshake(ssl::stream_base::client, h); }, timeout);
    if (ec) return "handshake: " + ec.message();
  }
  return {};
}

Reply Client::request(const std::string& method, const std::string& target, std::string body,
                      std::vector<std::pair<std::string, std::string>> headers, ms timeout) {
  if (!tls_ && !plain_) throw std::runtime_error("not connected");
  http::request<http::string_body> req;
  req.method_string(method);
  req.target(target);
  req.version(11);
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [k, v] : headers) req.insert(k, v);
  req.body() = std::move(body);
  req.prepare_payload();
  error_code ec = run(
      [&](auto h) {
        if (tls_) {
          http::async_write(*tls_, req, h);
        } else {
          http::async_write(*plain_, req, h);
        }
      },
      timeout);
  if (ec) throw std::runtime_error("write: " + ec.message());
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  if (method == "HEAD") parser.skip(true);
  ec = run(
      [&](auto h) {
        if (tls_) {
          http::async_read(*tls_, buffer_, parser, h);
        } else {
          http::async_read(*plain_, buffer_, parser, h);
        }
      },
      timeout);
  if (ec) throw std::runtime_error("read: " + ec.message());
  auto res = parser.release();
  Reply r;
  r.status = static_cast<int>(res.result_int());
  r.body = std::move(res.body());
  r.keep_alive = res.keep_alive();
  for (const auto& f : res) {
    r.headers.emplace_back(std::string(f.name_string().data(), f.name_string().size()),
                           std::string(f.value().data(), f.value().size()));
  }
  return r;
}

bool Client::write_raw(const std::string& bytes, ms timeout) {
  error_code ec = run(
      [&](auto h) {
        if (tls_) {
          net::async_write(*tls_, net::buffer(bytes), h);
        } else {
          net::async_write(*plain_, net::buffer(bytes), h);
        }
      },
      timeout);
  return !ec;
}

std::string Client::read_raw_until_closed(ms timeout) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<ms>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return out;
    std::size_t got = 0;
    error_code ec = run(
        [&](auto h) {
          auto done = [&got, h](error_code e, std::size_t n) mutable {
            got = n;
            h(e);
          };
          if (tls_) {
            tls_->async_read_some(net::buffer(buf), done);
          } else {
            plain_->async_read_some(net::buffer(buf), done);
          }
        },
        left);
    out.append(buf, got);
    if (ec) return out;
  }
}

bool Client::read_stream_raw_until(const std::string& needle, ms timeout) {
  std::string got;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (got.find(needle) == std::string::npos) {
    const auto left = std::chrono::duration_cast<ms>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    std::size_t n = 0;
    error_code ec = run(
        [&](auto h) {
          auto done = [&n, h](error_code e, std::size_t k) mutable {
            n = k;
            h(e);
          };
          if (tls_) {
            tls_->async_read_some(net::buffer(buf), done);
          } else {
            plain_->async_read_some(net::buffer(buf), done);
          }
        },
        left);
    got.append(buf, n);
    if (ec) return got.find(needle) != std::string::npos;
  }
  return true;
}

bool Client::closed_by_server(ms timeout) {
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<ms>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    error_code ec = run(
        [&](auto h) {
          if (tls_) {
            tls_->async_read_some(net::buffer(buf), h);
          } else {
            plain_->async_read_some(net::buffer(buf), h);
          }
        },
        left);
    if (ec == beast::error::timeout) return false;
    if (ec) return true;
  }
}

int Client::start_stream(const std::string& target, ms timeout) {
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  error_code ec = run(
      [&](auto h) {
        if (tls_) {
          http::async_write(*tls_, req, h);
        } else {
          http::async_write(*plain_, req, h);
        }
      },
      timeout);
  if (ec) throw std::runtime_error("write: " + ec.message());
  parser_.emplace();
  parser_->body_limit(boost::none);
  stream_body_.clear();
  on_chunk_ = [this](std::uint64_t, beast::string_view body, error_code&) {
    stream_body_.append(body.data(), body.size());
    return body.size();
  };
  parser_->on_chunk_body(on_chunk_);  // the parser keeps a reference
  ec = run(
      [&](auto h) {
        if (tls_) {
          http::async_read_header(*tls_, buffer_, *parser_, h);
        } else {
          http::async_read_header(*plain_, buffer_, *parser_, h);
        }
      },
      timeout);
  if (ec) throw std::runtime_error("read header: " + ec.message());
  return static_cast<int>(parser_->get().result_int());
}

bool Client::read_stream(const std::function<bool(const std::string&)>& until, ms timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!until(stream_body_)) {
    if (parser_->is_done()) return true;
    const auto left = std::chrono::duration_cast<ms>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    error_code ec = run(
        [&](auto h) {
          if (tls_) {
            http::async_read_some(*tls_, buffer_, *parser_, h);
          } else {
            http::async_read_some(*plain_, buffer_, *parser_, h);
          }
        },
        left);
    if (ec) return parser_->is_done();
  }
  return true;
}

bool Client::stream_done() const {
  return parser_ && parser_->is_done();
}

long Client::peer_serial() {
  X509* cert = SSL_get1_peer_certificate(tls_->native_handle());
  if (cert == nullptr) return -1;
  const long serial = ASN1_INTEGER_get(X509_get_serialNumber(cert));
  X509_free(cert);
  return serial;
}

void Client::close() {
  error_code ignored;
  if (tls_) {
    beast::get_lowest_layer(*tls_).socket().close(ignored);
    tls_.reset();
  }
  if (plain_) {
    plain_->socket().close(ignored);
    plain_.reset();
  }
  buffer_.clear();
  parser_.reset();
}

}  // namespace commgate::server::testing
