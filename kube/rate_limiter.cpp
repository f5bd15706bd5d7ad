#include "kube/rate_limiter.h"

#include <algorithm>
#include <condition_variable>

namespace commgate::kube {

TokenBucket::TokenBucket(double qps, int burst, std::shared_ptr<Clock> clock)
    : qps_(qps),
      burst_(std::max(burst, 1)),
      clock_(std::move(clock)),
      tokens_(burst_),
      last_(clock_->now()) {}

void TokenBucket::refill(Clock::time_point now) {
  if (now <= last_) return;
  const double seconds = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min<double>(burst_, tokens_ + seconds * qps_);
  last_ = now;
}

bool TokenBucket::try_take() {
  if (qps_ <= 0) return true;
  std::lock_guard lock(mu_);
  refill(clock_->now());
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

std::optional<Clock::duration> TokenBucket::take(std::stop_token stop) {
  if (stop.stop_requested()) return std::nullopt;
  if (qps_ <= 0) return Clock::duration::zero();
  Clock::time_point due;
  Clock::time_point now;
  {
    std::lock_guard lock(mu_);
    now = clock_->now();
    refill(now);
    tokens_ -= 1;  // reserved: later callers queue behind this one
    if (tokens_ >= 0) return Clock::duration::zero();
    due = now + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(-tokens_ / qps_));
  }
  std::mutex wait_mu;
  std::condition_variable cv;
  std::stop_callback wake(stop, [&] {
    std::lock_guard lock(wait_mu);
    cv.notify_all();
  });
  bool stopped;
  {
    std::unique_lock wait_lock(wait_mu);
    stopped = clock_->wait_until(wait_lock, cv, due, [&] { return stop.stop_requested(); });
  }
  if (stopped) {
    std::lock_guard lock(mu_);
    tokens_ += 1;  // never used: given back to the callers that come later
    return std::nullopt;
  }
  return due - now;
}

}  // namespace commgate::kube
