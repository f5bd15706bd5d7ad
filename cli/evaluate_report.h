// Renders one evaluation for people (a table) or for programs (JSON).
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/scaling_chart.h"
#include "core/comm_policy.h"
#include "core/decision.h"
#include "core/measurement.h"
#include "core/training_job.h"

namespace commgate {

struct Evaluation {
  const TrainingJob* job = nullptr;
  const CommPolicy* policy = nullptr;
  const Measurement* measurement = nullptr;  // may be null
  Decision decision;
  std::string note;  // e.g. "measurement TTL not applied to a file"
  // How the policy was chosen, when it was chosen as the cluster would (--policy-dir):
  // "governs namespace nlp-a (3 CommPolicies in policies/)".
  std::string policy_chosen;
};

// Both show the decision's predictions[], the same rows (core's shown_node_counts), and
// say which counts they are.
void print_evaluation_table(const Evaluation& e, std::ostream& out);

// One row of a predictions table, as `commgate evaluate` and `kubectl commgate explain`
// both print it (one function, so the two read alike: issue #24 item 9).
struct PredictionRow {
  StepPrediction prediction;
  // "pass" or "over" the policy; "not decided" past maxExtrapolation x the nodes probed
  // (the policy decides none of those counts from this measurement: issue #24 item 8);
  // "-" when the policy could not be read.
  std::string verdict;
  std::string notes;  // "(measured)  <- requested"
};
std::string predictions_table(const std::vector<PredictionRow>& rows, const std::string& indent);
// The verdict of a row: `decided` is counts_decided(policy, nodes probed).
std::string prediction_verdict(const StepPrediction& p, const CommPolicySpec& policy,
                               int64_t decided);
inline constexpr const char* kNotDecidedVerdict = "not decided (past maxExtrapolation)";

// One advice line as the tables print it. The "link slower than its rate" advice compares
// the fitted bandwidth with the interface's rate: when the probe's fit is poor
// (`fit_poor`) that bandwidth is itself in doubt, and the line says so first (issue #24
// item 10).
std::string advice_line(const std::string& kind, const std::string& text, bool fit_poor);

// "namespace/name", with `default` for a job without a namespace (where kubectl puts it).
std::string job_name(const TrainingJob& job);

// The one JSON shape of a decision (issue #24 item 2): `commgate evaluate -o json`,
// `kubectl commgate evaluate -o json` and `kubectl commgate explain -o json` all start from
// it, and each adds only the keys of its own (docs/cli.md "One JSON shape"):
//   job          "namespace/name"
//   policy       the deciding CommPolicy's name ("" when the decision names none)
//   measurement  as status.measurement holds it (core/measurement.h measurement_to_json); null when
//   none decision     as status.decision holds it (core's decision_to_json): action, reason,
//                message, policy, requestedNodes, admittedNodes, predictions[] (empty when
//                none were made or told), advice[] ({kind, text}); null when undecided.
//                admittedNodes is null for a Gate (nothing is admitted until it is
//                decided again; status.decision keeps the count it would run at) and 0
//                for a Deny.
nlohmann::json decision_document(const std::string& job, nlohmann::json decision,
                                 const nlohmann::json& measurement);
// decision_document of `e`, with policyChosen, note, predictionsShown and scaling[].
nlohmann::json evaluation_to_json(const Evaluation& e);

// A probe's link fit marked poor without a note (an older probe, a hand-written
// CommProfile) would read "Caution: ." in the decision's message: the note then gives the
// fit's own numbers (issue #24 item 10).
void explain_poor_fit(Measurement& m);

// The scaling chart's rows (`commgate evaluate --plot`, and `scaling` in -o json): the model
// decide() used (core's predict_counts), at every count from 1 to max(8, 2 x requested,
// the probed count) but at most 64 (kScalingChartAllCountsUpTo), or to the request where
// that is more; a request past 64 gets the counts its predictions show (1-16, powers of
// two, the requested, admitted, largest passing and probed counts). Bars past 64 would be
// thinner than their labels. Empty when the decision made no predictions: no usable
// measurement (a Gate or onMissingMeasurement), one node, an exempt requester.
std::vector<ScalingPoint> scaling_points(const Evaluation& e);
inline constexpr int kScalingChartAllCountsUpTo = 64;

// The chart of `e`: scaling_points with the job, pool, link, policy and decision.
ScalingChart scaling_chart_of(const Evaluation& e);

// Which node counts a decision's predictions show, in words: "every count from 1 to 4",
// or, for a large request, "1-16, powers of two, and the requested (600), admitted (40),
// ... counts: 27 of 600".
std::string shown_counts_text(const Decision& d);

}  // namespace commgate
