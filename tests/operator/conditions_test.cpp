// set_condition keeps Kubernetes' condition conventions (apimachinery meta.SetStatusCondition):
// one entry per type, lastTransitionTime moves only when the status changes.
#include "operator/conditions.h"

#include <gtest/gtest.h>

#include "tests/support/builders.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::test_now;
using nlohmann::json;

const TimePoint kLater = test_now() + std::chrono::minutes(5);

json one_probed_false() {
  json conditions = json::array();
  set_condition(conditions, {"Probed", kFalse, "ProbeRunning", "runs", 1}, test_now());
  return conditions;
}

struct SetCase {
  std::string name;
  Condition wanted;
  bool want_changed;
  std::string want_transition;  // lastTransitionTime after the call
};

class SetConditionTest : public ::testing::TestWithParam<SetCase> {};

TEST_P(SetConditionTest, updates_an_existing_entry) {
  const SetCase& c = GetParam();
  json conditions = one_probed_false();
  EXPECT_EQ(set_condition(conditions, c.wanted, kLater), c.want_changed);
  ASSERT_EQ(conditions.size(), 1u) << conditions.dump();
  const json& got = conditions[0];
  EXPECT_EQ(got["status"], c.wanted.status);
  EXPECT_EQ(got["reason"], c.wanted.reason);
  EXPECT_EQ(got["message"], c.wanted.message);
  EXPECT_EQ(got["observedGeneration"], c.wanted.observed_generation);
  EXPECT_EQ(got["lastTransitionTime"], c.want_transition);
}

INSTANTIATE_TEST_SUITE_P(
    Conditions, SetConditionTest,
    ::testing::Values(SetCase{"same_condition_again_changes_nothing",
                              {"Probed", kFalse, "ProbeRunning", "runs", 1},
                              false,
                              "2026-11-30T12:00:00Z"},
                      SetCase{"new_reason_same_status_keeps_the_transition_time",
                              {"Probed", kFalse, "ProbeFailed", "exit code 3", 1},
                              true,
                              "2026-11-30T12:00:00Z"},
                      SetCase{"new_generation_same_status_keeps_the_transition_time",
                              {"Probed", kFalse, "ProbeRunning", "runs", 2},
                              true,
                              "2026-11-30T12:00:00Z"},
                      SetCase{"status_change_moves_the_transition_time",
                              {"Probed", kTrue, "ProbeSucceeded", "measured", 1},
                              true,
                              "2026-11-30T12:05:00Z"}),
    [](const ::testing::TestParamInfo<SetCase>& param_info) { return param_info.param.name; });

TEST(Conditions, a_new_type_is_appended_with_now) {
  json conditions = one_probed_false();
  EXPECT_TRUE(set_condition(conditions, {"Admitted", kTrue, "WithinPolicy", "ok", 3}, kLater));
  ASSERT_EQ(conditions.size(), 2u);
  EXPECT_EQ(conditions[1]["type"], "Admitted");
  EXPECT_EQ(conditions[1]["lastTransitionTime"], "2026-11-30T12:05:00Z");
  EXPECT_EQ(conditions[1]["observedGeneration"], 3);
  EXPECT_TRUE(condition_is(conditions, "Admitted", kTrue));
  EXPECT_FALSE(condition_is(conditions, "Admitted", kFalse));
  EXPECT_EQ(find_condition(conditions, "Running"), nullptr);
}

TEST(Conditions, null_or_malformed_conditions_read_as_empty) {
  json conditions;  // null: a status without conditions
  EXPECT_TRUE(set_condition(conditions, {"Probed", kFalse, "ProbeRunning", "runs", 1}, kLater));
  EXPECT_EQ(conditions.size(), 1u);
  json not_a_list = "garbage";
  EXPECT_EQ(find_condition(not_a_list, "Probed"), nullptr);
  EXPECT_FALSE(remove_condition(not_a_list, "Probed"));
}

TEST(Conditions, remove_drops_only_that_type) {
  json conditions = one_probed_false();
  set_condition(conditions, {"Admitted", kFalse, "MeasurementMissing", "gated", 1}, kLater);
  EXPECT_TRUE(remove_condition(conditions, "Probed"));
  EXPECT_FALSE(remove_condition(conditions, "Probed"));
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0]["type"], "Admitted");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
