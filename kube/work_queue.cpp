#include "kube/work_queue.h"

#include <algorithm>

namespace commgate::kube {
namespace {

using Seconds = std::chrono::duration<double>;

// A get() wakes at least this often to look again: no wait has a deadline at the far end
// of the clock's range (where conversions may overflow).
constexpr auto kIdleWake = std::chrono::hours(1);

Clock::duration from_seconds(double s) {
  return std::chrono::round<Clock::duration>(Seconds(s));
}

}  // namespace

ControllerRateLimiter::ControllerRateLimiter(std::shared_ptr<Clock> clock,
                                             RateLimiterOptions options)
    : clock_(std::move(clock)),
      options_(options),
      tokens_(options.burst),
      refilled_at_(clock_->now()) {}

Clock::duration ControllerRateLimiter::when(const std::string& key) {
  std::lock_guard lock(mu_);
  return std::max(item_delay_locked(key), bucket_delay_locked());
}

Clock::duration ControllerRateLimiter::item_delay_locked(const std::string& key) {
  const int exponent = failures_[key]++;
  // base << exponent in integer ticks, capped before it can overflow.
  const auto base = options_.base_delay.count();
  const auto cap = options_.max_delay.count();
  if (exponent >= 62 || base > (cap >> exponent)) return options_.max_delay;
  return std::min(Clock::duration(base << exponent), options_.max_delay);
}

Clock::duration ControllerRateLimiter::bucket_delay_locked() {
  const auto now = clock_->now();
  const double elapsed = Seconds(now - refilled_at_).count();
  tokens_ = std::min(options_.burst, tokens_ + elapsed * options_.qps);
  refilled_at_ = now;
  tokens_ -= 1;
  if (tokens_ >= 0) return Clock::duration::zero();
  return from_seconds(-tokens_ / options_.qps);
}

void ControllerRateLimiter::forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int ControllerRateLimiter::failures(const std::string& key) const {
  std::lock_guard lock(mu_);
  const auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

WorkQueue::WorkQueue(std::shared_ptr<Clock> clock, RateLimiterOptions options)
    : clock_(std::move(clock)), limiter_(clock_, options) {}

WorkQueue::~WorkQueue() {
  shutdown();
}

void WorkQueue::add(const std::string& key) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  add_locked(key);
}

void WorkQueue::add_locked(const std::string& key) {
  if (!dirty_.insert(key).second) return;   // already queued, or already to be requeued
  if (processing_.count(key) != 0) return;  // queued again by done()
  queue_.push_back(key);
  ++changes_;
  cv_.notify_all();
}

void WorkQueue::add_after(const std::string& key, Clock::duration delay) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  if (delay <= Clock::duration::zero()) {
    add_locked(key);
    return;
  }
  const auto now = clock_->now();
  // Saturates: a reconciler's "requeue_after(a very long time)" must not wrap around.
  const auto at = delay >= Clock::time_point::max() - now ? Clock::time_point::max() : now + delay;
  const auto known = delayed_at_.find(key);
  if (known != delayed_at_.end()) {
    if (known->second <= at) return;  // the earlier time wins
    delayed_.erase({known->second, key});
  }
  delayed_.insert({at, key});
  delayed_at_[key] = at;
  ++changes_;  // a get() waiting for a later deadline looks again
  cv_.notify_all();
}

void WorkQueue::add_rate_limited(const std::string& key) {
  // The limiter counts the failure even after shutdown, as client-go's; add_after ignores
  // the key then.
  add_after(key, limiter_.when(key));
}

void WorkQueue::forget(const std::string& key) {
  limiter_.forget(key);
}

int WorkQueue::failures(const std::string& key) const {
  return limiter_.failures(key);
}

void WorkQueue::promote_ready_locked() {
  const auto now = clock_->now();
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    const std::string key = delayed_.begin()->second;
    delayed_.erase(delayed_.begin());
    delayed_at_.erase(key);
    add_locked(key);
  }
}

std::optional<std::string> WorkQueue::get() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (shutting_down_) return std::nullopt;
    promote_ready_locked();
    if (!queue_.empty()) {
      std::string key = std::move(queue_.front());
      queue_.pop_front();
      dirty_.erase(key);
      processing_.insert(key);
      return key;
    }
    const auto idle_wake = clock_->now() + kIdleWake;
    const auto deadline =
        delayed_.empty() ? idle_wake : std::min(idle_wake, delayed_.begin()->first);
    const auto seen = changes_;
    clock_->wait_until(lock, cv_, deadline, [&] { return shutting_down_ || changes_ != seen; });
  }
}

void WorkQueue::done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) != 0 && !shutting_down_) {
    queue_.push_back(key);
    ++changes_;
    cv_.notify_all();
  }
}

void WorkQueue::shutdown() {
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    delayed_.clear();
    delayed_at_.clear();
  }
  cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::length() {
  std::lock_guard lock(mu_);
  promote_ready_locked();
  return queue_.size();
}

size_t WorkQueue::delayed() {
  std::lock_guard lock(mu_);
  promote_ready_locked();
  return delayed_.size();
}

std::optional<Clock::duration> WorkQueue::ready_in(const std::string& key) const {
  std::lock_guard lock(mu_);
  if (dirty_.count(key) != 0) return Clock::duration::zero();
  const auto it = delayed_at_.find(key);
  if (it == delayed_at_.end()) return std::nullopt;
  return std::max(Clock::duration::zero(), it->second - clock_->now());
}

}  // namespace commgate::kube
