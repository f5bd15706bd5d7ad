// operator/probe_retry.h: the delays before a failed probe of a pool is tried again.
#include "operator/probe_retry.h"

#include <gtest/gtest.h>

#include <chrono>

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using namespace std::chrono_literals;

TEST(ProbeRetryDelay, retry_delays_double_up_to_the_maximum) {
  const RetryStrategy s{5, 30, 100};
  EXPECT_EQ(probe_retry_delay(s, 1), 30s);
  EXPECT_EQ(probe_retry_delay(s, 2), 60s);
  EXPECT_EQ(probe_retry_delay(s, 3), 100s);
  EXPECT_EQ(probe_retry_delay(s, 60), 100s);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
