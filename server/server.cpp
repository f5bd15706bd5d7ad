#include "server/server.h"

#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/metrics.h"
#include "server/container_limits.h"
#include "server/tls_store.h"

namespace commgate::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::chrono::milliseconds kTlsShutdownTimeout{500};
constexpr std::size_t kLingerMaxBytes = 64 * 1024 * 1024;
constexpr std::size_t kIdleReadBytes = 4096;

// A connection's read buffer holds what the parser has not consumed: the request head (at
// most max_header_bytes), a chunk-size line with its extensions, or the trailers, which
// the parser keeps whole until their end; body bytes pass through it a read at a time
// (Beast reads 64 KiB). Bounded, an endless chunk extension or trailer is refused at this
// size instead of growing without limit.
std::size_t read_buffer_limit(const ServerOptions& o) {
  return o.max_header_bytes + 64 * 1024;
}

struct Counters {
  std::atomic<uint64_t> connections_evicted{0};
  std::atomic<uint64_t> connections_accepted{0}, connections_rejected{0}, connections_active{0},
      accept_errors{0}, handshake_failures{0}, tls_reloads{0}, tls_reload_failures{0}, requests{0},
      handler_exceptions{0}, timeouts_handshake{0}, timeouts_idle{0}, timeouts_header{0},
      timeouts_body{0}, timeouts_write{0}, streams_active{0}, streams_dropped_slow{0},
      bytes_read{0}, bytes_written{0}, requests_refused_busy{0}, inflight_body_bytes{0};
  std::atomic<uint64_t> by_class[5] = {0, 0, 0, 0, 0};
};

std::string to_string(beast::string_view s) {
  return std::string(s.data(), s.size());
}

bool is_timeout(const error_code& ec) {
  return ec == beast::error::timeout;
}

// Accept errors that mean "out of a resource": back off instead of spinning.
bool is_resource_exhaustion(const error_code& ec) {
  return ec == boost::system::errc::too_many_files_open ||
         ec == boost::system::errc::too_many_files_open_in_system ||
         ec == boost::system::errc::no_buffer_space || ec == boost::system::errc::not_enough_memory;
}

bool is_reserved_header(std::string_view name) {
  return header_name_equal(name, "Content-Length") ||
         header_name_equal(name, "Transfer-Encoding") || header_name_equal(name, "Connection");
}

std::string chunk_frame(const std::string& data) {
  char size[20];
  const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  std::string out;
  out.reserve(static_cast<std::size_t>(n) + data.size() + 2);
  out.append(size, static_cast<std::size_t>(n));
  out += data;
  out += "\r\n";
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The parts of a connection that the server and a stream sink reach from other threads.
// Every member posts to the connection's strand.
class ConnectionBase {
 public:
  virtual ~ConnectionBase() = default;
  virtual void begin_stop() = 0;        // close if idle, end a stream; else close after response
  virtual void force_close() = 0;       // close the socket now
  virtual void wake_stream() = 0;       // chunks queued or close requested
  virtual void evict_if_waiting() = 0;  // close if still in its handshake or idle, else not

  // Since when (steady clock, ns) it has waited with no request in progress (its TLS
  // handshake, or the wait for a request's first byte); 0 while a request is in progress.
  // Read by the accept path to pick a connection to evict at the cap.
  std::atomic<int64_t> waiting_since{0};
};

namespace {

class StreamState final : public StreamSink {
 public:
  StreamState(std::weak_ptr<ConnectionBase> conn, std::size_t limit)
      : conn_(std::move(conn)), limit_(limit) {}

  bool write(std::string chunk) override {
    std::unique_lock lock(mu_);
    if (closed_) return false;
    if (chunk.empty()) return true;
    if (queued_bytes_ + chunk.size() > limit_) {
      closed_ = true;
      overflow_ = true;
      wake(lock, /*force=*/true);  // even while a write is in flight: drop it now
      return false;
    }
    queued_bytes_ += chunk.size();
    queue_.push_back(std::move(chunk));
    wake(lock);
    return true;
  }

  void close() override {
    std::unique_lock lock(mu_);
    if (closed_) return;
    closed_ = true;
    wake(lock);
  }

  bool closed() const override {
    std::lock_guard lock(mu_);
    return closed_;
  }

  void on_close(std::function<void()> callback) override {
    std::unique_lock lock(mu_);
    if (!ended_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
    lock.unlock();
    run_callback(callback);
  }

  // Connection side (on its strand).
  struct Take {
    std::string framed;   // chunk-encoded bytes to write now
    bool finish = false;  // after `framed`: the last chunk, then close
  };
  Take take() {
    std::lock_guard lock(mu_);
    wake_pending_ = false;
    Take t;
    if (overflow_) return t;
    for (const std::string& c : queue_) t.framed += chunk_frame(c);
    queue_.clear();
    queued_bytes_ = 0;
    t.finish = closed_;
    return t;
  }

  // The stream is over (any reason): refuse writes, run the callbacks once.
  void end() {
    std::vector<std::function<void()>> callbacks;
    {
      std::lock_guard lock(mu_);
      if (ended_) return;
      ended_ = true;
      closed_ = true;
      queue_.clear();
      queued_bytes_ = 0;
      callbacks.swap(callbacks_);
    }
    for (auto& cb : callbacks) run_callback(cb);
  }

  bool overflowed() const {
    std::lock_guard lock(mu_);
    return overflow_;
  }

 private:
  static void run_callback(const std::function<void()>& cb) {
    try {
      if (cb) cb();
    } catch (...) {  // exceptions never cross into the server's threads
    }
  }

  void wake(std::unique_lock<std::mutex>& lock, bool force = false) {
    if (wake_pending_ && !force) return;
    wake_pending_ = true;
    lock.unlock();
    if (auto c = conn_.lock()) c->wake_stream();
  }

  const std::weak_ptr<ConnectionBase> conn_;
  const std::size_t limit_;
  mutable std::mutex mu_;
  std::deque<std::string> queue_;
  std::size_t queued_bytes_ = 0;
  bool closed_ = false;
  bool overflow_ = false;
  bool ended_ = false;
  bool wake_pending_ = false;
  std::vector<std::function<void()>> callbacks_;
};

}  // namespace

// ---------------------------------------------------------------------------------------
struct Server::Impl {
  // Declared before the io_context so that they outlive anything it destroys.
  ServerOptions opts;
  Router router;
  Counters counters;
  std::unique_ptr<detail::TlsStore> tls;
  std::mutex conn_mu;
  std::condition_variable conn_cv;
  std::unordered_map<uint64_t, std::weak_ptr<ConnectionBase>> conns;
  uint64_t next_conn_id = 1;  // 0: not registered
  std::atomic<bool> stopping{false};

  net::io_context ioc;
  net::strand<net::io_context::executor_type> accept_strand{net::make_strand(ioc)};
  tcp::acceptor acceptor{accept_strand};
  net::steady_timer accept_timer{accept_strand};
  net::steady_timer cert_timer{accept_strand};
  std::chrono::milliseconds backoff{0};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::vector<std::thread> threads;
  std::atomic<uint16_t> bound_port{0};
  std::mutex lifecycle_mu;
  bool started = false;
  bool stopped = false;

  Impl(ServerOptions o, Router r) : opts(std::move(o)), router(std::move(r)) {}

  void log(LogLevel level, const std::string& message) const { opts.log.log(level, message); }

  void count_response(int status) {
    counters.requests.fetch_add(1, std::memory_order_relaxed);
    const int cls = status / 100 - 1;
    if (cls >= 0 && cls < 5) counters.by_class[cls].fetch_add(1, std::memory_order_relaxed);
  }

  void report(std::string_view method, std::string_view path, int status, Clock::time_point start) {
    count_response(status);
    if (!opts.on_response) return;
    ResponseRecord r;
    r.method = method;
    r.path = path;
    r.status = status;
    r.duration = Clock::now() - start;
    try {
      opts.on_response(r);
    } catch (...) {
    }
  }

  uint64_t register_connection(std::weak_ptr<ConnectionBase> c) {
    std::lock_guard lock(conn_mu);
    const uint64_t id = next_conn_id++;
    conns.emplace(id, std::move(c));
    return id;
  }

  void unregister_connection(uint64_t id) {
    {
      std::lock_guard lock(conn_mu);
      if (id != 0) conns.erase(id);
      counters.connections_active.fetch_sub(1);
    }
    conn_cv.notify_all();
  }

  // Closes the connection that has waited longest with no request in progress; false when
  // none waits. O(connections), only at the cap.
  bool evict_longest_waiting() {
    std::shared_ptr<ConnectionBase> oldest;
    int64_t oldest_since = 0;
    {
      std::lock_guard lock(conn_mu);
      for (auto& [id, w] : conns) {
        auto c = w.lock();
        if (!c) continue;
        const int64_t since = c->waiting_since.load(std::memory_order_relaxed);
        if (since != 0 && (!oldest || since < oldest_since)) {
          oldest = std::move(c);
          oldest_since = since;
        }
      }
    }
    if (!oldest) return false;
    oldest->waiting_since.store(0, std::memory_order_relaxed);  // not picked twice
    oldest->evict_if_waiting();
    return true;
  }

  std::vector<std::shared_ptr<ConnectionBase>> live_connections() {
    std::vector<std::shared_ptr<ConnectionBase>> out;
    std::lock_guard lock(conn_mu);
    for (auto& [id, w] : conns) {
      if (auto c = w.lock()) out.push_back(std::move(c));
    }
    return out;
  }

  void start();
  void stop();
  void do_accept();
  void on_accept(error_code ec, tcp::socket socket);
  void schedule_cert_poll();
  bool poll_certs();
};

namespace {

// ---------------------------------------------------------------------------------------
// One connection: an explicit state machine over one stream (TLS or plain TCP).
template <class Stream>
class Connection final : public ConnectionBase,
                         public std::enable_shared_from_this<Connection<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  enum class State { kHandshake, kIdle, kReading, kHandling, kWriting, kStreaming, kClosing };

  // For TLS: `ctx` is kept alive as long as the connection.
  Connection(Server::Impl& server, tcp::socket socket, std::shared_ptr<ssl::context> ctx)
      : server_(server),
        ctx_(std::move(ctx)),
        stream_(make_stream(std::move(socket), ctx_)),
        buffer_(read_buffer_limit(server.opts)) {
    error_code ec;
    const auto ep = beast::get_lowest_layer(stream_).socket().remote_endpoint(ec);
    if (!ec) {
      const std::string addr = ep.address().to_string();
      peer_ = (ep.address().is_v6() ? "[" + addr + "]" : addr) + ":" + std::to_string(ep.port());
    }
    // Last: from here on the destructor runs, and gives it back.
    server_.counters.connections_active.fetch_add(1);
  }

  ~Connection() override {
    release_body_budget();
    if (stream_state_) stream_state_->end();
    server_.unregister_connection(id_);
  }

  void run() {
    id_ = server_.register_connection(this->weak_from_this());
    net::dispatch(executor(), [self = this->shared_from_this()] { self->begin(); });
  }

  void begin_stop() override {
    net::post(executor(), [self = this->shared_from_this()] {
      if (self->state_ == State::kHandshake || self->state_ == State::kIdle) {
        self->close_now();
      } else if (self->state_ == State::kStreaming && self->stream_state_) {
        self->stream_state_->close();
      }
      // Reading / handling / writing: the response goes out with Connection: close.
    });
  }

  void force_close() override {
    net::post(executor(), [self = this->shared_from_this()] { self->close_now(); });
  }

  void evict_if_waiting() override {
    net::post(executor(), [self = this->shared_from_this()] {
      if (self->state_ == State::kHandshake || self->state_ == State::kIdle) self->close_now();
    });
  }

  void wake_stream() override {
    net::post(executor(), [self = this->shared_from_this()] { self->pump_stream(); });
  }

 private:
  static Stream make_stream(tcp::socket socket, const std::shared_ptr<ssl::context>& ctx) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *ctx);
    } else {
      return Stream(std::move(socket));
    }
  }

  auto executor() { return stream_.get_executor(); }
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }
  const ServerOptions& opts() const { return server_.opts; }

  void begin() {
    if (server_.stopping.load()) return close_now();
    mark_waiting();
    if constexpr (kTls) {
      state_ = State::kHandshake;
      lowest().expires_after(opts().handshake_timeout);
      stream_.async_handshake(
          ssl::stream_base::server,
          [self = this->shared_from_this()](error_code ec) { self->on_handshake(ec); });
    } else {
      wait_request();
    }
  }

  void on_handshake(error_code ec) {
    if (ec) {
      server_.counters.handshake_failures.fetch_add(1, std::memory_order_relaxed);
      if (is_timeout(ec)) server_.counters.timeouts_handshake.fetch_add(1);
      return close_now();
    }
    wait_request();
  }

  // Keep-alive wait: idle_timeout until the first byte of the next request.
  void wait_request() {
    if (server_.stopping.load()) return graceful_close();
    if (buffer_.size() > 0) return read_header();
    state_ = State::kIdle;
    mark_waiting();
    lowest().expires_after(opts().idle_timeout);
    stream_.async_read_some(buffer_.prepare(kIdleReadBytes),
                            [self = this->shared_from_this()](error_code ec, std::size_t n) {
                              self->on_idle_read(ec, n);
                            });
  }

  void on_idle_read(error_code ec, std::size_t n) {
    if (ec) {
      if (is_timeout(ec)) server_.counters.timeouts_idle.fetch_add(1);
      return close_now();
    }
    buffer_.commit(n);
    server_.counters.bytes_read.fetch_add(n, std::memory_order_relaxed);
    read_header();
  }

  void mark_waiting() {
    waiting_since.store(std::max<int64_t>(1, Clock::now().time_since_epoch().count()),
                        std::memory_order_relaxed);
  }

  // Slowloris defence: the whole head must arrive within header_timeout of its first byte.
  void read_header() {
    state_ = State::kReading;
    waiting_since.store(0, std::memory_order_relaxed);
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(opts().max_header_bytes));
    parser_->body_limit(static_cast<std::uint64_t>(opts().max_body_bytes));
    if (buffer_.size() > 0) {
      // Fast path: the head (usually the whole request) is already here; parse it now
      // instead of paying an asynchronous round trip through the scheduler.
      parser_->eager(true);
      error_code ec;
      const std::size_t n = parser_->put(buffer_.data(), ec);
      buffer_.consume(n);
      if (ec != http::error::need_more && (ec || parser_->is_header_done())) {
        return on_header(ec, 0);
      }
    }
    lowest().expires_after(opts().header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = this->shared_from_this()](error_code ec, std::size_t n) {
                              self->on_header(ec, n);
                            });
  }

  void on_header(error_code ec, std::size_t n) {
    server_.counters.bytes_read.fetch_add(n, std::memory_order_relaxed);
    request_start_ = Clock::now();
    if (ec) {
      if (is_timeout(ec)) {
        server_.counters.timeouts_header.fetch_add(1);
        return close_now();
      }
      if (ec == http::error::body_limit) return send_error(413, "request body too large\n");
      if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
        return send_error(431, "request header fields too large\n");
      }
      if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
          ec == net::error::eof || ec == ssl::error::stream_truncated ||
          ec == net::error::operation_aborted || ec == net::error::connection_reset) {
        return close_now();
      }
      return send_error(400, "bad request\n");
    }
    const auto& head = parser_->get();
    // RFC 9112 section 3.2: a server MUST answer 400 to an HTTP/1.1 request without
    // exactly one Host header (kube-apiserver's Go server does).
    if (head.version() == 11 && head.count(http::field::host) != 1) {
      return send_error(400, "bad request: HTTP/1.1 needs exactly one Host header\n");
    }
    if (const auto len = parser_->content_length(); len && *len > opts().max_body_bytes) {
      return send_error(413, "request body too large\n");
    }
    if (parser_->is_done()) return handle_request();
    if (!reserve_body_budget()) return send_busy();
    if (beast::iequals(head[http::field::expect], "100-continue")) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      lowest().expires_after(opts().write_timeout);
      net::async_write(stream_, net::buffer(kContinue),
                       [self = this->shared_from_this()](error_code wec, std::size_t) {
                         if (wec) return self->close_now();
                         self->read_body();
                       });
      return;
    }
    read_body();
  }

  void read_body() {
    lowest().expires_after(opts().body_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](error_code ec, std::size_t n) { self->on_body(ec, n); });
  }

  void on_body(error_code ec, std::size_t n) {
    server_.counters.bytes_read.fetch_add(n, std::memory_order_relaxed);
    if (ec) {
      if (is_timeout(ec)) {
        server_.counters.timeouts_body.fetch_add(1);
        return close_now();
      }
      if (ec == http::error::body_limit) return send_error(413, "request body too large\n");
      // A chunk-size line (its extensions) or the trailers longer than the read buffer:
      // the parser keeps a line until its end, and without this bound one endless chunk
      // extension grew the buffer by 300 MiB in 4 s (issue #19 item 8).
      if (ec == http::error::buffer_overflow) {
        return send_error(400, "bad request: chunk line or trailers too long\n");
      }
      if (ec == http::error::partial_message || ec == net::error::eof ||
          ec == ssl::error::stream_truncated || ec == net::error::connection_reset) {
        return close_now();
      }
      return send_error(400, "bad request\n");
    }
    handle_request();
  }

  Request to_request(http::request<http::string_body>&& req) const {
    Request r;
    r.method = to_string(req.method_string());
    r.target = to_string(req.target());
    const auto q = r.target.find('?');
    r.path = r.target.substr(0, q);
    if (q != std::string::npos) r.query = r.target.substr(q + 1);
    r.version = static_cast<int>(req.version());
    for (const auto& f : req)
      r.headers.emplace_back(to_string(f.name_string()), to_string(f.value()));
    r.body = std::move(req.body());
    r.peer = peer_;
    return r;
  }

  // The in-flight body budget (ServerOptions::max_inflight_body_bytes): this request's
  // Content-Length, or max_body_bytes for a chunked body whose size is not known yet.
  bool reserve_body_budget() {
    const std::size_t budget = opts().max_inflight_body_bytes;
    if (budget == 0) return true;
    const auto len = parser_->content_length();
    const std::size_t want = len ? static_cast<std::size_t>(*len) : opts().max_body_bytes;
    auto& inflight = server_.counters.inflight_body_bytes;
    uint64_t now = inflight.load();
    do {
      if (now + want > budget) return false;
    } while (!inflight.compare_exchange_weak(now, now + want));
    reserved_body_ = want;
    return true;
  }
  void release_body_budget() {
    if (reserved_body_ == 0) return;
    server_.counters.inflight_body_bytes.fetch_sub(reserved_body_);
    reserved_body_ = 0;
  }
  // 503 and close: the sender (kube-apiserver) retries or applies its failurePolicy.
  void send_busy() {
    server_.counters.requests_refused_busy.fetch_add(1, std::memory_order_relaxed);
    client_keep_alive_ = false;  // closes after the answer, its body unread
    Response busy = Response::text(503, "server busy: too many request bodies in flight\n");
    busy.headers.emplace_back("Retry-After", "1");
    refuse(std::move(busy), /*drain=*/false);
  }

  void handle_request() {
    state_ = State::kHandling;
    ++requests_on_connection_;
    http::request<http::string_body> req = parser_->release();
    parser_.reset();
    version_ = req.version();
    client_keep_alive_ = req.keep_alive();
    Response response = answer(to_request(std::move(req)));
    if (stream_state_) return start_stream(response);
    send_response(std::move(response), method_ == "HEAD", /*drain=*/false);
  }

  // The handler's response; the request (its body) is freed before this returns.
  Response answer(Request request) {
    method_ = request.method;
    path_ = request.path;
    const std::size_t body_bytes = request.body.size();
    Response response = dispatch(std::move(request));
    if (opts().release_memory_after_body_bytes > 0 &&
        body_bytes >= opts().release_memory_after_body_bytes)
      release_free_memory();
    return response;
  }

  Response dispatch(Request request) {
    Response response;
    try {
      response = server_.router.dispatch(request);
      if (response.status < 100 || response.status > 999) {
        throw std::runtime_error("handler returned status " + std::to_string(response.status));
      }
      if (response.stream) {
        auto state = std::make_shared<StreamState>(
            std::weak_ptr<ConnectionBase>(this->shared_from_this()), opts().stream_buffer_limit);
        try {
          response.stream(state);
        } catch (...) {
          state->end();
          throw;
        }
        stream_state_ = std::move(state);
      }
    } catch (const std::exception& e) {
      server_.counters.handler_exceptions.fetch_add(1);
      server_.log(LogLevel::kError, "handler for " + method_ + " " + path_ + " threw: " + e.what());
      response = Response::text(500, "internal server error\n");
    } catch (...) {
      server_.counters.handler_exceptions.fetch_add(1);
      server_.log(LogLevel::kError, "handler for " + method_ + " " + path_ + " threw");
      response = Response::text(500, "internal server error\n");
    }
    return response;
  }

  bool keep_alive_after_this() const {
    return client_keep_alive_ && !server_.stopping.load() &&
           (opts().max_requests_per_connection == 0 ||
            requests_on_connection_ < opts().max_requests_per_connection);
  }

  void fill_head(http::header<false>& head, const Response& response) const {
    head.version(version_);
    head.result(static_cast<unsigned>(response.status));
    head.set(http::field::server, "commgate");
    if (!response.content_type.empty()) head.set(http::field::content_type, response.content_type);
    for (const auto& [k, v] : response.headers) {
      if (!is_reserved_header(k)) head.insert(k, v);
    }
  }

  // `drain`: the request body was not read; close with a lingering read so that the client
  // sees this response rather than a reset.
  void send_response(Response response, bool head_only, bool drain) {
    release_body_budget();  // the request's body is parsed and handled, or refused
    state_ = State::kWriting;
    status_ = response.status;
    res_ = http::response<http::string_body>{};
    fill_head(res_, response);
    const bool no_body = response.status < 200 || response.status == 204 || response.status == 304;
    const std::size_t body_size = no_body ? 0 : response.body.size();
    if (!head_only && !no_body) res_.body() = std::move(response.body);
    keep_alive_ = !drain && keep_alive_after_this();
    res_.keep_alive(keep_alive_);
    if (!no_body) res_.content_length(body_size);
    lowest().expires_after(opts().write_timeout);
    http::async_write(stream_, res_,
                      [self = this->shared_from_this(), drain](error_code ec, std::size_t n) {
                        self->on_write(ec, n, drain);
                      });
  }

  void send_error(int status, std::string body) {
    refuse(Response::text(status, std::move(body)), /*drain=*/true);
  }

  // Answers a request the handler never sees, named by what its head says (if it was read).
  void refuse(Response response, bool drain) {
    method_.clear();
    path_.clear();
    if (parser_) {
      method_ = to_string(parser_->get().method_string());
      path_ = to_string(parser_->get().target());
      version_ = parser_->get().version() == 10 ? 10 : 11;
    }
    parser_.reset();
    request_start_ = Clock::now();
    send_response(std::move(response), false, drain);
  }

  void on_write(error_code ec, std::size_t n, bool drain) {
    server_.counters.bytes_written.fetch_add(n, std::memory_order_relaxed);
    server_.report(method_, path_, status_, request_start_);
    res_ = http::response<http::string_body>{};
    if (ec) {
      if (is_timeout(ec)) server_.counters.timeouts_write.fetch_add(1);
      return close_now();
    }
    if (drain) return linger();
    if (!keep_alive_) return graceful_close();
    wait_request();
  }

  // ---- streaming --------------------------------------------------------------------------
  void start_stream(const Response& response) {
    release_body_budget();
    state_ = State::kStreaming;
    status_ = response.status;
    server_.counters.streams_active.fetch_add(1);
    stream_head_.emplace();
    fill_head(stream_head_->base(), response);
    stream_head_->keep_alive(false);
    stream_head_->chunked(true);
    stream_sr_.emplace(*stream_head_);
    writing_ = true;
    lowest().expires_after(opts().write_timeout);
    http::async_write_header(stream_, *stream_sr_,
                             [self = this->shared_from_this()](error_code ec, std::size_t n) {
                               self->on_stream_head(ec, n);
                             });
    // Notice the client going away: a read that only ends with an error.
    lowest().expires_never();
    watch_peer();
  }

  void watch_peer() {
    stream_.async_read_some(net::buffer(scratch_),
                            [self = this->shared_from_this()](error_code ec, std::size_t) {
                              if (ec) return self->end_stream(/*graceful=*/false);
                              if (self->state_ == State::kStreaming) self->watch_peer();
                            });
  }

  void on_stream_head(error_code ec, std::size_t n) {
    writing_ = false;
    server_.counters.bytes_written.fetch_add(n, std::memory_order_relaxed);
    server_.report(method_, path_, status_, request_start_);
    if (ec) {
      if (is_timeout(ec)) server_.counters.timeouts_write.fetch_add(1);
      return end_stream(false);
    }
    pump_stream();
  }

  void pump_stream() {
    if (state_ != State::kStreaming || !stream_state_) return;
    if (stream_state_->overflowed()) {
      server_.counters.streams_dropped_slow.fetch_add(1);
      return end_stream(false);
    }
    if (writing_) return;  // its completion pumps again
    StreamState::Take t = stream_state_->take();
    if (t.finish) t.framed += "0\r\n\r\n";
    if (t.framed.empty()) return;
    write_buf_ = std::move(t.framed);
    writing_ = true;
    lowest().expires_after(opts().write_timeout);
    net::async_write(
        stream_, net::buffer(write_buf_),
        [self = this->shared_from_this(), finish = t.finish](error_code ec, std::size_t n) {
          self->writing_ = false;
          self->server_.counters.bytes_written.fetch_add(n);
          if (ec) {
            if (is_timeout(ec)) self->server_.counters.timeouts_write.fetch_add(1);
            return self->end_stream(false);
          }
          if (finish) return self->end_stream(true);
          self->pump_stream();
        });
  }

  // The stream is over. After the last chunk the socket is half-closed rather than given a
  // TLS close_notify: the read that watches the peer is still pending, and a TLS shutdown
  // would read concurrently with it.
  void end_stream(bool graceful) {
    if (state_ != State::kStreaming) return;
    state_ = State::kClosing;
    server_.counters.streams_active.fetch_sub(1);
    if (stream_state_) stream_state_->end();
    if (graceful) {
      error_code ignored;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    }
    lowest().close();
  }

  // ---- closing ----------------------------------------------------------------------------
  void graceful_close() {
    state_ = State::kClosing;
    if constexpr (kTls) {
      lowest().expires_after(kTlsShutdownTimeout);
      stream_.async_shutdown([self = this->shared_from_this()](error_code) { self->close_now(); });
    } else {
      error_code ec;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
      close_now();
    }
  }

  // After an error answer with the request body unread: send FIN, read and discard what the
  // client is still sending (bounded in time and bytes), then close.
  void linger() {
    state_ = State::kClosing;
    error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close_now();
    lowest().expires_after(opts().linger_timeout);
    drain_some();
  }

  void drain_some() {
    lowest().async_read_some(net::buffer(scratch_),
                             [self = this->shared_from_this()](error_code ec, std::size_t n) {
                               self->drained_ += n;
                               if (ec || self->drained_ > kLingerMaxBytes) {
                                 return self->close_now();
                               }
                               self->drain_some();
                             });
  }

  void close_now() {
    if (state_ == State::kStreaming) {
      server_.counters.streams_active.fetch_sub(1);
      if (stream_state_) stream_state_->end();
    }
    state_ = State::kClosing;
    lowest().close();
  }

  Server::Impl& server_;
  std::shared_ptr<ssl::context> ctx_;
  Stream stream_;
  uint64_t id_ = 0;
  std::string peer_;
  State state_ = State::kHandshake;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> res_;
  unsigned version_ = 11;
  bool client_keep_alive_ = false;
  bool keep_alive_ = false;
  std::size_t requests_on_connection_ = 0;
  int status_ = 0;
  std::string method_, path_;
  Clock::time_point request_start_{};
  // streaming
  std::shared_ptr<StreamState> stream_state_;
  std::optional<http::response<http::empty_body>> stream_head_;
  std::optional<http::response_serializer<http::empty_body>> stream_sr_;
  std::string write_buf_;
  std::size_t reserved_body_ = 0;  // of max_inflight_body_bytes, until the response
  bool writing_ = false;
  std::array<char, 4096> scratch_{};
  std::size_t drained_ = 0;
};

using TlsConnection = Connection<beast::ssl_stream<beast::tcp_stream>>;
using PlainConnection = Connection<beast::tcp_stream>;

}  // namespace

// ---------------------------------------------------------------------------------------
void Server::Impl::start() {
  std::lock_guard lock(lifecycle_mu);
  if (started) throw std::runtime_error("server already started");
  if (!opts.tls && !opts.plain_http) {
    throw std::runtime_error("server: TLS certificate and key files are required");
  }
  if (opts.tls) {
    tls = std::make_unique<detail::TlsStore>(*opts.tls, opts.log);
    tls->load_initial();
  }
  error_code ec;
  const auto address = net::ip::make_address(opts.address, ec);
  if (ec) throw std::runtime_error("server: bad bind address '" + opts.address + "'");
  const tcp::endpoint endpoint(address, opts.port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("server: cannot listen on " + opts.address + ":" +
                             std::to_string(opts.port) + ": " + ec.message());
  }
  bound_port = acceptor.local_endpoint().port();
  started = true;
  work.emplace(ioc.get_executor());
  net::post(accept_strand, [this] { do_accept(); });
  if (tls) net::post(accept_strand, [this] { schedule_cert_poll(); });
  int n = opts.threads > 0 ? opts.threads : static_cast<int>(std::thread::hardware_concurrency());
  if (n <= 0) n = 1;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([this] {
      for (;;) {
        try {
          ioc.run();
          return;
        } catch (const std::exception& e) {
          log(LogLevel::kError, std::string("unexpected exception in server thread: ") + e.what());
        } catch (...) {
          log(LogLevel::kError, "unexpected exception in server thread");
        }
      }
    });
  }
}

void Server::Impl::do_accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
    on_accept(ec, std::move(socket));
  });
}

void Server::Impl::on_accept(error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || stopping.load() || !acceptor.is_open()) return;
  if (ec) {
    counters.accept_errors.fetch_add(1);
    if (is_resource_exhaustion(ec)) {
      if (backoff.count() == 0) {
        log(LogLevel::kWarning, "accept failed (" + ec.message() + "); backing off");
        backoff = opts.accept_backoff_min;
      } else {
        backoff = std::min(backoff * 2, opts.accept_backoff_max);
      }
      accept_timer.expires_after(backoff);
      accept_timer.async_wait([this](error_code tec) {
        if (!tec && !stopping.load()) do_accept();
      });
      return;
    }
    return do_accept();
  }
  backoff = std::chrono::milliseconds{0};
  counters.connections_accepted.fetch_add(1);
  // At the cap, the connection that has waited longest with no request in progress (in
  // its handshake, or idle) makes room: holding idle connections cannot lock the API
  // server out (the attacker review of 2026-12-06: 850 idle TLS connections per webhook
  // pod, renewed every idle timeout, failed every TrainingJob write in the cluster). Only
  // when every connection is mid-request is the new one refused.
  if (counters.connections_active.load() >= opts.max_connections) {
    if (!evict_longest_waiting()) {
      counters.connections_rejected.fetch_add(1);
      error_code ignored;
      socket.close(ignored);
      return do_accept();
    }
    counters.connections_evicted.fetch_add(1);
  }
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  try {  // e.g. SSL_new failing: lose this connection, never the accept loop
    if (tls) {
      std::make_shared<TlsConnection>(*this, std::move(socket), tls->current())->run();
    } else {
      std::make_shared<PlainConnection>(*this, std::move(socket), nullptr)->run();
    }
  } catch (const std::exception& e) {
    log(LogLevel::kError, std::string("cannot set up a connection: ") + e.what());
  }
  do_accept();
}

void Server::Impl::schedule_cert_poll() {
  cert_timer.expires_after(opts.cert_poll_interval);
  cert_timer.async_wait([this](error_code ec) {
    if (ec || stopping.load()) return;
    poll_certs();
    schedule_cert_poll();
  });
}

bool Server::Impl::poll_certs() {
  if (!tls) return false;
  switch (tls->poll()) {
    case detail::TlsStore::PollResult::kReloaded:
      counters.tls_reloads.fetch_add(1);
      return true;
    case detail::TlsStore::PollResult::kRejected:
      counters.tls_reload_failures.fetch_add(1);
      return false;
    case detail::TlsStore::PollResult::kUnchanged:
      return false;
  }
  return false;
}

void Server::Impl::stop() {
  {
    std::lock_guard lock(lifecycle_mu);
    if (!started || stopped) return;
    stopped = true;
  }
  stopping.store(true);
  net::post(accept_strand, [this] {
    error_code ignored;
    acceptor.close(ignored);
    accept_timer.cancel();
    cert_timer.cancel();
  });
  for (auto& c : live_connections()) c->begin_stop();
  {
    std::unique_lock lock(conn_mu);
    conn_cv.wait_for(lock, opts.shutdown_timeout, [this] { return conns.empty(); });
  }
  const auto left = live_connections();
  if (!left.empty()) {
    log(LogLevel::kWarning,
        "shutdown deadline passed; closing " + std::to_string(left.size()) + " connection(s)");
    for (auto& c : left) c->force_close();
  }
  {
    std::unique_lock lock(conn_mu);
    conn_cv.wait(lock, [this] { return conns.empty(); });
  }
  work.reset();
  ioc.stop();
  for (auto& t : threads) t.join();
  threads.clear();
}

// ---------------------------------------------------------------------------------------
Server::Server(ServerOptions options, Router router)
    : impl_(std::make_shared<Impl>(std::move(options), std::move(router))) {}

Server::~Server() {
  stop();
}

void Server::start() {
  impl_->start();
}
void Server::stop() {
  impl_->stop();
}
uint16_t Server::port() const {
  return impl_->bound_port.load();
}
bool Server::reload_tls_now() {
  return impl_->poll_certs();
}

ServerStats Server::stats() const {
  const Counters& c = impl_->counters;
  ServerStats s;
  s.connections_accepted = c.connections_accepted.load();
  s.connections_rejected = c.connections_rejected.load();
  s.connections_evicted = c.connections_evicted.load();
  s.connections_active = c.connections_active.load();
  s.accept_errors = c.accept_errors.load();
  s.handshake_failures = c.handshake_failures.load();
  s.tls_reloads = c.tls_reloads.load();
  s.tls_reload_failures = c.tls_reload_failures.load();
  s.requests = c.requests.load();
  for (int i = 0; i < 5; ++i) s.responses_by_class[i] = c.by_class[i].load();
  s.handler_exceptions = c.handler_exceptions.load();
  s.timeouts_handshake = c.timeouts_handshake.load();
  s.timeouts_idle = c.timeouts_idle.load();
  s.timeouts_header = c.timeouts_header.load();
  s.timeouts_body = c.timeouts_body.load();
  s.timeouts_write = c.timeouts_write.load();
  s.requests_refused_busy = c.requests_refused_busy.load();
  s.inflight_body_bytes = c.inflight_body_bytes.load();
  s.streams_active = c.streams_active.load();
  s.streams_dropped_slow = c.streams_dropped_slow.load();
  s.bytes_read = c.bytes_read.load();
  s.bytes_written = c.bytes_written.load();
  s.certificate_not_after = impl_->tls ? impl_->tls->certificate_not_after() : 0;
  return s;
}

}  // namespace commgate::server

namespace commgate::server {

std::string server_stats_prometheus(const ServerStats& s, std::string_view prefix) {
  std::string out;
  const std::string p(prefix);
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    append_prometheus_sample(out, p + "_" + name, "counter", help, static_cast<double>(v));
  };
  auto gauge = [&](const char* name, const char* help, uint64_t v) {
    append_prometheus_sample(out, p + "_" + name, "gauge", help, static_cast<double>(v));
  };
  counter("connections_accepted_total", "TCP connections accepted.", s.connections_accepted);
  counter("connections_rejected_total",
          "Connections closed at once: at max_connections, with every connection mid-request.",
          s.connections_rejected);
  counter("connections_evicted_total",
          "Connections closed at max_connections to make room: the one that had waited longest "
          "with no request in progress (in its TLS handshake, or idle).",
          s.connections_evicted);
  gauge("connections_active", "Open connections.", s.connections_active);
  counter("accept_errors_total", "Failed accept calls.", s.accept_errors);
  counter("tls_handshake_failures_total",
          "TLS handshakes that failed, including connections closed before one.",
          s.handshake_failures);
  counter("tls_reloads_total", "Certificate pairs reloaded from disk.", s.tls_reloads);
  counter("tls_reload_failures_total", "Certificate pairs rejected on reload.",
          s.tls_reload_failures);
  out += "# HELP " + p + "_responses_total Responses sent, by status class.\n";
  out += "# TYPE " + p + "_responses_total counter\n";
  for (int i = 0; i < 5; ++i) {
    out += p + "_responses_total{code=\"" + std::to_string(i + 1) + "xx\"} " +
           std::to_string(s.responses_by_class[i]) + "\n";
  }
  counter("handler_exceptions_total", "Handler exceptions answered with 500.",
          s.handler_exceptions);
  out += "# HELP " + p + "_timeouts_total Connections closed by a timeout, by phase.\n";
  out += "# TYPE " + p + "_timeouts_total counter\n";
  const std::pair<const char*, uint64_t> phases[] = {{"handshake", s.timeouts_handshake},
                                                     {"idle", s.timeouts_idle},
                                                     {"header", s.timeouts_header},
                                                     {"body", s.timeouts_body},
                                                     {"write", s.timeouts_write}};
  for (const auto& [phase, v] : phases) {
    out += p + "_timeouts_total{phase=\"" + phase + "\"} " + std::to_string(v) + "\n";
  }
  counter("requests_refused_busy_total",
          "Requests answered 503: their bodies would pass the in-flight body budget.",
          s.requests_refused_busy);
  gauge("inflight_body_bytes", "Request body bytes reserved by requests being received.",
        s.inflight_body_bytes);
  gauge("streams_active", "Streaming responses in progress.", s.streams_active);
  counter("streams_dropped_slow_total", "Streams dropped: the client fell too far behind.",
          s.streams_dropped_slow);
  counter("read_bytes_total", "HTTP bytes read.", s.bytes_read);
  counter("written_bytes_total", "HTTP bytes written.", s.bytes_written);
  if (s.certificate_not_after > 0)
    append_prometheus_sample(out, p + "_tls_certificate_expiry_timestamp_seconds", "gauge",
                             "When the serving certificate in use expires (Unix seconds).",
                             static_cast<double>(s.certificate_not_after));
  return out;
}

}  // namespace commgate::server
