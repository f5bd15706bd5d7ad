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

// The typed list follows the same rule (one function, next_condition, makes both).
TEST_P(SetConditionTest, the_typed_list_updates_alike) {
  const SetCase& c = GetParam();
  Conditions conditions = Conditions::from_json(one_probed_false());
  EXPECT_EQ(conditions.set(c.wanted, kLater), c.want_changed);
  EXPECT_EQ(conditions.to_json().size(), 1u);
  const StoredCondition* got = conditions.find("Probed");
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->status, c.wanted.status);
  EXPECT_EQ(got->reason, c.wanted.reason);
  EXPECT_EQ(got->message, c.wanted.message);
  EXPECT_EQ(got->observed_generation, c.wanted.observed_generation);
  EXPECT_EQ(got->last_transition_time, c.want_transition);
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

TEST(Conditions, a_shared_status_keeps_what_another_writer_added_to_an_entry) {
  json conditions = one_probed_false();
  conditions[0]["addedByANewerVersion"] = "kept";
  EXPECT_TRUE(set_condition(conditions, {"Probed", kTrue, "ProbeSucceeded", "ok", 1}, kLater));
  EXPECT_EQ(conditions[0]["addedByANewerVersion"], "kept");
  EXPECT_EQ(conditions[0]["status"], kTrue);
  EXPECT_FALSE(set_condition(conditions, {"Probed", kTrue, "ProbeSucceeded", "ok", 1}, kLater));
}

TEST(Conditions, the_typed_list_reads_leniently_and_writes_back_the_same) {
  json stored = one_probed_false();
  stored.push_back("not an object");
  stored.push_back({{"status", "True"}});                                    // no type
  stored.push_back({{"type", "Probed"}, {"status", "True"}});                // a second Probed
  stored.push_back({{"type", "Admitted"}, {"status", 1}, {"reason", "R"}});  // a wrong type
  const Conditions read = Conditions::from_json(stored);
  const json written = read.to_json();
  ASSERT_EQ(written.size(), 2u) << written.dump();
  EXPECT_EQ(written[0], one_probed_false()[0]);
  EXPECT_EQ(written[1]["type"], "Admitted");
  EXPECT_EQ(written[1]["status"], "");
  EXPECT_EQ(written[1]["reason"], "R");
  EXPECT_TRUE(Conditions::from_json(json()).empty());
  EXPECT_TRUE(Conditions::from_json("garbage").empty());
}

TEST(Conditions, remove_and_carry_generation_on_the_typed_list) {
  Conditions conditions = Conditions::from_json(one_probed_false());
  conditions.set({"Admitted", kFalse, "MeasurementMissing", "gated", 2}, kLater);
  conditions.carry_generation(1, 3);
  EXPECT_EQ(conditions.find("Probed")->observed_generation, 3);
  EXPECT_EQ(conditions.find("Admitted")->observed_generation, 2);
  EXPECT_TRUE(conditions.is("Admitted", kFalse));
  EXPECT_FALSE(conditions.is("Admitted", kTrue));
  EXPECT_TRUE(conditions.remove("Probed"));
  EXPECT_FALSE(conditions.remove("Probed"));
  EXPECT_EQ(conditions.find("Probed"), nullptr);
  EXPECT_TRUE(conditions.remove("Admitted"));
  EXPECT_TRUE(conditions.empty());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
