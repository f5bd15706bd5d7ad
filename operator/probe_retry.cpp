#include "operator/probe_retry.h"

#include <algorithm>
#include <cstdint>

namespace commgate::op {

std::chrono::seconds probe_retry_delay(const RetryStrategy& s, int retry) {
  const int64_t max = std::max(1, s.backoff_max_seconds);
  int64_t delay = std::max(1, s.backoff_base_seconds);
  for (int i = 1; i < retry && delay < max; ++i) delay *= 2;
  return std::chrono::seconds(std::min(delay, max));
}

}  // namespace commgate::op
