// The decision: one pure function from (job, policy, measurement, requester, now) to
// admit / downsize / deny / warn / gate, with the predicted table and a message that
// quotes the measured numbers. The webhook, the operator and `commgate evaluate` all
// call it, so the three always agree.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/advice.h"
#include "core/comm_model.h"
#include "core/comm_policy.h"
#include "core/measurement.h"
#include "core/training_job.h"

namespace commgate {

enum class Action { kAdmit, kDownsize, kDeny, kWarn, kGate };
const char* to_string(Action a);

// Reason codes: CamelCase, stable, for status conditions, events and metrics labels.
namespace reason {
inline constexpr const char* kWithinPolicy = "WithinPolicy";
inline constexpr const char* kSingleNode = "SingleNode";
inline constexpr const char* kDownsized = "OverPolicyDownsized";
inline constexpr const char* kDenied = "OverPolicyDenied";
inline constexpr const char* kWarned = "OverPolicyWarned";
inline constexpr const char* kDryRun = "OverPolicyDryRun";
inline constexpr const char* kNoCountMeetsPolicy = "NoNodeCountMeetsPolicy";
inline constexpr const char* kNoMeasurement = "MeasurementMissing";
inline constexpr const char* kStaleMeasurement = "MeasurementStale";
inline constexpr const char* kNoCompute = "ComputeMeasurementMissing";
inline constexpr const char* kExempt = "Exempt";
inline constexpr const char* kInvalidSpec = "InvalidSpec";
// The request is more than CommPolicy maxExtrapolation times the probed node count.
inline constexpr const char* kExtrapolationTooFar = "ExtrapolationTooFar";
}  // namespace reason

// Who asks (AdmissionRequest.userInfo); empty for local evaluation.
struct Requester {
  std::string username;
  std::vector<std::string> groups;
  bool operator==(const Requester&) const = default;
};

struct DecisionInput {
  const TrainingJob* job = nullptr;
  const CommPolicy* policy = nullptr;
  const Measurement* measurement = nullptr;  // null: none for this pool
  Requester requester;
  TimePoint now{};
};

struct Decision {
  Action action = Action::kAdmit;
  std::string reason;   // one of reason::*
  std::string message;  // one or two sentences with the numbers
  int requested_nodes = 0;
  int admitted_nodes = 0;  // what may run (== requested unless downsized; 0 if denied)
  // What enforcement would have done, for dryrun (and for warn: what downsize would do).
  std::optional<Action> would_action;
  std::optional<int> would_admit_nodes;
  // Largest count in [1, requested] that meets the policy (0 when none).
  int largest_passing_nodes = 0;
  std::string policy_name;
  // The node count the measurement probed (0 without one).
  int nodes_probed = 0;
  // Predictions at the counts shown_node_counts() names, ascending; empty without a
  // usable measurement. A row with `measured` set is the probe's own DDP step at that
  // count; the others are the model, corrected by that step when the probe ran one.
  std::vector<StepPrediction> predictions;
  // The uncorrected model at the same counts, for audit; empty when nothing corrected it.
  std::vector<StepPrediction> raw_predictions;
  // The correction the probe's DDP step gave the model: the overlap and the effective
  // all-reduce bus bandwidth over the swept one (docs/model.md), and whether it
  // reproduces the step.
  std::optional<StepCalibration> correction;
  // Why the model is used uncorrected although the compute record holds a DDP step (it
  // ran on a link probed again since); empty otherwise. Exclusive with `correction`.
  std::string correction_not_applied;
  // What would make the requested count pass (core/advice.h), for a decision over the
  // policy at a count the measurement decides; empty otherwise. Never part of the verdict.
  std::vector<Advice> advice;

  const StepPrediction* prediction_for(int nodes) const;
};

// " The largest count that passes is 3 nodes.": the count a refusal offers (the pool check
// names its own cap in its place, core/job_decision.h).
std::string largest_passing_sentence(int nodes);

// What a calibration changed, for a decision's link line: "; the model uses the
// effective 0.3 GB/s its DDP step implies", "; the model hides 40% of what DDP's
// schedule would hide behind backward, as its DDP step implies", both, or "" when it
// changed nothing.
std::string calibration_note(double swept_busbw_bytes_per_s, double factor, double overlap,
                             double step_overhead_s = 0);
// The link line's note when the probe's DDP step was measured but not used (another
// process count's step on another link, or one faster than any overlap and bandwidth
// explain): the chart says the model is uncorrected, as the decision's message does.
inline constexpr const char* kUncalibratedNote = "; its DDP step is not used: the model as it is";

// Costs O(log numNodes) model evaluations plus the shown rows, whatever the gradient size
// and node count (issue #12: a job at the CRD's limits is decided in microseconds).
Decision decide(const DecisionInput& in);

// The node counts a decision shows (its predictions[], the CLI table, the status), in
// ascending order, all within [1, requested]: every count up to 16, then powers of two,
// and the requested, admitted, largest passing (and the first failing) and probed counts.
// At most about 35 rows for any request up to kMaxNodes.
std::vector<int> shown_node_counts(int requested, int admitted, int largest_passing,
                                   int nodes_probed);
inline constexpr int kAllCountsShownUpTo = 16;

// The model decide() evaluates for `job` on `m` (the link corrected by the probe's own DDP
// step where it ran one, and that step itself at the count it ran), at each of `counts`:
// for a chart of counts beyond the decision's rows (`commgate evaluate --plot`). At every
// count the decision shows, it equals the decision's prediction. Empty without m.compute.
std::vector<StepPrediction> predict_counts(const Measurement& m, const TrainingJobSpec& job,
                                           const std::vector<int>& counts);

// The largest count a measurement of `nodes_probed` nodes decides under `policy`:
// maxExtrapolation x the nodes probed. Beyond it decide() gates (ExtrapolationTooFar).
int64_t counts_decided(const CommPolicySpec& policy, int nodes_probed);

// True when a prediction meets the policy: comm share <= maxCommShare and, when set,
// scaling efficiency >= minScalingEfficiency. Exactly at the threshold passes.
bool meets_policy(const StepPrediction& p, const CommPolicySpec& policy);

// True when the requester is exempt under the policy.
bool is_exempt(const Requester& who, const Exemptions& exemptions);
// The exemption that matched ("user carol", "group ml-platform-admins", "service account
// ns/name"), "" when none did.
std::string exemption_of(const Requester& who, const Exemptions& exemptions);

// status.decision as the CRD stores it.
nlohmann::json decision_to_json(const Decision& d);

}  // namespace commgate
