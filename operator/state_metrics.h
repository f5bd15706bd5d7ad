// Gauges of what the operator's caches hold, computed at scrape time (issue #21): the
// TrainingJobs by phase, how long the oldest gated job has waited, and each measured
// pool's link (bus bandwidth, latency) and the measurement's age, so that an admin can
// graph them and alert on them (a queue of gated jobs growing, a pool whose link got
// slower, a measurement that is not renewed). Pure: the caller passes what its caches
// hold.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"
#include "core/time_format.h"

namespace commgate::op {

// `prefix` + "_trainingjobs{phase}": every phase (Pending: no status yet) at 0 or more;
// "_gated_job_oldest_wait_seconds": since the oldest Gated or Probing job's creation (0
// when none waits); "_pool_busbw_gbps{pool}", "_pool_latency_us{pool}",
// "_pool_measurement_age_seconds{pool}" for each CommProfile with a link measurement.
std::string state_metrics_text(
    const std::vector<std::shared_ptr<const nlohmann::json>>& trainingjobs,
    const Snapshot& snapshot, TimePoint now, std::string_view prefix);

}  // namespace commgate::op
