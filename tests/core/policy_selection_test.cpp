// Which CommPolicy governs a job (core/policy_selection.h; docs/api.md "Which policy
// applies"): the strictest applicable limit wins, the built-in default included unless a
// CommPolicy named `default` replaces it where it applies.
#include "core/policy_selection.h"

#include <gtest/gtest.h>

#include "tests/support/builders.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using testing::a_policy;
using testing::a_training_job;
using Labels = std::map<std::string, std::string>;

struct SelectionCase {
  std::string name;
  std::vector<CommPolicy> policies;
  Labels namespace_labels;
  std::string policy_ref;   // "" : none
  std::string want_policy;  // "" : no policy (error)
  std::string want_error_part;
};

void PrintTo(const SelectionCase& c, std::ostream* os) {
  *os << c.name;
}

class PolicySelection : public ::testing::TestWithParam<SelectionCase> {};

TEST_P(PolicySelection, ChoosesTheGoverningPolicy) {
  const SelectionCase& c = GetParam();
  auto builder = a_training_job().namespace_("research");
  if (!c.policy_ref.empty()) builder.policy_ref(c.policy_ref);
  const TrainingJob job = builder.build();
  std::string error;
  const auto got = select_policy(job, c.namespace_labels, c.policies, &error);
  if (c.want_policy.empty()) {
    EXPECT_FALSE(got) << "selected " << got->metadata.name;
    EXPECT_NE(error.find(c.want_error_part), std::string::npos) << error;
    return;
  }
  ASSERT_TRUE(got) << error;
  EXPECT_EQ(got->metadata.name, c.want_policy);
}

CommPolicy loose() {
  return a_policy().named("loose").max_comm_share(0.9).build();
}
CommPolicy strict() {
  return a_policy().named("strict").max_comm_share(0.1).build();
}
CommPolicy team(double share) {
  return a_policy().named("team").max_comm_share(share).namespace_selector("team", "nlp").build();
}
CommPolicy admin_default(double share) {
  return a_policy().named("default").max_comm_share(share).build();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PolicySelection,
    ::testing::Values(
        SelectionCase{"no_policies_the_built_in_default", {}, {}, "", "default", ""},
        SelectionCase{"a_loose_policy_everywhere_does_not_loosen_the_default",
                      {loose()},
                      {},
                      "",
                      "default",
                      ""},
        SelectionCase{
            "a_stricter_policy_everywhere_tightens", {loose(), strict()}, {}, "", "strict", ""},
        SelectionCase{"a_loose_team_policy_does_not_loosen_the_teams_namespace",
                      {team(0.5)},
                      {{"team", "nlp"}},
                      "",
                      "default",
                      ""},
        SelectionCase{"a_strict_team_policy_tightens_the_teams_namespace",
                      {team(0.2)},
                      {{"team", "nlp"}},
                      "",
                      "team",
                      ""},
        SelectionCase{"a_team_policy_stays_out_of_other_namespaces",
                      {team(0.2)},
                      {{"team", "vision"}},
                      "",
                      "default",
                      ""},
        SelectionCase{"the_strictest_of_several_matching",
                      {team(0.2), strict(), loose()},
                      {{"team", "nlp"}},
                      "",
                      "strict",
                      ""},
        SelectionCase{"a_tie_with_the_default_goes_to_the_admins_policy",
                      {a_policy()
                           .named("a-deny")
                           .max_comm_share(0.3)
                           .action(EnforcementAction::kDeny)
                           .build()},
                      {},
                      "",
                      "a-deny",
                      ""},
        SelectionCase{
            "a_tie_goes_to_the_one_that_also_bounds_efficiency",
            {a_policy().named("a").max_comm_share(0.2).build(),
             a_policy().named("b").max_comm_share(0.2).min_scaling_efficiency(0.8).build()},
            {},
            "",
            "b",
            ""},
        SelectionCase{"a_tie_otherwise_goes_by_name",
                      {a_policy().named("b").max_comm_share(0.2).build(),
                       a_policy().named("a").max_comm_share(0.2).build()},
                      {},
                      "",
                      "a",
                      ""},
        SelectionCase{"a_commpolicy_named_default_replaces_the_built_in_one",
                      {admin_default(0.5)},
                      {},
                      "",
                      "default",
                      ""},
        SelectionCase{
            "a_replaced_default_can_loosen", {admin_default(0.5), loose()}, {}, "", "default", ""},
        SelectionCase{"a_replaced_default_lets_a_looser_team_policy_apply",
                      {admin_default(0.9), team(0.5)},
                      {{"team", "nlp"}},
                      "",
                      "team",
                      ""},
        SelectionCase{"a_default_with_a_selector_replaces_the_built_in_only_where_it_applies",
                      {a_policy()
                           .named("default")
                           .max_comm_share(0.9)
                           .namespace_selector("tier", "sandbox")
                           .build(),
                       team(0.5)},
                      {{"team", "nlp"}},
                      "",
                      "default",
                      ""},
        SelectionCase{"policy_ref_names_a_looser_policy_that_applies",
                      {team(0.5)},
                      {{"team", "nlp"}},
                      "team",
                      "team",
                      ""},
        SelectionCase{"policy_ref_cannot_escape_to_a_policy_for_other_namespaces",
                      {team(0.5)},
                      {{"team", "vision"}},
                      "team",
                      "",
                      "does not apply to namespace \"research\""},
        SelectionCase{"policy_ref_to_a_missing_policy_is_an_error",
                      {loose()},
                      {},
                      "nope",
                      "",
                      "spec.policyRef.name: CommPolicy \"nope\" not found"},
        SelectionCase{
            "policy_ref_default_is_the_built_in_one", {strict()}, {}, "default", "default", ""}),
    [](const auto& param_info) { return param_info.param.name; });

// A stored CommPolicy that does not parse (created without the webhook's or the CRD's
// validation) exists: a policyRef to it says so and why, not "not found" (user trial).
TEST(PolicySelection, APolicyRefToAnInvalidStoredPolicySaysItIsInvalid) {
  Snapshot snapshot;
  snapshot.policies.push_back(a_policy().named("team").max_comm_share(0.5).build());
  nlohmann::json broken = {{"apiVersion", "commgate.io/v1alpha1"},
                           {"kind", "CommPolicy"},
                           {"metadata", {{"name", "broken"}}},
                           {"spec", {{"maxCommShare", 1.5}, {"enforcementAktion", "deny"}}}};
  EXPECT_NE(snapshot.add_policy(broken), "");
  EXPECT_EQ(snapshot.add_policy(to_json(a_policy().named("ok").build())), "");
  ASSERT_EQ(snapshot.invalid_policies.count("broken"), 1u);
  EXPECT_EQ(snapshot.policies.size(), 2u);

  const TrainingJob job = a_training_job().namespace_("research").policy_ref("broken").build();
  std::string error;
  bool invalid = false;
  EXPECT_FALSE(select_policy(job, snapshot, &error, &invalid));
  EXPECT_TRUE(invalid);
  EXPECT_EQ(error.find("not found"), std::string::npos) << error;
  EXPECT_NE(error.find("spec.policyRef.name: CommPolicy \"broken\" exists but is invalid"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("spec.maxCommShare: must be <= 1, got 1.5"), std::string::npos) << error;
  EXPECT_NE(error.find("spec.enforcementAktion: unknown field"), std::string::npos) << error;

  // A name no policy has is still not found; the others are still chosen.
  const TrainingJob missing = a_training_job().namespace_("research").policy_ref("nope").build();
  EXPECT_FALSE(select_policy(missing, snapshot, &error, &invalid));
  EXPECT_FALSE(invalid);
  EXPECT_NE(error.find("CommPolicy \"nope\" not found"), std::string::npos) << error;
  const TrainingJob team = a_training_job().namespace_("research").policy_ref("team").build();
  ASSERT_TRUE(select_policy(team, snapshot, &error, &invalid));
}

TEST(PolicySelection, ABuiltInDefaultKeepsItsDefaults) {
  const CommPolicy p = strictest_policy_for_namespace({}, {loose()});
  EXPECT_EQ(p.metadata.name, "default");
  EXPECT_DOUBLE_EQ(p.spec.max_comm_share, 0.30);
  EXPECT_EQ(p.spec.enforcement_action, EnforcementAction::kDownsize);
}

}  // namespace
}  // namespace commgate
