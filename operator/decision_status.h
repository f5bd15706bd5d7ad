// A decision as the TrainingJob shows it (pure): status.decision and status.measurement,
// the phase it leads to, and the note of its Event.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/comm_policy.h"
#include "core/decision.h"
#include "core/decision_record.h"
#include "core/measurement.h"
#include "operator/trainingjob_status.h"

namespace commgate::op {

// The Event note of a decision: "downsized from 4 to 2 nodes: predicted communication
// share 0.62 > 0.30 at 4 nodes, 0.24 at 2 nodes (CommPolicy default; measured all-reduce
// busbw 0.118 GB/s)", "admitted at 4 nodes: ...", "denied: <the decision's message>".
std::string decision_event_note(const Decision& d, const CommPolicy& policy,
                                const Measurement* measurement);

// The gate reasons a probe can lift (no, stale or too small a measurement).
bool is_measurement_gate(const std::string& why);

// The phase a decided job is in before its training runs (Admitted, Downsized, Rejected,
// Gated).
const char* decision_phase(commgate::Action action);

// Admit, Downsize and Warn let the job run.
bool admits(commgate::Action action);

// A Decision standing for a record that the webhook wrote (no predictions).
Decision decision_of_record(const DecisionRecord& record);

// Puts decision `d` in status.decision (and the measurement it used in
// status.measurement); sets `to_count` when it is a new decision (another action, reason,
// node counts or policy than the one there), to be counted on its policy once written.
void put_decision(TrainingJobStatus& status, const Decision& d, const Measurement* m,
                  std::optional<Decision>& to_count);

}  // namespace commgate::op
