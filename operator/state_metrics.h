// Gauges of the TrainingJobs in the operator's cache, computed at scrape time (issue #21):
// how many are in each phase, and how long the oldest gated one has waited, so that an
// admin can graph them and alert on a queue that does not move. (Each measured pool's
// link and age are the measurement controller's gauges, operator/measurement_reconciler.h.)
// Pure: the caller passes what its cache holds.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/time_format.h"

namespace commgate::op {

// `prefix` + "_trainingjobs{phase}": every phase (Pending: no status yet) at 0 or more;
// "_gated_job_oldest_wait_seconds": since the oldest Gated or Probing job's creation (0
// when none waits).
std::string state_metrics_text(
    const std::vector<std::shared_ptr<const nlohmann::json>>& trainingjobs, TimePoint now,
    std::string_view prefix);

}  // namespace commgate::op
