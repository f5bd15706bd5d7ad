// What a user trial (#9) saw through the real `commgate evaluate`, each as the user ran
// it: a CommProfile printed by `commgate profile --from-probe` (the 4-node recording, 5M
// parameters at batch 32 with Adam), edited as a later probe of another model leaves it
// (a newer link), and a job from examples/jobs/ resized.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/cli/cli_test_support.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using testing::CliRun;
using testing::example;
using testing::run;
using testing::slurp;
using testing::TempFile;

const std::string kProbed = "2026-11-30T18:46:27Z";    // the recording's start
const std::string kReprobed = "2026-11-30T18:53:34Z";  // a later probe of another model

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// The pool's profile as `commgate profile` prints it after the 4-node probe.
std::string profile_yaml() {
  CliRun r = run({"profile", "--from-probe",
                  example("measurements/probe-netns-4-nodes-1gbit-5M-params.json"),
                  "--node-selector", "commgate.io/pool=cpu-1gbe"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(kProbed), std::string::npos) << r.out;
  return r.out;
}

// The same profile after a probe of another model measured the link again, faster: the
// link's time and busbw are new, this model's compute record (and its DDP step) old.
std::string reprobed_profile_yaml() {
  std::string yaml = profile_yaml();
  const size_t link = yaml.find("\n  link:\n");
  EXPECT_NE(link, std::string::npos) << yaml;
  std::string head = yaml.substr(0, link), tail = yaml.substr(link);
  tail = replace_all(tail, kProbed, kReprobed);
  const size_t busbw = tail.find("busbwGBps: ");
  EXPECT_NE(busbw, std::string::npos);
  tail.replace(busbw, tail.find('\n', busbw) - busbw, "busbwGBps: 1.01");
  return replace_all(head, "lastProbeTime: \"" + kProbed, "lastProbeTime: \"" + kReprobed) + tail;
}

// examples/jobs/resnet50-5m.yaml at `nodes`, batch 32 (what the recording timed).
std::string job_yaml(int nodes) {
  std::string job = slurp(example("jobs/resnet50-5m.yaml"));
  job = replace_all(job, "numNodes: 4", "numNodes: " + std::to_string(nodes));
  return replace_all(job, "batchSize: 4096", "batchSize: 32");
}

CliRun evaluate(const std::string& job, const std::string& profile, const std::string& now,
                const std::vector<std::string>& more = {}) {
  TempFile job_file(job, ".yaml"), profile_file(profile, ".yaml");
  std::vector<std::string> args = {
      "evaluate", "-f", job_file.path(), "--measurement", profile_file.path(), "--now", now};
  args.insert(args.end(), more.begin(), more.end());
  return run(args);
}

// 10000 nodes (the CRD's maximum) under the default policy (probe.maxNodes 4,
// maxExtrapolation 4): it said "suspended until a probe of at least 2500 nodes", which
// the policy forbids; the operator then failed the job. Now: decided as a request over
// the policy, the same words wherever it is decided.
TEST(EvaluateUserTrial, a_request_no_allowed_probe_can_decide_is_not_gated_for_one) {
  CliRun r = evaluate(job_yaml(10000), profile_yaml(), "2026-11-30T19:00:00Z");
  EXPECT_EQ(r.out.find("at least 2500 nodes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Decision: Gate"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("spec.numNodes 10000 is more than any probe the built-in default policy allows "
                 "can decide: maxExtrapolation 4 x probe.maxNodes 4 = 16 nodes"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Decision: Downsize to 1 node [OverPolicyDownsized]"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// measurementTTL 10s, 6 s after the re-probe: the compute record is the stale part, and
// the message said "the link measurement from <the compute record's time>".
TEST(EvaluateUserTrial, a_stale_compute_step_is_named_with_its_own_time) {
  TempFile policy(R"(apiVersion: commgate.io/v1alpha1
kind: CommPolicy
metadata: {name: short-ttl}
spec: {maxCommShare: 0.30, measurementTTL: 10s}
)",
                  ".yaml");
  CliRun r = evaluate(job_yaml(4), reprobed_profile_yaml(), "2026-11-30T18:53:40Z",
                      {"--policy", policy.path()});
  EXPECT_NE(r.out.find("the compute measurement of this model from " + kProbed +
                       " is older than measurementTTL 10s (the link, measured at " + kReprobed +
                       ", is fresh)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("the link measurement from " + kProbed), std::string::npos) << r.out;
}

// A measurement file without --now is judged as of its own time, so the TTL does not
// apply: as of its older part (the compute record), not the re-probed link, or the
// 7-minute-older compute step would read as stale under measurementTTL 10s.
TEST(EvaluateUserTrial, a_file_without_now_is_judged_as_of_its_oldest_part) {
  TempFile policy(R"(apiVersion: commgate.io/v1alpha1
kind: CommPolicy
metadata: {name: short-ttl}
spec: {maxCommShare: 0.30, measurementTTL: 10s}
)",
                  ".yaml");
  TempFile job(job_yaml(4), ".yaml"), profile(reprobed_profile_yaml(), ".yaml");
  CliRun r = run(
      {"evaluate", "-f", job.path(), "--measurement", profile.path(), "--policy", policy.path()});
  EXPECT_EQ(r.out.find("MeasurementStale"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("measurementTTL not applied to a measurement file"), std::string::npos)
      << r.out;
}

// After the re-probe the old DDP step (measured on the 0.132 GB/s link) calibrates the
// model against the link it ran on, which its record kept, and the factor applies to the
// 1.01 GB/s link (the trial of 2026-12-06: left out, another model's probe made decisions
// 5x looser); no row is the measured step. A record written before links were kept is
// left out, the raw model used, and the decision says why.
TEST(EvaluateUserTrial, a_reprobed_link_is_calibrated_by_the_step_on_its_own_link) {
  CliRun r = evaluate(job_yaml(4), reprobed_profile_yaml(), "2026-11-30T18:53:40Z", {"-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& e = j.is_array() ? j.at(0) : j;
  const nlohmann::json& d = e.at("decision");
  ASSERT_TRUE(d.contains("correction")) << d.dump(2);
  EXPECT_EQ(d["correction"]["applied"], true) << d.dump(2);
  EXPECT_TRUE(d.contains("rawPredictions"));
  for (const auto& row : d["predictions"]) EXPECT_EQ(row["measured"], false) << row.dump();
  const std::string message = d["message"];
  EXPECT_NE(message.find("on the link as probed with it (busbw "), std::string::npos) << message;
  EXPECT_NE(message.find("busbw 1.01 GB/s"), std::string::npos) << message;
  EXPECT_EQ(e["measurement"]["probeTime"], kReprobed);
  EXPECT_EQ(e["measurement"]["computeMeasuredAt"], kProbed);

  // The same profile before the re-probe is calibrated by its step, on its link.
  CliRun before = evaluate(job_yaml(4), profile_yaml(), "2026-11-30T18:53:40Z", {"-o", "json"});
  const nlohmann::json jb = nlohmann::json::parse(before.out);
  EXPECT_EQ((jb.is_array() ? jb.at(0) : jb)["decision"]["correction"]["applied"], true);

  // A record from before the step's link was kept: the raw model, and why.
  std::string old_record;
  std::istringstream lines(reprobed_profile_yaml());
  for (std::string line; std::getline(lines, line);)
    if (line.find("linkBusbwGBps") == std::string::npos &&
        line.find("linkLatencyUs") == std::string::npos)
      old_record += line + "\n";
  CliRun old = evaluate(job_yaml(4), old_record, "2026-11-30T18:53:40Z", {"-o", "json"});
  ASSERT_EQ(old.exit_code, 0) << old.err << old.out;
  j = nlohmann::json::parse(old.out);
  const nlohmann::json& od = (j.is_array() ? j.at(0) : j).at("decision");
  EXPECT_EQ(od["correction"]["applied"], false) << od.dump(2);
  EXPECT_NE(od["correction"]["note"].get<std::string>().find(
                "ran on the link as it was then, not on the link measured at " + kReprobed),
            std::string::npos);
  EXPECT_FALSE(od.contains("rawPredictions"));
}

TEST(EvaluateUserTrial, one_node_and_one_proc_are_singular) {
  CliRun r = evaluate(job_yaml(1), profile_yaml(), "2026-11-30T19:00:00Z");
  EXPECT_NE(r.out.find(": 1 node x 1 proc, 5M parameters"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(link measured at " + kProbed + "): 4 nodes probed"), std::string::npos)
      << r.out;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
