// Fault injection for tests of clients against the simulated API server: the failures a
// real control plane shows (a 500 from an overloaded apiserver, 429 with Retry-After from
// priority and fairness, slow responses). The watch-closing, compaction and restart
// faults act on the server and the store, so they live on ApiServer; this class holds the
// per-request ones and decides, for each request, whether it fails.
//
// Thread-safe: handlers call intercept() from every server thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "server/http.h"

namespace commgate::sim {

struct RequestFailure {
  int count = 1;                        // how many of the next matching requests fail
  int status = 500;                     // 500 (InternalError), 429 (TooManyRequests) or 503
  std::chrono::seconds retry_after{1};  // sent as Retry-After with 429 and 503
  std::string path_contains;            // "": every API request; else only paths with this
};

class FaultInjector {
 public:
  // Arms `failure` (replacing one armed before).
  void fail_next_requests(const RequestFailure& failure);
  // Every API response waits this long before it is produced (0: none). The wait holds a
  // server thread, as a slow apiserver holds the client's connection.
  void set_response_delay(std::chrono::milliseconds delay);
  std::chrono::milliseconds response_delay() const;

  // The response to send instead of handling `request`, when an armed failure matches.
  std::optional<server::Response> intercept(const server::Request& request);
  uint64_t failed_requests() const;

 private:
  mutable std::mutex mu_;
  RequestFailure failure_{0, 500, std::chrono::seconds{1}, ""};
  std::chrono::milliseconds delay_{0};
  uint64_t failed_ = 0;
};

}  // namespace commgate::sim
