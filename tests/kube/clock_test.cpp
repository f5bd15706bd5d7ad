// The fake clock the runtime's tests move by hand: a wait ends when fake time reaches its
// deadline or its condition holds, never because real time passed.
#include "kube/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/support/wait.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::wait_until;
using std::chrono::milliseconds;

// Waits on `clock` for `length` on its own thread; `finished` once the wait returned.
class Waiter {
 public:
  Waiter(Clock& clock, Clock::duration length) {
    thread_ = std::thread([this, &clock, length] {
      std::unique_lock lock(mu_);
      result_ = clock.wait_until(lock, cv_, clock.now() + length, [this] { return done_; });
      finished_ = true;
    });
  }
  ~Waiter() {
    end_early();
    thread_.join();
  }
  void end_early() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
  }
  bool finished() const { return finished_.load(); }
  bool result() const { return result_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::atomic<bool> finished_{false}, result_{false};
  std::thread thread_;
};

TEST(FakeClock, AWaitEndsWhenTimeIsAdvancedPastItsDeadline) {
  FakeClock clock;
  Waiter waiter(clock, milliseconds(500));
  ASSERT_TRUE(wait_until([&] { return clock.waiting() == 1; }));
  clock.advance(milliseconds(499));
  EXPECT_FALSE(wait_until([&] { return waiter.finished(); }, milliseconds(50)))
      << "ended 1 ms of fake time early";
  clock.advance(milliseconds(1));
  ASSERT_TRUE(wait_until([&] { return waiter.finished(); }));
  EXPECT_FALSE(waiter.result()) << "the deadline passed; the condition never held";
  EXPECT_EQ(clock.waits(), std::vector<Clock::duration>{milliseconds(500)});
  EXPECT_EQ(clock.waiting(), 0u);
}

TEST(FakeClock, AWaitEndsAtOnceWhenItsConditionHolds) {
  FakeClock clock;
  Waiter waiter(clock, std::chrono::hours(1));
  ASSERT_TRUE(wait_until([&] { return clock.waiting() == 1; }));
  waiter.end_early();
  ASSERT_TRUE(wait_until([&] { return waiter.finished(); }));
  EXPECT_TRUE(waiter.result());
  EXPECT_EQ(clock.now(), Clock::time_point{}) << "no time passed";
}

TEST(SteadyClock, WaitsForRealAndEndsEarlyOnItsCondition) {
  Waiter waiter(*steady_clock(), std::chrono::hours(1));
  waiter.end_early();
  ASSERT_TRUE(wait_until([&] { return waiter.finished(); }));
  EXPECT_TRUE(waiter.result());
}

}  // namespace
}  // namespace commgate::kube
