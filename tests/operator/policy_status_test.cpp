// CommPolicy status.governance and its Shadowed and Valid conditions
// (operator/policy_status.h): what an admin reads to see whether a policy does anything.
#include "operator/policy_status.h"

#include <gtest/gtest.h>

#include "kube/testing/fake_client.h"
#include "tests/crds/schema_check.h"
#include "tests/support/builders.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::a_policy;
using commgate::testing::test_now;
using kube::testing::FakeClient;
using kube::testing::Method;
using nlohmann::json;

const std::string kPolicies = "/apis/commgate.io/v1alpha1/commpolicies";

json stored(const CommPolicy& p, int64_t generation = 1) {
  json j = to_json(p);
  j["metadata"]["generation"] = generation;
  return j;
}

// The trial's cluster: `default` 0.5 everywhere, `team` 0.6 for team=nlp (overruled
// wherever it applies), `team-risky` 0.5/deny for team=risky (wins its tie by action).
struct Cluster {
  Snapshot snapshot;
  Cluster() {
    snapshot.policies = {
        a_policy().named("default").max_comm_share(0.5).build(),
        a_policy().named("team").max_comm_share(0.6).namespace_selector("team", "nlp").build(),
        a_policy()
            .named("team-risky")
            .max_comm_share(0.5)
            .action(EnforcementAction::kDeny)
            .namespace_selector("team", "risky")
            .build(),
        a_policy().named("gpu-lab").max_comm_share(0.1).namespace_selector("lab", "gpu").build()};
    snapshot.namespace_labels = {{"nlp-a", {{"team", "nlp"}}},
                                 {"nlp-b", {{"team", "nlp"}}},
                                 {"risky-a", {{"team", "risky"}}},
                                 {"kube-system", {}}};
  }
  json patch_for(const json& object) const {
    return policy_status_patch(
        object, snapshot, governance_of(snapshot.policies, snapshot.namespace_labels), test_now());
  }
  json patch_for(size_t i) const { return patch_for(stored(snapshot.policies[i])); }
};

const json* condition(const json& status, const std::string& type) {
  for (const auto& c : status["conditions"])
    if (c["type"] == type) return &c;
  return nullptr;
}

void expect_schema_valid(const json& status) {
  const json crd = commgate::testing::load_crd("commpolicies.commgate.io.yaml");
  const auto issues = commgate::testing::validate(
      *commgate::testing::schema_at(commgate::testing::crd_schema(crd), "status"), status,
      "status");
  EXPECT_TRUE(issues.empty()) << commgate::testing::to_string(issues);
}

TEST(PolicyStatus, APolicyOverruledWhereverItAppliesIsShadowed) {
  const Cluster c;
  const json status = c.patch_for(1)["status"];
  EXPECT_EQ(status["governance"]["governedNamespaceCount"], 0);
  EXPECT_EQ(status["governance"]["shadowedNamespaceCount"], 2);
  const json* shadowed = condition(status, "Shadowed");
  ASSERT_TRUE(shadowed);
  EXPECT_EQ((*shadowed)["status"], "True");
  EXPECT_EQ((*shadowed)["reason"], "ShadowedEverywhere");
  EXPECT_EQ((*shadowed)["message"],
            "governs no namespace: another policy governs each of the 2 namespaces it selects: "
            "nlp-a, nlp-b under CommPolicy default, with a lower maxCommShare (0.5 against "
            "0.6)");
  expect_schema_valid(status);
}

TEST(PolicyStatus, APolicyThatGovernsListsItsNamespacesAndWhereItIsOverruled) {
  const Cluster c;
  const json status = c.patch_for(0)["status"];
  EXPECT_EQ(status["governance"]["governedNamespaces"], (json{"kube-system", "nlp-a", "nlp-b"}));
  EXPECT_EQ(status["governance"]["governedNamespaceCount"], 3);
  const json* shadowed = condition(status, "Shadowed");
  ASSERT_TRUE(shadowed);
  EXPECT_EQ((*shadowed)["status"], "False");
  EXPECT_EQ((*shadowed)["reason"], "Governs");
  EXPECT_NE((*shadowed)["message"].get<std::string>().find(
                "risky-a under CommPolicy team-risky, with a stricter enforcementAction (deny "
                "against downsize)"),
            std::string::npos)
      << (*shadowed)["message"];
  const json* valid = condition(status, "Valid");
  ASSERT_TRUE(valid);
  EXPECT_EQ((*valid)["status"], "True");
  expect_schema_valid(status);
  // The tie at 0.5 goes to team-risky's deny, not to the name.
  EXPECT_EQ(c.patch_for(2)["status"]["governance"]["governedNamespaces"], json{"risky-a"});
  // A policy for namespaces that do not exist says so.
  EXPECT_EQ((*condition(c.patch_for(3)["status"], "Shadowed"))["reason"], "SelectsNoNamespace");
}

TEST(PolicyStatus, NothingToWriteOnceTheStatusSaysItAndTheTransitionTimeIsKept) {
  Cluster c;
  json object = stored(c.snapshot.policies[1]);
  object["status"] = c.patch_for(1)["status"];
  object["status"]["decisionCounts"] = {{"denied", 3}};
  EXPECT_TRUE(c.patch_for(object).is_null());
  // A new namespace under a stricter team policy: a new message, the same status (True).
  c.snapshot.namespace_labels["nlp-c"] = {{"team", "nlp"}};
  const json patch = c.patch_for(object);
  ASSERT_FALSE(patch.is_null());
  EXPECT_EQ(patch["status"]["governance"]["shadowedNamespaceCount"], 3);
  EXPECT_FALSE(patch["status"].contains("decisionCounts"));  // a merge patch keeps them
  // Lowered below `default`'s share, it governs its namespaces.
  c.snapshot.policies[1].spec.max_comm_share = 0.4;
  const json governs = c.patch_for(object);
  EXPECT_EQ((*condition(governs["status"], "Shadowed"))["status"], "False");
  EXPECT_EQ(governs["status"]["governance"]["governedNamespaceCount"], 3);
}

TEST(PolicyStatus, AnInvalidPolicySaysWhetherItsLastValidVersionGoverns) {
  Cluster c;
  c.snapshot.stale_policies["team-risky"] = "spec.maxCommShare: must be <= 1, got 1.5";
  json kept = stored(c.snapshot.policies[2], 2);
  const json kept_status = c.patch_for(kept)["status"];
  const json* valid = condition(kept_status, "Valid");
  ASSERT_TRUE(valid);
  EXPECT_EQ((*valid)["status"], "False");
  EXPECT_EQ((*valid)["reason"], "KeptLastValid");
  EXPECT_EQ((*valid)["observedGeneration"], 2);
  c.snapshot.invalid_policies["broken"] = "spec.enforcementAktion: unknown field";
  json broken = {{"apiVersion", "commgate.io/v1alpha1"},
                 {"kind", "CommPolicy"},
                 {"metadata", {{"name", "broken"}, {"generation", 1}}},
                 {"spec", {{"enforcementAktion", "deny"}}}};
  const json status = c.patch_for(broken)["status"];
  EXPECT_EQ((*condition(status, "Valid"))["reason"], "Invalid");
  // It selects no namespace only because it does not parse (the trial read
  // SelectsNoNamespace for a policy that selects two).
  EXPECT_EQ((*condition(status, "Shadowed"))["reason"], "NotValid");
  EXPECT_EQ(status["governance"]["governedNamespaceCount"], 0);
  expect_schema_valid(status);
}

// Issue #19 item 6 across restarts: each generation that parses is recorded in
// status.lastValid, exactly (a field the new spec dropped is removed from the copy), once.
TEST(PolicyStatus, RecordsEachGenerationThatParsesAsTheLastValidSpec) {
  const Cluster c;
  json object = stored(c.snapshot.policies[0], 3);
  object["metadata"]["resourceVersion"] = "41";
  const json patch = c.patch_for(object);
  ASSERT_TRUE(patch.contains("status")) << patch.dump();
  EXPECT_EQ(patch["status"]["lastValid"]["generation"], 3);
  EXPECT_EQ(patch["status"]["lastValid"]["resourceVersion"], "41");
  EXPECT_EQ(patch["status"]["lastValid"]["spec"], object["spec"]);
  expect_schema_valid(patch["status"]);

  // Written: nothing more to say for that generation.
  json written = object;
  written.merge_patch(patch);
  EXPECT_TRUE(c.patch_for(written).is_null()) << c.patch_for(written).dump();

  // A new generation without a field the old one had: the merge patch removes it.
  json next = written;
  next["metadata"]["generation"] = 4;
  next["spec"].erase("measurementTTL");
  ASSERT_TRUE(written["status"]["lastValid"]["spec"].contains("measurementTTL"));
  const json patch4 = c.patch_for(next);
  ASSERT_TRUE(patch4.contains("status")) << patch4.dump();
  json after = next;
  after.merge_patch(patch4);
  EXPECT_EQ(after["status"]["lastValid"]["spec"], next["spec"]);
  EXPECT_EQ(after["status"]["lastValid"]["generation"], 4);
}

TEST(PolicyStatus, WritesOnlyThePoliciesWhoseStatusChanges) {
  const Cluster c;
  FakeClient api;
  kube::Store::Objects objects;
  for (const auto& p : c.snapshot.policies) {
    api.seed(kPolicies, stored(p));
    objects[p.metadata.name] = std::make_shared<const json>(stored(p));
  }
  EXPECT_EQ(write_policy_statuses(objects, c.snapshot, api, test_now()), 4u);
  EXPECT_EQ(api.calls(Method::kPatchStatus), 4);
  const json team = *api.peek(kPolicies + "/team");
  EXPECT_EQ((*condition(team["status"], "Shadowed"))["status"], "True");
  // The cache now shows what was written: nothing more to write.
  for (const auto& p : c.snapshot.policies)
    objects[p.metadata.name] =
        std::make_shared<const json>(*api.peek(kPolicies + "/" + p.metadata.name));
  EXPECT_EQ(write_policy_statuses(objects, c.snapshot, api, test_now()), 0u);
  EXPECT_EQ(api.calls(Method::kPatchStatus), 4);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
