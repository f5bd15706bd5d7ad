// The time the controller runtime waits on (backoff, and later the work queue's delays
// and the leader election's lease), behind one interface so tests move time by hand
// instead of sleeping and asserting wall-clock durations (STYLE.md: inject a clock).
//
// A wait is a condition-variable wait with a deadline on this clock: it returns when the
// deadline has passed or `done()` holds, whichever is first, and the waiter's own
// notify (stop()) still wakes it at once. Monotonic time: wall-clock jumps never shorten
// or stretch a backoff.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace commgate::kube {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;
  virtual time_point now() const = 0;
  // With `lock` held on the mutex `cv` is used with, as condition_variable::wait_until.
  // Returns done().
  virtual bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                          time_point deadline, const std::function<bool()>& done) = 0;
};

// std::chrono::steady_clock. Shared: it has no state.
std::shared_ptr<Clock> steady_clock();

// Time that moves only when advance() is called. Waits block until the fake time reaches
// their deadline (or done() holds); tests read what was waited for with waits() and
// wait for a waiter with waiting(). A waiter looks at the fake time every millisecond
// of real time (and at once when its own condition variable is notified), so advance()
// needs no access to the waiters' mutexes.
class FakeClock : public Clock {
 public:
  time_point now() const override;
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                  time_point deadline, const std::function<bool()>& done) override;

  void advance(duration d);
  // Waits in progress now.
  size_t waiting() const;
  // Every wait asked for, as its length from the time it began, in order.
  std::vector<duration> waits() const;

 private:
  mutable std::mutex mu_;  // taken after a waiter's own mutex, never before
  time_point now_{};       // starts at the steady clock's epoch; only differences matter
  size_t waiting_ = 0;
  std::vector<duration> waits_;
};

}  // namespace commgate::kube
