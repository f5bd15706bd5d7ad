// The admission handlers over real apiserver envelopes (testdata/) carrying TrainingJobs.
#include "webhook/handlers.h"

#include <gtest/gtest.h>

#include "tests/webhook/webhook_test_support.h"
#include "core/annotations.h"

namespace commgate::webhook {
namespace {

using commgate::testing::a_policy;
using commgate::testing::a_training_job;
using commgate::testing::test_now;
using nlohmann::json;
using namespace commgate::webhook::testing;

// At 1 GB/s with a 1000 ms step and 100M fp32 parameters the model predicts 9.9% exposed
// communication at 6 nodes and 12.6% at 8; at 10 GB/s 0.1% at 8.
constexpr double kSlowLink = 1.0;
constexpr double kFastLink = 10.0;

json bert(int nodes) {
  return a_training_job("bert").nodes(nodes).params(100e6).step_time_hint_ms(1000).json();
}

CommPolicy strict(EnforcementAction action = EnforcementAction::kDownsize) {
  return a_policy().named("strict").max_comm_share(0.10).action(action).build();
}

std::string annotation_of(const json& object, const char* key) {
  return object["metadata"].value("annotations", json::object()).value(key, "");
}

struct MutateCase {
  std::string name;
  json job;
  std::vector<CommPolicy> policies;
  std::vector<json> profiles;
  std::string want_decision;
  int want_nodes;
  bool want_suspend;
  std::string want_warning_part;  // "" : no warning
};

class MutateCreate : public ::testing::TestWithParam<MutateCase> {};

TEST_P(MutateCreate, PatchesTheJobAsDecided) {
  const MutateCase& c = GetParam();
  const auto request = a_create_of(c.job).parse();
  const auto response = handle_mutate(request, snapshot_of(c.policies, c.profiles), test_now());
  ASSERT_TRUE(response.allowed) << response.message;
  EXPECT_EQ(response.decision, c.want_decision);
  const json after = apply_patch(request.object, response);
  EXPECT_EQ(after["spec"]["numNodes"], c.want_nodes);
  EXPECT_EQ(after["spec"].value("suspend", false), c.want_suspend);
  EXPECT_EQ(after["spec"]["minNodes"], 1) << "defaulted";
  EXPECT_EQ(after["spec"]["model"]["gradientDtype"], "fp32") << "defaulted";
  EXPECT_EQ(annotation_of(after, annotation::kDecision), c.want_decision);
  if (c.want_warning_part.empty()) {
    EXPECT_TRUE(response.warnings.empty()) << response.warnings.front();
  } else {
    ASSERT_EQ(response.warnings.size(), 1u);
    EXPECT_NE(response.warnings[0].find(c.want_warning_part), std::string::npos)
        << response.warnings[0];
    EXPECT_EQ(response.warnings[0].find('\n'), std::string::npos) << "one line";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MutateCreate,
    ::testing::Values(
        MutateCase{"admits_within_policy",
                   bert(8),
                   {strict()},
                   {a_profile(kFastLink, test_now())},
                   "Admit",
                   8,
                   false,
                   ""},
        MutateCase{
            "admits_single_node_without_measurement", bert(1), {}, {}, "Admit", 1, false, ""},
        MutateCase{"gates_when_the_pool_was_never_measured",
                   bert(8),
                   {},
                   {},
                   "Gate",
                   8,
                   true,
                   "suspended until measured"},
        MutateCase{"gates_when_the_measurement_is_stale",
                   bert(8),
                   {strict()},
                   {a_profile(kFastLink, test_now() - std::chrono::hours(48))},
                   "Gate",
                   8,
                   true,
                   "older than measurementTTL"},
        MutateCase{"downsizes_to_largest_count_under_policy",
                   bert(8),
                   {strict()},
                   {a_profile(kSlowLink, test_now())},
                   "Downsize",
                   6,
                   false,
                   "spec.numNodes lowered from 8 to 6: at 8 nodes 12.6%"},
        MutateCase{"warns_and_admits_unchanged_under_warn",
                   bert(8),
                   {strict(EnforcementAction::kWarn)},
                   {a_profile(kSlowLink, test_now())},
                   "Warn",
                   8,
                   false,
                   "Admitted anyway"}),
    [](const auto& case_info) { return case_info.param.name; });

TEST(Mutate, RecordsTheRequestedCountWhenDownsizing) {
  const auto request = a_create_of(bert(8)).parse();
  const auto response = handle_mutate(
      request, snapshot_of({strict()}, {a_profile(kSlowLink, test_now())}), test_now());
  const json after = apply_patch(request.object, response);
  EXPECT_EQ(annotation_of(after, annotation::kRequestedNodes), "8");
  EXPECT_EQ(annotation_of(after, annotation::kReason), "OverPolicyDownsized");
}

TEST(Mutate, DropsAnEarlierRequestedCountWhenTheNewSpecPasses) {
  json old_job = bert(6);
  old_job["metadata"]["annotations"] = {{annotation::kRequestedNodes, "8"},
                                        {annotation::kDecision, "Downsize"}};
  json new_job = old_job;
  new_job["spec"]["numNodes"] = 4;
  const auto request = an_update_of(old_job, new_job).user("alice").parse();
  const auto response = handle_mutate(
      request, snapshot_of({strict()}, {a_profile(kSlowLink, test_now())}), test_now());
  const json after = apply_patch(request.object, response);
  EXPECT_FALSE(after["metadata"]["annotations"].contains(annotation::kRequestedNodes));
  EXPECT_EQ(annotation_of(after, annotation::kDecision), "Admit");
}

TEST(Mutate, LeavesADeniedJobForTheValidatingEndpoint) {
  const auto request = a_create_of(bert(8)).parse();
  const auto response = handle_mutate(
      request, snapshot_of({strict(EnforcementAction::kDeny)}, {a_profile(kSlowLink, test_now())}),
      test_now());
  EXPECT_TRUE(response.allowed);
  EXPECT_TRUE(response.patch.empty());
}

TEST(Mutate, LeavesAnInvalidJobForTheValidatingEndpoint) {
  const auto request = a_create_of(a_training_job().set("/spec/numNodes", "four").json()).parse();
  const auto response = handle_mutate(request, snapshot_of({}, {}), test_now());
  EXPECT_TRUE(response.allowed);
  EXPECT_TRUE(response.patch.empty());
}

TEST(Mutate, DoesNotDecideAgainWhenOnlyTheTemplateChanges) {
  json old_job = bert(8);
  json new_job = bert(8);
  new_job["spec"]["template"]["spec"]["containers"][0]["image"] = "train:2";
  const auto request = an_update_of(old_job, new_job).user("alice").parse();
  EXPECT_TRUE(handle_mutate(request, snapshot_of({}, {}), test_now()).patch.empty());
}

TEST(Mutate, RegatesAnUnsuspendWithoutMeasurement) {
  json old_job = bert(8);
  old_job["spec"]["suspend"] = true;
  const auto request = an_update_of(old_job, bert(8)).user("alice").parse();
  const auto response = handle_mutate(request, snapshot_of({}, {}), test_now());
  EXPECT_EQ(apply_patch(request.object, response)["spec"]["suspend"], true);
}

TEST(Mutate, LeavesTheOperatorsWritesAlone) {
  const auto request = a_create_of(bert(8)).user(kOperator).parse();
  EXPECT_TRUE(handle_mutate(request, snapshot_of({}, {}), test_now()).patch.empty());
}

TEST(Mutate, DecidesADryRunAsAnyOtherRequest) {
  // sideEffects: None, so a server-side dry run shows the user what would happen.
  const auto request = a_create_of(bert(8)).dry_run(true).parse();
  EXPECT_TRUE(request.dry_run);
  const auto response = handle_mutate(request, snapshot_of({}, {}), test_now());
  EXPECT_EQ(response.decision, "Gate");
}

TEST(Mutate, PassesScaleAndOtherResources) {
  const auto scale = an_update_of({{"spec", {{"replicas", 2}}}}, {{"spec", {{"replicas", 8}}}})
                         .resource("trainingjobs", "scale")
                         .kind("Scale")
                         .parse();
  EXPECT_TRUE(handle_mutate(scale, snapshot_of({}, {}), test_now()).patch.empty());
}

// --- validate -------------------------------------------------------------------------

struct ValidateCase {
  std::string name;
  ReviewBuilder review;
  std::vector<CommPolicy> policies;
  std::vector<json> profiles;
  bool want_allowed;
  int want_code;                  // when denied
  std::string want_message_part;  // when denied
};

class Validate : public ::testing::TestWithParam<ValidateCase> {};

TEST_P(Validate, AllowsOrDenies) {
  const ValidateCase& c = GetParam();
  const auto response =
      handle_validate(c.review.parse(), snapshot_of(c.policies, c.profiles), test_now());
  EXPECT_EQ(response.allowed, c.want_allowed) << response.message;
  if (!c.want_allowed) {
    EXPECT_EQ(response.code, c.want_code);
    EXPECT_NE(response.message.find(c.want_message_part), std::string::npos) << response.message;
  }
}

json suspended(json job) {
  job["spec"]["suspend"] = true;
  return job;
}
json annotated(json job, const char* key, const std::string& value) {
  job["metadata"]["annotations"][key] = value;
  return job;
}
json gated(json job) {
  return annotated(suspended(std::move(job)), annotation::kDecision, "Gate");
}
json bad_job() {
  return a_training_job()
      .set("/spec/numNodes", "four")
      .set("/spec/model/gradientDtype", "fp64")
      .json();
}
json scale(int replicas) {
  return {{"apiVersion", "autoscaling/v1"},
          {"kind", "Scale"},
          {"metadata", {{"name", "bert"}, {"namespace", "research"}}},
          {"spec", {{"replicas", replicas}}},
          {"status", {{"replicas", 2}}}};
}
ReviewBuilder a_scale(int from, int to) {
  auto r = an_update_of(scale(from), scale(to));
  r.resource("trainingjobs", "scale").kind("Scale");
  return r;
}
json comm_policy(json spec) {
  return {{"apiVersion", "commgate.io/v1alpha1"},
          {"kind", "CommPolicy"},
          {"metadata", {{"name", "p"}}},
          {"spec", std::move(spec)}};
}
ReviewBuilder a_policy_create(json spec) {
  auto r = a_create_of(comm_policy(std::move(spec)));
  r.resource("commpolicies").kind("CommPolicy");
  return r;
}

const auto kSlow = std::vector<json>{a_profile(kSlowLink, test_now())};
const auto kFast = std::vector<json>{a_profile(kFastLink, test_now())};
const auto kExempt = a_policy().named("strict").max_comm_share(0.10).exempt_user("carol").build();

INSTANTIATE_TEST_SUITE_P(
    Cases, Validate,
    ::testing::Values(
        ValidateCase{"admits_within_policy", a_create_of(bert(8)), {strict()}, kFast, true, 0, ""},
        ValidateCase{"admits_a_gated_create", a_create_of(suspended(bert(8))), {}, {}, true, 0, ""},
        ValidateCase{"denies_every_invalid_field_by_path",
                     a_create_of(bad_job()),
                     {},
                     {},
                     false,
                     422,
                     "spec.model.gradientDtype"},
        ValidateCase{"denies_with_the_numbers_under_deny",
                     a_create_of(bert(8)),
                     {strict(EnforcementAction::kDeny)},
                     kSlow,
                     false,
                     403,
                     "busbw 1 GB/s"},
        ValidateCase{"deny_message_names_the_largest_passing_count",
                     a_create_of(bert(8)),
                     {strict(EnforcementAction::kDeny)},
                     kSlow,
                     false,
                     403,
                     "The largest count that passes is 6 nodes"},
        ValidateCase{"denies_a_missing_policy_ref",
                     a_create_of(a_training_job().policy_ref("nope").json()),
                     {},
                     {},
                     false,
                     422,
                     "spec.policyRef.name"},
        ValidateCase{"denies_an_unsuspended_create_the_mutator_would_gate",
                     a_create_of(bert(8)),
                     {},
                     {},
                     false,
                     403,
                     "spec.suspend"},
        ValidateCase{"denies_an_over_policy_count_the_mutator_would_downsize",
                     a_create_of(bert(8)),
                     {strict()},
                     kSlow,
                     false,
                     403,
                     "spec.numNodes"},
        ValidateCase{"denies_a_user_unsuspending_a_gated_job",
                     an_update_of(gated(bert(8)), annotated(bert(8), annotation::kDecision, "Gate"))
                         .user("alice"),
                     {},
                     {},
                     false,
                     403,
                     "spec.suspend: must stay true"},
        ValidateCase{
            "lets_the_operator_unsuspend_a_gated_job",
            an_update_of(gated(bert(8)), annotated(bert(8), annotation::kDecision, "Admit"))
                .user(kOperator),
            {},
            {},
            true,
            0,
            ""},
        ValidateCase{"lets_an_exempt_user_unsuspend_a_gated_job",
                     an_update_of(gated(bert(8)), annotated(bert(8), annotation::kDecision, "Gate"))
                         .user("carol"),
                     {kExempt},
                     {},
                     true,
                     0,
                     ""},
        ValidateCase{
            "lets_a_user_unsuspend_once_the_pool_is_measured_within_policy",
            an_update_of(gated(bert(8)), annotated(bert(8), annotation::kDecision, "Admit"))
                .user("alice"),
            {strict()},
            kFast,
            true,
            0,
            ""},
        ValidateCase{
            "denies_a_user_editing_commgate_annotations",
            an_update_of(gated(bert(8)), annotated(gated(bert(8)), annotation::kDecision, "Admit"))
                .user("alice"),
            {},
            {},
            false,
            403,
            "metadata.annotations"},
        ValidateCase{
            "lets_the_operator_edit_commgate_annotations",
            an_update_of(gated(bert(8)), annotated(gated(bert(8)), annotation::kDecision, "Admit"))
                .user(kOperator),
            {},
            {},
            true,
            0,
            ""},
        ValidateCase{"allows_label_edits_of_a_running_job_even_if_now_over_policy",
                     an_update_of(bert(8), annotated(bert(8), "team", "nlp")).user("alice"),
                     {strict(EnforcementAction::kDeny)},
                     kSlow,
                     true,
                     0,
                     ""},
        ValidateCase{"allows_delete_with_object_null", a_delete_of(bert(8)), {}, {}, true, 0, ""},
        ValidateCase{"allows_a_scale_down", a_scale(8, 2).user("alice"), {}, {}, true, 0, ""},
        ValidateCase{"denies_a_scale_up_by_a_user",
                     a_scale(2, 8).user("alice"),
                     {},
                     {},
                     false,
                     403,
                     "change spec.numNodes instead"},
        ValidateCase{
            "lets_the_operator_scale_up", a_scale(2, 8).user(kOperator), {}, {}, true, 0, ""},
        ValidateCase{"lets_an_exempt_user_scale_up",
                     a_scale(2, 8).user("carol"),
                     {kExempt},
                     {},
                     true,
                     0,
                     ""},
        ValidateCase{"denies_a_scale_to_zero",
                     a_scale(2, 0).user("alice"),
                     {},
                     {},
                     false,
                     422,
                     "spec.replicas"},
        ValidateCase{"admits_a_valid_comm_policy",
                     a_policy_create({{"maxCommShare", 0.3}}),
                     {},
                     {},
                     true,
                     0,
                     ""},
        ValidateCase{"denies_a_comm_policy_by_field_path",
                     a_policy_create({{"maxCommShare", 1.5}, {"enforcementAction", "block"}}),
                     {},
                     {},
                     false,
                     422,
                     "spec.enforcementAction"}),
    [](const auto& case_info) { return case_info.param.name; });

TEST(Validate, DeniesAnUnknownResource) {
  const auto request = a_create_of(bert(8)).resource("pods").kind("Pod").parse();
  const auto response = handle_validate(request, snapshot_of({}, {}), test_now());
  EXPECT_FALSE(response.allowed);
  EXPECT_EQ(response.code, 400);
}

TEST(Validate, InvalidJobMessageNamesEveryField) {
  const auto response =
      handle_validate(a_create_of(bad_job()).parse(), snapshot_of({}, {}), test_now());
  EXPECT_NE(response.message.find("spec.numNodes"), std::string::npos) << response.message;
  EXPECT_NE(response.message.find("spec.model.gradientDtype"), std::string::npos);
}

}  // namespace
}  // namespace commgate::webhook
