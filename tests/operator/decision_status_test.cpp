// The decision as the TrainingJob shows it (operator/decision_status.h): the Event note
// with the numbers a researcher acts on, the phase each action leads to, and when a
// decision put in status.decision is new (counted on its policy) or the same again.
#include "operator/decision_status.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/significant_digits.h"
#include "operator/trainingjob_phases.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

Decision decided(Action action, int requested, int admitted) {
  Decision d;
  d.action = action;
  d.message = "the decision's message";
  d.policy_name = "team";
  d.requested_nodes = requested;
  d.admitted_nodes = admitted;
  return d;
}

Decision with_prediction(Decision d, int nodes, double share, double efficiency) {
  StepPrediction p;
  p.nodes = nodes;
  p.comm_share = share;
  p.scaling_efficiency = efficiency;
  d.predictions.push_back(p);
  return d;
}

CommPolicy policy(double max_share, std::optional<double> min_efficiency = std::nullopt) {
  CommPolicy p;
  p.metadata.name = "team";
  p.spec.max_comm_share = max_share;
  p.spec.min_scaling_efficiency = min_efficiency;
  return p;
}

struct NoteCase {
  std::string name;
  Decision decision;
  CommPolicy policy;
  std::string want_note;
};

void PrintTo(const NoteCase& c, std::ostream* os) {
  *os << c.name;
}

class DecisionEventNote : public ::testing::TestWithParam<NoteCase> {};

TEST_P(DecisionEventNote, says_what_was_decided_with_the_numbers) {
  const NoteCase& c = GetParam();
  EXPECT_EQ(decision_event_note(c.decision, c.policy, nullptr), c.want_note);
}

INSTANTIATE_TEST_SUITE_P(
    Notes, DecisionEventNote,
    ::testing::Values(
        NoteCase{"downsize_over_the_share_quotes_both_counts",
                 with_prediction(with_prediction(decided(Action::kDownsize, 4, 2), 4, 0.4512, 0.5),
                                 2, 0.2849, 0.8),
                 policy(0.30),
                 "downsized from 4 to 2 nodes: predicted communication share 0.45 > 0.30 at 4 "
                 "nodes, 0.28 at 2 nodes (CommPolicy team)"},
        NoteCase{"downsize_under_the_efficiency_floor_quotes_the_efficiency",
                 with_prediction(with_prediction(decided(Action::kDownsize, 4, 2), 4, 0.25, 0.6), 2,
                                 0.1, 0.8),
                 policy(0.30, 0.75),
                 "downsized from 4 to 2 nodes: predicted scaling efficiency 0.60 < 0.75 at 4 "
                 "nodes, 0.80 at 2 nodes (CommPolicy team)"},
        NoteCase{"downsize_without_predictions_names_the_counts_and_policy",
                 decided(Action::kDownsize, 4, 2), policy(0.30),
                 "downsized from 4 to 2 nodes (CommPolicy team)"},
        NoteCase{"admit_quotes_the_message", decided(Action::kAdmit, 4, 4), policy(0.30),
                 "admitted at 4 nodes: the decision's message"},
        NoteCase{"warn_says_over_policy", decided(Action::kWarn, 4, 4), policy(0.30),
                 "admitted at 4 nodes over policy: the decision's message"},
        NoteCase{"deny_quotes_the_message", decided(Action::kDeny, 4, 0), policy(0.30),
                 "denied: the decision's message"},
        NoteCase{"gate_says_it_waits_for_a_measurement", decided(Action::kGate, 4, 0), policy(0.30),
                 "suspended until measured: the decision's message"}),
    [](const ::testing::TestParamInfo<NoteCase>& param_info) { return param_info.param.name; });

TEST(DecisionStatus, each_action_leads_to_its_phase) {
  EXPECT_STREQ(decision_phase(Action::kAdmit), phase::kAdmitted);
  EXPECT_STREQ(decision_phase(Action::kWarn), phase::kAdmitted);
  EXPECT_STREQ(decision_phase(Action::kDownsize), phase::kDownsized);
  EXPECT_STREQ(decision_phase(Action::kDeny), phase::kRejected);
  EXPECT_STREQ(decision_phase(Action::kGate), phase::kGated);
  EXPECT_TRUE(admits(Action::kAdmit));
  EXPECT_TRUE(admits(Action::kWarn));
  EXPECT_TRUE(admits(Action::kDownsize));
  EXPECT_FALSE(admits(Action::kDeny));
  EXPECT_FALSE(admits(Action::kGate));
}

TEST(DecisionStatus, the_same_decision_again_is_not_counted_twice) {
  TrainingJobStatus status;
  std::optional<Decision> to_count;
  put_decision(status, decided(Action::kAdmit, 4, 4), nullptr, to_count);
  ASSERT_TRUE(to_count.has_value());
  EXPECT_EQ(status.to_json()["decision"]["action"], "Admit");

  to_count.reset();
  Decision again = decided(Action::kAdmit, 4, 4);
  again.message = "worded otherwise";  // not what identifies a decision
  put_decision(status, again, nullptr, to_count);
  EXPECT_FALSE(to_count.has_value());
  EXPECT_EQ(status.decision_message(""), "worded otherwise");

  put_decision(status, decided(Action::kDownsize, 4, 2), nullptr, to_count);
  EXPECT_TRUE(to_count.has_value());
}

TEST(DecisionStatus, a_webhook_record_stands_for_its_decision) {
  DecisionRecord r;
  r.action = Action::kDownsize;
  r.reason = reason::kDownsized;
  r.requested_nodes = 4;
  r.admitted_nodes = 2;
  const Decision d = decision_of_record(r);
  EXPECT_EQ(d.action, Action::kDownsize);
  EXPECT_EQ(d.admitted_nodes, 2);
  EXPECT_EQ(d.policy_name, kBuiltinPolicyName);  // the built-in policy has no name in the record
  EXPECT_EQ(d.message, "decided at admission by commgate's webhook");
  EXPECT_TRUE(d.predictions.empty());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

// Every number in `j` (recursively), as "path = value", that has more than 4 significant
// digits.
void long_numbers(const nlohmann::json& j, const std::string& path, std::vector<std::string>& out) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (round_significant(v) != v) out.push_back(path + " = " + j.dump());
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) long_numbers(v, path + "." + k, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      long_numbers(j[i], path + "[" + std::to_string(i) + "]", out);
  }
}

// Issue #21: kubectl describe tj showed `Compute Step Ms: 300.6000000000001` and
// `Scaling Efficiency: 0.12327323979910827`. What the status stores for people has at most
// 4 significant digits (the decision compared the unrounded values).
TEST(DecisionStatus, the_status_numbers_people_read_have_at_most_four_significant_digits) {
  Decision d = decided(Action::kDownsize, 3, 1);
  StepPrediction p;
  p.nodes = 3;
  p.step_s = 2.640973962199576;
  p.compute_s = 0.6763000000000001;
  p.allreduce_s = 1.96467396219957;
  p.exposed_comm_s = 1.96467396219957;
  p.comm_share = 0.7439182013598;
  p.speedup = 0.7682393045292274;
  p.scaling_efficiency = 0.25607976817640915;
  d.predictions.push_back(p);
  Measurement m;
  m.source = "CommProfile pool-x";
  m.link.busbw_bytes_per_s = 2.3231234567e6;
  m.link.latency_s = 123.456789e-6;
  ComputeProfile c;
  c.forward_s = 0.2001000000000001;
  c.backward_s = 0.4002;
  c.optimizer_s = 0.07600000000000001;
  m.compute = c;
  TrainingJobStatus typed;
  std::optional<Decision> to_count;
  put_decision(typed, d, &m, to_count);
  const json status = typed.to_json();
  std::vector<std::string> found;
  long_numbers(status, "status", found);
  EXPECT_TRUE(found.empty()) << ::testing::PrintToString(found);
  EXPECT_EQ(status["measurement"]["computeStepMs"], 676.3);
  EXPECT_EQ(status["decision"]["predictions"][0]["scalingEfficiency"], 0.2561);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
