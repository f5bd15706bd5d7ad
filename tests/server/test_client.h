// A small in-process HTTP(S) client for the server tests: Beast over its own io_context,
// every operation bounded by a timeout (no test can hang on a socket).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace commgate::server::testing {

struct Reply {
  int status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  bool keep_alive = false;
  std::string header(const std::string& name) const;
};

class Client {
 public:
  using ms = std::chrono::milliseconds;
  // ca_file empty: plain HTTP.
  Client(uint16_t port, std::string ca_file);
  ~Client();

  // Connects (and handshakes). Returns an error message, or "" on success.
  std::string connect(ms timeout = ms(5000));
  // Throws std::runtime_error on any transport error or timeout.
  Reply request(const std::string& method, const std::string& target, std::string body = "",
                std::vector<std::pair<std::string, std::string>> headers = {},
                ms timeout = ms(5000));

  // Raw bytes over the (TLS) connection.
  bool write_raw(const std::string& bytes, ms timeout = ms(5000));
  // Reads whatever arrives until `timeout` or the server closes; returns it.
  std::string read_raw_until_closed(ms timeout);
  // Reads until `needle` has arrived (true) or the timeout / a close (false).
  bool read_stream_raw_until(const std::string& needle, ms timeout);
  // True when the server has closed the connection (EOF or error within `timeout`).
  bool closed_by_server(ms timeout);

  // Streaming: sends a request and reads the response head; then `read_chunks` calls
  // `on_data` with body bytes as they arrive until it returns false, the response ends
  // (returns true) or the timeout (returns false).
  int start_stream(const std::string& target, ms timeout = ms(5000));
  bool read_stream(const std::function<bool(const std::string& all)>& until, ms timeout);
  bool stream_done() const;
  const std::string& stream_body() const { return stream_body_; }

  long peer_serial();  // serial of the server certificate (TLS only)
  void close();

 private:
  template <class Start>
  boost::system::error_code run(Start start, ms timeout);
  boost::beast::tcp_stream& lowest();

  uint16_t port_;
  std::string ca_file_;
  boost::asio::io_context ioc_;
  std::optional<boost::asio::ssl::context> ctx_;
  std::optional<boost::beast::ssl_stream<boost::beast::tcp_stream>> tls_;
  std::optional<boost::beast::tcp_stream> plain_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::string_body>> parser_;
  std::string stream_body_;
  std::function<std::size_t(std::uint64_t, boost::beast::string_view, boost::system::error_code&)>
      on_chunk_;
};

}  // namespace commgate::server::testing
