// When a failed probe of a pool is tried again: the policy's retryStrategy as delays
// (pure; the reconciler writes the time into status.nextProbeTime).
#pragma once

#include <chrono>

#include "core/comm_policy.h"

namespace commgate::op {

// The delay before probe retry `retry` (1 for the first retry): backoffBaseSeconds doubled
// with each retry, at most backoffMaxSeconds.
std::chrono::seconds probe_retry_delay(const RetryStrategy& strategy, int retry);

}  // namespace commgate::op
