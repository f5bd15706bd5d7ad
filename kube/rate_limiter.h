// The client-side rate limit on requests to the API server: a token bucket (client-go's
// flowcontrol.NewTokenBucketRateLimiter) holding up to `burst` tokens, refilled at `qps`
// per second. take() waits on the injected Clock until its token is due, so tests move a
// FakeClock instead of measuring wall-clock time. Waiters are served in the order they
// asked (each reserves its token, the count may go below zero), so none starves.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>

#include "kube/clock.h"

namespace commgate::kube {

class TokenBucket {
 public:
  // qps <= 0: no limit (take() never waits). burst is at least 1.
  TokenBucket(double qps, int burst, std::shared_ptr<Clock> clock = steady_clock());

  // Takes a token, waiting until one is due. Returns how long it waited (on the clock).
  Clock::duration take() { return take(std::stop_token()).value(); }
  // The same, but a stop requested on `stop` ends the wait at once and gives the reserved
  // token back: then nullopt (a cancelled request is never sent).
  std::optional<Clock::duration> take(std::stop_token stop);
  // Takes a token only if one is there now.
  bool try_take();

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void refill(Clock::time_point now);  // with mu_ held

  const double qps_;
  const int burst_;
  const std::shared_ptr<Clock> clock_;
  std::mutex mu_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace commgate::kube
