// Reading a training workload's batch/v1 Job (operator/workload_state.h): statuses shaped
// as kube 1.31's Job controller writes them (conditions with lastProbeTime and
// lastTransitionTime, ready, terminating, completedIndexes, uncountedTerminatedPods; the
// reasons and messages are kube's own), each mapped to the phase the TrainingJob mirrors.
#include "operator/workload_state.h"

#include <gtest/gtest.h>

#include <ostream>
#include <string>

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json condition(const std::string& type, const std::string& reason, const std::string& message,
               const std::string& status = "True") {
  return {{"type", type},
          {"status", status},
          {"lastProbeTime", "2026-12-02T01:10:00Z"},
          {"lastTransitionTime", "2026-12-02T01:10:00Z"},
          {"reason", reason},
          {"message", message}};
}

// A 2-node workload Job as read, with `status` (null: none written yet).
json job_with(const json& status) {
  json job = {{"apiVersion", "batch/v1"},
              {"kind", "Job"},
              {"metadata", {{"name", "bert"}, {"namespace", "research"}, {"uid", "u-1"}}},
              {"spec", {{"completionMode", "Indexed"}, {"completions", 2}, {"parallelism", 2}}}};
  if (!status.is_null()) job["status"] = status;
  return job;
}

const json kStart = {{"startTime", "2026-12-02T01:00:00Z"},
                     {"uncountedTerminatedPods", json::object()}};

json started(json fields) {
  json s = kStart;
  s.update(fields);
  return s;
}

const json kComplete =
    condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods");
const json kSuccessCriteriaMet = condition("SuccessCriteriaMet", "CompletionsReached",
                                           "Reached expected number of succeeded pods");
const json kBackoffTarget = condition("FailureTarget", "BackoffLimitExceeded",
                                      "Job has reached the specified backoff limit");
const json kBackoffFailed =
    condition("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit");
const json kDeadlineTarget =
    condition("FailureTarget", "DeadlineExceeded", "Job was active longer than specified deadline");
const json kDeadlineFailed =
    condition("Failed", "DeadlineExceeded", "Job was active longer than specified deadline");

struct Case {
  std::string name;
  json job;
  WorkloadPhase want_phase;
  std::string want_reason;
  std::string want_message;  // "" = not checked
  int want_active = 0, want_succeeded = 0, want_failed = 0;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class WorkloadStateTable : public ::testing::TestWithParam<Case> {};

TEST_P(WorkloadStateTable, maps_the_job_status) {
  const auto& tc = GetParam();
  const WorkloadState s = workload_state(tc.job);
  EXPECT_STREQ(to_string(s.phase), to_string(tc.want_phase));
  EXPECT_EQ(s.reason, tc.want_reason);
  if (!tc.want_message.empty()) {
    EXPECT_EQ(s.message, tc.want_message);
  }
  EXPECT_FALSE(s.message.empty()) << "every state says something to a human";
  EXPECT_EQ(s.active, tc.want_active);
  EXPECT_EQ(s.succeeded, tc.want_succeeded);
  EXPECT_EQ(s.failed, tc.want_failed);
}

INSTANTIATE_TEST_SUITE_P(
    WorkloadState, WorkloadStateTable,
    ::testing::Values(
        Case{"just_created_without_status", job_with(nullptr), WorkloadPhase::kPending,
             "WorkloadPending", "the Job has not created a pod yet"},
        Case{"started_but_no_pod_counted_yet", job_with(started({{"active", 0}, {"ready", 0}})),
             WorkloadPhase::kPending, "WorkloadPending", ""},
        Case{"pods_active_but_none_ready_is_still_pending",
             job_with(started({{"active", 2}, {"ready", 0}, {"terminating", 0}})),
             WorkloadPhase::kPending, "PodsStarting",
             "2 pod(s) active, none ready yet (being scheduled or started)", 2},
        Case{"pods_ready_run", job_with(started({{"active", 2}, {"ready", 2}, {"terminating", 0}})),
             WorkloadPhase::kRunning, "WorkloadRunning", "2 of 2 active pod(s) ready", 2},
        Case{"one_rank_finished_first_still_runs",
             job_with(started(
                 {{"active", 1}, {"ready", 1}, {"succeeded", 1}, {"completedIndexes", "1"}})),
             WorkloadPhase::kRunning, "WorkloadRunning", "1 of 1 active pod(s) ready", 1, 1},
        Case{"a_failed_pod_being_replaced_keeps_running",
             job_with(started({{"active", 1}, {"ready", 0}, {"failed", 1}})),
             WorkloadPhase::kRunning, "WorkloadRunning", "", 1, 0, 1},
        Case{"kube_before_ready_counts_active_as_running", job_with(started({{"active", 2}})),
             WorkloadPhase::kRunning, "WorkloadRunning", "2 pod(s) active", 2},
        Case{"complete_succeeds_with_kubes_reason",
             job_with(started({{"conditions", {kSuccessCriteriaMet, kComplete}},
                               {"completionTime", "2026-12-02T01:05:00Z"},
                               {"succeeded", 2},
                               {"ready", 0},
                               {"terminating", 0},
                               {"completedIndexes", "0-1"}})),
             WorkloadPhase::kSucceeded, "CompletionsReached",
             "Reached expected number of succeeded pods", 0, 2},
        Case{"success_criteria_met_while_pods_end_is_running_with_the_reason",
             job_with(started({{"conditions", {kSuccessCriteriaMet}},
                               {"active", 1},
                               {"ready", 0},
                               {"succeeded", 1},
                               {"terminating", 1}})),
             WorkloadPhase::kRunning, "CompletionsReached",
             "Reached expected number of succeeded pods", 1, 1},
        Case{"backoff_limit_exceeded_fails",
             job_with(started({{"conditions", {kBackoffTarget, kBackoffFailed}},
                               {"active", 0},
                               {"ready", 0},
                               {"failed", 3},
                               {"terminating", 0}})),
             WorkloadPhase::kFailed, "BackoffLimitExceeded",
             "Job has reached the specified backoff limit", 0, 0, 3},
        Case{"failure_target_while_pods_terminate_is_not_yet_failed",
             job_with(started({{"conditions", {kBackoffTarget}},
                               {"active", 1},
                               {"ready", 1},
                               {"failed", 1},
                               {"terminating", 1}})),
             WorkloadPhase::kRunning, "BackoffLimitExceeded",
             "Job has reached the specified backoff limit", 1, 0, 1},
        Case{"deadline_exceeded_fails",
             job_with(started({{"conditions", {kDeadlineTarget, kDeadlineFailed}},
                               {"active", 0},
                               {"ready", 0},
                               {"failed", 2}})),
             WorkloadPhase::kFailed, "DeadlineExceeded",
             "Job was active longer than specified deadline", 0, 0, 2},
        Case{"pod_failure_policy_fails_with_its_message",
             job_with(started(
                 {{"conditions",
                   {condition("Failed", "PodFailurePolicy",
                              "Container trainer for pod research/bert-0-x7k2p failed with exit "
                              "code 3 matching FailJob rule at index 0")}},
                  {"failed", 1}})),
             WorkloadPhase::kFailed, "PodFailurePolicy",
             "Container trainer for pod research/bert-0-x7k2p failed with exit code 3 matching "
             "FailJob rule at index 0",
             0, 0, 1},
        Case{"failed_wins_over_complete",
             job_with(started({{"conditions", {kComplete, kBackoffFailed}}})),
             WorkloadPhase::kFailed, "BackoffLimitExceeded", ""},
        Case{"a_failed_condition_without_reason_says_failed",
             job_with(started({{"conditions",
                                {{{"type", "Failed"}, {"status", "True"}, {"message", "gone"}}}}})),
             WorkloadPhase::kFailed, "Failed", "gone"},
        Case{"conditions_that_are_not_true_are_ignored",
             job_with(started({{"conditions",
                                {condition("Complete", "X", "y", "False"),
                                 condition("Failed", "X", "y", "Unknown")}},
                               {"active", 2},
                               {"ready", 2}})),
             WorkloadPhase::kRunning, "WorkloadRunning", "", 2},
        Case{"suspended_is_pending",
             job_with({{"conditions", {condition("Suspended", "JobSuspended", "Job suspended")}},
                       {"active", 0}}),
             WorkloadPhase::kPending, "Suspended", "Job suspended"},
        Case{"garbage_counts_read_as_zero",
             job_with({{"active", "two"}, {"conditions", "none"}, {"ready", nullptr}}),
             WorkloadPhase::kPending, "WorkloadPending", ""},
        Case{"not_an_object_is_pending", json::array({1, 2}), WorkloadPhase::kPending,
             "WorkloadPending", ""}),
    [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

TEST(WorkloadState, phase_names_are_the_training_jobs) {
  EXPECT_STREQ(to_string(WorkloadPhase::kPending), "Pending");
  EXPECT_STREQ(to_string(WorkloadPhase::kRunning), "Running");
  EXPECT_STREQ(to_string(WorkloadPhase::kSucceeded), "Succeeded");
  EXPECT_STREQ(to_string(WorkloadPhase::kFailed), "Failed");
}

// The pods as the scheduler leaves them: one placed and ready, one it cannot place.
json pod(const std::string& name, const json& conditions) {
  return {{"metadata", {{"name", name}, {"namespace", "research"}}},
          {"status",
           {{"phase", conditions.is_null() ? "Running" : "Pending"},
            {"conditions", conditions.is_null() ? json::array() : conditions}}}};
}
const json kUnschedulable = json::array(
    {{{"type", "PodScheduled"},
      {"status", "False"},
      {"reason", "Unschedulable"},
      {"message",
       "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. preemption: "
       "0/2 nodes are available: 2 No preemption victims found for incoming pod."}}});

TEST(WorkloadStatePods, a_pod_the_scheduler_cannot_place_keeps_the_training_pending) {
  const json job = job_with(started({{"active", 2}, {"ready", 1}, {"terminating", 0}}));
  ASSERT_EQ(workload_state(job).phase, WorkloadPhase::kRunning) << "the Job alone reads Running";
  const WorkloadState s =
      workload_state(job, {pod("bert-0-x", nullptr), pod("bert-1-y", kUnschedulable)});
  EXPECT_EQ(s.phase, WorkloadPhase::kPending);
  EXPECT_EQ(s.reason, "PodsUnschedulable");
  EXPECT_EQ(s.message,
            "1 of 2 pod(s) cannot be scheduled: 0/2 nodes are available: 2 node(s) didn't match "
            "pod anti-affinity rules. preemption: 0/2 nodes are available: 2 No preemption "
            "victims found for incoming pod.; torchrun waits for all 2 nodes, so the training "
            "has not started");
  EXPECT_EQ(s.active, 2);
}

TEST(WorkloadStatePods, placed_pods_and_a_finished_job_read_as_before) {
  const json running = job_with(started({{"active", 2}, {"ready", 2}, {"terminating", 0}}));
  EXPECT_EQ(workload_state(running, {pod("bert-0-x", nullptr), pod("bert-1-y", nullptr)}).phase,
            WorkloadPhase::kRunning);
  const json done = job_with(started({{"conditions", {kComplete}}, {"succeeded", 2}}));
  EXPECT_EQ(workload_state(done, {pod("bert-1-y", kUnschedulable)}).phase,
            WorkloadPhase::kSucceeded)
      << "a stale pod does not undo the Job's end";
  EXPECT_EQ(workload_state(running, {json("garbage"), json::object()}).phase,
            WorkloadPhase::kRunning);
}

TEST(WorkloadStatePods, a_failed_job_says_which_rank_failed_first_and_why) {
  const json failed =
      job_with(started({{"conditions", {kBackoffTarget, kBackoffFailed}}, {"failed", 2}}));
  const auto rank = [](const std::string& name, int index, const std::string& finished,
                       const std::string& log) {
    return json{
        {"metadata",
         {{"name", name},
          {"labels", {{"batch.kubernetes.io/job-completion-index", std::to_string(index)}}}}},
        {"status",
         {{"phase", "Failed"},
          {"containerStatuses",
           json::array({{{"name", "trainer"},
                         {"state",
                          {{"terminated",
                            {{"exitCode", 1}, {"finishedAt", finished}, {"message", log}}}}}}})}}}};
  };
  const WorkloadState s = workload_state(
      failed, {rank("bert-0-x", 0, "2026-12-05T10:00:05Z", "RuntimeError: Connection closed\n"),
               rank("bert-1-y", 1, "2026-12-05T10:00:01Z",
                    "Traceback (most recent call last):\nModuleNotFoundError: No module named "
                    "'transformers'\n")});
  EXPECT_EQ(s.phase, WorkloadPhase::kFailed);
  EXPECT_EQ(s.message,
            "Job has reached the specified backoff limit; pod bert-1-y (node rank 1) exited with "
            "code 1: ModuleNotFoundError: No module named 'transformers'");
  EXPECT_EQ(workload_state(failed).message, "Job has reached the specified backoff limit")
      << "without pods, the Job's own words";
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
