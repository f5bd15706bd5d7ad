// Reading a probe's outcome (operator/probe_outcome.h) from its Job and pods as the API
// server shows them: running, unschedulable, failed (with the failing ranks' exit codes and
// messages), succeeded with rank 0's validated result, and every way rank 0's termination
// message can be unusable, none of which may throw.
#include "operator/probe_outcome.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/probe_result.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

// A real termination message: what `commgate-probe --local-ranks 2 --params 1M
// --batch-size 8 --optimizer sgd --max-bytes 1Mi --iters 3 --warmup 1 --compute-iters 3
// --ddp-iters 2 --termination-log FILE` wrote to FILE (build of 2026-12-02).
const std::string kRealResult =
    R"json({"allReduce":{"dtype":"fp32","fit":{"busbwGBps":1.304,"latencyUs":482.8,"maxRelativeResidual":0.7607,"poor":false},"iterations":3,"results":[{"algbwGBps":0.8121,"busbwGBps":0.8121,"bytes":1048576.0,"dataCheck":"ok","timeUs":1291.0}],"warmupIterations":1},"apiVersion":"commgate.io/v1alpha1","backend":"gloo","compute":{"backwardMs":18.81,"batchSize":8,"forwardMs":5.393,"gradientDtype":"fp32","iterations":3,"model":"synthetic-mlp","optimizer":"sgd","optimizerMs":0.4707,"p10Ms":19.53,"p90Ms":44.03,"parameters":999933.0,"precision":"fp32","stepTimeMs":40.06},"ddpStep":{"bucketCapBytes":26214400.0,"buckets":2,"commShare":0.6598,"computeOnlyStepTimeMs":9.053,"exposedCommMs":17.56,"firstBucketBytes":1048576.0,"stepTimeMs":26.61},"device":"cpu","durationSeconds":1.579,"gpuProduct":"","interface":"lo","kind":"ProbeResult","startTime":"2026-12-02T01:21:50Z","transport":"loopback","world":{"nodes":2,"procsPerNode":1}})json";

// A real failure: rank 0 of a 2-rank world whose peer never came (`--rank 0
// --world-size 2 --timeout 3`, exit code 3).
const std::string kRealRendezvousFailure =
    R"json({"allReduce":{"dtype":"fp32","fit":{"busbwGBps":0.0,"latencyUs":0.0,"maxRelativeResidual":0.0,"poor":false},"iterations":5,"results":[],"warmupIterations":1},"apiVersion":"commgate.io/v1alpha1","backend":"gloo","device":"cpu","durationSeconds":1.091,"error":{"message":"rendezvous at 127.0.0.1:39517: timed out after 1s waiting for rank(s) 1 to join (1 of 2 joined)","stage":"rendezvous"},"gpuProduct":"","interface":"","kind":"ProbeResult","startTime":"2026-12-02T01:22:05Z","transport":"","world":{"nodes":2,"procsPerNode":1}})json";

const std::string kJobName = "commgate-probe-pool-1a2b3c4d5e6f7a8b";

// The real result with one field changed (JSON pointer), re-serialized.
std::string real_result_with(const std::string& pointer, const json& value) {
  json doc = json::parse(kRealResult);
  doc[json::json_pointer(pointer)] = value;
  return doc.dump();
}

json a_job(int completions, json conditions = json::array(), json counts = json::object()) {
  json status = counts;
  status["conditions"] = std::move(conditions);
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", kJobName}, {"namespace", "commgate-system"}}},
          {"spec", {{"completions", completions}, {"completionMode", "Indexed"}}},
          {"status", status}};
}

json condition(const std::string& type, const std::string& reason = "",
               const std::string& message = "") {
  return {{"type", type}, {"status", "True"}, {"reason", reason}, {"message", message}};
}

json complete() {
  return a_job(2,
               json::array({condition("SuccessCriteriaMet", "CompletionsReached"),
                            condition("Complete", "CompletionsReached")}),
               {{"succeeded", 2}});
}

json failed_job(const std::string& reason, const std::string& message) {
  return a_job(2,
               json::array({condition("FailureTarget", reason, message),
                            condition("Failed", reason, message)}),
               {{"failed", 1}});
}

json a_pod(int index) {
  const std::string idx = std::to_string(index);
  return {{"metadata",
           {{"name", kJobName + "-" + idx + "-x7k2p"},
            {"labels",
             {{"batch.kubernetes.io/job-name", kJobName},
              {"batch.kubernetes.io/job-completion-index", idx}}},
            {"annotations", {{"batch.kubernetes.io/job-completion-index", idx}}}}},
          {"status", {{"phase", "Running"}}}};
}

json terminated(int index, int exit_code, const std::string& message,
                const std::string& reason = "") {
  json p = a_pod(index);
  p["status"]["phase"] = exit_code == 0 ? "Succeeded" : "Failed";
  json t = {{"exitCode", exit_code},
            {"reason", reason.empty() ? (exit_code == 0 ? "Completed" : "Error") : reason}};
  if (!message.empty()) t["message"] = message;
  p["status"]["containerStatuses"] =
      json::array({{{"name", "probe"}, {"state", {{"terminated", t}}}}});
  return p;
}

json unschedulable(int index, const std::string& message) {
  json p = a_pod(index);
  p["status"] = {{"phase", "Pending"},
                 {"conditions", json::array({{{"type", "PodScheduled"},
                                              {"status", "False"},
                                              {"reason", "Unschedulable"},
                                              {"message", message}}})}};
  return p;
}

json pending(int index, const std::string& reason) {
  json p = a_pod(index);
  p["status"] = {
      {"phase", "Pending"},
      {"conditions",
       json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", reason}}})}};
  return p;
}

// Scheduled, its container waiting (pulling its image, say).
json waiting(int index, const std::string& reason, const std::string& message) {
  json p = a_pod(index);
  p["spec"]["nodeName"] = "node-" + std::to_string(index);
  p["status"] = {
      {"phase", "Pending"},
      {"conditions", json::array({{{"type", "PodScheduled"}, {"status", "True"}}})},
      {"containerStatuses",
       json::array({{{"name", "probe"},
                     {"state", {{"waiting", {{"reason", reason}, {"message", message}}}}}}})}};
  return p;
}

// Rank 0 and rank 1 of a completed probe, rank 0 with `message`.
std::vector<json> finished_with(const std::string& message) {
  return {terminated(0, 0, message), terminated(1, 0, "")};
}

const std::string kSchedulerMessage =
    "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 2 node(s) didn't "
    "match Pod's node affinity/selector.";

struct Case {
  std::string name;
  json job;
  std::vector<json> pods;
  ProbeState want_state;
  std::string want_reason;
  std::vector<std::string> want_message = {};  // substrings, in any order
  std::vector<std::string> not_in_message = {};
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  // --- running ---
  c.push_back({.name = "running_while_the_job_has_no_terminal_condition",
               .job = a_job(2, json::array(), {{"active", 2}}),
               .pods = {a_pod(0), a_pod(1)},
               .want_state = ProbeState::kRunning,
               .want_reason = "ProbeRunning",
               .want_message = {"2 probe pods: 2 measuring"}});
  // Where each pod is, so a long probe does not read as stuck (#20).
  c.push_back({.name = "a_pod_waiting_for_its_image_says_why",
               .job = a_job(3, json::array(), {{"active", 3}}),
               .pods = {a_pod(0), waiting(1, "ImagePullBackOff",
                                          "Back-off pulling image \"commgate-probe:0.1.0\"")},
               .want_state = ProbeState::kRunning,
               .want_reason = "ProbeRunning",
               .want_message = {"3 probe pods: 1 measuring, 1 starting (ImagePullBackOff: "
                                "Back-off pulling image \"commgate-probe:0.1.0\"), 1 not "
                                "created yet"}});
  c.push_back({.name = "container_creating_needs_no_message",
               .job = a_job(2),
               .pods = {waiting(0, "ContainerCreating", "whatever"), terminated(1, 0, "")},
               .want_state = ProbeState::kRunning,
               .want_reason = "ProbeRunning",
               .want_message = {"2 probe pods: 1 starting (ContainerCreating), 1 finished"}});
  c.push_back({.name = "a_job_without_pods_yet",
               .job = a_job(2),
               .pods = {},
               .want_state = ProbeState::kRunning,
               .want_reason = "ProbeRunning",
               .want_message = {"2 probe pods: 2 not created yet"}});
  c.push_back({.name = "running_until_the_failure_is_final",
               .job = a_job(2, json::array({condition("FailureTarget", "BackoffLimitExceeded")})),
               .pods = {a_pod(0), terminated(1, 3, "")},
               .want_state = ProbeState::kRunning,
               .want_reason = "ProbeRunning"});
  c.push_back({.name = "a_pod_waiting_on_a_scheduling_gate_is_not_unschedulable",
               .job = a_job(2),
               .pods = {a_pod(0), pending(1, "SchedulingGated")},
               .want_state = ProbeState::kRunning,
               .want_reason = "ProbeRunning"});
  c.push_back({.name = "a_condition_that_is_false_is_not_terminal",
               .job = a_job(2, json::array({{{"type", "Failed"}, {"status", "False"}}})),
               .pods = {},
               .want_state = ProbeState::kRunning,
               .want_reason = "ProbeRunning"});
  // --- unschedulable ---
  c.push_back({.name = "unschedulable_quotes_the_schedulers_message",
               .job = a_job(3, json::array(), {{"active", 3}}),
               .pods = {a_pod(0), a_pod(1), unschedulable(2, kSchedulerMessage)},
               .want_state = ProbeState::kUnschedulable,
               .want_reason = "ProbeUnschedulable",
               .want_message = {"1 of 3 probe pods are not scheduled: " + kSchedulerMessage}});
  // The scheduler's "Insufficient nvidia.com/gpu" does not say what the probe asked for: the
  // message does (a trial's 1024-GPU, 1e15-parameter job read as a riddle). Not when the
  // pods fit no node for another reason (the cases above, without requests in the text).
  c.push_back(
      {.name = "unschedulable_names_what_each_probe_pod_requests",
       .job =
           [] {
             json j = a_job(2, json::array(), {{"active", 2}});
             j["spec"]["template"]["spec"]["containers"] =
                 json::array({{{"name", "probe"},
                               {"resources",
                                {{"requests", {{"memory", "9Ti"}, {"nvidia.com/gpu", "1024"}}},
                                 {"limits", {{"memory", "9Ti"}, {"nvidia.com/gpu", "1024"}}}}}}});
             return j;
           }(),
       .pods = {unschedulable(0, "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."),
                unschedulable(1, "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")},
       .want_state = ProbeState::kUnschedulable,
       .want_reason = "ProbeUnschedulable",
       .want_message = {"2 of 2 probe pods are not scheduled (each requests memory 9Ti, "
                        "nvidia.com/gpu 1024): 0/4 nodes are available: 4 Insufficient "
                        "nvidia.com/gpu."}});
  // No node matches: the scheduler marks the pods Unschedulable one at a time, and the
  // count must not follow it ("1 of 2", then "2 of 2": user trial, #9).
  c.push_back({.name = "a_pod_the_scheduler_has_not_marked_yet_counts_as_not_scheduled",
               .job = a_job(2, json::array(), {{"active", 2}}),
               .pods = {[] {
                          json p = a_pod(0);
                          p["status"] = {{"phase", "Pending"}};
                          return p;
                        }(),
                        unschedulable(1, kSchedulerMessage)},
               .want_state = ProbeState::kUnschedulable,
               .want_reason = "ProbeUnschedulable",
               .want_message = {"2 of 2 probe pods are not scheduled: " + kSchedulerMessage}});
  c.push_back({.name = "both_pods_marked_read_the_same",
               .job = a_job(2, json::array(), {{"active", 2}}),
               .pods = {unschedulable(0, kSchedulerMessage), unschedulable(1, kSchedulerMessage)},
               .want_state = ProbeState::kUnschedulable,
               .want_reason = "ProbeUnschedulable",
               .want_message = {"2 of 2 probe pods are not scheduled: " + kSchedulerMessage}});
  c.push_back({.name = "a_pod_not_created_yet_counts_as_not_scheduled",
               .job = a_job(2, json::array(), {{"active", 1}}),
               .pods = {unschedulable(1, kSchedulerMessage)},
               .want_state = ProbeState::kUnschedulable,
               .want_reason = "ProbeUnschedulable",
               .want_message = {"2 of 2 probe pods are not scheduled: " + kSchedulerMessage}});
  c.push_back({.name = "a_pod_on_a_node_but_pending_is_scheduled",
               .job = a_job(2, json::array(), {{"active", 2}}),
               .pods = {[] {
                          json p = a_pod(0);
                          p["spec"] = {{"nodeName", "node-a"}};
                          p["status"] = {{"phase", "Pending"}};
                          return p;
                        }(),
                        unschedulable(1, kSchedulerMessage)},
               .want_state = ProbeState::kUnschedulable,
               .want_reason = "ProbeUnschedulable",
               .want_message = {"1 of 2 probe pods are not scheduled: " + kSchedulerMessage}});
  c.push_back(
      {.name = "a_failed_job_is_failed_even_with_an_unschedulable_pod",
       .job = failed_job("DeadlineExceeded", "Job was active longer than specified deadline"),
       .pods = {a_pod(0), unschedulable(1, kSchedulerMessage)},
       .want_state = ProbeState::kFailed,
       .want_reason = "ProbeDeadlineExceeded"});
  // --- failed ---
  c.push_back({.name = "deadline_exceeded_says_what_the_deadline_was",
               .job =
                   [] {
                     json j = failed_job("DeadlineExceeded",
                                         "Job was active longer than specified deadline");
                     j["spec"]["activeDeadlineSeconds"] = 360;
                     return j;
                   }(),
               .pods = {},
               .want_state = ProbeState::kFailed,
               .want_reason = "ProbeDeadlineExceeded",
               .want_message = {"Job was active longer than specified deadline "
                                "(activeDeadlineSeconds 360: the policy's probe timeout plus 60 s "
                                "for scheduling and start-up)"}});
  c.push_back(
      {.name = "deadline_exceeded_has_its_own_reason",
       .job = failed_job("DeadlineExceeded", "Job was active longer than specified deadline"),
       .pods = {terminated(0, 137, "", "Error"), terminated(1, 137, "", "Error")},
       .want_state = ProbeState::kFailed,
       .want_reason = "ProbeDeadlineExceeded",
       .want_message = {"Job was active longer than specified deadline",
                        "rank 0 (pod " + kJobName + "-0-x7k2p): exit code 137 (killed)",
                        "rank 1 (pod " + kJobName + "-1-x7k2p): exit code 137"}});
  // The probe's own --timeout (probe.timeoutSeconds) expired inside the Job's deadline:
  // exit code 4 is a deadline too (a trial saw it reported ProbeFailed where
  // docs/troubleshooting.md promises ProbeDeadlineExceeded).
  c.push_back(
      {.name = "the_probes_own_timeout_is_a_deadline_exceeded",
       .job = failed_job("BackoffLimitExceeded", "Job has reached the specified backoff limit"),
       .pods = {terminated(0, 4,
                           R"({"error":{"stage":"allreduce","message":"timed out after 300 s in )"
                           R"(stage \"allreduce 64 MiB\""}})"),
                terminated(1, 4, "")},
       .want_state = ProbeState::kFailed,
       .want_reason = "ProbeDeadlineExceeded",
       .want_message = {"exit code 4 (timed out)"}});
  c.push_back(
      {.name = "a_failed_rank_reports_its_exit_code_and_the_probes_error",
       .job = failed_job("BackoffLimitExceeded", "Job has reached the specified backoff limit"),
       .pods = {terminated(0, 3, kRealRendezvousFailure), terminated(1, 0, "")},
       .want_state = ProbeState::kFailed,
       .want_reason = "ProbeFailed",
       .want_message = {"Job has reached the specified backoff limit",
                        "rank 0 (pod " + kJobName +
                            "-0-x7k2p): exit code 3 (rendezvous failed), reason Error: "
                            "stage rendezvous: rendezvous at 127.0.0.1:39517: timed out "
                            "after 1s waiting for rank(s) 1 to join (1 of 2 joined)"},
       .not_in_message = {"rank 1"}});
  c.push_back({.name = "a_failed_ranks_plain_message_is_quoted_up_to_300_bytes",
               .job = failed_job("BackoffLimitExceeded", ""),
               .pods = {terminated(0, 0, ""), terminated(1, 1, "x" + std::string(1000, 'y'))},
               .want_state = ProbeState::kFailed,
               .want_reason = "ProbeFailed",
               .want_message = {"the probe Job failed", "exit code 1 (a stage failed)",
                                ": x" + std::string(299, 'y') + "..."},
               .not_in_message = {std::string(300, 'y')}});
  c.push_back({.name = "a_pod_evicted_before_its_container_ran_says_why",
               .job = failed_job("PodFailurePolicy", "evicted"),
               .pods = {[] {
                 json p = a_pod(1);
                 p["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}};
                 return p;
               }()},
               .want_state = ProbeState::kFailed,
               .want_reason = "ProbeFailed",
               .want_message = {"rank 1 (pod " + kJobName + "-1-x7k2p): reason Evicted"}});
  c.push_back({.name = "many_failed_pods_are_counted_not_listed",
               .job = failed_job("BackoffLimitExceeded", "backoff"),
               .pods = {terminated(4, 4, ""), terminated(3, 4, ""), terminated(2, 4, ""),
                        terminated(1, 4, ""), terminated(0, 4, "")},
               .want_state = ProbeState::kFailed,
               .want_reason = "ProbeDeadlineExceeded",
               .want_message = {"rank 0 ", "rank 1 ", "rank 2 ", "and 2 more failed pod(s)",
                                "exit code 4 (timed out)"},
               .not_in_message = {"rank 3", "rank 4"}});
  // --- succeeded ---
  c.push_back({.name = "a_real_result_from_rank_0_succeeds",
               .job = complete(),
               .pods = finished_with(kRealResult),
               .want_state = ProbeState::kSucceeded,
               .want_reason = "ProbeSucceeded",
               .want_message = {"1.3 GB/s", "2 nodes", "gloo, loopback"}});
  c.push_back({.name = "rank_0_is_found_whatever_the_pods_order",
               .job = complete(),
               .pods = {terminated(1, 0, "not rank 0's"), terminated(0, 0, kRealResult)},
               .want_state = ProbeState::kSucceeded,
               .want_reason = "ProbeSucceeded"});
  // --- invalid results ---
  c.push_back({.name = "an_empty_message_is_invalid",
               .job = complete(),
               .pods = finished_with(""),
               .want_state = ProbeState::kInvalidResult,
               .want_reason = "ProbeResultInvalid",
               .want_message = {"rank 0's termination message (pod " + kJobName + "-0-x7k2p)",
                                "is empty"}});
  c.push_back({.name = "garbage_is_invalid",
               .job = complete(),
               .pods = finished_with("Segmentation fault (core dumped)"),
               .want_state = ProbeState::kInvalidResult,
               .want_reason = "ProbeResultInvalid",
               .want_message = {"is not JSON: Segmentation fault (core dumped)"},
               .not_in_message = {"cut at"}});
  c.push_back({.name = "a_result_cut_at_the_4096_byte_limit_is_invalid_and_says_so",
               .job = complete(),
               .pods = finished_with(
                   real_result_with("/gpuProduct", std::string(5000, 'H')).substr(0, 4096)),
               .want_state = ProbeState::kInvalidResult,
               .want_reason = "ProbeResultInvalid",
               .want_message = {"is not JSON (cut at the 4096-byte termination message limit)"}});
  c.push_back({.name = "a_result_cut_short_is_invalid",
               .job = complete(),
               .pods = finished_with(kRealResult.substr(0, 500)),
               .want_state = ProbeState::kInvalidResult,
               .want_reason = "ProbeResultInvalid",
               .want_message = {"is not JSON"}});
  c.push_back({.name = "another_schema_version_is_invalid_naming_apiVersion",
               .job = complete(),
               .pods = finished_with(real_result_with("/apiVersion", "commgate.io/v99")),
               .want_state = ProbeState::kInvalidResult,
               .want_reason = "ProbeResultInvalid",
               .want_message = {"is not a valid ProbeResult: apiVersion: must be "
                                "commgate.io/v1alpha1, got \"commgate.io/v99\""}});
  c.push_back({.name = "a_negative_bandwidth_is_invalid_naming_the_field",
               .job = complete(),
               .pods = finished_with(real_result_with("/allReduce/fit/busbwGBps", -1.3)),
               .want_state = ProbeState::kInvalidResult,
               .want_reason = "ProbeResultInvalid",
               .want_message = {"allReduce.fit.busbwGBps"}});
  c.push_back({.name = "every_wrong_field_is_named_at_once",
               .job = complete(),
               .pods = finished_with([] {
                 json doc = json::parse(kRealResult);
                 doc["world"]["nodes"] = 0;
                 doc["ddpStep"]["commShare"] = 1.5;
                 return doc.dump();
               }()),
               .want_state = ProbeState::kInvalidResult,
               .want_reason = "ProbeResultInvalid",
               .want_message = {"world.nodes", "ddpStep.commShare"}});
  c.push_back({.name = "a_json_value_that_is_not_an_object_is_invalid",
               .job = complete(),
               .pods = finished_with("42"),
               .want_state = ProbeState::kInvalidResult,
               .want_reason = "ProbeResultInvalid",
               .want_message = {"is not a valid ProbeResult", "must be a ProbeResult object"}});
  c.push_back(
      {.name = "an_error_report_from_a_rank_that_exited_0_is_invalid",
       .job = complete(),
       .pods = finished_with(kRealRendezvousFailure),
       .want_state = ProbeState::kInvalidResult,
       .want_reason = "ProbeResultInvalid",
       .want_message = {"reports an error although the probe exited 0", "stage rendezvous"}});
  c.push_back({.name = "a_result_for_another_node_count_is_invalid",
               .job =
                   [] {
                     json j = complete();
                     j["spec"]["completions"] = 3;
                     return j;
                   }(),
               .pods = {terminated(0, 0, kRealResult), terminated(1, 0, ""), terminated(2, 0, "")},
               .want_state = ProbeState::kInvalidResult,
               .want_reason = "ProbeResultInvalid",
               .want_message = {"world.nodes: 2, but the probe Job ran 3 nodes"}});
  c.push_back({.name = "a_completed_job_whose_rank_0_pod_is_gone_is_invalid",
               .job = complete(),
               .pods = {terminated(1, 0, "")},
               .want_state = ProbeState::kInvalidResult,
               .want_reason = "ProbeResultInvalid",
               .want_message = {"rank 0's pod is gone"}});
  // --- malformed input never throws ---
  c.push_back({.name = "a_job_that_is_not_an_object_reads_as_running",
               .job = json::array({1, 2}),
               .pods = {json("pod"), json(nullptr), json::object()},
               .want_state = ProbeState::kRunning,
               .want_reason = "ProbeRunning"});
  c.push_back({.name = "conditions_of_the_wrong_type_read_as_running",
               .job = {{"status", {{"conditions", "Complete"}, {"active", "two"}}}},
               .pods = {},
               .want_state = ProbeState::kRunning,
               .want_reason = "ProbeRunning"});
  c.push_back(
      {.name = "a_completed_job_with_malformed_pods_is_invalid_not_a_crash",
       .job = complete(),
       .pods = {{{"metadata", {{"labels", {{"batch.kubernetes.io/job-completion-index", "0"}}}}},
                 {"status", {{"containerStatuses", {{{"state", 7}}}}}}}},
       .want_state = ProbeState::kInvalidResult,
       .want_reason = "ProbeResultInvalid",
       .want_message = {"is empty"}});
  return c;
}

class ProbeOutcomeTable : public ::testing::TestWithParam<Case> {};

TEST_P(ProbeOutcomeTable, reads) {
  const Case& c = GetParam();
  ProbeOutcome o;
  ASSERT_NO_THROW(o = read_probe_outcome(c.job, c.pods));
  EXPECT_EQ(std::string(to_string(o.state)), to_string(c.want_state)) << o.message;
  EXPECT_EQ(o.reason, c.want_reason) << o.message;
  EXPECT_EQ(o.result.has_value(), c.want_state == ProbeState::kSucceeded) << o.message;
  for (const auto& want : c.want_message)
    EXPECT_NE(o.message.find(want), std::string::npos)
        << "want message containing: " << want << "\n got: " << o.message;
  for (const auto& unwanted : c.not_in_message)
    EXPECT_EQ(o.message.find(unwanted), std::string::npos)
        << "want message without: " << unwanted << "\n got: " << o.message;
}

INSTANTIATE_TEST_SUITE_P(ProbeOutcome, ProbeOutcomeTable, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

TEST(ProbeOutcome, a_succeeded_outcome_carries_rank_0s_result) {
  const ProbeOutcome o = read_probe_outcome(complete(), finished_with(kRealResult));
  ASSERT_TRUE(o.result);
  EXPECT_EQ(o.result->nodes, 2);
  EXPECT_EQ(o.result->backend, "gloo");
  EXPECT_DOUBLE_EQ(o.result->fit.busbw_bytes_per_s, 1.304e9);
  ASSERT_TRUE(o.result->compute);
  EXPECT_EQ(o.result->compute->optimizer, "sgd");
  ASSERT_TRUE(o.result->ddp_step);
  EXPECT_DOUBLE_EQ(o.result->ddp_step->comm_share, 0.6598);
}

// The Job's Complete and the pods' terminated states come through two watches: the
// operator's pod cache can still show rank 0 running when the Job has completed (seen in
// operator_faults_test). That is a result not read yet, not an invalid one.
TEST(ProbeOutcome, a_completed_job_whose_rank_0_pod_has_not_shown_its_end_is_still_running) {
  const ProbeOutcome o = read_probe_outcome(complete(), {a_pod(0), terminated(1, 0, "")});
  EXPECT_EQ(o.state, ProbeState::kRunning) << o.message;
  EXPECT_EQ(o.reason, kReasonProbeRunning);
  EXPECT_FALSE(o.result);
}

TEST(ProbeOutcome, what_the_probe_writes_today_is_what_the_operator_reads) {
  // core's compact form (the probe's termination message) round-trips through the reader.
  ProbeResult r = parse_probe_result(json::parse(kRealResult));
  r.note = "kept out of the compact form";
  const std::string message = compact_probe_result(r);
  ASSERT_LE(message.size(), kTerminationMessageLimit);
  const ProbeOutcome o = read_probe_outcome(complete(), finished_with(message));
  EXPECT_EQ(o.state, ProbeState::kSucceeded) << o.message;
}

TEST(ProbeOutcome, the_message_does_not_depend_on_the_pods_order) {
  const json job = failed_job("BackoffLimitExceeded", "backoff");
  const std::vector<json> pods = {terminated(2, 3, "c"), terminated(0, 3, "a"),
                                  terminated(1, 3, "b")};
  const std::vector<json> reversed(pods.rbegin(), pods.rend());
  EXPECT_EQ(read_probe_outcome(job, pods).message, read_probe_outcome(job, reversed).message);
}

// The one invalid outcome worth a second look at the API server: the pods may only be
// missing from a cache (trainingjob_reconciler's outcome_of lists them again).
TEST(ProbeOutcomeFlags, a_missing_rank_0_pod_is_flagged_and_nothing_else_is) {
  EXPECT_TRUE(read_probe_outcome(complete(), {terminated(1, 0, "")}).rank0_pod_missing);
  EXPECT_TRUE(read_probe_outcome(complete(), {}).rank0_pod_missing);
  EXPECT_FALSE(read_probe_outcome(complete(), {terminated(0, 0, kRealResult), terminated(1, 0, "")})
                   .rank0_pod_missing);
  EXPECT_FALSE(read_probe_outcome(complete(), {terminated(0, 0, "garbage"), terminated(1, 0, "")})
                   .rank0_pod_missing);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
