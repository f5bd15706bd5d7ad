// `commgate evaluate` as a user runs it: the real binary, real files, exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "cli/evaluate_command.h"
#include "core/decision.h"
#include "core/model_names.h"
#include "core/probe_result.h"
#include "tests/cli/cli_test_support.h"
#include "tests/support/builders.h"
#include "tests/support/sanitizers.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;

using testing::CliRun;
using testing::example;
using testing::run;
using testing::TempFile;

// A probe result built in code: these tests check the command, not the measurement.
ProbeResult a_probe_result(double busbw_gbps, double params, double step_ms) {
  ProbeResult r;
  r.start_time = testing::test_now();
  r.nodes = 2;
  r.backend = "gloo";
  r.transport = "socket";
  r.fit.ranks = 2;
  r.fit.latency_s = 200e-6;
  r.fit.busbw_bytes_per_s = busbw_gbps * 1e9;
  r.allreduce = {{1048576, 9000, 0.116, 0.116, true}};
  ComputeResult c;
  c.parameters = params;
  c.step_time_ms = step_ms;
  c.forward_ms = step_ms * 0.3;
  c.backward_ms = step_ms * 0.6;
  c.optimizer_ms = step_ms * 0.1;
  c.optimizer = kDefaultOptimizer;  // the optimizer of a job that names none
  r.compute = c;
  return r;
}

TEST(EvaluateCli, zero_nodes_exits_2_and_names_the_field) {
  CliRun r = run({"evaluate", "-f", example("invalid/zero-nodes.yaml")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("spec.numNodes: must be >= 1, got 0"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(EvaluateCli, every_mistake_is_listed_with_its_path) {
  CliRun r = run({"evaluate", "-f", example("invalid/many-mistakes.yaml"), "-o", "json"});
  EXPECT_EQ(r.exit_code, 2);
  for (const char* path : {"metadata.name:", "spec.numNodes:", "spec.numProcPerNode:",
                           "spec.model.parameters:", "spec.model.gradientDtype:",
                           "spec.template.spec.containers:", "spec.minNode: unknown field"}) {
    EXPECT_NE(r.err.find(path), std::string::npos) << path << "\n" << r.err;
  }
  EXPECT_TRUE(r.out.empty());
}

// Newcomer trial C2: `llm.v2` is an RFC 1123 subdomain, so evaluate decided it (exit 0),
// while the operator then failed it (InvalidWorkloadName): its Service and pod hostnames
// need a DNS-1035 label. The same check as the webhook's, at exit 2 with the field.
TEST(EvaluateCli, a_name_the_workload_cannot_take_exits_2_naming_metadata_name) {
  std::string job = testing::slurp(example("jobs/resnet50-5m.yaml"));
  job.replace(job.find("name: resnet-small"), 18, "name: llm.v2");
  TempFile job_file(job, ".yaml");
  CliRun r = run({"evaluate", "-f", job_file.path()});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("metadata.name: the name \"llm.v2\" names the workload's headless "
                       "Service, which must be a DNS-1035 label"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// A YAML .inf, -.inf or .nan where a number belongs: JSON has none, so the conversion
// once wrote null and the user read "got number null". The field and the value instead.
TEST(EvaluateCli, non_finite_numbers_are_named_with_their_yaml_spelling) {
  std::string job = testing::slurp(example("jobs/resnet50-5m.yaml"));
  job.replace(job.find("batchSize: 4096"), 15, "batchSize: .inf");
  job.replace(job.find("numNodes: 4"), 11, "numNodes: -.inf");
  job += "          workingDir: .nan\n";
  TempFile job_file(job, ".yaml");
  CliRun r = run({"evaluate", "-f", job_file.path()});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  for (const char* want :
       {"spec.numNodes: must be a finite number, got -.inf",
        "spec.model.batchSize: must be a finite number, got .inf",
        "spec.template.spec.containers[0].workingDir: must be a finite number, got .nan"}) {
    EXPECT_NE(r.err.find(want), std::string::npos) << want << "\n" << r.err;
  }
  EXPECT_EQ(r.err.find("null"), std::string::npos) << r.err;

  std::string policy = testing::slurp(example("policies/strict-deny.yaml"));
  policy.replace(policy.find("maxCommShare: 0.25"), 18, "maxCommShare: .inf");
  TempFile policy_file(policy, ".yaml");
  r = run({"evaluate", "-f", example("jobs/resnet50-5m.yaml"), "--policy", policy_file.path()});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("spec.maxCommShare: must be a finite number, got .inf"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("null"), std::string::npos) << r.err;
}

// The user trial: `comand:` in the pod template was accepted (the CRD keeps the template as
// unknown fields), stored, dropped from the Job, and the job ran without its command.
TEST(EvaluateCli, a_misspelt_pod_template_field_exits_2_with_its_path_and_a_hint) {
  std::string job = testing::slurp(example("jobs/resnet50-5m.yaml"));
  job.replace(job.find("command:"), 8, "comand:");
  TempFile job_file(job, ".yaml");
  CliRun r = run({"evaluate", "-f", job_file.path()});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("spec.template.spec.containers[0].comand: unknown field (did you mean "
                       "\"command\"?)"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(EvaluateCli, usage_errors_exit_2) {
  EXPECT_EQ(run({"evaluate"}).exit_code, 2);
  EXPECT_EQ(run({"evaluate", "-f", "/nonexistent.yaml"}).exit_code, 2);
  CliRun r = run({"evaluate", "-f", example("jobs/resnet50-5m.yaml"), "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown argument \"--bogus\""), std::string::npos);
  EXPECT_EQ(run({"evaluate", "-f", example("jobs/resnet50-5m.yaml"), "-o", "xml"}).exit_code, 2);
  EXPECT_EQ(
      run({"evaluate", "-f", example("jobs/resnet50-5m.yaml"), "--now", "tomorrow"}).exit_code, 2);
  EXPECT_EQ(run({"frobnicate"}).exit_code, 2);
}

TEST(EvaluateCli, bad_measurement_file_names_its_fields) {
  TempFile bad(R"({"apiVersion":"commgate.io/v1alpha1","kind":"ProbeResult","startTime":"never",
                   "world":{"nodes":0},"backend":"mpi","allReduce":{"fit":{}}})");
  CliRun r = run({"evaluate", "-f", example("jobs/resnet50-5m.yaml"), "--measurement", bad.path()});
  EXPECT_EQ(r.exit_code, 2);
  for (const char* path : {"startTime:", "world.nodes:", "backend:", "allReduce.fit.latencyUs:"}) {
    EXPECT_NE(r.err.find(path), std::string::npos) << path << "\n" << r.err;
  }
}

TEST(EvaluateCli, downsizes_over_policy_job_from_measurement_file) {
  TempFile m(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  TempFile job(testing::a_training_job("bert").nodes(4).params(25e6).json().dump());
  CliRun r = run({"evaluate", "-f", job.path(), "--measurement", m.path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Decision: Downsize to 2 nodes [OverPolicyDownsized]"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("<- requested"), std::string::npos);
  EXPECT_NE(r.out.find("<- admitted"), std::string::npos);
}

// --policy-dir chooses each job's policy as the cluster does (issue #19 "a policy model
// an admin can predict"): the trial's three teams, from one `kubectl get -o yaml` List.
TEST(EvaluateCli, policy_dir_chooses_the_policy_as_the_cluster_does) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cg-policy-dir-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "cluster.yaml") << R"(apiVersion: v1
kind: List
items:
- {apiVersion: commgate.io/v1alpha1, kind: CommPolicy, metadata: {name: default},
   spec: {maxCommShare: 0.3}}
- {apiVersion: commgate.io/v1alpha1, kind: CommPolicy, metadata: {name: team-risky},
   spec: {maxCommShare: 0.3, enforcementAction: deny,
          namespaceSelector: {matchLabels: {team: risky}}}}
- {apiVersion: v1, kind: Namespace, metadata: {name: risky-a, labels: {team: risky}}}
- {apiVersion: v1, kind: Namespace, metadata: {name: research}}
)";
  TempFile m(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  auto job_in = [&](const std::string& ns) {
    return testing::a_training_job("bert").namespace_(ns).nodes(4).params(25e6).json().dump();
  };
  TempFile research(job_in("research")), risky(job_in("risky-a"));

  CliRun r = run({"evaluate", "-f", research.path(), "--measurement", m.path(), "--policy-dir",
                  dir.string(), "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["policy"], "default");
  EXPECT_EQ(j["decision"]["action"], "Downsize");
  EXPECT_NE(j["policyChosen"].get<std::string>().find("governs namespace research (2 "
                                                      "CommPolicies in "),
            std::string::npos)
      << j["policyChosen"];

  // The tie at 0.3 goes to team-risky's deny: refused (exit 1), not downsized.
  r = run(
      {"evaluate", "-f", risky.path(), "--measurement", m.path(), "--policy-dir", dir.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("Policy      team-risky: maxCommShare 30%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chosen as the cluster would: governs namespace risky-a"), std::string::npos)
      << r.out;

  // A policy that does not parse names its file and field; two ways to choose are refused.
  std::ofstream(dir / "broken.yaml")
      << "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata: {name: b}\n"
         "spec: {maxCommShare: 2}\n";
  r = run(
      {"evaluate", "-f", research.path(), "--measurement", m.path(), "--policy-dir", dir.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("broken.yaml: CommPolicy b is invalid:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("spec.maxCommShare"), std::string::npos) << r.err;
  // A second copy of a policy (a stale export) is refused, naming both files.
  fs::remove(dir / "broken.yaml");
  std::ofstream(dir / "stale.yaml")
      << "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata: {name: team-risky}\n"
         "spec: {maxCommShare: 0.9}\n";
  r = run(
      {"evaluate", "-f", risky.path(), "--measurement", m.path(), "--policy-dir", dir.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("stale.yaml: CommPolicy team-risky is also in"), std::string::npos) << r.err;
  r = run({"evaluate", "-f", research.path(), "--policy", (dir / "stale.yaml").string(),
           "--policy-dir", dir.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--policy and --policy-dir"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

TEST(EvaluateCli, json_output_is_machine_readable) {
  TempFile m(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  TempFile job(testing::a_training_job("bert").nodes(4).params(25e6).json().dump());
  CliRun r = run({"evaluate", "-f", job.path(), "--measurement", m.path(), "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["job"], "research/bert");
  EXPECT_EQ(j["decision"]["action"], "Downsize");
  EXPECT_EQ(j["decision"]["admittedNodes"], 2);
  EXPECT_EQ(j["decision"]["predictions"].size(), 4u);
  EXPECT_EQ(j["measurement"]["computeSource"], "measured");
}

// kubectl's shorthand forms, which `kubectl commgate` takes too (the trial of 2026-12-06
// typed -ojson at both): -ojson, -o=yaml, -fFILE; a wrong attached value is named.
TEST(EvaluateCli, shorthand_flags_take_their_values_attached_as_kubectl_does) {
  TempFile m(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  TempFile job(testing::a_training_job("bert").nodes(4).params(25e6).json().dump());
  CliRun attached = run({"evaluate", "-f" + job.path(), "--measurement", m.path(), "-ojson"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_EQ(nlohmann::json::parse(attached.out)["decision"]["action"], "Downsize");
  CliRun with_equals = run({"evaluate", "-f=" + job.path(), "--measurement", m.path(), "-o=yaml"});
  ASSERT_EQ(with_equals.exit_code, 0) << with_equals.err;
  EXPECT_NE(with_equals.out.find("action: Downsize"), std::string::npos) << with_equals.out;
  CliRun wrong = run({"evaluate", "-f", job.path(), "--measurement", m.path(), "-oxml"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_NE(wrong.err.find("got \"xml\""), std::string::npos) << wrong.err;
}

TEST(EvaluateCli, deny_policy_exits_1_with_the_reason) {
  TempFile m(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  TempFile job(testing::a_training_job("bert").nodes(4).params(25e6).json().dump());
  CliRun r = run({"evaluate", "-f", job.path(), "--measurement", m.path(), "--policy",
                  example("policies/strict-deny.yaml")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("Decision: Deny [OverPolicyDenied]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("The largest count that passes is 2 nodes"), std::string::npos) << r.out;
}

TEST(EvaluateCli, exempt_group_is_admitted) {
  TempFile m(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  TempFile job(testing::a_training_job("bert").nodes(4).params(25e6).json().dump());
  CliRun r = run({"evaluate", "-f", job.path(), "--measurement", m.path(), "--policy",
                  example("policies/strict-deny.yaml"), "--user", "carol", "--group",
                  "ml-platform-admins"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[Exempt]"), std::string::npos) << r.out;
}

TEST(EvaluateCli, now_applies_the_ttl_to_a_measurement_file) {
  TempFile m(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  TempFile job(testing::a_training_job("bert").nodes(4).params(25e6).json().dump());
  CliRun r = run(
      {"evaluate", "-f", job.path(), "--measurement", m.path(), "--now", "2026-12-02T00:00:00Z"});
  EXPECT_EQ(r.exit_code, kExitGated) << "a Gate is not a success for scripts: " << r.err;
  EXPECT_NE(r.out.find("Decision: Gate [MeasurementStale]"), std::string::npos) << r.out;
  // The same as YAML, for those who read it.
  CliRun y = run({"evaluate", "-f", job.path(), "--measurement", m.path(), "--now",
                  "2026-12-02T00:00:00Z", "-o", "yaml"});
  EXPECT_EQ(y.exit_code, kExitGated) << y.err;
  EXPECT_NE(y.out.find("action: Gate"), std::string::npos) << y.out;
}

TEST(EvaluateCli, other_model_in_measurement_needs_a_hint) {
  TempFile m(to_json(a_probe_result(0.5, 5e6, 40)).dump());
  TempFile job(testing::a_training_job("bert").nodes(4).params(25e6).json().dump());
  CliRun r = run({"evaluate", "-f", job.path(), "--measurement", m.path()});
  EXPECT_EQ(r.exit_code, kExitGated);
  EXPECT_NE(r.out.find("[ComputeMeasurementMissing]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the probe measured 5M fp32"), std::string::npos) << r.out;
  TempFile hinted(
      testing::a_training_job("bert").nodes(4).params(25e6).step_time_hint_ms(300).json().dump());
  CliRun h = run({"evaluate", "-f", hinted.path(), "--measurement", m.path()});
  EXPECT_NE(h.out.find("from spec.model.stepTimeHintMs"), std::string::npos) << h.out;
}

TEST(EvaluateCli, policy_inside_the_job_file_is_used) {
  TempFile m(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  std::string both =
      testing::a_training_job("bert").nodes(4).params(25e6).json().dump() + "\n---\n" +
      R"({"apiVersion":"commgate.io/v1alpha1","kind":"CommPolicy","metadata":{"name":"loose"},"spec":{"maxCommShare":0.5}})";
  TempFile job(both, ".yaml");
  CliRun r = run({"evaluate", "-f", job.path(), "--measurement", m.path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Policy      loose"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Decision: Admit [WithinPolicy]"), std::string::npos) << r.out;
}

TEST(EvaluateCli, missing_probe_is_explained) {
  CliRun r = run({"evaluate", "-f", example("jobs/resnet50-5m.yaml"), "--probe",
                  "/nonexistent/commgate-probe"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("commgate-probe was not found"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(EvaluateCli, single_node_needs_no_measurement) {
  TempFile job(testing::a_training_job("one").nodes(1).json().dump());
  CliRun r = run({"evaluate", "-f", job.path(), "--probe", "/nonexistent"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[SingleNode]"), std::string::npos);
}

// A stand-in for commgate-probe (`--probe`): records its arguments one per line and prints
// `result`, so the local-probe path runs without LibTorch or a second rank.
class FakeProbe {
 public:
  explicit FakeProbe(const ProbeResult& result)
      : result_(to_json(result).dump()),
        args_(""),
        script_("#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + args_.path() + "'\ncat '" +
                    result_.path() + "'\n",
                ".sh") {
    fs::permissions(script_.path(), fs::perms::owner_all);
  }
  std::string path() const { return script_.path(); }
  std::string args() const { return testing::slurp(args_.path()); }

 private:
  TempFile result_, args_, script_;
};

ProbeResult a_live_probe_result(double params, const std::string& optimizer) {
  ProbeResult r = a_probe_result(0.5, params, 300);
  r.start_time = Clock::now();
  r.compute->optimizer = optimizer;
  return r;
}

// Issue 12: without --measurement, evaluate measured this machine's loopback and said
// nothing about it (and nothing at all with -o json). And the probe must time the job's
// own optimizer (spec.model.optimizer), whose step is part of the compute step.
TEST(EvaluateCli, local_probe_warns_it_measures_loopback_and_times_the_jobs_optimizer) {
  FakeProbe probe(a_live_probe_result(25e6, "sgd"));
  TempFile job(testing::a_training_job("bert")
                   .nodes(4)
                   .params(25e6)
                   .set("/spec/model/optimizer", "sgd")
                   .json()
                   .dump());
  for (const std::string output : {"table", "json"}) {
    CliRun r = run({"evaluate", "-f", job.path(), "--probe", probe.path(), "-o", output});
    EXPECT_EQ(r.exit_code, 0) << output << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("warning: no --measurement"), std::string::npos) << output << r.err;
    EXPECT_NE(r.err.find("this machine's loopback, not your cluster's network"), std::string::npos)
        << output << r.err;
    if (output == "json") {
      EXPECT_NO_THROW(static_cast<void>(nlohmann::json::parse(r.out))) << r.out;
    }
    EXPECT_NE(probe.args().find("--optimizer\nsgd\n"), std::string::npos) << probe.args();
  }
}

// A model too big for this machine is refused by the probe before it allocates anything
// (docs/probe.md, user trial: --params 1P). Under --quiet, as evaluate runs it, the
// refusal is only in rank 0's JSON: evaluate shows it with the stage, and exits 3.
TEST(EvaluateCli, the_probes_memory_refusal_is_shown_with_its_stage) {
  ProbeResult refused = a_live_probe_result(340e6, "adamw");
  refused.compute.reset();
  refused.error = ProbeError{
      "compute",
      "the model needs 7.0 GiB of memory per rank (...) x 2 ranks on this node, but this node "
      "has 4.0 GiB (MemAvailable in /proc/meminfo): ... give the TrainingJob "
      "spec.model.stepTimeHintMs"};
  TempFile result(to_json(refused).dump());
  TempFile probe("#!/bin/sh\ncat '" + result.path() + "'\nexit 1\n", ".sh");
  fs::permissions(probe.path(), fs::perms::owner_all);
  TempFile job(testing::a_training_job("bert").nodes(4).params(340e6).json().dump());
  CliRun r = run({"evaluate", "-f", job.path(), "--probe", probe.path()});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("commgate-probe failed (exit 1):\nstage compute: the model needs 7.0 GiB"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("spec.model.stepTimeHintMs"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// Issue 12: `--group` alone printed "admitted without a communication check:  is exempt".
TEST(EvaluateCli, exemption_by_group_names_the_group) {
  TempFile m(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  TempFile job(testing::a_training_job("bert").nodes(4).params(25e6).json().dump());
  CliRun r = run({"evaluate", "-f", job.path(), "--measurement", m.path(), "--policy",
                  example("policies/strict-deny.yaml"), "--group", "ml-platform-admins"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("admitted without a communication check: group ml-platform-admins is "
                       "exempt under CommPolicy"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find(":  is exempt"), std::string::npos) << r.out;
}

// Issue 12: wrong files said only "no TrainingJob found", or a parser's complaint about
// the wrong kind; a binary file's bytes (NUL included) reached the terminal.
TEST(EvaluateCli, a_file_of_the_wrong_sort_is_named_for_what_it_is) {
  TempFile policy(
      "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata:\n  name: strict\n"
      "spec:\n  maxCommShare: 0.2\n",
      ".yaml");
  TempFile probe(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  TempFile binary(std::string("\x7f"
                              "ELF\x02\x01\x01\0\0\0\0spec: {",
                              16),
                  ".yaml");
  TempFile job(testing::a_training_job("bert").nodes(4).params(25e6).json().dump(), ".yaml");
  const std::string dir = fs::temp_directory_path().string();
  struct Case {
    std::string name;
    std::vector<std::string> args;
    std::string want;
    std::string not_want;
  };
  const std::vector<Case> cases = {
      {"a_directory", {"-f", dir}, dir + " is a directory", "no TrainingJob found"},
      {"a_policy_given_as_the_job",
       {"-f", policy.path()},
       "that file holds a CommPolicy: use --policy " + policy.path(),
       "no TrainingJob found"},
      {"a_probe_result_given_as_the_job",
       {"-f", probe.path()},
       "holds a ProbeResult: use --measurement",
       "must be TrainingJob"},
      {"a_binary_file", {"-f", binary.path()}, "holds a NUL byte at offset 7", ""},
      {"a_job_given_as_the_measurement",
       {"-f", job.path(), "--measurement", job.path()},
       "holds a TrainingJob: --measurement takes a commgate-probe result (kind ProbeResult) or "
       "a CommProfile; a TrainingJob goes with -f",
       "must be ProbeResult"},
      {"a_policy_given_as_the_measurement",
       {"-f", job.path(), "--measurement", policy.path()},
       "a CommPolicy goes with --policy",
       "must be ProbeResult"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"evaluate"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CliRun r = run(args);
    EXPECT_EQ(r.exit_code, 2) << c.name << "\n" << r.err;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.name << "\n" << r.err;
    if (!c.not_want.empty()) {
      EXPECT_EQ(r.err.find(c.not_want), std::string::npos) << c.name << "\n" << r.err;
    }
    EXPECT_EQ(r.err.find('\0'), std::string::npos) << c.name;
    EXPECT_TRUE(r.out.empty()) << c.name << "\n" << r.out;
  }
}

// Issue 12: "-350M" came back as "-3.5e+08"; "350 million" got no hint.
TEST(EvaluateCli, parameters_are_quoted_as_the_quantities_users_write) {
  struct Case {
    nlohmann::json parameters;
    std::string want;
  };
  for (const Case& c : {Case{"-350M", "spec.model.parameters: must be >= 1, got -350M"},
                        Case{-3.5e8, "spec.model.parameters: must be >= 1, got -350M"},
                        Case{"350 million", "(write 350M)"}}) {
    TempFile job(testing::a_training_job("bert")
                     .nodes(4)
                     .set("/spec/model/parameters", c.parameters)
                     .json()
                     .dump());
    CliRun r = run({"evaluate", "-f", job.path(), "--probe", "/nonexistent"});
    EXPECT_EQ(r.exit_code, 2) << c.parameters;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << c.parameters << "\n" << r.err;
  }
}

// Issue 12: the table printed every count up to numNodes (10,000 rows) where JSON had 20.
// Both show the decision's predictions and say which counts those are.
TEST(EvaluateCli, table_and_json_show_the_same_node_counts_and_say_which) {
  TempFile m(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  for (int nodes : {4, 600}) {
    TempFile job(testing::a_training_job("bert").nodes(nodes).params(25e6).json().dump());
    CliRun table = run({"evaluate", "-f", job.path(), "--measurement", m.path()});
    CliRun json = run({"evaluate", "-f", job.path(), "--measurement", m.path(), "-o", "json"});
    // 600 nodes is too far from the 2 probed: a Gate (ExtrapolationTooFar), exit 4.
    const int want = nodes == 4 ? 0 : kExitGated;
    ASSERT_EQ(table.exit_code, want) << table.err << table.out;
    ASSERT_EQ(json.exit_code, want) << json.err;
    const auto j = nlohmann::json::parse(json.out);
    std::vector<int> json_counts, table_counts;
    for (const auto& p : j["decision"]["predictions"]) json_counts.push_back(p["nodes"]);
    std::istringstream lines(table.out);
    bool in_table = false;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("NODES", 0) == 0)
        in_table = true;
      else if (line.empty())
        in_table = false;
      else if (in_table && line.find('%') != std::string::npos)
        table_counts.push_back(std::stoi(line));
    }
    EXPECT_EQ(table_counts, json_counts) << table.out;
    const std::string shown = j.value("predictionsShown", "");
    EXPECT_FALSE(shown.empty()) << json.out;
    EXPECT_NE(table.out.find("Shown: " + shown + "\n"), std::string::npos) << table.out;
    if (nodes == 4) {
      EXPECT_EQ(shown, "every count from 1 to 4");
    }
    if (nodes == 600) {
      EXPECT_LT(json_counts.size(), 40u);
      EXPECT_NE(shown.find("requested (600)"), std::string::npos) << shown;
      EXPECT_NE(table.out.find("  ...\n"), std::string::npos) << table.out;
    }
  }
}

// Issue #24 item 8 (the trial of 2026-12-06): gated ExtrapolationTooFar, every row said
// "pass", though the policy decides no count past maxExtrapolation x the nodes probed.
TEST(EvaluateCli, rows_past_max_extrapolation_say_they_are_not_decided) {
  TempFile m(to_json(a_probe_result(0.5, 25e6, 300)).dump());
  TempFile job(testing::a_training_job("bert").nodes(600).params(25e6).json().dump());
  CliRun table = run({"evaluate", "-f", job.path(), "--measurement", m.path()});
  ASSERT_EQ(table.exit_code, kExitGated) << table.err << table.out;
  ASSERT_NE(table.out.find("ExtrapolationTooFar"), std::string::npos) << table.out;
  const int decided = counts_decided(CommPolicySpec{}, 2);
  std::istringstream lines(table.out);
  int rows = 0, beyond = 0;
  bool in_table = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("NODES", 0) == 0) {
      in_table = true;
      continue;
    }
    if (line.empty() || line.rfind("Shown:", 0) == 0) in_table = false;
    if (!in_table || line.find('%') == std::string::npos) continue;
    ++rows;
    if (std::stoi(line) > decided) {
      ++beyond;
      EXPECT_NE(line.find("not decided (past maxExtrapolation)"), std::string::npos) << line;
      EXPECT_EQ(line.find(" pass"), std::string::npos) << line;
    } else {
      EXPECT_TRUE(line.find(" pass") != std::string::npos ||
                  line.find(" over") != std::string::npos)
          << line;
    }
  }
  EXPECT_GT(rows, beyond);
  EXPECT_GT(beyond, 0) << table.out;
}

// Issue #24 item 10: the table wrote the latency "20 us", the chart of the same run
// "20.2 us": one way in both.
TEST(EvaluateCli, the_table_writes_the_latency_as_the_chart_does) {
  const std::string svg =
      fs::temp_directory_path() / ("cg-latency-" + std::to_string(getpid()) + ".svg");
  CliRun r =
      run({"evaluate", "-f", example("jobs/bert-large-350m.yaml"), "--measurement",
           example("measurements/probe-netns-2-nodes-1gbit-350M-params.json"), "--plot", svg});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(", latency 20.2 us\n"), std::string::npos) << r.out;
  EXPECT_NE(testing::slurp(svg).find("latency 20.2 us"), std::string::npos);
  fs::remove(svg);
}

// The user trial of 2026-12-07: the header's measured share and the table's measured row
// differed in the last digit (69.7 and 69.6); a job of other processes per node was not
// told why no row was measured; a chart drawn from a DDP step the model did not use said
// nothing of it.
TEST(EvaluateCli, the_measured_ddp_step_reads_alike_in_the_header_the_table_and_the_chart) {
  const std::string measurement =
      example("measurements/probe-netns-2-nodes-1gbit-350M-params.json");
  CliRun r =
      run({"evaluate", "-f", example("jobs/bert-large-350m.yaml"), "--measurement", measurement});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("measured DDP step at 2 nodes: 16280 ms, comm share 69.6%\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("69.6%    0.61x       30.4%  over  (measured)"), std::string::npos) << r.out;

  std::string job = testing::slurp(example("jobs/bert-large-350m.yaml"));
  job.replace(job.find("numProcPerNode: 1"), 17, "numProcPerNode: 2");
  const TempFile two(job, ".yaml");
  r = run({"evaluate", "-f", two.path(), "--measurement", measurement});
  EXPECT_NE(r.out.find("comm share 69.6% (at 1 proc per node; this job runs 2 procs, so no row "
                       "is that step: it corrects the model, which decides every count)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("(measured)"), std::string::npos) << r.out;

  // A DDP step faster than its compute: no overlap or bandwidth explains it.
  nlohmann::json fast = nlohmann::json::parse(testing::slurp(measurement));
  fast["ddpStep"]["stepTimeMs"] = 4000;
  const TempFile fast_file(fast.dump());
  const TempFile svg("", ".svg");
  r = run({"evaluate", "-f", example("jobs/bert-large-350m.yaml"), "--measurement",
           fast_file.path(), "--plot", svg.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(testing::slurp(svg.path()).find("its DDP step is not used: the model as it is"),
            std::string::npos);
}

// Issue 12: the "Try:" commands of examples/README.md did not work as written. Each runs
// here as written, from the repository root, with build/bin/commgate this build's binary.
TEST(EvaluateCli, every_try_line_of_the_examples_readme_works) {
  const std::string readme = testing::slurp(example("README.md"));
  static const std::regex kTry("Try: `build/bin/commgate ([^`]*)`");
  int tried = 0;
  for (std::sregex_iterator it(readme.begin(), readme.end(), kTry), end; it != end; ++it) {
    std::istringstream words((*it)[1].str());
    std::vector<std::string> args{std::istream_iterator<std::string>(words), {}};
    CliRun r = testing::run_commgate_in(COMMGATE_SOURCE_DIR, args);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << (*it)[0] << "\n" << r.err;
    EXPECT_FALSE(r.out.empty()) << (*it)[0];
    ++tried;
  }
  EXPECT_GE(tried, 1) << "no Try: line in examples/README.md";
}

// Issue 9: a JSON file holding [null] printed a table for "default/" with 0 nodes and
// exited 1 (Deny, InvalidSpec). A document that is not an object is bad input: exit 2,
// naming where it is.
TEST(EvaluateCli, null_document_exits_2_and_names_its_place) {
  struct Case {
    std::string text;
    std::string want;
  };
  for (const Case& c :
       {Case{"[null]", ": [0]: must be an object (a Kubernetes manifest), got null"},
        Case{R"({"kind": "List", "items": [null]})",
             ": items[0]: must be an object (a Kubernetes manifest), got null"},
        Case{"[" + testing::a_training_job("bert").nodes(2).json().dump() + ", 4]",
             ": [1]: must be an object (a Kubernetes manifest), got number 4"}}) {
    TempFile file(c.text);
    CliRun r = run({"evaluate", "-f", file.path(), "--probe", "/nonexistent"});
    EXPECT_EQ(r.exit_code, 2) << c.text << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(file.path() + c.want), std::string::npos) << c.text << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST(EvaluateCli, null_container_exits_2_and_names_the_item) {
  TempFile job(testing::a_training_job("bert")
                   .nodes(2)
                   .set("/spec/template/spec/containers", nlohmann::json::array({nullptr}))
                   .json()
                   .dump());
  CliRun r = run({"evaluate", "-f", job.path(), "--probe", "/nonexistent"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("spec.template.spec.containers[0]: must be an object, got null"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// Issue 12, defect 5: a CommProfile with zero bandwidth and a time in 2099 was accepted
// (a 1.10 ms all-reduce at zero bandwidth, "0.00x 0.0% pass").
TEST(EvaluateCli, garbage_comm_profile_exits_2_with_every_field_path) {
  nlohmann::json profile = {
      {"apiVersion", "commgate.io/v1alpha1"},
      {"kind", "CommProfile"},
      {"metadata", {{"name", "pool-all"}}},
      {"status",
       {{"link",
         {{"latencyUs", 50},
          {"busbwGBps", 0},
          {"nodesProbed", 1},
          {"measuredAt", "2099-01-01T00:00:00Z"}}},
        {"computeSteps",
         {{{"parameters", 25e6}, {"stepTimeMs", 0}, {"measuredAt", "2026-11-30T11:00:00Z"}}}}}}};
  TempFile m(profile.dump());
  TempFile job(testing::a_training_job("bert").nodes(4).params(25e6).json().dump());
  CliRun r = run(
      {"evaluate", "-f", job.path(), "--measurement", m.path(), "--now", "2026-11-30T12:00:00Z"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  for (const char* want :
       {"status.link.busbwGBps: must be > 0, got 0", "status.link.nodesProbed: must be >= 2, got 1",
        "status.link.measuredAt: must not be in the future",
        "status.computeSteps[0].stepTimeMs: must be > 0, got 0"}) {
    EXPECT_NE(r.err.find(want), std::string::npos) << want << "\n" << r.err;
  }
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// Nine levels of nine aliases (9^9 values from ~700 bytes), the file of the user trial.
std::string yaml_alias_bomb() {
  std::string text =
      "apiVersion: v1\nkind: ConfigMap\nl0: &a0 [lol, lol, lol, lol, lol, lol, lol, "
      "lol, lol]\n";
  for (int level = 1; level <= 8; ++level) {
    const std::string prev = "*a" + std::to_string(level - 1);
    text += "l" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 9; ++i) text += (i ? ", " : "") + prev;
    text += "]\n";
  }
  return text;
}

// `commgate ARGS...` with at most `seconds` and, unless under AddressSanitizer (which
// reserves terabytes of address space), 2 GiB of address space: without the limits on
// YAML the bomb would grow by 300 MB/s until the machine ran out.
CliRun run_bounded(const std::vector<std::string>& args, int seconds = 20) {
#if COMMGATE_UNDER_SANITIZER
  const std::string limit = "";
#else
  const std::string limit = "ulimit -v 2097152; ";
#endif
  const fs::path dir = fs::temp_directory_path() / ("cg-bounded-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string cmd = "timeout " + std::to_string(seconds) + " sh -c '" + limit +
                    "exec \"$0\" \"$@\"' " + std::string(COMMGATE_BIN);
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " >" + (dir / "out").string() + " 2>" + (dir / "err").string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = testing::slurp(dir / "out");
  r.err = testing::slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

struct BombCase {
  std::string name;
  std::vector<std::string> args_before_file;  // the bomb's path comes after these
  std::vector<std::string> args_after_file;
};

void PrintTo(const BombCase& c, std::ostream* os) {
  *os << c.name;
}

class YamlBombCli : public ::testing::TestWithParam<BombCase> {};

TEST_P(YamlBombCli, exits_2_at_once_naming_the_file) {
#if COMMGATE_UNDER_SANITIZER
  // AddressSanitizer reserves terabytes of shadow address space: it cannot run under the
  // memory cap this test sets, and its slowdown breaks the time bound.
  GTEST_SKIP() << "not under AddressSanitizer (memory cap and time bound)";
#endif
  const BombCase& c = GetParam();
  TempFile bomb(yaml_alias_bomb(), ".yaml");
  std::vector<std::string> args = c.args_before_file;
  args.push_back(bomb.path());
  args.insert(args.end(), c.args_after_file.begin(), c.args_after_file.end());
  const auto start = std::chrono::steady_clock::now();
  const CliRun r = run_bounded(args);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_LT(seconds, 5.0);
  EXPECT_NE(r.err.find(bomb.path() + ": line "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("an alias bomb, not a manifest"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    EvaluateCli, YamlBombCli,
    ::testing::Values(
        BombCase{
            "as_the_job",
            {"evaluate", "-f"},
            {"--measurement", example("measurements/probe-netns-2-nodes-1gbit-350M-params.json")}},
        BombCase{
            "as_the_policy",
            {"evaluate", "-f", example("jobs/bert-large-350m.yaml"), "--policy"},
            {"--measurement", example("measurements/probe-netns-2-nodes-1gbit-350M-params.json")}},
        BombCase{"as_the_measurement",
                 {"evaluate", "-f", example("jobs/bert-large-350m.yaml"), "--measurement"},
                 {}}),
    [](const ::testing::TestParamInfo<BombCase>& p) { return p.param.name; });

// The webhook reads its policy directory before it listens: a bomb there is a start-up
// misconfiguration (exit 2 naming the file), not std::bad_alloc. Polling rejects it the
// same way and keeps the last good policies (the same parser; file_policy_source.cpp).
TEST(WebhookCli, alias_bomb_in_the_policy_dir_exits_2_naming_the_file) {
  const fs::path dir = fs::temp_directory_path() / ("cg-bomb-dir-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "bomb.yaml") << yaml_alias_bomb();
  const auto start = std::chrono::steady_clock::now();
  const CliRun r = run_bounded({"webhook", "--tls-cert-file", (dir / "absent.crt").string(),
                                "--tls-private-key-file", (dir / "absent.key").string(), "--port",
                                "0", "--policy-dir", dir.string()});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // "At once" in a normal build; under the sanitizers' slowdown (9 s with clang's at -O0)
  // only the exit and the message are checked.
  if (!COMMGATE_UNDER_SANITIZER) {
    EXPECT_LT(seconds, 5.0);
  }
  EXPECT_NE(r.err.find((dir / "bomb.yaml").string() + ": line "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("an alias bomb, not a manifest"), std::string::npos) << r.err;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
