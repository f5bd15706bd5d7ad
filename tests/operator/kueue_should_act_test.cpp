// operator/kueue_should_act.h: the check acts only on a Workload Kueue is waiting on it
// for, and says why not otherwise.
#include "operator/kueue_should_act.h"

#include <gtest/gtest.h>

#include "tests/operator/kueue_test_workloads.h"

namespace commgate::op::kueue {
namespace COMMGATE_TEST_UNIT {

using testing::a_pytorchjob_workload;
using testing::WorkloadBuilder;

const std::set<std::string> kOurs = {"comm", "comm-strict"};

WorkloadBuilder waiting_on(const std::string& state) {
  return a_pytorchjob_workload().reserved().check("prov", "Ready").check("comm", state);
}

struct Case {
  std::string name;
  WorkloadBuilder workload;
  bool want_act;
  std::vector<std::string> want_checks;
  std::string want_reason;  // substring; empty when acting
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

std::vector<Case> cases() {
  return {
      {"acts_on_our_pending_entry_once_quota_is_reserved",
       waiting_on("Pending"),
       true,
       {"comm"},
       ""},
      {"waits_until_quota_is_reserved",
       a_pytorchjob_workload().check("comm", "Pending"),
       false,
       {},
       "no quota is reserved yet"},
      {"waits_while_quota_reserved_is_false",
       a_pytorchjob_workload().condition("QuotaReserved", false).check("comm", "Pending"),
       false,
       {},
       "no quota is reserved yet"},
      {"leaves_a_finished_workload",
       waiting_on("Pending").condition("Finished", true),
       false,
       {},
       "finished"},
      {"leaves_an_evicted_workload",
       waiting_on("Pending").condition("Evicted", true),
       false,
       {},
       "evicted"},
      {"acts_when_the_evicted_condition_is_false",
       waiting_on("Pending").condition("Evicted", false),
       true,
       {"comm"},
       ""},
      {"leaves_an_inactive_workload",
       waiting_on("Pending").active(false),
       false,
       {},
       "spec.active is false"},
      {"leaves_our_retry_entry_until_kueue_resets_it",
       waiting_on("Retry"),
       false,
       {},
       "our check comm is Retry: left until Kueue resets it to Pending"},
      {"leaves_our_ready_entry", waiting_on("Ready"), false, {}, "comm is Ready: already decided"},
      {"leaves_our_rejected_entry",
       waiting_on("Rejected"),
       false,
       {},
       "comm is Rejected: already decided"},
      {"ignores_pending_checks_of_other_controllers",
       a_pytorchjob_workload().reserved().check("prov", "Pending"),
       false,
       {},
       "none of its admission checks is commgate's"},
      {"acts_on_each_pending_check_of_ours",
       a_pytorchjob_workload().reserved().check("comm", "Pending").check("comm-strict", "Pending"),
       true,
       {"comm", "comm-strict"},
       ""},
      {"acts_on_the_pending_one_of_two_of_ours",
       a_pytorchjob_workload().reserved().check("comm", "Ready").check("comm-strict", "Pending"),
       true,
       {"comm-strict"},
       ""},
  };
}

class ShouldActTest : public ::testing::TestWithParam<Case> {};

TEST_P(ShouldActTest, decides) {
  const Case& c = GetParam();
  const ActDecision d = should_act(read_workload(c.workload.build()), kOurs);
  EXPECT_EQ(d.act, c.want_act) << d.reason;
  EXPECT_EQ(d.checks, c.want_checks);
  if (c.want_reason.empty())
    EXPECT_TRUE(d.reason.empty()) << d.reason;
  else
    EXPECT_NE(d.reason.find(c.want_reason), std::string::npos)
        << "want reason containing: " << c.want_reason << "\n got: " << d.reason;
}

INSTANTIATE_TEST_SUITE_P(KueueShouldAct, ShouldActTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

TEST(KueueShouldAct, without_checks_of_ours_nothing_is_ours) {
  const ActDecision d = should_act(read_workload(waiting_on("Pending").build()), {});
  EXPECT_FALSE(d.act);
  EXPECT_NE(d.reason.find("none of its admission checks"), std::string::npos) << d.reason;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op::kueue
