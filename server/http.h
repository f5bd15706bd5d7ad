// The request and response types that handlers see. Handlers are plain functions from a
// parsed Request to a Response; the server (server.h) owns the sockets, TLS, limits,
// timeouts and error answers. No Boost in this header: users compile without Asio.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace commgate::server {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// Case-insensitive ASCII comparison of header names.
bool header_name_equal(std::string_view a, std::string_view b);

struct Request {
  std::string method;  // "GET", "POST", ... as received (HEAD is passed on as HEAD)
  std::string target;  // path and query as received: "/apis/x?watch=1"
  std::string path;    // target up to '?', not percent-decoded
  std::string query;   // target after '?', not percent-decoded ("" when none)
  int version = 11;    // 10 or 11
  HeaderList headers;  // in arrival order, names as received
  std::string body;
  std::string peer;  // "127.0.0.1:54321"

  // The first header with this name (case-insensitive), or "" when absent.
  std::string_view header(std::string_view name) const;
  bool has_header(std::string_view name) const;
  // The value of one query parameter, percent-decoded ('+' as space); "" when absent.
  std::string query_param(std::string_view name) const;
  // The same, but nullopt when absent: "?watch" and "?watch=" are present with "" (as Go's
  // url.ParseQuery reads them). The first occurrence counts.
  std::optional<std::string> find_query_param(std::string_view name) const;
};

// Where a streaming response writes its chunks. Thread-safe: any thread may call any
// member at any time, before or after the client went away.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // Queues one chunk (HTTP/1.1 chunked encoding; an empty chunk is ignored). Returns false
  // once the stream has ended: the client went away, the producer or the server closed
  // it, a write timed out, or the client fell more than ServerOptions::
  // stream_buffer_limit bytes behind (then the connection is dropped, as kube-apiserver
  // drops a watch that cannot keep up).
  virtual bool write(std::string chunk) = 0;
  // Ends the response (last chunk) after the queued chunks. Idempotent.
  virtual void close() = 0;
  virtual bool closed() const = 0;
  // Runs `callback` once when the stream has ended for any reason (on a server thread;
  // at once, on the calling thread, when it has ended already). Keep it short.
  virtual void on_close(std::function<void()> callback) = 0;
};

// Called once, on a server thread, before the response head is sent; it must not block.
// Keep the sink and write to it from anywhere. An exception thrown here becomes a 500.
using StreamProducer = std::function<void(std::shared_ptr<StreamSink>)>;

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  HeaderList headers;  // extra headers; repeated names allowed (e.g. Warning)
  std::string body;    // ignored when `stream` is set
  // When set, the response is sent with Transfer-Encoding: chunked and Connection: close,
  // and its body is whatever the producer writes to the sink until it or the client closes.
  StreamProducer stream;

  static Response text(int status, std::string body);
  static Response json(int status, std::string body);
  static Response streaming(int status, std::string content_type, StreamProducer producer);
  Response& with_header(std::string name, std::string value);
};

using Handler = std::function<Response(const Request&)>;

}  // namespace commgate::server
