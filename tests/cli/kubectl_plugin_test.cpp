// cli/kubectl_plugin.h: the renderers and the flags, with a scripted kubectl (the real
// kubectl against the sim: tests/sim/webhook_e2e_test.cpp, KubectlPluginE2eTest).
#include "cli/kubectl_plugin.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "tests/cli/cli_test_support.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

TEST(KubectlPlugin, kubectl_warnings_and_a_refusal_read_from_stderr) {
  EXPECT_EQ(kubectl_warnings("Warning: commgate: a\nsomething else\nWarning: commgate: to run 4 "
                             "nodes: b\n"),
            (std::vector<std::string>{"commgate: a", "commgate: to run 4 nodes: b"}));
  const json e = evaluation_of(json(), "At 8 nodes ... over the limit",
                               {"commgate: to run 8 nodes: The link: ..."});
  EXPECT_EQ(e["decision"], "Deny");
  EXPECT_EQ(e["advice"], json::array({"to run 8 nodes: The link: ..."}));
  const std::string table = evaluation_table(e);
  EXPECT_NE(table.find("Deny: the admission webhook would refuse"), std::string::npos) << table;
  EXPECT_NE(table.find("At 8 nodes ... over the limit"), std::string::npos) << table;
}

// The trial of 2026-12-06: a gated job read "4 nodes asked, 4 admitted" while nothing ran.
// A Gate admits nothing until it is decided again; its would-be count is not "admitted".
TEST(KubectlPlugin, a_gate_admits_nothing_yet_in_the_table_and_the_explanation) {
  const json gate = {{"decision", "Gate"},       {"reason", "MeasurementMissing"},
                     {"trainingJob", "nlp/x"},   {"requestedNodes", 4},
                     {"admittedNodes", 4},       {"policy", "default"},
                     {"message", "m"},           {"advice", json::array()},
                     {"warnings", json::array()}};
  const std::string table = evaluation_table(gate);
  EXPECT_NE(table.find("none yet"), std::string::npos) << table;
  json admit = gate;
  admit["decision"] = "Admit";
  EXPECT_EQ(evaluation_table(admit).find("none yet"), std::string::npos);

  const json x = {{"trainingJob", "nlp/x"},
                  {"phase", "Gated"},
                  {"decision",
                   {{"action", "Gate"},
                    {"reason", "PoolTooSmall"},
                    {"requestedNodes", 4},
                    {"admittedNodes", 4},
                    {"predictions", json::array({{{"nodes", 4}, {"stepTimeMs", 10}}})}}}};
  const std::string text = explanation_text(x);
  EXPECT_NE(text.find("4 nodes asked, none yet admitted"), std::string::npos) << text;
  EXPECT_EQ(text.find("asked, admitted"), std::string::npos) << text;
}

TEST(KubectlPlugin, pools_say_when_policies_cannot_be_read_and_which_are_unmeasured) {
  const json profiles = {{"items", json::array({{{"metadata", {{"name", "pool-a"}}},
                                                 {"spec", {{"nodeSelector", {{"gpu", "h100"}}}}},
                                                 {"status",
                                                  {{"backend", "nccl"},
                                                   {"transport", "ib"},
                                                   {"links",
                                                    {{"rateBitsPerSecond", 2e11},
                                                     {"ranksKnown", 4},
                                                     {"ranks", 4},
                                                     {"infinibandPresent", true}}},
                                                   {"link",
                                                    {{"busbwGBps", 41.23456},
                                                     {"latencyUs", 12},
                                                     {"nodesProbed", 4},
                                                     {"measuredAt", "2026-12-06T10:00:00Z"}}}}}},
                                                {{"metadata", {{"name", "pool-b"}}}}})}};
  const TimePoint now = *parse_rfc3339("2026-12-06T12:30:00Z");
  const std::string table = pools_table(pools_of(profiles, json(), now));
  for (const char* want :
       {"pool-a", "gpu=h100", "41.23", "nccl/ib", "4 nodes", "200 Gbit/s +IB", "2h30m", "LINK RATE",
        "(policies not readable)", "pool-b", "not measured yet"})
    EXPECT_NE(table.find(want), std::string::npos) << want << "\n" << table;
  EXPECT_EQ(table.find("41.2345"), std::string::npos) << "4 significant digits: " << table;
  const json policies = {
      {"items",
       json::array({{{"metadata", {{"name", "daily"}}}, {"spec", {{"measurementTTL", "24h"}}}},
                    {{"metadata", {{"name", "hourly"}}}, {"spec", {{"measurementTTL", "1h"}}}}})}};
  EXPECT_EQ(pools_of(profiles, policies, now)["pools"][0]["staleFor"], json::array({"hourly"}));
  EXPECT_EQ(pools_table(pools_of({{"items", json::array()}}, json(), now)),
            "No CommProfiles: no pool has been measured yet.\n");
}

TEST(KubectlPlugin, flags_pass_to_kubectl_and_mistakes_are_usage_errors) {
  std::vector<std::vector<std::string>> calls;
  const KubectlRunner kubectl = [&](const std::vector<std::string>& args) {
    calls.push_back(args);
    return Captured{0, R"({"items": []})", ""};
  };
  std::ostringstream out, err;
  const TimePoint now{};
  EXPECT_EQ(run_kubectl_plugin({"pools", "--context", "prod", "-n", "ml", "-o", "json"}, kubectl,
                               out, err, now),
            kPluginOk)
      << err.str();
  ASSERT_FALSE(calls.empty());
  const std::vector<std::string>& first = calls.front();
  EXPECT_NE(std::find(first.begin(), first.end(), "prod"), first.end());
  EXPECT_NE(std::find(first.begin(), first.end(), "--namespace"), first.end());
  EXPECT_EQ(json::parse(out.str())["pools"], json::array());
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"pools", "-o", "wide"},
                                              {"pools", "--namespace"},
                                              {"explain", "tj"},
                                              {"frobnicate"},
                                              {"evaluate"}}) {
    std::ostringstream o, e;
    EXPECT_EQ(run_kubectl_plugin(bad, kubectl, o, e, now), kPluginUsage) << bad[0] << e.str();
    EXPECT_FALSE(e.str().empty());
  }
}

// A TrainingJob as the operator stores it: downsized from 4 to 1 under CommPolicy
// `default`, with the rows its decision stored.
json a_downsized_trainingjob() {
  json row1 = {{"nodes", 1},        {"measured", false},     {"stepTimeMs", 4942},
               {"computeMs", 4942}, {"exposedCommMs", 0},    {"commShare", 0},
               {"speedup", 1},      {"scalingEfficiency", 1}};
  json row2 = {{"nodes", 2},        {"measured", true},           {"stepTimeMs", 16283},
               {"computeMs", 4942}, {"exposedCommMs", 11341},     {"commShare", 0.6965},
               {"speedup", 0.607},  {"scalingEfficiency", 0.3035}};
  json row4 = {{"nodes", 4},        {"measured", false},          {"stepTimeMs", 22737},
               {"computeMs", 4942}, {"exposedCommMs", 17795},     {"commShare", 0.7826},
               {"speedup", 0.8694}, {"scalingEfficiency", 0.2174}};
  return {{"metadata", {{"name", "bert-large"}, {"namespace", "nlp"}}},
          {"spec", {{"numNodes", 1}, {"nodeSelector", {{"commgate.io/pool", "cpu-1gbe"}}}}},
          {"status",
           {{"phase", "Downsized"},
            {"decision",
             {{"action", "Downsize"},
              {"reason", "OverPolicyDownsized"},
              {"message", "At 4 nodes ..."},
              {"policy", "default"},
              {"requestedNodes", 4},
              {"admittedNodes", 1},
              {"nodesProbed", 2},
              {"predictions", json::array({row1, row2, row4})}}},
            {"measurement",
             {{"source", "CommProfile pool-1fe15c4a8473beea"},
              {"probeTime", "2026-12-01T10:00:00Z"},
              {"busbwGBps", 0.1209},
              {"latencyUs", 20.22},
              {"nodesProbed", 2},
              {"backend", "gloo"},
              {"transport", "socket"}}}}}};
}

// kubectl for explain: the job, no Events, and CommPolicy `default` (maxCommShare 0.3)
// unless `policy_readable` is false (RBAC: forbidden).
KubectlRunner explain_kubectl(const json& tj, bool policy_readable) {
  return [=](const std::vector<std::string>& args) {
    if (args.size() > 1 && args[1] == "trainingjobs.commgate.io") return Captured{0, tj.dump(), ""};
    if (args.size() > 1 && args[1] == "events") return Captured{0, R"({"items": []})", ""};
    if (args.size() > 2 && args[1] == "commpolicies.commgate.io" && args[2] == "default") {
      if (!policy_readable)
        return Captured{1, "", "Error from server (Forbidden): commpolicies is forbidden\n"};
      return Captured{0,
                      R"({"apiVersion": "commgate.io/v1alpha1", "kind": "CommPolicy",
                          "metadata": {"name": "default"}, "spec": {"maxCommShare": 0.3}})",
                      ""};
    }
    return Captured{1, "", "unexpected kubectl call\n"};
  };
}

TEST(KubectlPlugin, explain_plot_draws_the_stored_decision_with_its_policys_limit) {
  const std::string dir = ::testing::TempDir() + "cg-plugin-plot-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const TimePoint now{};
  struct Case {
    std::string name;
    bool policy_readable;
    std::string want_limit;  // data-max-comm-share; "" for none
    std::string want_within_at_4;
  };
  for (const Case& c : std::vector<Case>{{"policy_read", true, "0.3", "false"},
                                         {"policy_forbidden", false, "", "unknown"}}) {
    const std::string file = dir + "/" + c.name + ".svg";
    std::ostringstream out, err;
    EXPECT_EQ(run_kubectl_plugin({"explain", "tj", "bert-large", "-n", "nlp", "--plot", file},
                                 explain_kubectl(a_downsized_trainingjob(), c.policy_readable), out,
                                 err, now),
              kPluginOk)
        << c.name << err.str();
    EXPECT_NE(out.str().find("Predictions:"), std::string::npos) << out.str();
    EXPECT_NE(err.str().find("wrote the scaling chart of nlp/bert-large to " + file),
              std::string::npos)
        << err.str();
    const testing::ParsedSvg svg = testing::parse_svg_file(file);
    ASSERT_TRUE(svg.ok) << c.name << ": " << svg.error;
    const json& ids = svg.doc["ids"];
    EXPECT_EQ(ids["admitted-marker"]["data-nodes"], "1") << c.name;
    EXPECT_EQ(ids["requested-marker"]["data-nodes"], "4") << c.name;
    EXPECT_EQ(ids["probe-marker"]["data-measured"], "true") << c.name;
    EXPECT_EQ(ids.contains("policy-limit") ? ids["policy-limit"]["data-max-comm-share"] : json(""),
              c.want_limit)
        << c.name;
    ASSERT_EQ(svg.doc["bars"].size(), 3u) << c.name;
    EXPECT_EQ(svg.doc["bars"][2]["data-within-policy"], c.want_within_at_4) << c.name;
    if (!c.policy_readable) {
      EXPECT_NE(err.str().find("CommPolicy default could not be read (Error from server "
                               "(Forbidden)"),
                std::string::npos)
          << err.str();
    }
  }

  // Not decided from a measurement yet: no file, and why.
  json gated = a_downsized_trainingjob();
  gated["status"]["decision"] = {{"action", "Gate"},
                                 {"reason", "MeasurementMissing"},
                                 {"message", "no measurement of the link between these nodes yet"},
                                 {"policy", "default"},
                                 {"predictions", json::array()}};
  std::ostringstream out, err;
  const std::string none = dir + "/gated.svg";
  EXPECT_EQ(run_kubectl_plugin({"explain", "tj", "bert-large", "--plot", none},
                               explain_kubectl(gated, true), out, err, now),
            kPluginOk);
  EXPECT_FALSE(std::filesystem::exists(none));
  EXPECT_NE(err.str().find("no predictions to draw (Gate, MeasurementMissing): no measurement"),
            std::string::npos)
      << err.str();

  // A file that cannot be written: a usage error naming it, nothing on stdout; --plot on
  // another command: a usage error.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"explain", "tj", "bert-large", "--plot", dir + "/no/such.svg"},
        {"pools", "--plot", dir + "/pools.svg"},
        {"explain", "tj", "bert-large", "--plot="}}) {
    std::ostringstream o, e;
    EXPECT_EQ(run_kubectl_plugin(bad, explain_kubectl(a_downsized_trainingjob(), true), o, e, now),
              kPluginUsage)
        << bad.back() << e.str();
    EXPECT_TRUE(o.str().empty()) << o.str();
    EXPECT_NE(e.str().find("--plot"), std::string::npos) << e.str();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
