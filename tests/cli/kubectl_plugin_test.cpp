// cli/kubectl_plugin.h: the renderers and the flags, with a scripted kubectl (the real
// kubectl against the sim: tests/sim/webhook_e2e_test.cpp, KubectlPluginE2eTest).
#include "cli/kubectl_plugin.h"

#include <gtest/gtest.h>

#include <sstream>

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

TEST(KubectlPlugin, pools_say_when_policies_cannot_be_read_and_which_are_unmeasured) {
  const json profiles = {{"items", json::array({{{"metadata", {{"name", "pool-a"}}},
                                                 {"spec", {{"nodeSelector", {{"gpu", "h100"}}}}},
                                                 {"status",
                                                  {{"backend", "nccl"},
                                                   {"transport", "ib"},
                                                   {"link",
                                                    {{"busbwGBps", 41.23456},
                                                     {"latencyUs", 12},
                                                     {"nodesProbed", 4},
                                                     {"measuredAt", "2026-12-06T10:00:00Z"}}}}}},
                                                {{"metadata", {{"name", "pool-b"}}}}})}};
  const TimePoint now = *parse_rfc3339("2026-12-06T12:30:00Z");
  const std::string table = pools_table(pools_of(profiles, json(), now));
  for (const char* want : {"pool-a", "gpu=h100", "41.23", "nccl/ib", "4 nodes", "2h30m",
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

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
