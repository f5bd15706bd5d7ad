// `commgate evaluate` as a user runs it: the real binary, real files, exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/probe_result.h"
#include "tests/support/builders.h"

namespace commgate {
namespace {

namespace fs = std::filesystem;

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CliRun run(const std::vector<std::string>& args) {
  fs::path dir = fs::temp_directory_path() / ("cg-cli-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string cmd = std::string(COMMGATE_BIN);
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " >" + (dir / "out").string() + " 2>" + (dir / "err").string();
  CliRun r;
  int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

std::string example(const std::string& rel) {
  return std::string(COMMGATE_SOURCE_DIR) + "/examples/" + rel;
}

class TempFile {
 public:
  explicit TempFile(const std::string& content, const std::string& suffix = ".json") {
    path_ = fs::temp_directory_path() /
            ("cg-test-" + std::to_string(getpid()) + "-" + std::to_string(counter_++) + suffix);
    std::ofstream(path_) << content;
  }
  ~TempFile() { fs::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

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
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Decision: Gate [MeasurementStale]"), std::string::npos) << r.out;
}

TEST(EvaluateCli, other_model_in_measurement_needs_a_hint) {
  TempFile m(to_json(a_probe_result(0.5, 5e6, 40)).dump());
  TempFile job(testing::a_training_job("bert").nodes(4).params(25e6).json().dump());
  CliRun r = run({"evaluate", "-f", job.path(), "--measurement", m.path()});
  EXPECT_EQ(r.exit_code, 0);
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

}  // namespace
}  // namespace commgate
