// CommPolicy status.decisionCounts: which counters a decision increments, and the
// read-modify-write of the status subresource that never loses an increment.
#include "operator/policy_counters.h"

#include <gtest/gtest.h>

#include "kube/api_error.h"
#include "kube/testing/fake_client.h"
#include "tests/crds/schema_check.h"
#include "tests/support/builders.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::test_now;
using kube::testing::FakeClient;
using kube::testing::Method;
using nlohmann::json;

const std::string kPolicies = "/apis/commgate.io/v1alpha1/commpolicies";

Decision decision(commgate::Action action, const std::string& why,
                  std::optional<commgate::Action> would = std::nullopt) {
  Decision d;
  d.action = action;
  d.reason = why;
  d.would_action = would;
  return d;
}

struct CountersCase {
  std::string name;
  Decision decision;
  std::vector<std::string> want;
};

class CountersForTest : public ::testing::TestWithParam<CountersCase> {};

TEST_P(CountersForTest, names_the_counters) {
  EXPECT_EQ(counters_for(GetParam().decision), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    PolicyCounters, CountersForTest,
    ::testing::Values(
        CountersCase{"admit_within_policy",
                     decision(commgate::Action::kAdmit, reason::kWithinPolicy),
                     {"admitted"}},
        CountersCase{"exempt_admission_is_also_exempted",
                     decision(commgate::Action::kAdmit, reason::kExempt),
                     {"admitted", "exempted"}},
        CountersCase{
            "dryrun_that_would_downsize",
            decision(commgate::Action::kAdmit, reason::kDryRun, commgate::Action::kDownsize),
            {"admitted", "dryRunWouldDownsize"}},
        CountersCase{"dryrun_that_would_deny",
                     decision(commgate::Action::kAdmit, reason::kDryRun, commgate::Action::kDeny),
                     {"admitted", "dryRunWouldDeny"}},
        CountersCase{
            "downsize", decision(commgate::Action::kDownsize, reason::kDownsized), {"downsized"}},
        CountersCase{"deny", decision(commgate::Action::kDeny, reason::kDenied), {"denied"}},
        CountersCase{"warn", decision(commgate::Action::kWarn, reason::kWarned), {"warned"}},
        CountersCase{"gate", decision(commgate::Action::kGate, reason::kNoMeasurement), {"gated"}}),
    [](const ::testing::TestParamInfo<CountersCase>& param_info) { return param_info.param.name; });

TEST(PolicyCounters, with_increments_starts_counting_and_keeps_other_status) {
  const json status = {{"observedGeneration", 4}};
  json out = with_increments(status, {{"admitted", 1}, {"exempted", 1}}, test_now());
  EXPECT_EQ(out["observedGeneration"], 4);
  EXPECT_EQ(out["decisionCounts"]["countingSince"], "2026-11-30T12:00:00Z");
  EXPECT_EQ(out["decisionCounts"]["admitted"], 1);
  out = with_increments(out, {{"admitted", 1}}, test_now() + std::chrono::hours(1));
  EXPECT_EQ(out["decisionCounts"]["countingSince"], "2026-11-30T12:00:00Z");
  EXPECT_EQ(out["decisionCounts"]["admitted"], 2);
  EXPECT_EQ(out["decisionCounts"]["exempted"], 1);
}

json policy(const std::string& name) {
  return {{"apiVersion", "commgate.io/v1alpha1"},
          {"kind", "CommPolicy"},
          {"metadata", {{"name", name}}},
          {"spec", {{"maxCommShare", 0.3}}}};
}

TEST(PolicyCounters, counts_on_the_policys_status_when_flushed) {
  FakeClient api;
  api.seed(kPolicies, policy("team"));
  PolicyCounters counters(api, api);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(
        counters.count("team", decision(commgate::Action::kDeny, reason::kDenied), test_now()),
        PolicyCounters::Outcome::kQueued);
  EXPECT_EQ(api.calls(Method::kUpdateStatus), 0) << "counted in memory until the flush";
  EXPECT_EQ(counters.flush(), 1u);
  EXPECT_EQ(api.calls(Method::kUpdateStatus), 1) << "two decisions, one write";
  const json status = (*api.peek(kPolicies + "/team"))["status"];
  EXPECT_EQ(status["decisionCounts"]["denied"], 2);
  const json crd = commgate::testing::load_crd("commpolicies.commgate.io.yaml");
  const auto issues = commgate::testing::validate(
      *commgate::testing::schema_at(commgate::testing::crd_schema(crd), "status"), status,
      "status");
  EXPECT_TRUE(issues.empty()) << commgate::testing::to_string(issues);
  EXPECT_EQ(counters.flush(), 0u) << "nothing pending";
  EXPECT_EQ(api.calls(Method::kUpdateStatus), 1);
}

TEST(PolicyCounters, the_built_in_default_has_no_object_to_count_on) {
  FakeClient api;
  PolicyCounters counters(api, api);
  EXPECT_EQ(counters.count(kBuiltinPolicyName,
                           decision(commgate::Action::kAdmit, reason::kWithinPolicy), test_now()),
            PolicyCounters::Outcome::kNoPolicyObject);
  EXPECT_TRUE(counters.pending().empty());
  counters.flush();
  EXPECT_EQ(api.calls(Method::kUpdateStatus), 0);
}

TEST(PolicyCounters, a_policy_deleted_since_is_nothing_to_count_on) {
  FakeClient api;
  PolicyCounters counters(api, api);
  counters.count("gone", decision(commgate::Action::kAdmit, reason::kWithinPolicy), test_now());
  EXPECT_EQ(counters.flush(), 1u);
  EXPECT_TRUE(counters.pending().empty()) << "not retried forever";
}

TEST(PolicyCounters, a_conflicting_writer_loses_no_increment) {
  FakeClient api;
  api.seed(kPolicies, policy("team"));
  PolicyCounters counters(api, api);
  // Another writer counts between our read and our write: our write meets a real 409,
  // and the retry applies our increment on top of theirs.
  api.before_next(Method::kUpdateStatus, [&] {
    json other = *api.peek(kPolicies + "/team");
    other["status"] = with_increments(json(), {{"admitted", 1}}, test_now());
    api.update_status(kPolicies + "/team", other);
  });
  counters.count("team", decision(commgate::Action::kAdmit, reason::kWithinPolicy), test_now());
  EXPECT_EQ(counters.flush(), 1u);
  EXPECT_EQ((*api.peek(kPolicies + "/team"))["status"]["decisionCounts"]["admitted"], 2);
}

// A write that still conflicts after the attempts is an error; its increments stay pending
// and the next flush writes them with what was counted since; the other policies of the
// failed flush were written.
TEST(PolicyCounters, a_failed_write_keeps_its_increments_for_the_next_flush) {
  FakeClient api;
  api.seed(kPolicies, policy("a-team"));
  api.seed(kPolicies, policy("b-team"));
  PolicyCounters counters(api, api, 2);
  counters.count("a-team", decision(commgate::Action::kAdmit, reason::kWithinPolicy), test_now());
  counters.count("b-team", decision(commgate::Action::kDeny, reason::kDenied), test_now());
  api.fail_next(Method::kUpdateStatus, FakeClient::conflict("commpolicies", "a-team"), 2);
  EXPECT_THROW(counters.flush(), kube::ApiError);
  EXPECT_EQ(api.calls(Method::kUpdateStatus), 3) << "a-team twice, then b-team";
  EXPECT_EQ((*api.peek(kPolicies + "/b-team"))["status"]["decisionCounts"]["denied"], 1);
  EXPECT_EQ(counters.pending(),
            (std::map<std::string, std::map<std::string, int64_t>>{{"a-team", {{"admitted", 1}}}}));
  counters.count("a-team", decision(commgate::Action::kAdmit, reason::kWithinPolicy), test_now());
  EXPECT_EQ(counters.flush(), 1u);
  EXPECT_EQ((*api.peek(kPolicies + "/a-team"))["status"]["decisionCounts"]["admitted"], 2);
  EXPECT_TRUE(counters.pending().empty());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
