// The TrainingJob's typed status: read from what is stored (leniently), written back the
// same, and the workload test equal to core's JSON one.
#include "operator/trainingjob_status.h"

#include <gtest/gtest.h>

#include "core/decision_record.h"
#include "tests/support/builders.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::test_now;
using nlohmann::json;

json stored_status() {
  return json::parse(R"({
    "phase": "Running", "observedGeneration": 3, "workloadUID": "u-1", "admittedNodes": 2,
    "conditions": [{"type": "Running", "status": "True", "reason": "Running", "message": "m",
                    "observedGeneration": 3, "lastTransitionTime": "2026-11-30T12:00:00Z"}],
    "decision": {"action": "Downsize", "message": "downsized", "predictions": [{"nodes": 2}]},
    "measurement": {"busbwGBps": 1.2}
  })");
}

TEST(TrainingJobStatus, what_the_operator_wrote_reads_and_writes_back_unchanged) {
  const TrainingJobStatus s = TrainingJobStatus::from_json(stored_status());
  EXPECT_EQ(s.phase, "Running");
  EXPECT_EQ(s.observed_generation, 3);
  EXPECT_EQ(s.workload_uid, "u-1");
  EXPECT_EQ(s.admitted_nodes, 2);
  EXPECT_TRUE(s.conditions.is("Running", "True"));
  EXPECT_EQ(s.decision_message("none"), "downsized");
  EXPECT_EQ(s.to_json(), stored_status());
}

TEST(TrainingJobStatus, an_empty_status_writes_nothing_and_has_no_decision) {
  const TrainingJobStatus s = TrainingJobStatus::from_json(json());
  EXPECT_EQ(s.to_json(), json::object());
  EXPECT_EQ(s.decision_message("from the record"), "from the record");
  EXPECT_EQ(TrainingJobStatus::from_json("garbage").to_json(), json::object());
}

TEST(TrainingJobStatus, older_operators_fields_and_wrong_types_are_dropped_on_the_next_write) {
  json stored = stored_status();
  stored["probeAttempts"] = 2;  // the pool's CommProfile keeps them now
  stored["nextProbeTime"] = "2026-11-30T12:00:00Z";
  stored["admittedNodes"] = "two";  // only a person writes that
  stored["decision"] = "not an object";
  stored["conditions"].push_back("not a condition");
  const json written = TrainingJobStatus::from_json(stored).to_json();
  EXPECT_FALSE(written.contains("probeAttempts"));
  EXPECT_FALSE(written.contains("nextProbeTime"));
  EXPECT_FALSE(written.contains("admittedNodes"));
  EXPECT_FALSE(written.contains("decision"));
  EXPECT_EQ(written["conditions"].size(), 1u);
  EXPECT_EQ(written["phase"], "Running");
}

TEST(TrainingJobStatus, an_emptied_condition_list_is_left_out) {
  TrainingJobStatus s = TrainingJobStatus::from_json(stored_status());
  ASSERT_TRUE(s.conditions.remove("Running"));
  EXPECT_FALSE(s.to_json().contains("conditions"));
}

struct CreatedCase {
  std::string name;
  std::string phase;
  std::string running_reason;  // "" = no Running condition
  bool want;
};

class WorkloadCreatedTest : public ::testing::TestWithParam<CreatedCase> {};

TEST_P(WorkloadCreatedTest, typed_and_json_agree) {
  const CreatedCase& c = GetParam();
  TrainingJobStatus s;
  s.phase = c.phase;
  if (!c.running_reason.empty())
    s.conditions.set({"Running", "False", c.running_reason, "m", 1}, test_now());
  EXPECT_EQ(s.workload_created(), c.want);
  EXPECT_EQ(commgate::workload_created(s.to_json()), c.want);
}

INSTANTIATE_TEST_SUITE_P(
    TrainingJobStatus, WorkloadCreatedTest,
    ::testing::Values(CreatedCase{"nothing_yet", "", "", false},
                      CreatedCase{"admitted_alone", "Admitted", "", false},
                      CreatedCase{"failed_alone", "Failed", "", false},
                      CreatedCase{"running_phase", "Running", "", true},
                      CreatedCase{"succeeded_phase", "Succeeded", "", true},
                      CreatedCase{"pending_pods", "Admitted", "Pending", true},
                      CreatedCase{"job_failed", "Failed", "BackoffLimitExceeded", true},
                      CreatedCase{"suspended", "Admitted", "Suspended", false},
                      CreatedCase{"previous_workload", "Admitted", "PreviousWorkloadExists", false},
                      CreatedCase{"name_taken", "Failed", "WorkloadNameTaken", false},
                      CreatedCase{"replaced", "Admitted", "WorkloadReplaced", false}),
    [](const ::testing::TestParamInfo<CreatedCase>& param_info) { return param_info.param.name; });

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
