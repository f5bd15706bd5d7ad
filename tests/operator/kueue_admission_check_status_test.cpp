// operator/kueue_admission_check_status.h: the apply that keeps the Active condition of
// each AdmissionCheck of ours, table-driven over what is stored; and the pass that writes
// only those that need it, as our field manager, forced, on the status subresource.
#include "operator/kueue_admission_check_status.h"

#include <gtest/gtest.h>

#include "core/time_format.h"
#include "kube/testing/fake_client.h"
#include "operator/kueue_admission_check.h"
#include "operator/kueue_check_state.h"
#include "tests/support/builders.h"

namespace commgate::op::kueue {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::test_now;
using nlohmann::json;

json a_check(const std::string& controller, const json& parameters = nullptr,
             const json& conditions = nullptr) {
  json check = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                {"kind", "AdmissionCheck"},
                {"metadata", {{"name", "comm"}, {"uid", "uid-1"}, {"generation", 3}}},
                {"spec", {{"controllerName", controller}}}};
  if (!parameters.is_null()) check["spec"]["parameters"] = parameters;
  if (!conditions.is_null()) check["status"] = {{"conditions", conditions}};
  return check;
}

json params(const std::string& name) {
  return {{"apiGroup", "commgate.io"}, {"kind", "CommPolicy"}, {"name", name}};
}

json active(const std::string& status, const std::string& reason, const std::string& message,
            int generation, const std::string& since) {
  return {{"type", "Active"},
          {"status", status},
          {"reason", reason},
          {"message", message},
          {"observedGeneration", generation},
          {"lastTransitionTime", since}};
}

const std::string kEarlier = "2026-01-01T00:00:00Z";
const std::string kActiveMessage =
    "The admission check is active: Workloads are held to CommPolicy team";

struct StatusCase {
  std::string name;
  json check;
  std::optional<std::string> want_status;  // nullopt: no write
  std::string want_reason;
  std::string want_message_part;
  bool want_transition_now = true;  // else kEarlier kept
};

void PrintTo(const StatusCase& c, std::ostream* os) {
  *os << c.name;
}

class AdmissionCheckStatus : public ::testing::TestWithParam<StatusCase> {};

TEST_P(AdmissionCheckStatus, applies_the_active_entry_only_when_it_changes) {
  const StatusCase& c = GetParam();
  const auto apply = admission_check_status_apply(c.check, {"team"}, test_now());
  if (!c.want_status) {
    EXPECT_FALSE(apply) << apply->dump(2);
    return;
  }
  ASSERT_TRUE(apply);
  EXPECT_EQ((*apply)["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ((*apply)["kind"], "AdmissionCheck");
  EXPECT_EQ((*apply)["metadata"], json({{"name", "comm"}, {"uid", "uid-1"}}))
      << "the uid is a precondition";
  const json& conditions = (*apply)["status"]["conditions"];
  ASSERT_EQ(conditions.size(), 1u) << "only our entry: " << conditions.dump();
  const json& e = conditions[0];
  EXPECT_EQ(e["type"], "Active");
  EXPECT_EQ(e["status"], *c.want_status);
  EXPECT_EQ(e["reason"], c.want_reason);
  EXPECT_NE(e["message"].get<std::string>().find(c.want_message_part), std::string::npos)
      << e["message"];
  EXPECT_EQ(e["observedGeneration"], 3);
  EXPECT_EQ(e["lastTransitionTime"], c.want_transition_now ? format_rfc3339(test_now()) : kEarlier);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AdmissionCheckStatus,
    ::testing::Values(
        StatusCase{"another_controllers_check_is_left_alone",
                   a_check("kueue.x-k8s.io/provisioning-request"), std::nullopt},
        StatusCase{"a_check_that_does_not_read_is_left_alone",
                   json{{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "AdmissionCheck"}},
                   std::nullopt},
        StatusCase{"no_parameters_is_active_for_the_namespaces_policy", a_check(kControllerName),
                   "True", "Active", "applies to its namespace"},
        StatusCase{"parameters_naming_a_policy_that_exists",
                   a_check(kControllerName, params("team")), "True", "Active", "CommPolicy team"},
        StatusCase{"parameters_naming_a_missing_policy", a_check(kControllerName, params("gone")),
                   "False", "BadParametersRef",
                   "CommPolicy \"gone\" not found: create it, or name an existing one. Kueue "
                   "keeps every ClusterQueue"},
        StatusCase{"the_same_entry_stored_is_not_written_again",
                   a_check(kControllerName, params("team"),
                           json::array({active("True", "Active", kActiveMessage, 3, kEarlier)})),
                   std::nullopt},
        StatusCase{"a_new_generation_rewrites_it_keeping_the_transition_time",
                   a_check(kControllerName, params("team"),
                           json::array({active("True", "Active", kActiveMessage, 2, kEarlier)})),
                   "True", "Active", "CommPolicy team", false},
        StatusCase{"a_policy_deleted_turns_it_false_now",
                   a_check(kControllerName, params("gone"),
                           json::array({active("True", "Active", kActiveMessage, 3, kEarlier)})),
                   "False", "BadParametersRef", "not found"},
        StatusCase{"another_controllers_condition_is_not_in_the_apply",
                   a_check(kControllerName, params("team"),
                           json::array({{{"type", "Other"},
                                         {"status", "True"},
                                         {"reason", "X"},
                                         {"message", ""},
                                         {"lastTransitionTime", kEarlier}}})),
                   "True", "Active", "CommPolicy team"}),
    [](const auto& info) { return info.param.name; });

// Records each status write and passes it on.
class RecordingStatusWriter : public kube::StatusWriter {
 public:
  struct Call {
    std::string path;
    kube::PatchType type;
    kube::PatchOptions options;
  };
  explicit RecordingStatusWriter(kube::StatusWriter& next) : next_(next) {}
  json update_status(const std::string& path, const json& object) override {
    return next_.update_status(path, object);
  }
  json patch_status(const std::string& path, kube::PatchType type, const json& body,
                    const kube::PatchOptions& options) override {
    calls.push_back({path, type, options});
    return next_.patch_status(path, type, body, options);
  }
  std::vector<Call> calls;

 private:
  kube::StatusWriter& next_;
};

TEST(WriteAdmissionCheckStatuses, applies_on_the_status_subresource_as_our_field_manager) {
  kube::testing::FakeClient api;
  RecordingStatusWriter writer(api);
  const std::string ours = std::string(kAdmissionChecks) + "/comm";
  api.seed(kAdmissionChecks, a_check(kControllerName, params("team")));
  json theirs = a_check("kueue.x-k8s.io/provisioning-request");
  theirs["metadata"]["name"] = "prov";
  api.seed(kAdmissionChecks, theirs);

  EXPECT_EQ(write_admission_check_statuses(api.list(kAdmissionChecks).items, {"team"}, writer,
                                           test_now()),
            1u);
  ASSERT_EQ(writer.calls.size(), 1u);
  EXPECT_EQ(writer.calls[0].path, ours) << "the status writer adds /status";
  EXPECT_EQ(writer.calls[0].type, kube::PatchType::kApply);
  EXPECT_EQ(writer.calls[0].options.field_manager, kFieldManager);
  EXPECT_TRUE(writer.calls[0].options.force);
  EXPECT_EQ((*api.peek(ours))["status"]["conditions"][0]["status"], "True");
  // Stored as wanted: a second pass writes nothing.
  EXPECT_EQ(write_admission_check_statuses(api.list(kAdmissionChecks).items, {"team"}, writer,
                                           test_now()),
            0u);
  // The policy deleted: written again, False.
  EXPECT_EQ(
      write_admission_check_statuses(api.list(kAdmissionChecks).items, {}, writer, test_now()), 1u);
  EXPECT_EQ((*api.peek(ours))["status"]["conditions"][0]["reason"], "BadParametersRef");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op::kueue
