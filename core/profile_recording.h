// How a probe result becomes a CommProfile's status: what the operator writes and
// `commgate profile --from-probe` prints, so that a decision from the profile equals the
// decision from the probe result itself.
#pragma once

#include <cstddef>

#include "core/comm_profile.h"
#include "core/probe_result.h"

namespace commgate {

// Folds a probe result into a profile: replaces the link record and adds or replaces
// the compute record of the probed model signature (at most `max_compute_records`,
// oldest dropped first).
void record_probe_result(CommProfile& profile, const ProbeResult& result,
                         size_t max_compute_records = 16);

}  // namespace commgate
