// The client-side token bucket on the fake clock: a burst passes at once, then one
// request per 1/qps, waiters queue in order, and idle time refills up to the burst only.
#include "kube/rate_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <stop_token>
#include <thread>

#include "tests/support/wait.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::wait_until;
using std::chrono::milliseconds;

TEST(TokenBucket, ABurstPassesAtOnceThenOneTokenPerOneOverQps) {
  auto clock = std::make_shared<FakeClock>();
  TokenBucket bucket(/*qps=*/10, /*burst=*/3, clock);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.take(), Clock::duration::zero()) << "take " << i;
  EXPECT_FALSE(bucket.try_take()) << "the burst is spent";

  std::atomic<bool> taken{false};
  std::thread t([&] {
    bucket.take();
    taken = true;
  });
  ASSERT_TRUE(wait_until([&] { return clock->waiting() == 1; }));
  clock->advance(milliseconds(99));
  EXPECT_FALSE(wait_until([&] { return taken.load(); }, milliseconds(30)))
      << "a token came 1 ms early";
  clock->advance(milliseconds(1));
  ASSERT_TRUE(wait_until([&] { return taken.load(); }));
  t.join();
  EXPECT_EQ(clock->waits(), std::vector<Clock::duration>{milliseconds(100)});
}

TEST(TokenBucket, WaitersReserveTokensInTurnSoTheSecondWaitsTwice) {
  auto clock = std::make_shared<FakeClock>();
  TokenBucket bucket(/*qps=*/20, /*burst=*/1, clock);
  bucket.take();
  std::atomic<int> taken{0};
  std::thread first([&] {
    bucket.take();
    ++taken;
  });
  ASSERT_TRUE(wait_until([&] { return clock->waiting() == 1; }));
  std::thread second([&] {
    bucket.take();
    ++taken;
  });
  ASSERT_TRUE(wait_until([&] { return clock->waiting() == 2; }));
  clock->advance(milliseconds(50));
  ASSERT_TRUE(wait_until([&] { return taken.load() == 1; }));
  clock->advance(milliseconds(50));
  ASSERT_TRUE(wait_until([&] { return taken.load() == 2; }));
  first.join();
  second.join();
  EXPECT_EQ(clock->waits(), (std::vector<Clock::duration>{milliseconds(50), milliseconds(100)}));
}

TEST(TokenBucket, IdleTimeRefillsUpToTheBurstOnly) {
  auto clock = std::make_shared<FakeClock>();
  TokenBucket bucket(/*qps=*/10, /*burst=*/2, clock);
  EXPECT_TRUE(bucket.try_take());
  EXPECT_TRUE(bucket.try_take());
  EXPECT_FALSE(bucket.try_take());
  clock->advance(std::chrono::hours(1));
  EXPECT_TRUE(bucket.try_take());
  EXPECT_TRUE(bucket.try_take());
  EXPECT_FALSE(bucket.try_take()) << "an hour idle is still a burst of 2";
  clock->advance(milliseconds(100));
  EXPECT_TRUE(bucket.try_take());
}

TEST(TokenBucket, AStopEndsTheWaitAtOnceAndGivesTheTokenBack) {
  auto clock = std::make_shared<FakeClock>();
  TokenBucket bucket(/*qps=*/1, /*burst=*/1, clock);
  bucket.take();
  std::stop_source stop;
  std::atomic<bool> returned{false};
  std::optional<Clock::duration> waited = Clock::duration::zero();
  std::thread t([&] {
    waited = bucket.take(stop.get_token());
    returned = true;
  });
  ASSERT_TRUE(wait_until([&] { return clock->waiting() == 1; }));
  stop.request_stop();
  ASSERT_TRUE(wait_until([&] { return returned.load(); })) << "no fake time passed";
  t.join();
  EXPECT_FALSE(waited.has_value());
  clock->advance(std::chrono::seconds(1));
  EXPECT_TRUE(bucket.try_take()) << "the stopped waiter's token was given back";
  EXPECT_FALSE(bucket.take(stop.get_token()).has_value()) << "stopped before asking";
}

TEST(TokenBucket, ZeroQpsMeansNoLimit) {
  auto clock = std::make_shared<FakeClock>();
  TokenBucket bucket(/*qps=*/0, /*burst=*/1, clock);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(bucket.take(), Clock::duration::zero());
  EXPECT_TRUE(clock->waits().empty());
}

}  // namespace
}  // namespace commgate::kube
