// The work queue between the informer and the runner (STYLE.md "The shape of a
// controller"), modelled on client-go's util/workqueue: requests carry only an object's
// key, and reconcile reads the current state, so a key queued twice is worth one
// reconcile.
//
// Modelled (client-go's Type + delaying queue + rate-limiting queue):
// - Dedup: a key added while queued is not queued twice. A key added while a worker
//   holds it (between get() and done()) is marked dirty and queued once at done(), so
//   one key is never reconciled by two workers at once.
// - Delays: add_after(key, d) queues the key when d has passed on the clock; a key
//   waiting twice keeps its earliest time.
// - Backoff: add_rate_limited(key) waits max(per-key exponential, overall token bucket)
//   as client-go's DefaultControllerRateLimiter: base_delay * 2^failures capped at
//   max_delay (5 ms -> 1000 s), and a bucket of `burst` tokens refilled at `qps`
//   (10 qps, burst 100). forget(key) resets the key's failures (not the bucket).
// Shortcut: shutdown() stops handing out keys at once (get() returns nullopt even with
// keys queued) and drops delayed keys: a stopping controller finishes what it holds and
// the next one lists everything again. client-go's ShutDown drains the queue instead.
//
// Thread contract: every method may be called from any thread. All waits go through
// the Clock (FakeClock in tests).
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "kube/clock.h"

namespace commgate::kube {

struct RateLimiterOptions {
  Clock::duration base_delay = std::chrono::milliseconds(5);  // first retry
  Clock::duration max_delay = std::chrono::seconds(1000);     // cap of the per-key backoff
  double qps = 10;                                            // overall bucket refill rate
  double burst = 100;                                         // overall bucket size
};

// client-go's MaxOf(ItemExponentialFailureRateLimiter, BucketRateLimiter). Thread-safe.
class ControllerRateLimiter {
 public:
  ControllerRateLimiter(std::shared_ptr<Clock> clock, RateLimiterOptions options = {});
  // How long `key` waits before its next try; counts one more failure for it and takes
  // one token from the bucket (which may go into debt, as golang.org/x/time/rate's
  // Reserve: the wait then pays it back).
  Clock::duration when(const std::string& key);
  void forget(const std::string& key);
  // Failures counted for `key` since it was last forgotten.
  int failures(const std::string& key) const;

 private:
  Clock::duration item_delay_locked(const std::string& key);
  Clock::duration bucket_delay_locked();

  std::shared_ptr<Clock> clock_;
  RateLimiterOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, int> failures_;
  double tokens_;
  Clock::time_point refilled_at_;
};

class WorkQueue {
 public:
  explicit WorkQueue(std::shared_ptr<Clock> clock, RateLimiterOptions options = {});
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Ignored after shutdown().
  void add(const std::string& key);
  void add_after(const std::string& key, Clock::duration delay);
  void add_rate_limited(const std::string& key);
  void forget(const std::string& key);
  int failures(const std::string& key) const;

  // Blocks until a key is ready, then hands it to the caller until done(key). nullopt
  // once shut down.
  std::optional<std::string> get();
  void done(const std::string& key);

  // Wakes every get() (they return nullopt); later adds are ignored.
  void shutdown();
  bool shutting_down() const;

  // Keys ready and waiting for a worker (client-go's depth metric), delayed keys whose
  // time has passed included: they move to the queue here, not only when a worker asks.
  size_t length();
  // Keys waiting for their delay to pass.
  size_t delayed();
  // When `key` becomes ready from now: zero if queued (or dirty while processed), the
  // time left if delayed, nullopt if the queue does not hold it. For tests and logs.
  std::optional<Clock::duration> ready_in(const std::string& key) const;

 private:
  void add_locked(const std::string& key);
  void promote_ready_locked();

  std::shared_ptr<Clock> clock_;
  ControllerRateLimiter limiter_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;       // queued, or to queue again at done()
  std::unordered_set<std::string> processing_;  // between get() and done()
  std::set<std::pair<Clock::time_point, std::string>> delayed_;  // by ready time
  std::unordered_map<std::string, Clock::time_point> delayed_at_;
  unsigned long changes_ = 0;  // bumped by every add: a waiting get() looks again
  bool shutting_down_ = false;
};

}  // namespace commgate::kube
