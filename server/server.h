// The project's HTTPS server: every server in commgate (the webhook, health and metrics
// endpoints, the simulated API server) is one of these with its own Router.
//
// Boost.Beast + Asio over OpenSSL, one io_context run by a thread per core, HTTP/1.1
// keep-alive, TLS 1.2+ with the certificate and key reloaded when their files change,
// limits and timeouts on every phase of a connection, and 400/404/405/413/431/500
// answered here so that handlers stay pure functions. See docs/server.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/log.h"
#include "server/http.h"
#include "server/router.h"

namespace commgate::server {

// One record per response the server sent (including its own 4xx/5xx), for access logs
// and per-endpoint metrics. Called on a server thread: keep it short, never throw.
struct ResponseRecord {
  std::string_view method;  // "" when the request could not be parsed
  std::string_view path;
  int status = 0;
  std::chrono::nanoseconds duration{0};  // from the end of the request head to the
                                         // response written (for streams: head written)
};

struct TlsFiles {
  std::string cert_file;  // PEM: the certificate, then any intermediates
  std::string key_file;   // PEM private key
};

struct ServerOptions {
  std::string address = "127.0.0.1";  // "0.0.0.0" / "::" to listen on all interfaces
  uint16_t port = 0;                  // 0: any free port, see Server::port()
  std::optional<TlsFiles> tls;        // required unless plain_http
  bool plain_http = false;            // plain HTTP: only for tests that ask for it
  int threads = 0;                    // 0: one per core

  std::size_t max_body_bytes = 7 * 1024 * 1024;  // larger: 413 and close
  std::size_t max_header_bytes = 64 * 1024;      // request line + headers; larger: 431
  std::size_t max_connections = 4096;            // beyond: accepted and closed at once
  // The request bodies all connections may be receiving at once (each counted at its
  // Content-Length, a chunked one at max_body_bytes, from its head until its response):
  // beyond it a request is answered 503 with Retry-After and the connection closed, so
  // that memory follows a limit and not the number of senders. 0: no budget.
  std::size_t max_inflight_body_bytes = 0;
  // After a request with a body this large, the allocator's free memory is handed back to
  // the system (release_free_memory, server/container_limits.h): the memory a burst of
  // large requests took returns once they are answered. 0: never.
  std::size_t release_memory_after_body_bytes = 0;
  std::size_t max_requests_per_connection = 0;         // 0: unlimited; else Connection: close
  std::size_t stream_buffer_limit = 16 * 1024 * 1024;  // bytes queued on one stream

  std::chrono::milliseconds handshake_timeout{10'000};  // TCP accept to TLS established
  std::chrono::milliseconds idle_timeout{90'000};       // waiting for a request's 1st byte
  std::chrono::milliseconds header_timeout{10'000};     // 1st byte to end of headers
  std::chrono::milliseconds body_timeout{30'000};       // end of headers to end of body
  std::chrono::milliseconds write_timeout{30'000};      // each response / chunk write
  std::chrono::milliseconds linger_timeout{2'000};      // draining an unread body after 4xx
  std::chrono::milliseconds shutdown_timeout{10'000};   // stop(): in-flight deadline
  std::chrono::milliseconds cert_poll_interval{1'000};  // how often the PEM files are checked
  std::chrono::milliseconds accept_backoff_min{5};      // after EMFILE/ENFILE/ENOBUFS/ENOMEM,
  std::chrono::milliseconds accept_backoff_max{1'000};  // doubling up to this

  Logger log;  // default: one line to stderr (core/log.h)
  std::function<void(const ResponseRecord&)> on_response;  // optional
};

// Counters since start. A snapshot; every field is monotonic except the *_active gauges.
struct ServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_rejected = 0;  // at max_connections, every connection mid-request
  uint64_t connections_evicted = 0;   // waiting (handshake/idle), closed at the cap for another
  uint64_t connections_active = 0;
  uint64_t accept_errors = 0;
  uint64_t handshake_failures = 0;  // includes connections closed before the handshake
  uint64_t tls_reloads = 0;         // certificate pairs loaded after start
  uint64_t tls_reload_failures = 0;
  uint64_t requests = 0;                             // responses sent, by status class below
  uint64_t responses_by_class[5] = {0, 0, 0, 0, 0};  // 1xx..5xx
  uint64_t handler_exceptions = 0;
  uint64_t timeouts_handshake = 0;
  uint64_t timeouts_idle = 0;
  uint64_t timeouts_header = 0;
  uint64_t timeouts_body = 0;
  uint64_t timeouts_write = 0;
  uint64_t requests_refused_busy = 0;  // 503: over max_inflight_body_bytes
  uint64_t inflight_body_bytes = 0;    // gauge: reserved by requests being received
  uint64_t streams_active = 0;
  uint64_t streams_dropped_slow = 0;  // over stream_buffer_limit
  uint64_t bytes_read = 0;            // HTTP bytes (inside TLS)
  uint64_t bytes_written = 0;
  // Gauge: when the serving certificate in use expires, Unix seconds (0 without TLS), so
  // that an alert can fire before it does (the chart's certificates last a year).
  int64_t certificate_not_after = 0;
};

// Prometheus text for the stats, names prefixed with `prefix` (e.g. "commgate_webhook_http").
std::string server_stats_prometheus(const ServerStats& stats, std::string_view prefix);

class Server {
 public:
  Server(ServerOptions options, Router router);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Loads the certificate, binds and starts the threads. Throws std::runtime_error with a
  // clear message on misconfiguration (no TLS files without plain_http, unreadable or
  // mismatched PEM files, address in use).
  void start();
  // Graceful: stops accepting, closes idle connections, ends streams, lets in-flight
  // requests finish until shutdown_timeout, then closes what is left and joins the
  // threads. Idempotent. Must not be called from a handler.
  void stop();

  uint16_t port() const;  // the bound port (after start)
  ServerStats stats() const;
  // Checks the PEM files now instead of at the next poll; true when a new pair was loaded.
  bool reload_tls_now();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace commgate::server
