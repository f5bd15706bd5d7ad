// How a probe result becomes a CommProfile's status: what the operator writes and
// `commgate profile --from-probe` prints, so that a decision from the profile equals the
// decision from the probe result itself. measurement_from_probe goes through the same
// records (core/measurement.h), so the two paths cannot drift apart (issue #9).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "core/comm_profile.h"
#include "core/probe_result.h"

namespace commgate {

// The link record of a probe result.
LinkRecord link_record_of(const ProbeResult& result);
// The compute records of a probe result's models (the first, then its additional ones),
// each holding what the decision uses: the phases scaled to the DDP step without
// communication when the probe ran that step (compute_profile_of), and the DDP step
// itself. Empty when the probe timed no compute.
std::vector<ComputeStepRecord> compute_records_of(const ProbeResult& result);

// True when two records describe the same model signature: parameters, gradient dtype,
// batch, optimizer and GPU. A new probe of a signature replaces the old record.
bool same_signature(const ComputeStepRecord& a, const ComputeStepRecord& b);

// Folds a probe result into a profile: replaces the link record and adds or replaces
// the compute record of each probed model signature (at most `max_compute_records`,
// oldest dropped first).
void record_probe_result(CommProfile& profile, const ProbeResult& result,
                         size_t max_compute_records = 16);

}  // namespace commgate
