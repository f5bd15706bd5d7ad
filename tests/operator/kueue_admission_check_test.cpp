// operator/kueue_admission_check.h: AdmissionChecks read as Kueue v0.19.2 serves them, and
// the Active condition commgate keeps on its own.
#include "operator/kueue_admission_check.h"

#include <gtest/gtest.h>

#include "operator/kueue_check_state.h"
#include "tests/operator/kueue_test_workloads.h"
#include "tests/support/builders.h"

namespace commgate::op::kueue {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json our_check(std::optional<json> parameters = std::nullopt) {
  json doc = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
              {"kind", "AdmissionCheck"},
              {"metadata", {{"name", "comm"}, {"generation", 3}}},
              {"spec", {{"controllerName", "commgate.io/comm-check"}}}};
  if (parameters) doc["spec"]["parameters"] = *parameters;
  return doc;
}

json policy_ref(const std::string& name, const std::string& group = "commgate.io",
                const std::string& kind = "CommPolicy") {
  return {{"apiGroup", group}, {"kind", kind}, {"name", name}};
}

const std::set<std::string> kPolicies = {"default", "strict"};

TEST(KueueAdmissionCheck, the_upstream_provisioning_check_is_read_and_not_ours) {
  json check;
  for (const json& doc :
       testing::ecosystem_fixture("kueue-v0.19.2/example-provisioning-setup.yaml"))
    if (doc["kind"] == "AdmissionCheck") check = doc;
  ASSERT_TRUE(check.is_object()) << "fixture missing its AdmissionCheck";
  const AdmissionCheck ac = read_admission_check(check);
  EXPECT_EQ(ac.metadata.name, "sample-prov");
  EXPECT_EQ(ac.controller_name, "kueue.x-k8s.io/provisioning-request");
  ASSERT_TRUE(ac.parameters.has_value());
  EXPECT_EQ(ac.parameters->kind, "ProvisioningRequestConfig");
  EXPECT_FALSE(ac.is_ours());
}

TEST(KueueAdmissionCheck, ours_is_the_one_with_our_controller_name) {
  const AdmissionCheck ac = read_admission_check(our_check());
  EXPECT_TRUE(ac.is_ours());
  EXPECT_EQ(ac.metadata.generation, 3);
  EXPECT_FALSE(ac.parameters.has_value());
}

struct ActiveCase {
  std::string name;
  std::optional<json> parameters;
  std::string want_status;
  std::string want_reason;
  std::string want_message;  // substring
};

void PrintTo(const ActiveCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<ActiveCase> active_cases() {
  return {
      {"without_parameters_each_namespace_has_its_policy", std::nullopt, kTrue, kActiveReason,
       "the CommPolicy that applies to its namespace"},
      {"naming_an_existing_policy", policy_ref("strict"), kTrue, kActiveReason,
       "held to CommPolicy strict"},
      {"naming_a_missing_policy", policy_ref("lenient"), kFalse, kBadParametersRefReason,
       "spec.parameters.name: CommPolicy \"lenient\" not found"},
      {"naming_another_group", policy_ref("strict", "kueue.x-k8s.io"), kFalse,
       kBadParametersRefReason,
       "spec.parameters.apiGroup: wrong group \"kueue.x-k8s.io\", expecting \"commgate.io\""},
      {"naming_another_kind", policy_ref("strict", "commgate.io", "CommProfile"), kFalse,
       kBadParametersRefReason,
       "spec.parameters.kind: wrong kind \"CommProfile\", expecting \"CommPolicy\""},
      {"naming_no_name", policy_ref(""), kFalse, kBadParametersRefReason,
       "spec.parameters.name: empty name"},
  };
}

class AdmissionCheckActiveTest : public ::testing::TestWithParam<ActiveCase> {};

TEST_P(AdmissionCheckActiveTest, sets_the_active_condition) {
  const ActiveCase& c = GetParam();
  const Condition cond =
      admission_check_active(read_admission_check(our_check(c.parameters)), kPolicies);
  EXPECT_EQ(cond.type, "Active");
  EXPECT_EQ(cond.status, c.want_status);
  EXPECT_EQ(cond.reason, c.want_reason);
  EXPECT_NE(cond.message.find(c.want_message), std::string::npos)
      << "want message containing: " << c.want_message << "\n got: " << cond.message;
  EXPECT_EQ(cond.observed_generation, 3);
  if (c.want_status == kFalse) {
    EXPECT_NE(cond.message.find("ClusterQueue"), std::string::npos) << cond.message;
  }
}

INSTANTIATE_TEST_SUITE_P(KueueAdmissionCheck, AdmissionCheckActiveTest,
                         ::testing::ValuesIn(active_cases()),
                         [](const ::testing::TestParamInfo<ActiveCase>& p) {
                           return p.param.name;
                         });

// The caller writes it with set_condition: once the policy appears, the status flips and
// lastTransitionTime moves.
TEST(KueueAdmissionCheck, the_condition_flips_when_the_policy_is_created) {
  const AdmissionCheck ac = read_admission_check(our_check(policy_ref("team-a")));
  json conditions = json::array();
  const TimePoint t0 = commgate::testing::test_now();
  ASSERT_TRUE(set_condition(conditions, admission_check_active(ac, kPolicies), t0));
  EXPECT_EQ(conditions[0]["status"], "False");
  std::set<std::string> with_team_a = kPolicies;
  with_team_a.insert("team-a");
  const TimePoint t1 = t0 + std::chrono::minutes(1);
  ASSERT_TRUE(set_condition(conditions, admission_check_active(ac, with_team_a), t1));
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0]["status"], "True");
  EXPECT_EQ(conditions[0]["reason"], "Active");
  EXPECT_EQ(conditions[0]["observedGeneration"], 3);
  EXPECT_EQ(conditions[0]["lastTransitionTime"], format_rfc3339(t1));
  EXPECT_FALSE(set_condition(conditions, admission_check_active(ac, with_team_a),
                             t1 + std::chrono::minutes(1)));
}

TEST(KueueAdmissionCheck, malformed_checks_name_the_field) {
  json no_controller = our_check();
  no_controller["spec"].erase("controllerName");
  json old_version = our_check();
  old_version["apiVersion"] = "kueue.x-k8s.io/v1beta1";
  json bad_params = our_check(json{{"apiGroup", 7}, {"kind", "CommPolicy"}, {"name", "x"}});
  const std::vector<std::pair<json, std::string>> cases = {
      {no_controller, "spec.controllerName: required field is missing"},
      {old_version, "apiVersion: must be kueue.x-k8s.io/v1beta2"},
      {bad_params, "spec.parameters.apiGroup: must be a string"},
  };
  for (const auto& [doc, want] : cases) {
    try {
      read_admission_check(doc);
      ADD_FAILURE() << "accepted, want " << want;
    } catch (const ValidationError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos)
          << "want " << want << "\ngot " << e.what();
    }
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op::kueue
