// Which CommPolicy governs a job (core/policy_selection.h; docs/api.md "Which policy
// applies"): the strictest applicable policy governs (limit, then action, never the name
// first); the built-in default only where no CommPolicy applies.
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

constexpr const char* kBuiltin = kBuiltinPolicyName;

// Equal in everything that decides, different in what it may probe.
CommPolicy probing_at_most(CommPolicy p, int nodes) {
  p.spec.probe.max_nodes = nodes;
  return p;
}

CommPolicy team_risky_deny() {
  return a_policy()
      .named("team-risky")
      .max_comm_share(0.5)
      .action(EnforcementAction::kDeny)
      .namespace_selector("team", "risky")
      .exempt_user("carol")
      .build();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PolicySelection,
    ::testing::Values(
        SelectionCase{"no_policies_the_built_in_default", {}, {}, "", kBuiltin, ""},
        // Issue #19 "a policy model an admin can predict": the built-in default takes part
        // only where no CommPolicy applies.
        SelectionCase{"a_loose_policy_everywhere_replaces_the_built_in_default",
                      {loose()},
                      {},
                      "",
                      "loose",
                      ""},
        SelectionCase{
            "a_stricter_policy_everywhere_tightens", {loose(), strict()}, {}, "", "strict", ""},
        SelectionCase{"a_looser_team_policy_governs_the_teams_namespace",
                      {team(0.5)},
                      {{"team", "nlp"}},
                      "",
                      "team",
                      ""},
        SelectionCase{"a_strict_team_policy_tightens_the_teams_namespace",
                      {team(0.2)},
                      {{"team", "nlp"}},
                      "",
                      "team",
                      ""},
        SelectionCase{"the_built_in_default_governs_where_no_policy_applies",
                      {team(0.2)},
                      {{"team", "vision"}},
                      "",
                      kBuiltin,
                      ""},
        SelectionCase{"the_strictest_of_several_matching",
                      {team(0.2), strict(), loose()},
                      {{"team", "nlp"}},
                      "",
                      "strict",
                      ""},
        SelectionCase{
            "a_tie_goes_to_the_one_that_also_bounds_efficiency",
            {a_policy().named("a").max_comm_share(0.2).build(),
             a_policy().named("b").max_comm_share(0.2).min_scaling_efficiency(0.8).build()},
            {},
            "",
            "b",
            ""},
        // The trial's case: `default` 0.5/downsize everywhere and `team-risky` 0.5/deny; the
        // tie went to the name, risky jobs were downsized and carol's exemption did nothing.
        SelectionCase{"a_tie_in_limits_goes_to_the_stricter_action_not_the_name",
                      {admin_default(0.5), team_risky_deny()},
                      {{"team", "risky"}},
                      "",
                      "team-risky",
                      ""},
        SelectionCase{"a_tie_in_limits_and_action_goes_to_the_stricter_missing_measurement_action",
                      {a_policy().named("a").max_comm_share(0.2).build(),
                       a_policy()
                           .named("b")
                           .max_comm_share(0.2)
                           .on_missing(MissingMeasurementAction::kDeny)
                           .build()},
                      {},
                      "",
                      "b",
                      ""},
        SelectionCase{"a_tie_in_what_decides_goes_to_fewer_exemptions",
                      {a_policy().named("a").max_comm_share(0.2).exempt_user("carol").build(),
                       a_policy().named("b").max_comm_share(0.2).build()},
                      {},
                      "",
                      "b",
                      ""},
        // The trial's defect: a dryrun policy for every namespace with a lower limit, added
        // to observe, stopped team-risky's deny; reporting policies never displace
        // enforcing ones.
        SelectionCase{"a_reporting_policy_with_a_lower_limit_does_not_stop_enforcement",
                      {team_risky_deny(), a_policy()
                                              .named("observe")
                                              .max_comm_share(0.25)
                                              .action(EnforcementAction::kDryRun)
                                              .build()},
                      {{"team", "risky"}},
                      "",
                      "team-risky",
                      ""},
        SelectionCase{"a_reporting_policy_governs_where_nothing_enforces",
                      {team_risky_deny(), a_policy()
                                              .named("observe")
                                              .max_comm_share(0.25)
                                              .action(EnforcementAction::kDryRun)
                                              .build()},
                      {{"team", "nlp"}},
                      "",
                      "observe",
                      ""},
        SelectionCase{
            "a_warn_policy_with_a_lower_limit_does_not_stop_a_downsize",
            {a_policy().named("down").max_comm_share(0.3).build(),
             a_policy().named("warn").max_comm_share(0.2).action(EnforcementAction::kWarn).build()},
            {},
            "",
            "down",
            ""},
        SelectionCase{"a_tie_in_everything_goes_by_name",
                      {a_policy().named("b").max_comm_share(0.2).build(),
                       a_policy().named("a").max_comm_share(0.2).build()},
                      {},
                      "",
                      "a",
                      ""},
        SelectionCase{"a_commpolicy_named_default_is_a_policy_like_any_other",
                      {admin_default(0.5)},
                      {},
                      "",
                      "default",
                      ""},
        SelectionCase{"an_admin_default_and_a_looser_one_the_stricter_governs",
                      {admin_default(0.5), loose()},
                      {},
                      "",
                      "default",
                      ""},
        SelectionCase{"a_team_policy_under_a_loose_admin_default",
                      {admin_default(0.9), team(0.5)},
                      {{"team", "nlp"}},
                      "",
                      "team",
                      ""},
        SelectionCase{"an_admin_default_with_a_selector_applies_only_where_it_selects",
                      {a_policy()
                           .named("default")
                           .max_comm_share(0.9)
                           .namespace_selector("tier", "sandbox")
                           .build(),
                       team(0.5)},
                      {{"team", "nlp"}},
                      "",
                      "team",
                      ""},
        SelectionCase{"an_admin_default_with_a_selector_leaves_the_built_in_one_elsewhere",
                      {a_policy()
                           .named("default")
                           .max_comm_share(0.9)
                           .namespace_selector("tier", "sandbox")
                           .build(),
                       team(0.5)},
                      {{"team", "vision"}},
                      "",
                      kBuiltin,
                      ""},
        // Issue #19 item 1: a policyRef may only tighten.
        SelectionCase{"policy_ref_naming_the_governing_policy",
                      {team(0.5)},
                      {{"team", "nlp"}},
                      "team",
                      "team",
                      ""},
        SelectionCase{"policy_ref_default_may_tighten_to_the_built_in_one",
                      {team(0.5)},
                      {{"team", "nlp"}},
                      "default",
                      kBuiltin,
                      ""},
        SelectionCase{"policy_ref_cannot_loosen_a_stricter_admin_policy",
                      {admin_default(0.9), team(0.5), strict()},
                      {{"team", "nlp"}},
                      "team",
                      "strict",
                      ""},
        SelectionCase{"policy_ref_on_a_tie_in_what_decides_may_choose_either",
                      {a_policy().named("a").max_comm_share(0.2).build(),
                       probing_at_most(a_policy().named("b").max_comm_share(0.2).build(), 2)},
                      {},
                      "b",
                      "b",
                      ""},
        SelectionCase{"policy_ref_on_a_tied_limit_cannot_choose_a_milder_action",
                      {a_policy()
                           .named("a-deny")
                           .max_comm_share(0.2)
                           .action(EnforcementAction::kDeny)
                           .build(),
                       a_policy()
                           .named("b-dryrun")
                           .max_comm_share(0.2)
                           .action(EnforcementAction::kDryRun)
                           .build()},
                      {},
                      "b-dryrun",
                      "a-deny",
                      ""},
        SelectionCase{"policy_ref_cannot_bring_exemptions_the_governing_policy_lacks",
                      {a_policy().named("a").max_comm_share(0.1).build(),
                       a_policy().named("b").max_comm_share(0.1).exempt_user("carol").build()},
                      {},
                      "b",
                      "a",
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
        SelectionCase{"policy_ref_default_is_the_built_in_one", {}, {}, "default", kBuiltin, ""},
        SelectionCase{"policy_ref_default_cannot_escape_a_stricter_policy",
                      {a_policy()
                           .named("strict-deny")
                           .max_comm_share(0.05)
                           .action(EnforcementAction::kDeny)
                           .build()},
                      {},
                      "default",
                      "strict-deny",
                      ""}),
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

// What a policyRef may name (at_least_as_strict): each field that decides or admits a job,
// one at a time against the same base, in both directions.
TEST(PolicySelection, AtLeastAsStrictComparesEveryFieldThatDecides) {
  const CommPolicy base = a_policy().named("base").max_comm_share(0.2).build();
  auto milder_and_stricter = [&](const char* field, CommPolicy milder, CommPolicy stricter) {
    EXPECT_FALSE(at_least_as_strict(milder, base)) << field << ": milder";
    EXPECT_TRUE(at_least_as_strict(base, milder)) << field << ": base over milder";
    EXPECT_TRUE(at_least_as_strict(stricter, base)) << field << ": stricter";
    EXPECT_FALSE(at_least_as_strict(base, stricter)) << field << ": base over stricter";
  };
  milder_and_stricter("maxCommShare", a_policy().max_comm_share(0.3).build(),
                      a_policy().max_comm_share(0.1).build());
  const CommPolicy efficient = a_policy().max_comm_share(0.2).min_scaling_efficiency(0.7).build();
  EXPECT_TRUE(at_least_as_strict(efficient, base));  // minScalingEfficiency set: stricter
  EXPECT_FALSE(at_least_as_strict(base, efficient));
  milder_and_stricter("enforcementAction",
                      a_policy().max_comm_share(0.2).action(EnforcementAction::kWarn).build(),
                      a_policy().max_comm_share(0.2).action(EnforcementAction::kDeny).build());
  milder_and_stricter(
      "onMissingMeasurement",
      a_policy().max_comm_share(0.2).on_missing(MissingMeasurementAction::kAdmit).build(),
      a_policy().max_comm_share(0.2).on_missing(MissingMeasurementAction::kDeny).build());
  milder_and_stricter("measurementTTL",
                      a_policy().max_comm_share(0.2).ttl(std::chrono::hours(48)).build(),
                      a_policy().max_comm_share(0.2).ttl(std::chrono::hours(1)).build());
  CommPolicy wider = base;
  wider.spec.max_extrapolation = 8;
  CommPolicy narrower = base;
  narrower.spec.max_extrapolation = 2;
  milder_and_stricter("maxExtrapolation", wider, narrower);
  // Issue #20: a policyRef to a policy that ignores the pool's size would escape the pool
  // check of the policy that governs.
  CommPolicy ignores = base;
  ignores.spec.on_insufficient_nodes = InsufficientNodesAction::kIgnore;
  CommPolicy denies = base;
  denies.spec.on_insufficient_nodes = InsufficientNodesAction::kDeny;
  milder_and_stricter("onInsufficientNodes", ignores, denies);
  // The Kueue check's answer for a queued job that names no model.
  CommPolicy admits_unmodelled = base;
  admits_unmodelled.spec.admission_check.without_model = WithoutModelAction::kReady;
  CommPolicy rejects_unmodelled = base;
  rejects_unmodelled.spec.admission_check.without_model = WithoutModelAction::kRejected;
  EXPECT_TRUE(at_least_as_strict(rejects_unmodelled, admits_unmodelled));
  EXPECT_FALSE(at_least_as_strict(admits_unmodelled, rejects_unmodelled));
  // And where both select a namespace, the one that rejects governs, whatever the names.
  admits_unmodelled.metadata.name = "a-admits";
  rejects_unmodelled.metadata.name = "z-rejects";
  EXPECT_TRUE(governs_over(rejects_unmodelled, admits_unmodelled));
  EXPECT_EQ(why_governs_over(rejects_unmodelled, admits_unmodelled),
            "a stricter admissionCheck.withoutModel (Rejected against Ready)");
  EXPECT_FALSE(at_least_as_strict(a_policy().max_comm_share(0.2).exempt_group("ml").build(), base));
  EXPECT_FALSE(at_least_as_strict(
      a_policy().max_comm_share(0.2).exempt_service_account("ns/nightly").build(), base));
  EXPECT_TRUE(
      at_least_as_strict(base, a_policy().max_comm_share(0.2).exempt_user("carol").build()));
}

TEST(PolicySelection, ABuiltInDefaultKeepsItsDefaults) {
  const CommPolicy p = governing_policy({}, {team(0.1)});
  EXPECT_EQ(p.metadata.name, kBuiltinPolicyName);
  EXPECT_EQ(policy_label(p.metadata.name), "the built-in default policy");
  EXPECT_EQ(policy_label("default"), "CommPolicy default");
  EXPECT_DOUBLE_EQ(p.spec.max_comm_share, 0.30);
  EXPECT_EQ(p.spec.enforcement_action, EnforcementAction::kDownsize);
}

// CommPolicy status (issue #19): which namespaces each policy governs, and where it is
// shadowed by which policy.
TEST(PolicyGovernance, SaysWhichNamespacesEachPolicyGovernsAndWhereItIsShadowed) {
  const std::vector<CommPolicy> policies = {admin_default(0.5), team_risky_deny(), team(0.6)};
  const std::map<std::string, Labels> namespaces = {{"risky-a", {{"team", "risky"}}},
                                                    {"nlp-a", {{"team", "nlp"}}},
                                                    {"nlp-b", {{"team", "nlp"}}},
                                                    {"other", {}}};
  auto g = governance_of(policies, namespaces);
  EXPECT_EQ(g["default"].governed, (std::vector<std::string>{"nlp-a", "nlp-b", "other"}));
  EXPECT_EQ(g["team-risky"].governed, (std::vector<std::string>{"risky-a"}));
  EXPECT_TRUE(g["team-risky"].shadowed_in.empty());
  EXPECT_TRUE(g["team"].governed.empty());
  using Shadow = std::pair<std::string, std::string>;
  EXPECT_EQ(g["team"].shadowed_in,
            (std::vector<Shadow>{{"nlp-a", "default"}, {"nlp-b", "default"}}));
  EXPECT_EQ(g["default"].shadowed_in, (std::vector<Shadow>{{"risky-a", "team-risky"}}));
  EXPECT_EQ(governance_of({}, namespaces).size(), 0u);
}

// What the warning and the Shadowed condition say: the field that decided, with both
// values (the trial read "a lower maxCommShare" for a policy that lost on exemptions).
TEST(PolicyGovernance, SaysWhichFieldDecided) {
  const CommPolicy base = a_policy().named("base").max_comm_share(0.3).build();
  auto with = [&](auto change) {
    CommPolicy p = base;
    change(p.spec);
    return p;
  };
  EXPECT_EQ(why_governs_over(base, with([](CommPolicySpec& s) { s.max_comm_share = 0.5; })),
            "a lower maxCommShare (0.3 against 0.5)");
  EXPECT_EQ(why_governs_over(base, with([](CommPolicySpec& s) {
                               s.max_comm_share = 0.1;
                               s.enforcement_action = EnforcementAction::kDryRun;
                             })),
            "an enforcing action (downsize against dryrun, which only reports)");
  EXPECT_EQ(
      why_governs_over(
          with([](CommPolicySpec& s) { s.enforcement_action = EnforcementAction::kDeny; }), base),
      "a stricter enforcementAction (deny against downsize)");
  EXPECT_EQ(why_governs_over(
                base, with([](CommPolicySpec& s) { s.measurement_ttl = std::chrono::hours(48); })),
            "a shorter measurementTTL (24h against 48h)");
  EXPECT_EQ(why_governs_over(base, with([](CommPolicySpec& s) { s.exemptions.users = {"carol"}; })),
            "fewer exemptions (0 against 1)");
  EXPECT_EQ(why_governs_over(base, base), "its name, all else being equal");
}

TEST(PolicyGovernance, APolicyThatCanNeverGovernIsNamed) {
  // default (0.5, every namespace) wins over team (0.6, team=nlp) wherever team applies.
  EXPECT_EQ(never_governs_because(team(0.6), {admin_default(0.5), team(0.6)}), "default");
  // A stricter team policy wins where it applies: nothing shadows it.
  EXPECT_EQ(never_governs_because(team(0.4), {admin_default(0.5)}), std::nullopt);
  // A policy for other namespaces cannot shadow it.
  EXPECT_EQ(never_governs_because(team(0.6), {team_risky_deny()}), std::nullopt);
  // The broad policy is not shadowed by a narrower stricter one (it governs elsewhere).
  EXPECT_EQ(never_governs_because(admin_default(0.5), {team(0.1)}), std::nullopt);
  // A selector with the same requirement written as matchExpressions In counts.
  CommPolicy in_nlp = a_policy().named("in-nlp").max_comm_share(0.1).build();
  in_nlp.spec.namespace_selector.match_expressions.push_back({"team", "In", {"nlp"}});
  EXPECT_EQ(never_governs_because(team(0.6), {in_nlp}), "in-nlp");
  // Of several that shadow it, the one that would govern is named.
  EXPECT_EQ(never_governs_because(team(0.6), {admin_default(0.5), strict()}), "strict");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
