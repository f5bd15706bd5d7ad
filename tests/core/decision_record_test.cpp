// The decision record (core/decision_record.h): its annotation round-trips, its spec hash
// covers every field decide() reads and nothing else, and check_against_record says what
// a later check must do with the object that carries it.
#include "core/decision_record.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "core/annotations.h"
#include "tests/support/builders.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using testing::a_training_job;
using testing::test_now;

DecisionRecord a_record() {
  DecisionRecord r;
  r.action = Action::kDownsize;
  r.admitted_nodes = 6;
  r.requested_nodes = 8;
  r.reason = reason::kDownsized;
  r.policy = {"strict", "41"};
  r.profile = ObjectRef{"pool-all", "7"};
  r.decided_at = std::chrono::time_point_cast<std::chrono::seconds>(test_now());
  r.spec_hash = decision_spec_hash(a_training_job().nodes(6).build().spec);
  return r;
}

TEST(DecisionRecord, RoundTripsThroughItsAnnotation) {
  DecisionRecord r = a_record();
  EXPECT_EQ(parse_decision_record(to_annotation(r)), r);
  r.action = Action::kGate;
  r.profile.reset();
  r.message = "no measurement of pool-all";
  EXPECT_EQ(parse_decision_record(to_annotation(r)), r);
  r.policy = {"default", ""};
  EXPECT_EQ(parse_decision_record(to_annotation(r)), r);
  r.requester = Requester{"carol", {"researchers", "system:authenticated"}};
  EXPECT_EQ(parse_decision_record(to_annotation(r)), r);
  r.requester = Requester{"system:serviceaccount:ml:ci", {}};
  EXPECT_EQ(parse_decision_record(to_annotation(r)), r);
}

TEST(DecisionRecord, IsCompactJson) {
  const std::string text = to_annotation(a_record());
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(text.find(": "), std::string::npos);
  EXPECT_LT(text.size(), 300u) << text;
  EXPECT_NE(text.find("\"action\":\"Downsize\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"policy\":{\"name\":\"strict\",\"resourceVersion\":\"41\"}"),
            std::string::npos)
      << text;
}

// The annotation as it was written before the string writer (#9): a JSON tree, dumped.
// The records on stored objects were written so; the bytes must not change.
std::string annotation_as_a_tree(const DecisionRecord& r) {
  auto ref = [](const ObjectRef& o) {
    nlohmann::json j = {{"name", o.name}};
    if (!o.resource_version.empty()) j["resourceVersion"] = o.resource_version;
    return j;
  };
  nlohmann::json j = {{"action", to_string(r.action)},
                      {"admittedNodes", r.admitted_nodes},
                      {"requestedNodes", r.requested_nodes},
                      {"reason", r.reason},
                      {"policy", ref(r.policy)}};
  if (r.profile) j["profile"] = ref(*r.profile);
  j["decidedAt"] = format_rfc3339(r.decided_at);
  j["specHash"] = r.spec_hash;
  if (!r.message.empty()) j["message"] = r.message;
  if (r.requester)
    j["requester"] = {{"username", r.requester->username}, {"groups", r.requester->groups}};
  return j.dump();
}

struct AnnotationCase {
  std::string name;
  std::function<void(DecisionRecord&)> change;
};

class AnnotationBytes : public ::testing::TestWithParam<AnnotationCase> {};

TEST_P(AnnotationBytes, AreTheTreesDump) {
  DecisionRecord r = a_record();
  GetParam().change(r);
  EXPECT_EQ(to_annotation(r), annotation_as_a_tree(r));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AnnotationBytes,
    ::testing::Values(AnnotationCase{"a_downsize_with_a_profile", [](auto&) {}},
                      AnnotationCase{
                          "a_gate_without_a_profile_with_its_message",
                          [](auto& r) {
                            r.action = Action::kGate;
                            r.profile.reset();
                            r.message = "no measurement (commgate looked for CommProfile pool-x)";
                          }},
                      AnnotationCase{"the_built_in_default_policy_has_no_resource_version",
                                     [](auto& r) {
                                       r.policy = {"default", ""};
                                     }},
                      AnnotationCase{"a_message_that_needs_escaping",
                                     [](auto& r) {
                                       r.action = Action::kDeny;
                                       r.message =
                                           "\"quoted\"\n\ttab \\ \x01 caf\xc3\xa9 \xe2\x89\xa4 30%";
                                     }},
                      AnnotationCase{"names_that_need_escaping",
                                     [](auto& r) {
                                       r.policy = {"p\"1", "4\\2"};
                                       r.profile = ObjectRef{"pool-\xc3\xa9", ""};
                                     }},
                      AnnotationCase{"a_gate_with_its_requester",
                                     [](auto& r) {
                                       r.action = Action::kGate;
                                       r.requester = Requester{"carol \"c\"", {"g1", "g\\2"}};
                                     }},
                      AnnotationCase{"a_denial_admits_zero_nodes",
                                     [](auto& r) {
                                       r.action = Action::kDeny;
                                       r.admitted_nodes = 0;
                                       r.requested_nodes = 10000;
                                     }}),
    [](const auto& param_info) { return param_info.param.name; });

TEST(SpecHash, OfTheStoredCountIsTheHashOfTheSpecWithThatCount) {
  TrainingJobSpec spec = a_training_job().nodes(8).build().spec;
  const std::string at_eight = decision_spec_hash(spec);
  EXPECT_EQ(decision_spec_hash(spec, 8), at_eight);
  const std::string at_six = decision_spec_hash(spec, 6);
  spec.num_nodes = 6;
  EXPECT_EQ(at_six, decision_spec_hash(spec));
  EXPECT_NE(at_six, at_eight);
}

TEST(DecisionRecord, AnnotationsAreWhatEveryDeciderWrites) {
  // /mutate and the operator both write these; /validate checks the first three agree
  // with the record in the fourth.
  const DecisionRecord r = a_record();
  const std::vector<std::pair<std::string, std::string>> want = {
      {annotation::kDecision, "Downsize"},
      {annotation::kReason, reason::kDownsized},
      {annotation::kRequestedNodes, "8"},
      {annotation::kDecisionRecord, to_annotation(r)}};
  EXPECT_EQ(decision_annotations(r), want);
}

TEST(DecisionRecord, AMalformedRecordCountsAsNone) {
  for (
      const std::string bad :
      {"", "null", "[]", "{", R"({"action":"Maybe"})",
       R"({"action":"Admit","admittedNodes":-1,"requestedNodes":1,"reason":"x","policy":{"name":"p"},"decidedAt":"2026-12-01T00:00:00Z","specHash":"0123456789abcdef"})",
       R"({"action":"Admit","admittedNodes":1,"requestedNodes":1,"reason":"x","policy":{"name":"p"},"decidedAt":"yesterday","specHash":"0123456789abcdef"})",
       R"({"action":"Admit","admittedNodes":1,"requestedNodes":1,"reason":"x","policy":{"name":"p"},"decidedAt":"2026-12-01T00:00:00Z","specHash":"short"})",
       R"({"action":"Gate","admittedNodes":1,"requestedNodes":1,"reason":"x","policy":{"name":"p"},"decidedAt":"2026-12-01T00:00:00Z","specHash":"0123456789abcdef","requester":"carol"})",
       R"({"action":"Gate","admittedNodes":1,"requestedNodes":1,"reason":"x","policy":{"name":"p"},"decidedAt":"2026-12-01T00:00:00Z","specHash":"0123456789abcdef","requester":{"groups":[1]}})"}) {
    std::string why;
    EXPECT_FALSE(parse_decision_record(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  TrainingJob job = a_training_job().build();
  job.metadata.annotations[annotation::kDecisionRecord] = "{oops";
  EXPECT_FALSE(decision_record_of(job));
}

// Every field decide() reads changes the hash; the others do not.
struct HashCase {
  std::string name;
  std::function<void(TrainingJobSpec&)> change;
  bool want_changed;
};
void PrintTo(const HashCase& c, std::ostream* os) {
  *os << c.name;
}

class SpecHash : public ::testing::TestWithParam<HashCase> {};

TEST_P(SpecHash, CoversWhatTheDecisionReads) {
  const TrainingJobSpec base = a_training_job().nodes(8).params(100e6).build().spec;
  TrainingJobSpec changed = base;
  GetParam().change(changed);
  EXPECT_EQ(decision_spec_hash(changed) != decision_spec_hash(base), GetParam().want_changed);
}

INSTANTIATE_TEST_SUITE_P(
    Fields, SpecHash,
    ::testing::Values(
        HashCase{"num_nodes", [](auto& s) { s.num_nodes = 7; }, true},
        HashCase{"min_nodes", [](auto& s) { s.min_nodes = 2; }, true},
        HashCase{"num_proc_per_node", [](auto& s) { s.num_proc_per_node = 8; }, true},
        HashCase{"node_selector", [](auto& s) { s.node_selector["pool"] = "a"; }, true},
        HashCase{"node_selector_key_value_boundary", [](auto& s) { s.node_selector["p"] = "oola"; },
                 true},
        HashCase{"policy_ref", [](auto& s) { s.policy_ref = "strict"; }, true},
        HashCase{"parameters", [](auto& s) { s.model.parameters += 1; }, true},
        HashCase{"gradient_dtype", [](auto& s) { s.model.gradient_dtype = "bf16"; }, true},
        HashCase{"torch_script", [](auto& s) { s.model.torch_script = "/m.pt"; }, true},
        HashCase{"input_shape",
                 [](auto& s) {
                   s.model.input_shape = {3, 224, 224};
                 },
                 true},
        HashCase{"batch_size", [](auto& s) { s.model.batch_size = 64; }, true},
        HashCase{"optimizer", [](auto& s) { s.model.optimizer = "sgd"; }, true},
        HashCase{"step_time_hint", [](auto& s) { s.model.step_time_hint_ms = 100; }, true},
        HashCase{"suspend_is_not_read", [](auto& s) { s.suspend = !s.suspend; }, false},
        HashCase{"the_template_is_not_read",
                 [](auto& s) { s.pod_template["spec"]["containers"][0]["image"] = "x:2"; }, false},
        HashCase{"tolerations_are_not_read",
                 [](auto& s) {
                   s.tolerations.push_back({{"operator", "Exists"}});
                 },
                 false},
        HashCase{"run_policy_is_not_read", [](auto& s) { s.run_policy.backoff_limit = 3; }, false}),
    [](const auto& param_info) { return param_info.param.name; });

TEST(SpecHash, IsStableAcrossProcessesAndBuilds) {
  // A literal: the webhook and the operator compare each other's hashes, so a change here
  // is a change of the record format (bump "commgate-spec-v1").
  TrainingJobSpec spec;
  spec.num_nodes = 4;
  spec.model.parameters = 350e6;
  EXPECT_EQ(decision_spec_hash(spec), decision_spec_hash(spec));
  EXPECT_EQ(decision_spec_hash(spec).size(), 16u);
  EXPECT_EQ(decision_spec_hash(spec), "242e4776add69b28");
}

struct VerdictCase {
  std::string name;
  Action action;
  int admitted;
  int spec_nodes;
  bool suspend;
  bool same_spec;
  RecordVerdict want;
};
void PrintTo(const VerdictCase& c, std::ostream* os) {
  *os << c.name;
}

class RecordCheck : public ::testing::TestWithParam<VerdictCase> {};

TEST_P(RecordCheck, SaysWhatTheObjectMayDo) {
  const VerdictCase& c = GetParam();
  TrainingJobSpec spec = a_training_job().nodes(c.spec_nodes).build().spec;
  spec.suspend = c.suspend;
  DecisionRecord r = a_record();
  r.action = c.action;
  r.admitted_nodes = c.admitted;
  r.spec_hash = decision_spec_hash(spec);
  if (!c.same_spec) spec.model.parameters *= 2;
  EXPECT_EQ(check_against_record(r, spec), c.want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RecordCheck,
    ::testing::Values(VerdictCase{"an_admitted_spec_holds", Action::kAdmit, 4, 4, false, true,
                                  RecordVerdict::kHolds},
                      VerdictCase{"a_downsized_spec_holds", Action::kDownsize, 2, 2, false, true,
                                  RecordVerdict::kHolds},
                      VerdictCase{"a_changed_spec_is_decided_again", Action::kAdmit, 4, 4, false,
                                  false, RecordVerdict::kSpecChanged},
                      VerdictCase{"a_gated_suspended_job_holds", Action::kGate, 4, 4, true, true,
                                  RecordVerdict::kHolds},
                      VerdictCase{"a_gated_job_may_not_run", Action::kGate, 4, 4, false, true,
                                  RecordVerdict::kUnsuspendedWhileGated},
                      VerdictCase{"a_denied_spec_stays_denied", Action::kDeny, 0, 4, false, true,
                                  RecordVerdict::kDenied},
                      VerdictCase{"a_count_other_than_admitted_is_refused", Action::kAdmit, 2, 4,
                                  false, true, RecordVerdict::kNodesDifferFromRecord}),
    [](const auto& param_info) { return param_info.param.name; });

// --- A spec change once the workload exists (newcomer trial C1) ---

TEST(DecisionFieldsChanged, NamesEveryFieldTheHashReads) {
  const TrainingJobSpec a = a_training_job("bert").nodes(2).build().spec;
  EXPECT_TRUE(decision_fields_changed(a, a).empty());
  TrainingJobSpec b = a;
  b.num_nodes = 4;
  b.model.parameters *= 2;
  b.model.optimizer = "adam";
  b.node_selector["pool"] = "b";
  b.policy_ref = "strict";
  EXPECT_EQ(decision_fields_changed(a, b),
            (std::vector<std::string>{"spec.numNodes", "spec.nodeSelector", "spec.policyRef.name",
                                      "spec.model.parameters", "spec.model.optimizer"}));
  // Not the decision's: suspend, the template.
  TrainingJobSpec c = a;
  c.suspend = !a.suspend;
  c.pod_template = {{"metadata", {{"labels", {{"x", "y"}}}}}};
  EXPECT_TRUE(decision_fields_changed(a, c).empty());
  // Every field the hash reads is named: a change of the hash is a change of a field.
  TrainingJobSpec d = a;
  d.model.step_time_hint_ms = 123;
  d.min_nodes = 2;
  d.num_proc_per_node = 8;
  d.model.batch_size = 7;
  d.model.gradient_dtype = "bf16";
  d.model.torch_script = "/m.pt";
  d.model.input_shape = {3, 224, 224};
  EXPECT_EQ(decision_fields_changed(a, d).size(), 7u);
}

TEST(WorkloadCreated, FromTheOperatorsStatus) {
  using Json = nlohmann::json;
  auto running_condition = [](const char* reason) {
    return Json::array({{{"type", "Running"}, {"status", "False"}, {"reason", reason}}});
  };
  EXPECT_FALSE(workload_created(Json()));
  EXPECT_FALSE(workload_created(Json::object()));
  EXPECT_FALSE(workload_created({{"phase", "Gated"}}));
  EXPECT_FALSE(workload_created({{"phase", "Admitted"}}));
  EXPECT_FALSE(workload_created({{"phase", "Failed"}}));  // e.g. ProbeFailed: nothing ran
  EXPECT_FALSE(
      workload_created({{"phase", "Admitted"}, {"conditions", running_condition("Suspended")}}));
  EXPECT_FALSE(workload_created(
      {{"phase", "Admitted"}, {"conditions", running_condition("PreviousWorkloadExists")}}));
  EXPECT_FALSE(workload_created(
      {{"phase", "Admitted"}, {"conditions", running_condition("WorkloadNameTaken")}}));
  EXPECT_TRUE(workload_created({{"phase", "Running"}}));
  EXPECT_TRUE(workload_created({{"phase", "Succeeded"}}));
  EXPECT_TRUE(
      workload_created({{"phase", "Admitted"}, {"conditions", running_condition("Pending")}}));
  EXPECT_TRUE(workload_created(
      {{"phase", "Failed"}, {"conditions", running_condition("BackoffLimitExceeded")}}));
}

TEST(SpecChangeNotApplied, SaysWhatToDo) {
  EXPECT_EQ(spec_change_not_applied_message(2, "Running", {"spec.numNodes"}),
            "the training Job already runs with 2 nodes; delete and resubmit the TrainingJob to "
            "change spec.numNodes");
  EXPECT_EQ(spec_change_not_applied_message(
                1, "Succeeded", {"spec.numNodes", "spec.model.parameters", "spec.nodeSelector"}),
            "the training Job already ran with 1 node; delete and resubmit the TrainingJob to "
            "change spec.numNodes, spec.model.parameters and spec.nodeSelector");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
