// The work queue and its rate limiter on the fake clock: dedup, the dirty/processing
// rule, delays, per-key backoff and its cap, the overall token bucket, forget and
// shutdown. No test sleeps: time moves by FakeClock::advance.
#include "kube/work_queue.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/wait.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::wait_until;
using std::chrono::milliseconds;
using std::chrono::seconds;

class WorkQueueTest : public ::testing::Test {
 protected:
  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  WorkQueue queue_{clock_};

  // Takes every key ready now, in order (get() does not block while length() > 0).
  std::vector<std::string> drain() {
    std::vector<std::string> keys;
    while (queue_.length() > 0) keys.push_back(*queue_.get());
    return keys;
  }
};

struct DedupCase {
  std::string name;
  std::vector<std::string> adds;
  std::vector<std::string> want_order;
};

void PrintTo(const DedupCase& c, std::ostream* os) {
  *os << c.name;
}

class WorkQueueDedupTest : public WorkQueueTest, public ::testing::WithParamInterface<DedupCase> {};

TEST_P(WorkQueueDedupTest, HandsOutEachQueuedKeyOnceInFirstAddOrder) {
  for (const auto& key : GetParam().adds) queue_.add(key);
  EXPECT_EQ(queue_.length(), GetParam().want_order.size());
  EXPECT_EQ(drain(), GetParam().want_order);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WorkQueueDedupTest,
    ::testing::Values(
        DedupCase{"OneKeyAddedThriceIsQueuedOnce", {"ns/a", "ns/a", "ns/a"}, {"ns/a"}},
        DedupCase{"ARepeatKeepsItsFirstPlace", {"ns/a", "ns/b", "ns/a"}, {"ns/a", "ns/b"}},
        DedupCase{"DistinctKeysAllQueued", {"ns/a", "ns/b", "ns/c"}, {"ns/a", "ns/b", "ns/c"}},
        DedupCase{"NothingAddedNothingQueued", {}, {}}),
    [](const auto& test_case) { return test_case.param.name; });

TEST_F(WorkQueueTest, AKeyAddedWhileProcessedIsQueuedOnceWhenDone) {
  queue_.add("ns/a");
  ASSERT_EQ(queue_.get(), "ns/a");

  queue_.add("ns/a");
  queue_.add("ns/a");
  EXPECT_EQ(queue_.length(), 0u) << "a key held by a worker is not handed to another";
  EXPECT_EQ(queue_.ready_in("ns/a"), Clock::duration::zero());

  queue_.done("ns/a");
  EXPECT_EQ(drain(), std::vector<std::string>{"ns/a"});
  queue_.done("ns/a");
  EXPECT_EQ(queue_.length(), 0u) << "done without a new add queues nothing";
  EXPECT_EQ(queue_.ready_in("ns/a"), std::nullopt);
}

TEST_F(WorkQueueTest, ADelayedKeyBecomesReadyWhenTheFakeClockReachesItsTime) {
  queue_.add_after("ns/a", milliseconds(100));
  EXPECT_EQ(queue_.length(), 0u);
  EXPECT_EQ(queue_.delayed(), 1u);
  EXPECT_EQ(queue_.ready_in("ns/a"), milliseconds(100));

  clock_->advance(milliseconds(99));
  EXPECT_EQ(queue_.ready_in("ns/a"), milliseconds(1));

  clock_->advance(milliseconds(1));
  EXPECT_EQ(queue_.get(), "ns/a");
  EXPECT_EQ(queue_.delayed(), 0u);
}

TEST_F(WorkQueueTest, ADueDelayedKeyCountsInTheDepthBeforeAnyWorkerAsks) {
  queue_.add_after("ns/a", seconds(1));
  queue_.add_after("ns/b", seconds(2));
  clock_->advance(seconds(1));
  EXPECT_EQ(queue_.length(), 1u) << "all workers busy must not hide a due key from /metrics";
  EXPECT_EQ(queue_.delayed(), 1u);
}

TEST_F(WorkQueueTest, AKeyDelayedTwiceKeepsTheEarlierTime) {
  queue_.add_after("ns/a", seconds(10));
  queue_.add_after("ns/a", seconds(3));
  queue_.add_after("ns/a", seconds(20));
  EXPECT_EQ(queue_.delayed(), 1u);
  EXPECT_EQ(queue_.ready_in("ns/a"), seconds(3));
}

TEST_F(WorkQueueTest, AnEndlessDelaySaturatesInsteadOfWrappingAround) {
  clock_->advance(seconds(5));
  queue_.add_after("ns/a", Clock::duration::max());
  EXPECT_EQ(queue_.length(), 0u);
  EXPECT_EQ(queue_.delayed(), 1u);
  EXPECT_EQ(queue_.ready_in("ns/a"), Clock::time_point::max() - clock_->now());
}

TEST_F(WorkQueueTest, AZeroDelayQueuesAtOnce) {
  queue_.add_after("ns/a", Clock::duration::zero());
  EXPECT_EQ(queue_.length(), 1u);
}

TEST_F(WorkQueueTest, ABlockedGetWakesForAnAddAndForADelayThatPasses) {
  std::optional<std::string> got;
  std::thread worker([&] { got = queue_.get(); });
  ASSERT_TRUE(wait_until([&] { return clock_->waiting() > 0; }));
  queue_.add_after("ns/late", seconds(5));
  queue_.add_after("ns/soon", seconds(1));  // earlier than the deadline the worker had
  clock_->advance(seconds(1));
  worker.join();
  EXPECT_EQ(got, "ns/soon");

  std::thread second([&] { got = queue_.get(); });
  ASSERT_TRUE(wait_until([&] { return clock_->waiting() > 0; }));
  queue_.add("ns/now");
  second.join();
  EXPECT_EQ(got, "ns/now");
}

TEST(ControllerRateLimiterTest, PerKeyBackoffDoublesFromFiveMillisecondsAndCapsAt1000Seconds) {
  auto clock = std::make_shared<FakeClock>();
  ControllerRateLimiter limiter(clock);
  // 5 ms * 2^(n-1) for the n-th failure; 5 ms * 2^18 = 1310.72 s is over the cap.
  const std::vector<std::pair<int, Clock::duration>> want = {
      {1, milliseconds(5)},     {2, milliseconds(10)},      {3, milliseconds(20)},
      {10, milliseconds(2560)}, {18, milliseconds(655360)}, {19, seconds(1000)},
      {30, seconds(1000)},      {80, seconds(1000)}};
  int failure = 0;
  for (const auto& [nth, delay] : want) {
    Clock::duration got{};
    while (failure < nth) {
      got = limiter.when("ns/a");
      ++failure;
      clock->advance(seconds(1));  // keeps the bucket full: only the per-key term shows
    }
    EXPECT_EQ(got, delay) << "failure " << nth;
  }
  EXPECT_EQ(limiter.failures("ns/a"), 80);
  EXPECT_EQ(limiter.failures("ns/b"), 0) << "backoff is per key";
}

TEST(ControllerRateLimiterTest, TheBucketAllowsABurstOf100ThenTenPerSecond) {
  auto clock = std::make_shared<FakeClock>();
  ControllerRateLimiter limiter(clock);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(limiter.when("ns/k" + std::to_string(i)), milliseconds(5)) << "key " << i;
  }
  // First failures of new keys (5 ms each): the bucket's debt now sets the delay.
  EXPECT_EQ(limiter.when("ns/k100"), milliseconds(100));
  EXPECT_EQ(limiter.when("ns/k101"), milliseconds(200));

  clock->advance(seconds(1));  // 10 tokens back: the debt of 2 paid, 8 left
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(limiter.when("ns/j" + std::to_string(i)), milliseconds(5)) << "key " << i;
  }
  EXPECT_EQ(limiter.when("ns/j8"), milliseconds(100));

  clock->advance(seconds(3600));  // refills to the burst, never above it
  for (int i = 0; i < 100; ++i) limiter.forget("ns/k" + std::to_string(i));
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(limiter.when("ns/k" + std::to_string(i)), milliseconds(5));
  EXPECT_EQ(limiter.when("ns/k100"), milliseconds(100)) << "ns/k100's own backoff is 10 ms";
}

TEST_F(WorkQueueTest, ForgetResetsTheKeysBackoffToTheFirstStep) {
  queue_.add_rate_limited("ns/a");
  queue_.add_rate_limited("ns/a");
  queue_.add_rate_limited("ns/a");
  EXPECT_EQ(queue_.failures("ns/a"), 3);
  EXPECT_EQ(queue_.ready_in("ns/a"), milliseconds(5)) << "the first delay, still the earliest";

  queue_.forget("ns/a");
  EXPECT_EQ(queue_.failures("ns/a"), 0);
  clock_->advance(milliseconds(5));
  ASSERT_EQ(queue_.get(), "ns/a");
  queue_.done("ns/a");
  queue_.add_rate_limited("ns/a");
  EXPECT_EQ(queue_.ready_in("ns/a"), milliseconds(5));
}

TEST_F(WorkQueueTest, ShutdownWakesWaitersDropsDelayedKeysAndIgnoresLaterAdds) {
  std::vector<std::optional<std::string>> got(3, std::string("unset"));
  std::vector<std::thread> workers;
  for (size_t i = 0; i < got.size(); ++i) {
    workers.emplace_back([this, &got, i] { got[i] = queue_.get(); });
  }
  ASSERT_TRUE(wait_until([&] { return clock_->waiting() == 3; }));
  queue_.add_after("ns/delayed", seconds(1));

  queue_.shutdown();
  for (auto& worker : workers) worker.join();
  for (const auto& slot : got) EXPECT_EQ(slot, std::nullopt);
  EXPECT_TRUE(queue_.shutting_down());
  EXPECT_EQ(queue_.delayed(), 0u);

  queue_.add("ns/a");
  queue_.add_after("ns/b", seconds(1));
  queue_.add_rate_limited("ns/c");
  EXPECT_EQ(queue_.length(), 0u);
  EXPECT_EQ(queue_.delayed(), 0u);
  EXPECT_EQ(queue_.get(), std::nullopt) << "get after shutdown returns at once";
}

TEST_F(WorkQueueTest, ShutdownStopsHandingOutKeysStillQueued) {
  queue_.add("ns/a");
  queue_.shutdown();
  EXPECT_EQ(queue_.get(), std::nullopt);
}

}  // namespace
}  // namespace commgate::kube
