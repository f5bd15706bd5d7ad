// The admission handlers over real apiserver envelopes (testdata/) carrying TrainingJobs.
#include "webhook/handlers.h"

#include <gtest/gtest.h>

#include "core/annotations.h"
#include "core/decision_record.h"
#include "core/job_decision.h"
#include "server/record_signer.h"
#include "tests/webhook/webhook_test_support.h"

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

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

// Records signed with a key (--decision-key-file), as the chart runs the webhook.
WebhookConfig with_a_decision_key() {
  WebhookConfig config;
  config.records = std::make_shared<server::RecordSigner>(std::string(32, 'k'));
  return config;
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
    // The verdict's line, then for a decision over the policy one line of advice each
    // (issue #24: link, compression, batch, largest count).
    ASSERT_GE(response.warnings.size(), 1u);
    EXPECT_NE(response.warnings[0].find(c.want_warning_part), std::string::npos)
        << response.warnings[0];
    const bool over = c.want_decision == "Downsize" || c.want_decision == "Warn";
    EXPECT_EQ(response.warnings.size(), over ? 5u : 1u);
    for (size_t i = 1; i < response.warnings.size(); ++i)
      EXPECT_EQ(response.warnings[i].rfind("commgate: to run 8 nodes: ", 0), 0u)
          << response.warnings[i];
    for (const auto& w : response.warnings)
      EXPECT_EQ(w.find('\n'), std::string::npos) << "one line: " << w;
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
                   "spec.numNodes lowered from 8 to 6: at 8 nodes 12.2%"},
        MutateCase{"warns_and_admits_unchanged_under_warn",
                   bert(8),
                   {strict(EnforcementAction::kWarn)},
                   {a_profile(kSlowLink, test_now())},
                   "Warn",
                   8,
                   false,
                   "Admitted anyway"}),
    [](const auto& case_info) { return case_info.param.name; });

// Issue #20: an exempt submission over the limit said nothing of it. It is admitted as
// requested and told what the policy would have done without the exemption; within the
// policy it is told nothing.
TEST(Mutate, TellsAnExemptRequesterWhatThePolicyWouldHaveDone) {
  const CommPolicy exempt =
      a_policy().named("strict").max_comm_share(0.10).exempt_user("carol").build();
  const auto request = a_create_of(bert(8)).user("carol").parse();
  auto response =
      handle_mutate(request, snapshot_of({exempt}, {a_profile(kSlowLink, test_now())}), test_now());
  EXPECT_EQ(response.decision, "Exempt");
  EXPECT_EQ(apply_patch(request.object, response)["spec"]["numNodes"], 8);
  ASSERT_EQ(response.warnings.size(), 1u);
  EXPECT_NE(response.warnings[0].find("user carol is exempt under CommPolicy strict; without the "
                                      "exemption it would be downsized to 6 nodes: "),
            std::string::npos)
      << response.warnings[0];
  response =
      handle_mutate(request, snapshot_of({exempt}, {a_profile(kFastLink, test_now())}), test_now());
  EXPECT_EQ(response.decision, "Exempt");
  EXPECT_TRUE(response.warnings.empty()) << response.warnings.front();
}

TEST(Mutate, RecordsTheRequestedCountWhenDownsizing) {
  const auto request = a_create_of(bert(8)).parse();
  const auto response = handle_mutate(
      request, snapshot_of({strict()}, {a_profile(kSlowLink, test_now())}), test_now());
  const json after = apply_patch(request.object, response);
  EXPECT_EQ(annotation_of(after, annotation::kRequestedNodes), "8");
  EXPECT_EQ(annotation_of(after, annotation::kReason), "OverPolicyDownsized");
}

TEST(Mutate, RecordsTheNewRequestWhenTheNewSpecPasses) {
  json old_job = bert(6);
  old_job["metadata"]["annotations"] = {{annotation::kRequestedNodes, "8"},
                                        {annotation::kDecision, "Downsize"}};
  json new_job = old_job;
  new_job["spec"]["numNodes"] = 4;
  const auto request = an_update_of(old_job, new_job).user("alice").parse();
  const auto response = handle_mutate(
      request, snapshot_of({strict()}, {a_profile(kSlowLink, test_now())}), test_now());
  const json after = apply_patch(request.object, response);
  EXPECT_EQ(annotation_of(after, annotation::kRequestedNodes), "4");
  EXPECT_EQ(annotation_of(after, annotation::kDecision), "Admit");
}

TEST(Mutate, RecordsADenialForTheValidatingEndpointToRefuse) {
  const auto request = a_create_of(bert(8)).parse();
  const auto response = handle_mutate(
      request, snapshot_of({strict(EnforcementAction::kDeny)}, {a_profile(kSlowLink, test_now())}),
      test_now());
  EXPECT_TRUE(response.allowed);
  const json after = apply_patch(request.object, response);
  EXPECT_EQ(after["spec"]["numNodes"], 8);
  const auto record = parse_decision_record(annotation_of(after, annotation::kDecisionRecord));
  ASSERT_TRUE(record);
  EXPECT_EQ(record->action, Action::kDeny);
  EXPECT_NE(record->message.find("busbw 1 GB/s"), std::string::npos) << record->message;
}

// Issue #19 item 6: a namespace the webhook's cache has not seen yet has unknown labels,
// so its policy is unknown: gated for the operator, never decided as if unlabelled (a
// team's strict policy selects it by label; unlabelled, a milder one would govern).
TEST(Mutate, GatesAJobWhoseNamespaceTheCacheHasNotSeen) {
  const CommPolicy team_deny = a_policy()
                                   .named("team-deny")
                                   .max_comm_share(0.01)
                                   .action(EnforcementAction::kDeny)
                                   .namespace_selector("team", "research")
                                   .build();
  const CommPolicy everyone = a_policy().named("everyone").max_comm_share(0.9).build();
  Snapshot snapshot = snapshot_of({team_deny, everyone}, {a_profile(kSlowLink, test_now())});
  snapshot.namespaces_listed = true;
  snapshot.namespace_labels["other"] = {};
  const auto request = a_create_of(bert(8)).parse();
  const auto gated = handle_mutate(request, snapshot, test_now());
  ASSERT_TRUE(gated.allowed);
  const json after = apply_patch(request.object, gated);
  EXPECT_EQ(after["spec"]["suspend"], true);
  EXPECT_EQ(annotation_of(after, annotation::kReason), "NamespaceUnknown");
  // The record names who asked, for the operator's decision once the namespace is seen.
  const auto record = parse_decision_record(annotation_of(after, annotation::kDecisionRecord));
  ASSERT_TRUE(record);
  ASSERT_TRUE(record->requester);
  EXPECT_EQ(record->requester->username, request.user_info.username);
  EXPECT_EQ(record->requester->groups, request.user_info.groups);
  // What /validate sees next: the gate it holds to.
  EXPECT_TRUE(handle_validate(a_create_of(after).parse(), snapshot, test_now()).allowed);
  // Once the namespace is in the cache, its own policy decides: refused.
  snapshot.namespace_labels["research"] = {{"team", "research"}};
  const json decided = apply_patch(request.object, handle_mutate(request, snapshot, test_now()));
  EXPECT_EQ(annotation_of(decided, annotation::kDecision), "Deny");
  // Policies read from files list no namespaces: an absent one has no labels, as before.
  snapshot.namespaces_listed = false;
  snapshot.namespace_labels.erase("research");
  const json unlabelled = apply_patch(request.object, handle_mutate(request, snapshot, test_now()));
  EXPECT_EQ(annotation_of(unlabelled, annotation::kDecision), "Admit");
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

TEST(Mutate, LeavesAUsersUnsuspendOfAGatedJobForValidateToRefuse) {
  // Issue 12 defect 7: re-suspending it here made `kubectl patch ... suspend:false` print
  // "patched (no change)" and exit 0, so a script took the held job for a running one.
  json old_job = bert(8);
  old_job["spec"]["suspend"] = true;
  const auto request = an_update_of(old_job, bert(8)).user("alice").parse();
  const auto response = handle_mutate(request, snapshot_of({}, {}), test_now());
  const json after = apply_patch(request.object, response);
  EXPECT_FALSE(after["spec"].value("suspend", false));
  EXPECT_EQ(annotation_of(after, annotation::kDecision), "Gate");
}

// The trial of 2026-12-05 (#20): a job gated by commgate, changed as its message said
// (numNodes lowered), was decided Admit but kept spec.suspend: true, Admitted and never
// started. A change that makes commgate's own gate pass lifts it; a job suspended with an
// Admit record (the user's own suspend) stays suspended.
TEST(Mutate, AChangeThatPassesCommgatesOwnGateLiftsIt) {
  const auto created = a_create_of(bert(8)).user("alice").parse();
  const json gated_job =
      apply_patch(created.object, handle_mutate(created, snapshot_of({}, {}), test_now()));
  ASSERT_EQ(annotation_of(gated_job, annotation::kDecision), "Gate");
  ASSERT_EQ(gated_job["spec"]["suspend"], true);
  json fixed = gated_job;
  fixed["spec"]["numNodes"] = 1;  // a single node needs no measurement
  const auto update = an_update_of(gated_job, fixed).user("alice").parse();
  const json after =
      apply_patch(update.object, handle_mutate(update, snapshot_of({}, {}), test_now()));
  EXPECT_EQ(annotation_of(after, annotation::kDecision), "Admit");
  EXPECT_EQ(after["spec"]["suspend"], false) << after["spec"].dump();

  // The trial of 2026-12-06: gated, then denied by the operator after its probe, then
  // lowered to the largest count that passes: admitted, and the gate lifted too.
  json denied = gated_job;
  auto record = *decision_record_of(parse_training_job(gated_job, ObjectSource::kAdmission));
  record.action = Action::kDeny;
  record.reason = reason::kDenied;
  record.admitted_nodes = 0;
  denied["metadata"]["annotations"][annotation::kDecisionRecord] = to_annotation(record);
  denied["metadata"]["annotations"][annotation::kDecision] = "Deny";
  denied["metadata"]["annotations"][annotation::kReason] = reason::kDenied;
  json lowered = denied;
  lowered["spec"]["numNodes"] = 1;
  const auto after_denial = an_update_of(denied, lowered).user("alice").parse();
  const json resumed = apply_patch(after_denial.object,
                                   handle_mutate(after_denial, snapshot_of({}, {}), test_now()));
  EXPECT_EQ(annotation_of(resumed, annotation::kDecision), "Admit");
  EXPECT_EQ(resumed["spec"]["suspend"], false) << resumed["spec"].dump();

  json own_suspend = bert(1);
  own_suspend["spec"]["suspend"] = true;
  const auto admitted_create = a_create_of(own_suspend).user("alice").parse();
  const json admitted = apply_patch(
      admitted_create.object, handle_mutate(admitted_create, snapshot_of({}, {}), test_now()));
  ASSERT_EQ(annotation_of(admitted, annotation::kDecision), "Admit");
  json changed = admitted;
  changed["spec"]["minNodes"] = 1;
  changed["spec"]["model"]["batchSize"] = 64;
  const auto own = an_update_of(admitted, changed).user("alice").parse();
  const json kept = apply_patch(own.object, handle_mutate(own, snapshot_of({}, {}), test_now()));
  EXPECT_EQ(kept["spec"]["suspend"], true) << "the user's own suspend stands";
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

// Issue #24 item 2: `kubectl commgate evaluate` (a server-side dry run) saw an empty
// message for a Downsize or an Admit (the record keeps one for Gate and Deny only), and
// nothing but the refusal for a Deny. A dry run gets the whole decision as a warning, in
// the form cli/kubectl_plugin.cpp reads back; a real submission does not.
TEST(Mutate, ADryRunIsToldTheWholeDecision) {
  struct Case {
    std::string name;
    EnforcementAction action;
    int nodes;
    std::string want_prefix;
  };
  const std::string policy = "CommPolicy \"strict\": ";
  for (const Case& c : std::vector<Case>{
           {"downsize", EnforcementAction::kDownsize, 8,
            "commgate: dry run: Downsize (OverPolicyDownsized), 8 nodes requested, 6 admitted, " +
                policy},
           {"deny", EnforcementAction::kDeny, 8,
            "commgate: dry run: Deny (OverPolicyDenied), 8 nodes requested, 0 admitted, " + policy},
           {"admit", EnforcementAction::kDownsize, 4,
            "commgate: dry run: Admit (WithinPolicy), 4 nodes requested, 4 admitted, " + policy}}) {
    const Snapshot snapshot = snapshot_of({strict(c.action)}, {a_profile(kSlowLink, test_now())});
    const auto response =
        handle_mutate(a_create_of(bert(c.nodes)).dry_run(true).parse(), snapshot, test_now());
    const auto line =
        std::find_if(response.warnings.begin(), response.warnings.end(),
                     [](const std::string& w) { return w.rfind("commgate: dry run: ", 0) == 0; });
    ASSERT_NE(line, response.warnings.end()) << c.name;
    EXPECT_EQ(line->rfind(c.want_prefix, 0), 0u) << c.name << ": " << *line;
    EXPECT_GT(line->size(), c.want_prefix.size() + 10) << c.name << ": the message follows";
    const auto real =
        handle_mutate(a_create_of(bert(c.nodes)).parse(), snapshot, test_now()).warnings;
    for (const std::string& w : real)
      EXPECT_NE(w.rfind("commgate: dry run: ", 0), 0u) << c.name << ": " << w;
  }
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
// status.replicas is status.admittedNodes: 0 until the operator admits a count.
json scale(int replicas, int admitted) {
  return {{"apiVersion", "autoscaling/v1"},
          {"kind", "Scale"},
          {"metadata", {{"name", "bert"}, {"namespace", "research"}}},
          {"spec", {{"replicas", replicas}}},
          {"status", {{"replicas", admitted}}}};
}
ReviewBuilder a_scale(int from, int to, int admitted = 0) {
  auto r = an_update_of(scale(from, admitted), scale(to, admitted));
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
        // Issue #20 defect 1: once admitted, another count through the scale subresource
        // was stored and never applied; a scale back to the admitted count passes.
        ValidateCase{"denies_a_scale_down_of_an_admitted_job",
                     a_scale(4, 2, 4).user("alice"),
                     {},
                     {},
                     false,
                     422,
                     "was admitted at 4 nodes (status.admittedNodes) and its workload keeps that "
                     "size, so 2 nodes through the scale subresource would never be applied"},
        ValidateCase{"denies_a_scale_up_of_an_admitted_job_even_to_an_exempt_user",
                     a_scale(4, 8, 4).user("carol"),
                     {kExempt},
                     {},
                     false,
                     422,
                     "scale back to 4"},
        ValidateCase{"allows_a_scale_back_to_the_admitted_count",
                     a_scale(2, 4, 4).user("alice"),
                     {},
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

// Trial D5: an admin who sets the switch where the gate's webhook configuration is not
// installed believed the gate was on.
TEST(Validate, APolicyThatSetsTheWorkloadGateWarnsWhenTheGateIsNotInstalled) {
  const auto request =
      a_policy_create({{"maxCommShare", 0.3}, {"unmanagedWorkloads", "deny"}}).parse();
  auto has_warning = [](const AdmissionResponse& r) {
    for (const auto& w : r.warnings)
      if (w.find("spec.unmanagedWorkloads: deny has no effect") != std::string::npos) return true;
    return false;
  };
  auto r = handle_validate(request, snapshot_of({}, {}), test_now());
  EXPECT_TRUE(r.allowed) << r.message;
  EXPECT_TRUE(has_warning(r));
  WebhookConfig gated;
  gated.workload_gate = true;
  r = handle_validate(request, snapshot_of({}, {}), test_now(), gated);
  EXPECT_TRUE(r.allowed) << r.message;
  EXPECT_FALSE(has_warning(r));
}

TEST(Validate, DeniesAnUnknownResource) {
  const auto request = a_create_of(bert(8)).resource("pods").kind("Pod").parse();
  const auto response = handle_validate(request, snapshot_of({}, {}), test_now());
  EXPECT_FALSE(response.allowed);
  EXPECT_EQ(response.code, 400);
}

// Issue #19: a `trainingjobs` of another API group was handled as commgate's own.
TEST(Validate, ATrainingJobsResourceOfAnotherGroupIsNotCommgates) {
  const auto request = a_create_of(bert(8)).set("/request/resource/group", "kubeflow.org").parse();
  const auto snapshot = snapshot_of({strict()}, {a_profile(kSlowLink, test_now())});
  const auto mutated = handle_mutate(request, snapshot, test_now());
  EXPECT_TRUE(mutated.allowed);
  EXPECT_TRUE(mutated.patch.empty()) << "a foreign object is not patched";
  const auto validated = handle_validate(request, snapshot, test_now());
  EXPECT_FALSE(validated.allowed);
  EXPECT_EQ(validated.code, 400);
  EXPECT_NE(validated.message.find("resource \"trainingjobs\" of API group \"kubeflow.org\""),
            std::string::npos)
      << validated.message;
}

TEST(Validate, InvalidJobMessageNamesEveryField) {
  const auto response =
      handle_validate(a_create_of(bad_job()).parse(), snapshot_of({}, {}), test_now());
  EXPECT_NE(response.message.find("spec.numNodes"), std::string::npos) << response.message;
  EXPECT_NE(response.message.find("spec.model.gradientDtype"), std::string::npos);
}

// A policyRef to a stored CommPolicy that does not parse: denied as invalid, with its
// field error, not "not found" (user trial).
TEST(Validate, APolicyRefToAnInvalidStoredPolicyIsDeniedAsInvalid) {
  Snapshot snapshot = snapshot_of({strict()}, {});
  snapshot.add_policy(comm_policy({{"maxCommShare", "30%"}}));  // named "p"
  const auto response = handle_validate(
      a_create_of(a_training_job().policy_ref("p").json()).parse(), snapshot, test_now());
  EXPECT_FALSE(response.allowed);
  EXPECT_EQ(response.code, 422);
  EXPECT_EQ(response.message.find("not found"), std::string::npos) << response.message;
  EXPECT_NE(response.message.find("CommPolicy \"p\" exists but is invalid"), std::string::npos)
      << response.message;
  EXPECT_NE(response.message.find("spec.maxCommShare: must be a number"), std::string::npos)
      << response.message;
}

// --- annotation edits (only /mutate sees the request as the user sent it) -------------

TEST(Mutate, RefusesAUserEditingCommgateAnnotationsWithoutASpecChange) {
  const auto request =
      an_update_of(gated(bert(8)), annotated(gated(bert(8)), annotation::kDecision, "Admit"))
          .user("alice")
          .parse();
  const auto response = handle_mutate(request, snapshot_of({}, {}), test_now());
  EXPECT_FALSE(response.allowed);
  EXPECT_EQ(response.code, 403);
  EXPECT_NE(response.message.find("metadata.annotations"), std::string::npos) << response.message;
  EXPECT_EQ(response.decision, "Bypass");
}

// Issue #19 item 2: with a key /validate refuses the same edit when /mutate did not see it
// (failurePolicy Ignore while it was down); an exempt user may still make it.
TEST(Validate, WithAKeyRefusesAUserEditingCommgateAnnotationsWithoutASpecChange) {
  const WebhookConfig config = with_a_decision_key();
  const json before = gated(bert(8));
  const json after = annotated(gated(bert(8)), annotation::kDecision, "Admit");
  const auto refused = handle_validate(an_update_of(before, after).user("alice").parse(),
                                       snapshot_of({}, {}), test_now(), config);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.code, 403);
  EXPECT_NE(refused.message.find("metadata.annotations"), std::string::npos) << refused.message;
  EXPECT_EQ(refused.decision, "Bypass");
  EXPECT_TRUE(handle_validate(an_update_of(before, after).user("carol").parse(),
                              snapshot_of({kExempt}, {}), test_now(), config)
                  .allowed);
  EXPECT_TRUE(handle_validate(an_update_of(before, after).user("alice").parse(),
                              snapshot_of({}, {}), test_now())
                  .allowed)
      << "without a key /validate cannot tell /mutate's writes from a user's";
}

TEST(Mutate, LetsAnExemptUserEditCommgateAnnotations) {
  const auto request =
      an_update_of(gated(bert(8)), annotated(gated(bert(8)), annotation::kDecision, "Admit"))
          .user("carol")
          .parse();
  EXPECT_TRUE(handle_mutate(request, snapshot_of({kExempt}, {}), test_now()).allowed);
}

// --- decide once: the decision record ---------------------------------------------------

// One request through both endpoints, as the apiserver sends it: /mutate, its patch
// applied, then /validate on the mutated object. Each endpoint may see its own snapshot
// and clock (two replicas, one watch event apart).
struct Admission {
  AdmissionResponse mutate;
  AdmissionResponse validate;
  json stored;  // the object as the apiserver would store it
};

Admission admit(ReviewBuilder review, const Snapshot& at_mutate, TimePoint mutate_now,
                const Snapshot& at_validate, TimePoint validate_now,
                const WebhookConfig& config = {}) {
  Admission a;
  const AdmissionRequest request = review.parse();
  a.mutate = handle_mutate(request, at_mutate, mutate_now, config);
  if (!a.mutate.allowed) return a;
  a.stored = apply_patch(request.object, a.mutate);
  review.object(a.stored);
  a.validate = handle_validate(review.parse(), at_validate, validate_now, config);
  return a;
}
Admission admit(ReviewBuilder review, const Snapshot& snapshot, TimePoint now = test_now(),
                const WebhookConfig& config = {}) {
  return admit(std::move(review), snapshot, now, snapshot, now, config);
}

const Snapshot kStrictSlow = snapshot_of({strict()}, {a_profile(kSlowLink, test_now())});

// The trial of 2026-12-06: an admitted job raised to more nodes than the policy allows is
// downsized back to its stored count: the spec (and so the generation) does not change, so
// its record stays the one its status describes, with a warning that nothing changed.
TEST(DecideOnce, ARaiseDownsizedBackToTheStoredCountKeepsTheRecord) {
  const Admission created = admit(a_create_of(bert(6)), kStrictSlow);
  ASSERT_TRUE(created.validate.allowed) << created.validate.message;
  const std::string record = annotation_of(created.stored, annotation::kDecisionRecord);
  ASSERT_EQ(created.stored["spec"]["numNodes"], 6);
  json raised = created.stored;
  raised["spec"]["numNodes"] = 8;
  const Admission a = admit(an_update_of(created.stored, raised), kStrictSlow);
  ASSERT_TRUE(a.validate.allowed) << a.validate.message;
  EXPECT_EQ(a.stored["spec"]["numNodes"], 6);
  EXPECT_EQ(annotation_of(a.stored, annotation::kDecisionRecord), record);
  EXPECT_EQ(annotation_of(a.stored, annotation::kDecision),
            annotation_of(created.stored, annotation::kDecision));
  ASSERT_EQ(a.mutate.warnings.size(), 1u);
  EXPECT_NE(a.mutate.warnings[0].find("spec.numNodes lowered from 8 to 6"), std::string::npos)
      << a.mutate.warnings[0];
  EXPECT_NE(a.mutate.warnings[0].find("spec.numNodes stays 6 and the job's decision is unchanged"),
            std::string::npos)
      << a.mutate.warnings[0];
}

TEST(DecideOnce, MutateWritesTheRecordOfItsDecision) {
  const Admission a = admit(a_create_of(bert(8)), kStrictSlow);
  ASSERT_TRUE(a.validate.allowed) << a.validate.message;
  const auto record = parse_decision_record(annotation_of(a.stored, annotation::kDecisionRecord));
  ASSERT_TRUE(record);
  EXPECT_EQ(record->action, Action::kDownsize);
  EXPECT_EQ(record->admitted_nodes, 6);
  EXPECT_EQ(record->requested_nodes, 8);
  EXPECT_EQ(record->reason, "OverPolicyDownsized");
  EXPECT_EQ(record->policy.name, "strict");
  ASSERT_TRUE(record->profile);
  EXPECT_EQ(record->profile->name, "pool-all");
  EXPECT_EQ(format_rfc3339(record->decided_at), format_rfc3339(test_now()));
  TrainingJob stored = parse_training_job(a.stored, ObjectSource::kAdmission);
  EXPECT_EQ(record->spec_hash, decision_spec_hash(stored.spec));
  EXPECT_EQ(a.validate.decision, "Downsize");
}

// Issue #20 defect 7: a downsize for the extrapolation limit said only "lowered from 8 to
// 2"; the warning now says why, as the denial does.
TEST(Mutate, ADownsizeBeyondTheExtrapolationLimitSaysWhy) {
  CommPolicy narrow = strict();
  narrow.spec.max_extrapolation = 1;
  narrow.spec.probe.max_nodes = 2;
  const auto response =
      handle_mutate(a_create_of(bert(8)).parse(),
                    snapshot_of({narrow}, {a_profile(kFastLink, test_now())}), test_now());
  ASSERT_TRUE(response.allowed) << response.message;
  EXPECT_EQ(response.decision, "Downsize");
  ASSERT_EQ(response.warnings.size(), 1u);
  EXPECT_NE(response.warnings[0].find("spec.numNodes lowered from 8 to 2: spec.numNodes 8 is more "
                                      "than any probe CommPolicy strict allows can decide: "
                                      "maxExtrapolation 1 x probe.maxNodes 2 = 2 nodes"),
            std::string::npos)
      << response.warnings[0];
}

// Issue #19 item 1: `policyRef: default` (or any milder policy) does not escape the stricter
// policy that applies; the warning says which policy decided and why.
TEST(DecideOnce, APolicyRefToAMilderPolicyIsDecidedByTheStricterOne) {
  for (const char* ref : {"default", "loose"}) {
    Snapshot snapshot = kStrictSlow;
    snapshot.policies.push_back(a_policy().named("loose").max_comm_share(0.9).build());
    json job = bert(8);
    job["spec"]["policyRef"] = {{"name", ref}};
    const Admission a = admit(a_create_of(job), snapshot);
    ASSERT_TRUE(a.validate.allowed) << ref << ": " << a.validate.message;
    const auto record = parse_decision_record(annotation_of(a.stored, annotation::kDecisionRecord));
    ASSERT_TRUE(record) << ref;
    EXPECT_EQ(record->policy.name, "strict") << ref;
    EXPECT_EQ(record->action, Action::kDownsize) << ref;
    EXPECT_EQ(a.stored["spec"]["numNodes"], 6) << ref;
    ASSERT_FALSE(a.mutate.warnings.empty()) << ref;
    EXPECT_NE(a.mutate.warnings.front().find(std::string("CommPolicy \"") + ref +
                                             "\" is not at least as strict as \"strict\""),
              std::string::npos)
        << a.mutate.warnings.front();
  }
}

// The trial of 2026-12-06: where no CommPolicy applies, `policyRef: default` names the
// built-in default that governs: no warning (it said "CommPolicy \"default\" is not at
// least as strict as \"built-in default\"").
TEST(DecideOnce, APolicyRefToTheBuiltInDefaultThatGovernsIsNotWarnedAbout) {
  json job = bert(8);
  job["spec"]["policyRef"] = {{"name", "default"}};
  const Admission a = admit(a_create_of(job), snapshot_of({}, {}));
  ASSERT_TRUE(a.validate.allowed) << a.validate.message;
  for (const auto& w : a.mutate.warnings)
    EXPECT_EQ(w.find("spec.policyRef"), std::string::npos) << w;
}

// Issue 9 defect 3: /validate decided again with its own snapshot and refused what /mutate
// admitted ("gate bypassed" when nothing was).
struct SkewCase {
  std::string name;
  Snapshot at_mutate;
  Snapshot at_validate;
  std::string want_decision;
};
void PrintTo(const SkewCase& c, std::ostream* os) {
  *os << c.name;
}

class SkewedReplicas : public ::testing::TestWithParam<SkewCase> {};

TEST_P(SkewedReplicas, ValidateHoldsTheObjectToMutatesRecord) {
  const SkewCase& c = GetParam();
  const Admission a = admit(a_create_of(bert(8)), c.at_mutate, test_now(), c.at_validate,
                            test_now() + std::chrono::milliseconds(3));
  ASSERT_TRUE(a.mutate.allowed);
  EXPECT_TRUE(a.validate.allowed) << a.validate.message;
  EXPECT_EQ(a.mutate.decision, c.want_decision);
  EXPECT_EQ(a.validate.decision, c.want_decision);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SkewedReplicas,
    ::testing::Values(
        SkewCase{"downsized_by_one_replica_while_the_other_lost_the_profile", kStrictSlow,
                 snapshot_of({strict()}, {}), "Downsize"},
        SkewCase{"gated_by_one_replica_while_the_other_has_the_profile",
                 snapshot_of({strict()}, {}), kStrictSlow, "Gate"},
        SkewCase{"admitted_by_one_replica_while_the_other_sees_a_slower_link",
                 snapshot_of({strict()}, {a_profile(kFastLink, test_now())}), kStrictSlow, "Admit"},
        SkewCase{
            "downsized_by_one_replica_while_the_other_has_a_deny_policy", kStrictSlow,
            snapshot_of({strict(EnforcementAction::kDeny)}, {a_profile(kSlowLink, test_now())}),
            "Downsize"}),
    [](const auto& param_info) { return param_info.param.name; });

TEST(DecideOnce, AMeasurementExpiringBetweenTheTwoCallsChangesNothing) {
  // The default policy's measurementTTL is 24h, and a measurement exactly 24h old is still
  // fresh: /mutate decides at the boundary, /validate runs a second later, when a new
  // decision would gate the job and refuse its spec.suspend: false.
  const TimePoint measured = test_now() - std::chrono::hours(24);
  const Snapshot snapshot = snapshot_of({strict()}, {a_profile(kSlowLink, measured)});
  const Admission a = admit(a_create_of(bert(8)), snapshot, test_now(), snapshot,
                            test_now() + std::chrono::seconds(1));
  EXPECT_EQ(a.mutate.decision, "Downsize");
  EXPECT_TRUE(a.validate.allowed) << a.validate.message;
  // Decided a second later, the same request is gated.
  EXPECT_EQ(
      admit(a_create_of(bert(8)), snapshot, test_now() + std::chrono::seconds(1)).mutate.decision,
      "Gate");
}

// Issue 12 defect 1: raising numNodes on a downsized (or admitted) job is decided again,
// downsized again with the warning, never a tampering error. Downsized back to the stored
// count, the spec (and generation) is unchanged, so the record and its annotations stay
// the ones the status describes (the trial of 2026-12-06), the warning says so.
TEST(DecideOnce, RaisingNumNodesOnADownsizedJobIsDownsizedAgain) {
  // With a key too: /validate takes /mutate's new signed record for commgate's.
  for (const WebhookConfig& config : {WebhookConfig{}, with_a_decision_key()}) {
    const Admission created = admit(a_create_of(bert(8)), kStrictSlow, test_now(), config);
    ASSERT_EQ(created.stored["spec"]["numNodes"], 6);
    for (int asked : {7, 8}) {
      json raised = created.stored;
      raised["spec"]["numNodes"] = asked;
      const Admission a = admit(an_update_of(created.stored, raised).user("alice"), kStrictSlow,
                                test_now(), config);
      ASSERT_TRUE(a.mutate.allowed) << a.mutate.message;
      EXPECT_TRUE(a.validate.allowed) << asked << ": " << a.validate.message;
      EXPECT_EQ(a.stored["spec"]["numNodes"], 6) << asked;
      EXPECT_EQ(annotation_of(a.stored, annotation::kRequestedNodes), "8") << "the record stays";
      ASSERT_EQ(a.mutate.warnings.size(), 1u);
      EXPECT_NE(a.mutate.warnings[0].find("spec.numNodes lowered from " + std::to_string(asked) +
                                          " to 6"),
                std::string::npos)
          << a.mutate.warnings[0];
      EXPECT_NE(a.mutate.warnings[0].find("spec.numNodes stays 6"), std::string::npos);
      EXPECT_EQ(a.validate.decision, "Downsize");
    }
  }
}

TEST(DecideOnce, RaisingNumNodesOnASingleNodeJobIsANewDecision) {
  const Admission created = admit(a_create_of(bert(1)), kStrictSlow);
  ASSERT_EQ(created.mutate.decision, "Admit");
  json raised = created.stored;
  raised["spec"]["numNodes"] = 8;
  const Admission a = admit(an_update_of(created.stored, raised).user("alice"), kStrictSlow);
  EXPECT_TRUE(a.validate.allowed) << a.validate.message;
  EXPECT_EQ(a.stored["spec"]["numNodes"], 6);
  EXPECT_EQ(annotation_of(a.stored, annotation::kDecision), "Downsize");
}

// Newcomer trial C1: a change of what the decision reads, once the training Job exists,
// was admitted (and decided again) but never applied: `get tj` showed 4 nodes while the
// Job ran 2 pods. Refused (422, the field) with what to do; before the Job exists it is
// decided again (docs/researcher.md section 5).
json with_status(json object, const std::string& phase, const std::string& running_reason,
                 int admitted_nodes) {
  object["status"] = {{"phase", phase}, {"admittedNodes", admitted_nodes}};
  if (!running_reason.empty())
    object["status"]["conditions"] =
        json::array({{{"type", "Running"},
                      {"status", running_reason == "Running" ? "True" : "False"},
                      {"reason", running_reason}}});
  return object;
}

TEST(StartedJob, ASpecChangeIsRefusedWithTheFieldAndWhatToDo) {
  const Admission created = admit(a_create_of(bert(2)), kStrictSlow);
  ASSERT_EQ(created.mutate.decision, "Admit");
  const json running = with_status(created.stored, "Running", "Running", 2);
  struct Change {
    std::string pointer;
    json value;
    std::string field;
  } const changes[] = {
      {"/spec/numNodes", 4, "spec.numNodes"},
      {"/spec/model/parameters", 200e6, "spec.model.parameters"},
      {"/spec/numProcPerNode", 8, "spec.numProcPerNode"},
      {"/spec/nodeSelector", {{"pool", "b"}}, "spec.nodeSelector"},
  };
  for (const Change& c : changes) {
    json changed = running;
    changed[json::json_pointer(c.pointer)] = c.value;
    const Admission a = admit(an_update_of(running, changed).user("alice"), kStrictSlow);
    ASSERT_TRUE(a.mutate.allowed) << c.field;
    EXPECT_TRUE(a.mutate.patch.empty()) << c.field << ": /mutate decided it again";
    EXPECT_FALSE(a.validate.allowed) << c.field;
    EXPECT_EQ(a.validate.code, 422) << c.field;
    ASSERT_EQ(a.validate.details.causes.size(), 1u) << c.field;
    EXPECT_EQ(a.validate.details.causes[0].field, c.field);
    EXPECT_EQ(a.validate.details.causes[0].message,
              "the training Job already runs with 2 nodes; delete and resubmit the "
              "TrainingJob to change " +
                  c.field);
  }
}

TEST(StartedJob, EveryChangedFieldIsACause) {
  const Admission created = admit(a_create_of(bert(2)), kStrictSlow);
  const json pending = with_status(created.stored, "Admitted", "Pending", 2);
  json changed = pending;
  changed["spec"]["numNodes"] = 3;
  changed["spec"]["model"]["gradientDtype"] = "bf16";
  const AdmissionResponse r = handle_validate(an_update_of(pending, changed).user("alice").parse(),
                                              kStrictSlow, test_now());
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.code, 422);
  ASSERT_EQ(r.details.causes.size(), 2u) << r.message;
  EXPECT_EQ(r.details.causes[0].field, "spec.numNodes");
  EXPECT_EQ(r.details.causes[1].field, "spec.model.gradientDtype");
}

TEST(StartedJob, AFinishedJobRanWithItsNodes) {
  const Admission created = admit(a_create_of(bert(2)), kStrictSlow);
  const json done = with_status(created.stored, "Succeeded", "Completed", 2);
  json changed = done;
  changed["spec"]["numNodes"] = 1;
  const AdmissionResponse r =
      handle_validate(an_update_of(done, changed).user("alice").parse(), kStrictSlow, test_now());
  EXPECT_FALSE(r.allowed);
  EXPECT_NE(r.message.find("the training Job already ran with 2 nodes"), std::string::npos)
      << r.message;
}

TEST(StartedJob, BeforeTheJobExistsAChangeIsDecidedAgain) {
  const Admission created = admit(a_create_of(bert(2)), kStrictSlow);
  // Admitted but suspended (nothing started), and held by an earlier TrainingJob's Job.
  for (const json& before : {with_status(created.stored, "Admitted", "Suspended", 2),
                             with_status(created.stored, "Admitted", "PreviousWorkloadExists", 2),
                             with_status(created.stored, "Gated", "", 0),
                             with_status(created.stored, "Failed", "", 0)}) {
    json raised = before;
    raised["spec"]["numNodes"] = 8;
    const Admission a = admit(an_update_of(before, raised).user("alice"), kStrictSlow);
    EXPECT_TRUE(a.validate.allowed) << before["status"].dump() << ": " << a.validate.message;
    EXPECT_EQ(a.stored["spec"]["numNodes"], 6) << before["status"].dump();
  }
}

// Issue #20 defect 1: a running job whose spec.numNodes was changed past the webhook (a
// scale the webhook let through before) could not be patched back: the change back to the
// count its workload runs is always allowed, another count still refused.
TEST(StartedJob, APatchBackToTheAdmittedCountIsAllowed) {
  const Admission created = admit(a_create_of(bert(2)), kStrictSlow);
  json running = with_status(created.stored, "Running", "Running", 2);
  running["spec"]["numNodes"] = 1;  // stored by the old scale check, never applied
  json back = running;
  back["spec"]["numNodes"] = 2;
  const AdmissionResponse r =
      handle_validate(an_update_of(running, back).user("alice").parse(), kStrictSlow, test_now());
  EXPECT_TRUE(r.allowed) << r.message;
  json other = running;
  other["spec"]["numNodes"] = 3;
  EXPECT_FALSE(
      handle_validate(an_update_of(running, other).user("alice").parse(), kStrictSlow, test_now())
          .allowed);
}

TEST(StartedJob, ALabelOrSuspendEditIsNotRefused) {
  const Admission created = admit(a_create_of(bert(2)), kStrictSlow);
  const json running = with_status(created.stored, "Running", "Running", 2);
  json labelled = running;
  labelled["metadata"]["labels"]["team"] = "nlp";
  EXPECT_TRUE(admit(an_update_of(running, labelled).user("alice"), kStrictSlow).validate.allowed);
}

// Newcomer trial C2: a name that cannot name the workload's Service is refused at
// submission with the field, not Failed InvalidWorkloadName a second later.
TEST(Validate, ANameTheWorkloadCannotTakeIsInvalid) {
  json job = bert(2);
  job["metadata"]["name"] = "llm.v2";
  const AdmissionResponse r =
      handle_validate(a_create_of(job).user("alice").parse(), kStrictSlow, test_now());
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.code, 422);
  ASSERT_EQ(r.details.causes.size(), 1u) << r.message;
  EXPECT_EQ(r.details.causes[0].field, "metadata.name");
  EXPECT_NE(r.details.causes[0].message.find("DNS-1035 label"), std::string::npos);
}

TEST(DecideOnce, ALabelEditOfARecordedJobIsNotDecidedAgain) {
  const Admission created = admit(a_create_of(bert(8)), kStrictSlow);
  json labelled = created.stored;
  labelled["metadata"]["labels"]["team"] = "nlp";
  // The policy turned to deny since: the running job is not refused for a label.
  const Snapshot now_deny =
      snapshot_of({strict(EnforcementAction::kDeny)}, {a_profile(kSlowLink, test_now())});
  const Admission a = admit(an_update_of(created.stored, labelled).user("alice"), now_deny);
  EXPECT_TRUE(a.mutate.patch.empty());
  EXPECT_TRUE(a.validate.allowed) << a.validate.message;
}

TEST(DecideOnce, ValidateRefusesWhatTheRecordRefused) {
  const Admission a =
      admit(a_create_of(bert(8)),
            snapshot_of({strict(EnforcementAction::kDeny)}, {a_profile(kSlowLink, test_now())}),
            test_now(), snapshot_of({}, {a_profile(kFastLink, test_now())}), test_now());
  EXPECT_FALSE(a.validate.allowed);
  EXPECT_EQ(a.validate.code, 403);
  EXPECT_NE(a.validate.message.find("The largest count that passes is 6 nodes"), std::string::npos)
      << a.validate.message;
}

TEST(DecideOnce, ValidateDecidesWhenTheRecordIsForAnotherSpec) {
  // A record left from an earlier spec (the mutating webhook did not run for this one).
  const Admission created = admit(a_create_of(bert(1)), kStrictSlow);
  json raised = created.stored;
  raised["spec"]["numNodes"] = 8;
  const auto response = handle_validate(an_update_of(created.stored, raised).user("alice").parse(),
                                        kStrictSlow, test_now());
  EXPECT_FALSE(response.allowed);
  EXPECT_NE(response.message.find("spec.numNodes"), std::string::npos) << response.message;
}

// Issue #19 item 2: a record is a hash anyone can compute. With a key, /mutate signs its
// record and /validate holds an object only to a record whose signature verifies; a record
// written past /mutate (failurePolicy Ignore while it was down) is decided again.
TEST(DecideOnce, WithAKeyValidateDecidesAgainWhenTheRecordIsNotSigned) {
  WebhookConfig config;
  config.records = std::make_shared<server::RecordSigner>(std::string(32, 'k'));
  // The normal path: /mutate's signed record, held to by /validate.
  const AdmissionRequest create = a_create_of(bert(8)).parse();
  const AdmissionResponse mutated = handle_mutate(create, kStrictSlow, test_now(), config);
  ASSERT_TRUE(mutated.allowed);
  const json stored = apply_patch(create.object, mutated);
  const auto record = parse_decision_record(annotation_of(stored, annotation::kDecisionRecord));
  ASSERT_TRUE(record);
  EXPECT_EQ(record->mac.size(), 64u);
  const auto held = handle_validate(a_create_of(stored).parse(), kStrictSlow, test_now(), config);
  EXPECT_TRUE(held.allowed) << held.message;
  EXPECT_EQ(held.decision, "Downsize");

  // A record for 8 nodes admitted, written by hand (the hash computed as /mutate would),
  // reaching /validate alone: decided here, and 8 nodes is over the policy.
  TrainingJob job = parse_training_job(bert(8), ObjectSource::kAdmission);
  DecisionRecord forged = *record;
  forged.action = Action::kAdmit;
  forged.reason = "WithinPolicy";
  forged.admitted_nodes = forged.requested_nodes = 8;
  forged.spec_hash = decision_spec_hash(job.spec);
  // First with the mac of the record it was made from, then with none.
  for (const bool keep_old_mac : {true, false}) {
    if (!keep_old_mac) forged.mac.clear();
    json object = bert(8);
    for (const auto& [key, value] : decision_annotations(forged))
      object["metadata"]["annotations"][key] = value;
    const auto refused =
        handle_validate(a_create_of(object).parse(), kStrictSlow, test_now(), config);
    EXPECT_FALSE(refused.allowed) << "mac kept: " << keep_old_mac;
    EXPECT_EQ(refused.decision, "Bypass") << refused.message;
    // Without a key the same record is held to (the behaviour the key closes).
    EXPECT_TRUE(handle_validate(a_create_of(object).parse(), kStrictSlow, test_now()).allowed);
  }
}

TEST(DecideOnce, ValidateRefusesACountOtherThanTheRecordsOrRelabelledAnnotations) {
  const Admission created = admit(a_create_of(bert(8)), kStrictSlow);
  TrainingJob stored = parse_training_job(created.stored, ObjectSource::kAdmission);
  // A record forged for 8 nodes but claiming 6 admitted.
  json forged = created.stored;
  forged["spec"]["numNodes"] = 8;
  auto record = *decision_record_of(stored);
  stored.spec.num_nodes = 8;
  record.spec_hash = decision_spec_hash(stored.spec);
  forged["metadata"]["annotations"][annotation::kDecisionRecord] = to_annotation(record);
  auto response = handle_validate(a_create_of(forged).parse(), kStrictSlow, test_now());
  EXPECT_FALSE(response.allowed);
  EXPECT_NE(response.message.find("spec.numNodes: 8 is not the 6 nodes"), std::string::npos)
      << response.message;

  json relabelled = annotated(created.stored, annotation::kDecision, "Admit");
  response = handle_validate(a_create_of(relabelled).parse(), kStrictSlow, test_now());
  EXPECT_FALSE(response.allowed);
  EXPECT_NE(response.message.find("metadata.annotations"), std::string::npos) << response.message;
}

// Issue 12 defect 7: the user's suspend: false on a gated job is refused (403) with what it
// waits for, not silently turned back to true.
TEST(DecideOnce, UnsuspendingAGatedJobIsRefusedWithWhatItWaitsFor) {
  const Admission created = admit(a_create_of(bert(8)), snapshot_of({}, {}));
  ASSERT_EQ(created.stored["spec"]["suspend"], true);
  json unsuspended = created.stored;
  unsuspended["spec"]["suspend"] = false;
  const Admission a =
      admit(an_update_of(created.stored, unsuspended).user("alice"), snapshot_of({}, {}));
  EXPECT_FALSE(a.validate.allowed);
  EXPECT_EQ(a.validate.code, 403);
  EXPECT_NE(a.validate.message.find("spec.suspend: must stay true until commgate has measured"),
            std::string::npos)
      << a.validate.message;
  EXPECT_NE(a.validate.message.find("CommProfile pool-all"), std::string::npos)
      << a.validate.message;
  // Once the pool is measured and the spec passes, the same edit is admitted.
  const Admission later = admit(an_update_of(created.stored, unsuspended).user("alice"),
                                snapshot_of({strict()}, {a_profile(kFastLink, test_now())}));
  EXPECT_TRUE(later.validate.allowed) << later.validate.message;
  EXPECT_EQ(later.stored["spec"]["suspend"], false);
}

// Gate messages name the CommProfile they looked for: its name and the nodeSelector.
TEST(Mutate, AGateNamesTheCommProfileItLookedFor) {
  json job = bert(8);
  job["spec"]["nodeSelector"] = {{"commgate.io/pool", "cpu-1gbe"}};
  const auto response = handle_mutate(a_create_of(job).parse(), snapshot_of({}, {}), test_now());
  ASSERT_EQ(response.warnings.size(), 1u);
  const std::string pool = pool_name({{"commgate.io/pool", "cpu-1gbe"}});
  EXPECT_NE(response.warnings[0].find("CommProfile " + pool + ", which does not exist"),
            std::string::npos)
      << response.warnings[0];
  EXPECT_NE(response.warnings[0].find("nodeSelector {commgate.io/pool=cpu-1gbe}"),
            std::string::npos)
      << response.warnings[0];
}

// Issue #19 item 5: upstream's edit may impersonate the namespace's service accounts, so a
// service-account exemption is every editor's: the admin is told when writing it.
TEST(Validate, AServiceAccountExemptionIsAdmittedWithAWarningThatEditorsCanBorrowIt) {
  const auto r = handle_validate(
      a_policy_create(
          {{"maxCommShare", 0.3},
           {"exemptions", {{"users", {"carol"}}, {"serviceAccounts", {"benchmarks/nightly"}}}}})
          .parse(),
      snapshot_of({}, {}), test_now());
  EXPECT_TRUE(r.allowed);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            "commgate: spec.exemptions.serviceAccounts[0] benchmarks/nightly: whoever may "
            "impersonate service accounts in namespace benchmarks (Kubernetes' edit and admin "
            "roles may) is exempt through it; prefer users or groups (docs/security.md)");
}

// The trial: `tolerationKeys: []` was accepted silently; probes of tainted pools then never
// schedule.
TEST(Validate, AnEmptyListOfProbeTolerationKeysIsAdmittedWithAWarning) {
  const auto r = handle_validate(
      a_policy_create({{"maxCommShare", 0.3}, {"probe", {{"tolerationKeys", json::array()}}}})
          .parse(),
      snapshot_of({}, {}), test_now());
  EXPECT_TRUE(r.allowed);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("spec.probe.tolerationKeys is empty"), std::string::npos);
}

// #20: a selector with a typo (team: nlpp) governed nothing and nothing said so.
TEST(Validate, APolicyWhoseSelectorMatchesNoNamespaceIsAdmittedWithAWarning) {
  Snapshot snapshot = snapshot_of({}, {});
  snapshot.namespace_labels["nlp"] = {{"team", "nlp"}};
  snapshot.namespace_labels["default"] = {};
  snapshot.namespaces_listed = true;
  auto selecting = [](const std::string& team) {
    return a_policy_create(
               {{"maxCommShare", 0.3}, {"namespaceSelector", {{"matchLabels", {{"team", team}}}}}})
        .parse();
  };
  const auto typo = handle_validate(selecting("nlpp"), snapshot, test_now());
  EXPECT_TRUE(typo.allowed);
  ASSERT_EQ(typo.warnings.size(), 1u);
  EXPECT_NE(typo.warnings[0].find("selects no namespace today: no namespace's labels match "
                                  "spec.namespaceSelector {\"matchLabels\":{\"team\":\"nlpp\"}}"),
            std::string::npos)
      << typo.warnings[0];
  EXPECT_NE(typo.warnings[0].find("(kubectl label namespace NAME team=nlpp)"), std::string::npos)
      << typo.warnings[0];
  EXPECT_TRUE(handle_validate(selecting("nlp"), snapshot, test_now()).warnings.empty());
  // A selector that only excludes is met by taking labels away, not by adding them (the
  // trial's hint said `kubectl label ... KEY=VALUE` for a NotIn selector too).
  snapshot.namespace_labels["default"] = {{"tier", "prod"}};
  const auto excluding = handle_validate(
      a_policy_create({{"maxCommShare", 0.3},
                       {"namespaceSelector",
                        {{"matchExpressions",
                          {{{"key", "tier"}, {"operator", "NotIn"}, {"values", {"prod"}}},
                           {{"key", "team"}, {"operator", "DoesNotExist"}}}}}}})
          .parse(),
      snapshot, test_now());
  ASSERT_EQ(excluding.warnings.size(), 1u);
  EXPECT_NE(excluding.warnings[0].find("it governs one once that namespace loses them (kubectl "
                                       "label namespace NAME KEY-)"),
            std::string::npos)
      << excluding.warnings[0];
  const auto asking = handle_validate(
      a_policy_create({{"maxCommShare", 0.3},
                       {"namespaceSelector",
                        {{"matchExpressions",
                          {{{"key", "team"}, {"operator", "In"}, {"values", {"cv", "rl"}}},
                           {{"key", "gpu"}, {"operator", "Exists"}}}}}}})
          .parse(),
      snapshot, test_now());
  ASSERT_EQ(asking.warnings.size(), 1u);
  EXPECT_NE(asking.warnings[0].find("(kubectl label namespace NAME team=cv gpu=VALUE)"),
            std::string::npos)
      << asking.warnings[0];
  snapshot.namespace_labels["default"] = {};
  // Where the webhook does not watch every Namespace it cannot tell: no warning.
  snapshot.namespaces_listed = false;
  EXPECT_TRUE(handle_validate(selecting("nlpp"), snapshot, test_now()).warnings.empty());
}

// Issue 12 defect 4: an exemption applies only where its policy applies, also on scale.
TEST(Validate, AnExemptionForAnotherNamespaceDoesNotLetAScaleUpThrough) {
  const CommPolicy sandbox = a_policy()
                                 .named("sandbox")
                                 .max_comm_share(0.5)
                                 .namespace_selector("team", "sandbox")
                                 .exempt_group("system:masters")
                                 .build();
  Snapshot snapshot = snapshot_of({sandbox}, {});
  snapshot.namespace_labels["nlp"] = {{"team", "nlp"}};
  snapshot.namespace_labels["play"] = {{"team", "sandbox"}};
  auto in = [](const std::string& ns) {
    return a_scale(1, 8).user("admin").group("system:masters").set("/request/namespace", ns);
  };
  const auto in_nlp = handle_validate(in("nlp").parse(), snapshot, test_now());
  EXPECT_FALSE(in_nlp.allowed);
  EXPECT_NE(in_nlp.message.find("change spec.numNodes instead"), std::string::npos);
  // Where the exempting policy is the one that governs, the exemption holds: the sandbox
  // policy is the only one that applies there, so it governs (the built-in default takes
  // part only where no CommPolicy applies).
  EXPECT_TRUE(handle_validate(in("play").parse(), snapshot, test_now()).allowed);
  // Not where a stricter policy without the exemption also applies.
  const CommPolicy everyone = a_policy().named("everyone").max_comm_share(0.3).build();
  Snapshot overruled = snapshot_of({sandbox, everyone}, {});
  overruled.namespace_labels = snapshot.namespace_labels;
  EXPECT_FALSE(handle_validate(in("play").parse(), overruled, test_now()).allowed);
  const CommPolicy strict_sandbox = a_policy()
                                        .named("sandbox")
                                        .max_comm_share(0.1)
                                        .namespace_selector("team", "sandbox")
                                        .exempt_group("system:masters")
                                        .build();
  Snapshot governed = snapshot_of({strict_sandbox, everyone}, {});
  governed.namespace_labels = snapshot.namespace_labels;
  EXPECT_TRUE(handle_validate(in("play").parse(), governed, test_now()).allowed);
  EXPECT_FALSE(handle_validate(in("nlp").parse(), governed, test_now()).allowed);
}

// --- the per-request deadline ----------------------------------------------------------

TEST(Deadline, MutateGatesTheJobAndValidateAcceptsTheGate) {
  const auto request = a_create_of(bert(8)).parse();
  const auto response = gate_past_deadline(request, test_now(), std::chrono::milliseconds(2000));
  ASSERT_TRUE(response.allowed);
  EXPECT_EQ(response.decision, "Gate");
  const json after = apply_patch(request.object, response);
  EXPECT_EQ(after["spec"]["suspend"], true);
  EXPECT_EQ(annotation_of(after, annotation::kReason), "DecisionTimeout");
  ASSERT_EQ(response.warnings.size(), 1u);
  EXPECT_NE(response.warnings[0].find("could not decide within its 2000 ms deadline"),
            std::string::npos);
  auto review = a_create_of(bert(8));
  review.object(after);
  EXPECT_TRUE(handle_validate(review.parse(), kStrictSlow, test_now()).allowed);
}

TEST(Deadline, ValidateDeniesWith503) {
  const auto response = deny_past_deadline(std::chrono::milliseconds(2000));
  EXPECT_FALSE(response.allowed);
  EXPECT_EQ(response.code, 503);
}

// The trial of 2026-12-05 (#20): clearing spec.suspend of a job held for its pool's size
// was refused "until commgate has measured this pool" of a pool measured long before.
TEST(Validate, AnUnsuspendRefusalSaysWhatTheGateWaitsFor) {
  json wide = bert(8);
  wide["spec"]["minNodes"] = 8;
  json gated_wide = gated(wide);
  gated_wide["metadata"]["annotations"][annotation::kReason] = reason::kPoolTooSmall;
  Snapshot snapshot = snapshot_of({strict()}, {a_profile(kFastLink, test_now())});
  const TrainingJob parsed = parse_training_job(wide, ObjectSource::kAdmission, Verbatim::kSkip);
  snapshot.nodes = std::make_shared<std::vector<PoolNode>>(
      std::vector<PoolNode>{commgate::testing::a_pool_node("only", parsed.spec.node_selector)});
  const auto response =
      handle_validate(an_update_of(gated_wide, wide).user("alice").parse(), snapshot, test_now());
  ASSERT_FALSE(response.allowed);
  EXPECT_NE(response.message.find(
                "spec.suspend: must stay true until the pool has the nodes it needs: the pool of "
                "nodeSelector"),
            std::string::npos)
      << response.message;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::webhook
