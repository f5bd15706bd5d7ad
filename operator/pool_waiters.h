// Which TrainingJobs a pool's probe wakes (pure): the operator process enqueues them when
// a probe Job or pod of the pool, or the pool's CommProfile, changes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate::op {

// The keys ("namespace/name", sorted) of the TrainingJobs in `trainingjobs` (as read from
// the API server or a cache) that wait on `pool`: suspended (gated, probing, or waiting
// for a retry) and pool_name(spec.nodeSelector) == pool. The process enqueues them when a
// probe Job or pod of that pool (label commgate.io/pool) changes, and when the pool's
// CommProfile changes.
std::vector<std::string> trainingjobs_waiting_on_pool(
    const std::vector<nlohmann::json>& trainingjobs, const std::string& pool);

}  // namespace commgate::op
