// cli/kubectl_plugin.h: the renderers and the flags, with a scripted kubectl (the real
// kubectl against the sim: tests/sim/webhook_e2e_test.cpp, KubectlPluginE2eTest).
#include "cli/kubectl_plugin.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "cli/command_input.h"
#include "cli/evaluate_report.h"
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
  EXPECT_EQ(e["decision"]["action"], "Deny");
  EXPECT_EQ(e["decision"]["advice"][0]["text"], "The link: ...");
  const std::string table = evaluation_table(e);
  EXPECT_NE(table.find("Deny: denied; if submitted now, the admission webhook would refuse"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("At 8 nodes ... over the limit"), std::string::npos) << table;
  EXPECT_NE(table.find("  - The link: ..."), std::string::npos) << table;
}

// What the webhook tells a dry run (webhook/mutate.cpp dry_run_decision_warning).
const std::string kDeniedLine =
    "commgate: dry run: Deny (OverPolicyDenied), 8 nodes requested, 0 admitted, CommPolicy "
    "\"built-in default\": At 8 nodes 91% of each step would be exposed communication.";
const json kLlm = {{"apiVersion", "commgate.io/v1alpha1"},
                   {"kind", "TrainingJob"},
                   {"metadata", {{"name", "llm-7b"}, {"namespace", "nlp"}}},
                   {"spec", {{"numNodes", 8}}}};

// Issue #24 items 1, 6 and 7 (the trial of 2026-12-06): a job that would be denied printed
// no name, reason, counts or policy; one message was printed three or four times; and a
// dry run read as if the job had been downsized.
TEST(KubectlPlugin, every_verdict_shows_its_facts_once_as_what_would_happen) {
  const std::string refusal = "At 8 nodes 91% of each step would be exposed communication.";
  const json denied =
      evaluation_of(json(), refusal, {kDeniedLine, "commgate: to run 8 nodes: The link: x"}, kLlm);
  EXPECT_EQ(denied["job"], "nlp/llm-7b");
  EXPECT_EQ(denied["decision"]["reason"], "OverPolicyDenied");
  EXPECT_EQ(denied["decision"]["requestedNodes"], 8);
  EXPECT_EQ(denied["policy"], "built-in default");
  const std::string deny_table = evaluation_table(denied);
  for (const char* want : {"nlp/llm-7b", "OverPolicyDenied", "built-in default", "REQUESTED",
                           "  8  ", "none", "would refuse nlp/llm-7b"})
    EXPECT_NE(deny_table.find(want), std::string::npos) << want << "\n" << deny_table;

  // A Downsize: the record keeps no message; the dry-run warning has it. The downsize's
  // own warning restates it and is not printed again.
  const std::string message =
      "At 4 nodes 78.3% of each step would be exposed communication. "
      "Downsized from 4 to 1 node: ...";
  const json returned = {
      {"kind", "TrainingJob"},
      {"metadata",
       {{"name", "bert-large"},
        {"namespace", "nlp"},
        {"annotations",
         {{"commgate.io/decision", "Downsize"},
          {"commgate.io/reason", "OverPolicyDownsized"},
          {"commgate.io/decision-record",
           R"({"action":"Downsize","admittedNodes":1,"requestedNodes":4,"policy":{"name":"default"}})"}}}}},
      {"spec", {{"numNodes", 1}}}};
  const json downsized = evaluation_of(
      returned, "",
      {"commgate: dry run: Downsize (OverPolicyDownsized), 4 nodes requested, 1 admitted, "
       "CommPolicy \"default\": " +
           message,
       "commgate: spec.numNodes lowered from 4 to 1: at 4 nodes 78.3% of each step ...",
       "commgate: " + message, "commgate: spec.policyRef.name: CommPolicy \"x\" is not ...",
       "commgate: admitted without a communication check: ...; without the exemption it would "
       "be denied"});
  EXPECT_EQ(downsized["decision"]["message"], message);
  const std::string table = evaluation_table(downsized);
  size_t times = 0;
  for (size_t at = table.find("At 4 nodes 78.3%"); at != std::string::npos;
       at = table.find("At 4 nodes 78.3%", at + 1))
    ++times;
  EXPECT_EQ(times, 1u) << table;
  EXPECT_EQ(table.find("lowered from"), std::string::npos) << table;
  EXPECT_NE(table.find("if submitted now, the admission webhook would lower spec.numNodes of "
                       "nlp/bert-large from 4 to 1"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("without the exemption it would be denied"), std::string::npos) << table;
  EXPECT_NE(table.find("spec.policyRef.name"), std::string::npos) << "other warnings stay\n"
                                                                  << table;
  EXPECT_EQ(dry_run_decision_of({"commgate: something else"}), std::nullopt);
}

// A scratch folder of the test's own, removed at the end.
struct ScratchDir {
  std::string path = ::testing::TempDir() + "cg-plugin-" + std::to_string(getpid()) + "-" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name) << text;
    return path + "/" + name;
  }
};

// Issue #24 item 4: a mistake in the local file read as a failed dry run.
TEST(KubectlPlugin, a_file_that_is_not_one_trainingjob_is_named_with_what_is_wrong) {
  const ScratchDir dir;
  struct Case {
    std::string name;
    std::string file;
    std::vector<std::string> want;
  };
  const std::string tj =
      "apiVersion: commgate.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: "
      "a}\nspec: {numNodes: 2}\n";
  for (const Case& c : std::vector<Case>{
           {"missing", dir.path + "/nope.yaml", {"nope.yaml", "cannot read"}},
           {"not_yaml", dir.file("bad.yaml", "spec: [unclosed\n"), {"bad.yaml:"}},
           {"two_documents",
            dir.file("two.yaml",
                     "apiVersion: v1\nkind: Namespace\nmetadata: {name: nlp}\n---\n" + tj),
            {"two.yaml", "2 documents", "1: Namespace", "2: TrainingJob", "a file of its own"}},
           {"another_kind",
            dir.file("cm.yaml", "apiVersion: v1\nkind: ConfigMap\n"),
            {"cm.yaml", "kind \"ConfigMap\" of v1", "not a TrainingJob"}}}) {
    std::vector<std::vector<std::string>> calls;
    const KubectlRunner kubectl = [&](const std::vector<std::string>& args) {
      calls.push_back(args);
      return Captured{1, "", "unexpected\n"};
    };
    std::ostringstream out, err;
    EXPECT_EQ(run_kubectl_plugin({"evaluate", "-f", c.file}, kubectl, out, err, TimePoint{}),
              kPluginError)
        << c.name;
    for (const std::string& want : c.want)
      EXPECT_NE(err.str().find(want), std::string::npos) << c.name << ": " << want << "\n"
                                                         << err.str();
    EXPECT_EQ(err.str().find("dry run"), std::string::npos) << c.name << ": " << err.str();
    EXPECT_TRUE(calls.empty()) << c.name << ": nothing is sent for a bad file";
  }
}

// Issue #24 item 3: a job that exists failed with AlreadyExists; it is evaluated as a new
// submission under a generated name, still a dry run, and the output says so.
TEST(KubectlPlugin, a_job_that_exists_is_evaluated_under_a_generated_name) {
  const ScratchDir dir;
  const std::string file =
      dir.file("bert.yaml",
               "apiVersion: commgate.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: "
               "bert-large, namespace: nlp}\nspec: {numNodes: 2}\n");
  std::vector<json> sent;
  const KubectlRunner kubectl = [&](const std::vector<std::string>& args) {
    const auto f = std::find(args.begin(), args.end(), "-f");
    if (args.at(0) != "create" || f == args.end() ||
        std::find(args.begin(), args.end(), "--dry-run=server") == args.end())
      return Captured{1, "", "unexpected\n"};
    sent.push_back(read_manifests(*(f + 1)).front());
    if (sent.size() == 1)
      return Captured{1, "",
                      "Error from server (AlreadyExists): error when creating \"bert.yaml\": "
                      "trainingjobs.commgate.io \"bert-large\" already exists\n"};
    json back = sent.back();
    back["metadata"]["name"] = "bert-large-x7k2p";
    back["metadata"]["annotations"] = {{"commgate.io/decision", "Admit"},
                                       {"commgate.io/reason", "WithinPolicy"}};
    return Captured{0, back.dump(),
                    "Warning: commgate: dry run: Admit (WithinPolicy), 2 nodes requested, 2 "
                    "admitted, CommPolicy \"default\": At 2 nodes 12% ...\n"};
  };
  std::ostringstream out, err;
  EXPECT_EQ(run_kubectl_plugin({"evaluate", "-f", file}, kubectl, out, err, TimePoint{}), kPluginOk)
      << err.str();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1]["metadata"].value("name", ""), "");
  EXPECT_EQ(sent[1]["metadata"]["generateName"], "bert-large-");
  for (const char* want : {"TrainingJob nlp/bert-large already exists", "new submission",
                           "nlp/bert-large ", "At 2 nodes 12%", "nothing was created"})
    EXPECT_NE(out.str().find(want), std::string::npos) << want << "\n" << out.str();
}

// The trial of 2026-12-06: a gated job read "4 nodes asked, 4 admitted" while nothing ran.
// A Gate admits nothing until it is decided again; its would-be count is not "admitted".
TEST(KubectlPlugin, a_gate_admits_nothing_yet_in_the_table_and_the_explanation) {
  json gate = decision_document("nlp/x",
                                {{"action", "Gate"},
                                 {"reason", "MeasurementMissing"},
                                 {"requestedNodes", 4},
                                 {"admittedNodes", 4},
                                 {"policy", "default"},
                                 {"message", "m"}},
                                json());
  gate["warnings"] = json::array();
  const std::string table = evaluation_table(gate);
  EXPECT_NE(table.find("none yet"), std::string::npos) << table;
  json admit = gate;
  admit["decision"]["action"] = "Admit";
  EXPECT_EQ(evaluation_table(admit).find("none yet"), std::string::npos);

  const json x = {{"job", "nlp/x"},
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
    if (args.size() > 3 && args[1] == "nodes" && args[4] == "-l" &&
        args[5] == "commgate.io/pool=cpu-1gbe")
      return Captured{0, "node/a\nnode/b\nnode/c\n", ""};
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
    // The pool's 3 nodes (kubectl get nodes -l its nodeSelector): issue #24 item 12.
    EXPECT_EQ(ids["pool-size"]["data-nodes"], "3") << c.name;
    EXPECT_EQ(svg.doc["bars"][2]["data-within-policy"], c.want_within_at_4) << c.name;
    if (!c.policy_readable) {
      EXPECT_NE(err.str().find("CommPolicy default could not be read (Error from server "
                               "(Forbidden)"),
                std::string::npos)
          << err.str();
    }
  }

  // Not decided from a measurement yet: no file, why, and an error (the trial of 2026-12-06
  // read exit 0 as a chart written); the explanation is still printed.
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
            kPluginError);
  EXPECT_NE(out.str().find("Decision:"), std::string::npos) << out.str();
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

// Issue #24 items 5 and 11: a missing job is named with its namespace; -ojson and
// kubectl's tj/NAME are read as kubectl reads them.
TEST(KubectlPlugin, explain_takes_kubectls_forms_and_names_the_namespace_it_looked_in) {
  const KubectlRunner missing = [](const std::vector<std::string>& args) {
    if (args.at(0) == "config") return Captured{0, "team-a", ""};
    return Captured{1, "",
                    "Error from server (NotFound): trainingjobs.commgate.io \"x\" not found\n"};
  };
  for (const auto& [args, want_namespace] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"explain", "tj", "x", "-n", "ml"}, "ml"},
           {{"explain", "tj/x", "-nml"}, "ml"},
           {{"explain", "tj", "x"}, "team-a"}}) {
    std::ostringstream out, err;
    EXPECT_EQ(run_kubectl_plugin(args, missing, out, err, TimePoint{}), kPluginError);
    EXPECT_NE(err.str().find("TrainingJob \"x\" not found in namespace \"" + want_namespace + "\""),
              std::string::npos)
        << err.str();
  }
  std::ostringstream out, err;
  EXPECT_EQ(
      run_kubectl_plugin({"explain", "tj/bert-large", "-ojson"},
                         explain_kubectl(a_downsized_trainingjob(), true), out, err, TimePoint{}),
      kPluginOk)
      << err.str();
  EXPECT_EQ(json::parse(out.str())["job"], "nlp/bert-large");
  std::ostringstream o2, e2;
  EXPECT_EQ(
      run_kubectl_plugin({"explain", "pod/x"}, explain_kubectl(json(), true), o2, e2, TimePoint{}),
      kPluginUsage);
}

// Issue #24 item 9: explain's predictions lacked evaluate's pass/over column and printed
// numbers in mixed precision; both print through predictions_table now.
TEST(KubectlPlugin, explain_prints_predictions_as_evaluate_does_with_the_policys_verdict) {
  const json tj = a_downsized_trainingjob();
  CommPolicySpec policy;
  policy.max_comm_share = 0.3;
  const std::string text =
      explanation_text(explanation_of(tj, json{{"items", json::array()}}, TimePoint{}, policy));
  std::vector<PredictionRow> rows;
  for (const auto& [nodes, verdict, notes] :
       std::vector<std::tuple<int, std::string, std::string>>{{1, "pass", "  <- admitted"},
                                                              {2, "over", "  (measured)"},
                                                              {4, "over", "  <- requested"}}) {
    StepPrediction p;
    for (const json& row : tj["status"]["decision"]["predictions"])
      if (row["nodes"] == nodes) {
        p.nodes = nodes;
        p.step_s = row["stepTimeMs"].get<double>() / 1e3;
        p.compute_s = row["computeMs"].get<double>() / 1e3;
        p.exposed_comm_s = row["exposedCommMs"].get<double>() / 1e3;
        p.comm_share = row["commShare"];
        p.speedup = row["speedup"];
        p.scaling_efficiency = row["scalingEfficiency"];
        p.measured = row["measured"];
      }
    rows.push_back({p, verdict, notes});
  }
  EXPECT_NE(text.find("Predictions:\n" + predictions_table(rows, "  ")), std::string::npos) << text;
  EXPECT_NE(text.find("16283 ms"), std::string::npos) << text;
  // Without the policy: no verdict, said as "-".
  const std::string unjudged = explanation_text(explanation_of(tj, json(), TimePoint{}));
  EXPECT_EQ(unjudged.find(" pass"), std::string::npos) << unjudged;
  EXPECT_NE(unjudged.find("  -  <- requested"), std::string::npos) << unjudged;
}

// Issue #24 item 10: "the link is slower than it should be" compares a fitted bandwidth
// with the interface's rate; with a poor fit it is said to be uncertain.
TEST(KubectlPlugin, link_rate_advice_on_a_poor_fit_says_it_is_uncertain) {
  json tj = a_downsized_trainingjob();
  tj["status"]["decision"]["advice"] = {
      {{"kind", "linkRate"}, {"text", "The link: the all-reduce reached 0.12 GB/s ..."}},
      {{"kind", "link"}, {"text", "The link: 4 nodes would pass with ..."}}};
  tj["status"]["measurement"]["fitPoor"] = true;
  const std::string poor = explanation_text(explanation_of(tj, json(), TimePoint{}));
  EXPECT_NE(poor.find("  - Uncertain, as the probe's fit of the link is poor (its bandwidth may "
                      "be off): The link: the all-reduce reached"),
            std::string::npos)
      << poor;
  EXPECT_NE(poor.find("  - The link: 4 nodes would pass"), std::string::npos) << poor;
  tj["status"]["measurement"]["fitPoor"] = false;
  const std::string good = explanation_text(explanation_of(tj, json(), TimePoint{}));
  EXPECT_EQ(good.find("Uncertain"), std::string::npos) << good;
}

// ----- The remaining findings of the trial of 2026-12-06 (issue #24) ----------------------

// A downsized job as the webhook returns it from a dry run, with the warnings it tells.
std::pair<json, std::vector<std::string>> a_downsized_dry_run() {
  const json returned = {
      {"kind", "TrainingJob"},
      {"metadata",
       {{"name", "bert-large"},
        {"namespace", "nlp"},
        {"annotations",
         {{"commgate.io/decision", "Downsize"},
          {"commgate.io/reason", "OverPolicyDownsized"},
          {"commgate.io/decision-record",
           R"({"action":"Downsize","admittedNodes":1,"requestedNodes":4,"policy":{"name":"default"}})"}}}}},
      {"spec", {{"numNodes", 1}}}};
  return {returned,
          {"commgate: dry run: Downsize (OverPolicyDownsized), 4 nodes requested, 1 admitted, "
           "CommPolicy \"default\": At 4 nodes 78.3% ...",
           "commgate: to run 4 nodes: The link: 4 nodes would pass with 0.58 GB/s",
           "commgate: to run 4 nodes: Compression: with DDP's fp16 ..."}};
}

// The kubectl of `evaluate`: the dry run answers with `returned` and `warnings`.
KubectlRunner dry_run_kubectl(const json& returned, const std::vector<std::string>& warnings) {
  return [=](const std::vector<std::string>& args) {
    if (args.at(0) == "config") return Captured{0, "nlp", ""};
    if (args.at(0) != "create") return Captured{1, "", "unexpected kubectl call\n"};
    std::string err;
    for (const std::string& w : warnings) err += "Warning: " + w + "\n";
    return Captured{0, returned.dump(), err};
  };
}

std::string a_trainingjob_file(const ScratchDir& dir, const std::string& api_version) {
  return dir.file("bert.yaml", "apiVersion: " + api_version +
                                   "\nkind: TrainingJob\nmetadata: {name: bert-large, namespace: "
                                   "nlp}\nspec: {numNodes: 4}\n");
}

// Item 2: `commgate evaluate -o json`, `kubectl commgate evaluate -o json` and `kubectl
// commgate explain -o json` printed one decision in three shapes; all three are
// decision_document now (docs/cli.md "One JSON shape").
TEST(KubectlPluginTrial, the_three_json_outputs_of_a_decision_have_one_shape) {
  const ScratchDir dir;
  const auto [returned, warnings] = a_downsized_dry_run();
  std::ostringstream eval_out, eval_err, explain_out, explain_err;
  ASSERT_EQ(run_kubectl_plugin(
                {"evaluate", "-f", a_trainingjob_file(dir, "commgate.io/v1alpha1"), "-o", "json"},
                dry_run_kubectl(returned, warnings), eval_out, eval_err, TimePoint{}),
            kPluginOk)
      << eval_err.str();
  ASSERT_EQ(run_kubectl_plugin({"explain", "tj", "bert-large", "-n", "nlp", "-o", "json"},
                               explain_kubectl(a_downsized_trainingjob(), true), explain_out,
                               explain_err, TimePoint{}),
            kPluginOk)
      << explain_err.str();
  const testing::CliRun local = testing::run(
      {"evaluate", "-f", testing::example("jobs/bert-large-350m.yaml"), "--measurement",
       testing::example("measurements/probe-netns-2-nodes-1gbit-350M-params.json"), "-o", "json"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  struct Case {
    std::string name;
    json doc;
    std::string want_policy;
    bool want_measurement;
    bool want_predictions;
  };
  for (const Case& c : std::vector<Case>{
           {"kubectl_commgate_evaluate", json::parse(eval_out.str()), "default", false, false},
           {"kubectl_commgate_explain", json::parse(explain_out.str()), "default", true, true},
           {"commgate_evaluate", json::parse(local.out), "built-in default", true, true}}) {
    const json& d = c.doc["decision"];
    EXPECT_EQ(c.doc["job"], "nlp/bert-large") << c.name << c.doc.dump(2);
    EXPECT_EQ(c.doc["policy"], c.want_policy) << c.name;
    EXPECT_EQ(d["policy"], c.want_policy) << c.name;
    ASSERT_TRUE(c.doc.contains("measurement")) << c.name;
    EXPECT_EQ(c.doc["measurement"].is_object(), c.want_measurement) << c.name;
    if (c.want_measurement)
      for (const char* key : {"source", "probeTime", "busbwGBps", "latencyUs", "nodesProbed"})
        EXPECT_TRUE(c.doc["measurement"].contains(key)) << c.name << ": measurement." << key;
    ASSERT_TRUE(d.is_object()) << c.name << c.doc.dump(2);
    EXPECT_EQ(d["action"], "Downsize") << c.name;
    EXPECT_EQ(d["reason"], "OverPolicyDownsized") << c.name;
    EXPECT_EQ(d["requestedNodes"], 4) << c.name;
    EXPECT_EQ(d["admittedNodes"], 1) << c.name;
    EXPECT_NE(d.value("message", "").find("At 4 nodes"), std::string::npos) << c.name;
    ASSERT_TRUE(d["predictions"].is_array()) << c.name;
    EXPECT_EQ(d["predictions"].empty(), !c.want_predictions) << c.name;
    ASSERT_TRUE(d["advice"].is_array()) << c.name;
    for (const json& a : d["advice"])
      EXPECT_TRUE(a.is_object() && a["kind"].is_string() && a["text"].is_string())
          << c.name << ": " << a.dump();
    for (const char* gone : {"trainingJob", "requestedNodes", "admittedNodes", "reason", "advice"})
      EXPECT_FALSE(c.doc.contains(gone)) << c.name << ": " << gone << " is the decision's";
  }
  EXPECT_EQ(json::parse(eval_out.str())["decision"]["advice"][0]["kind"], "link");
}

// Item 3: a Gate admits nothing yet; -o json said admittedNodes = the requested count.
TEST(KubectlPluginTrial, a_gate_reports_no_admitted_nodes_in_every_json_output) {
  json gated_object = a_downsized_dry_run().first;
  gated_object["metadata"]["annotations"] = {
      {"commgate.io/decision", "Gate"},
      {"commgate.io/reason", "MeasurementMissing"},
      {"commgate.io/decision-record",
       R"({"action":"Gate","admittedNodes":4,"requestedNodes":4,"message":"no measurement yet","policy":{"name":"default"}})"}};
  gated_object["spec"] = {{"numNodes", 4}, {"suspend", true}};
  json stored = a_downsized_trainingjob();
  stored["spec"]["numNodes"] = 4;
  stored["status"]["decision"] = {{"action", "Gate"},
                                  {"reason", "MeasurementStale"},
                                  {"message", "stale"},
                                  {"policy", "default"},
                                  {"requestedNodes", 4},
                                  {"admittedNodes", 4},
                                  {"predictions", json::array()}};
  const ScratchDir dir;
  const std::string file = a_trainingjob_file(dir, "commgate.io/v1alpha1");
  std::ostringstream eval_out, eval_err, explain_out, explain_err;
  EXPECT_EQ(run_kubectl_plugin({"evaluate", "-f", file, "-ojson"},
                               dry_run_kubectl(gated_object, {}), eval_out, eval_err, TimePoint{}),
            kPluginWouldGate)
      << eval_err.str();
  EXPECT_EQ(
      run_kubectl_plugin({"explain", "tj/bert-large", "-ojson"}, explain_kubectl(stored, true),
                         explain_out, explain_err, TimePoint{}),
      kPluginOk)
      << explain_err.str();
  // Stale against --now: the local decision is a Gate too.
  const testing::CliRun local = testing::run(
      {"evaluate", "-f", testing::example("jobs/bert-large-350m.yaml"), "--measurement",
       testing::example("measurements/probe-netns-2-nodes-1gbit-350M-params.json"), "--now",
       "2099-01-01T00:00:00Z", "-o", "json"});
  EXPECT_EQ(local.exit_code, 4) << local.err << local.out;
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"kubectl_commgate_evaluate", eval_out.str()},
           {"kubectl_commgate_explain", explain_out.str()},
           {"commgate_evaluate", local.out}}) {
    const json d = json::parse(text)["decision"];
    EXPECT_EQ(d["action"], "Gate") << name;
    ASSERT_TRUE(d.contains("admittedNodes")) << name;
    EXPECT_TRUE(d["admittedNodes"].is_null()) << name << ": " << d.dump(2);
    EXPECT_EQ(d["requestedNodes"], 4) << name;
  }
}

// Item 5: explain printed the decision's message below the decision, in the Admitted
// condition and in the Event; once now, the others point at it.
TEST(KubectlPluginTrial, explain_prints_the_decisions_message_once) {
  const std::string message =
      "At 4 nodes the model predicts 78.3% of each step in exposed "
      "communication, over the limit";
  json tj = a_downsized_trainingjob();
  tj["status"]["decision"]["message"] = message;
  tj["status"]["conditions"] = json::array(
      {{{"type", "Admitted"},
        {"status", "True"},
        {"reason", "OverPolicyDownsized"},
        {"message", message}},
       {{"type", "Probed"}, {"status", "True"}, {"reason", "Measured"}, {"message", "probed"}}});
  const json events = {
      {"items", json::array({{{"type", "Normal"},
                              {"reason", "Downsized"},
                              {"lastTimestamp", "2026-12-01T10:00:01Z"},
                              {"message", "downsized from 4 to 1 node: " + message}}})}};
  const std::string text = explanation_text(explanation_of(tj, events, TimePoint{}));
  size_t times = 0;
  for (size_t at = text.find(message); at != std::string::npos; at = text.find(message, at + 1))
    ++times;
  EXPECT_EQ(times, 1u) << text;
  EXPECT_NE(text.find("downsized from 4 to 1 node: (the decision's message, above)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("probed"), std::string::npos) << "other messages stay\n" << text;
}

// Item 7: a second -f and extra arguments were ignored; they are usage errors naming the
// argument, exit 1 as kubectl's, and nothing is asked of the cluster.
TEST(KubectlPluginTrial, arguments_no_command_takes_are_named_and_exit_1) {
  const ScratchDir dir;
  const std::string a = dir.file("a.yaml", "kind: TrainingJob\n");
  const std::string b = dir.file("b.yaml", "kind: TrainingJob\n");
  struct Case {
    std::string name;
    std::vector<std::string> args;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {"second_f", {"evaluate", "-f", a, "-f", b}, "\"" + b + "\": a second file"},
           {"second_filename", {"evaluate", "-f", a, "--filename=" + b}, "a second file"},
           {"evaluate_positional",
            {"evaluate", "-f", a, "b.yaml"},
            "unexpected argument \"b.yaml\""},
           {"pools_positional", {"pools", "extra"}, "unexpected argument \"extra\""},
           {"explain_fourth", {"explain", "tj", "x", "y"}, "unexpected argument \"y\""},
           {"explain_slash_and_more", {"explain", "tj/x", "y"}, "unexpected argument \"y\""}}) {
    std::vector<std::vector<std::string>> calls;
    const KubectlRunner kubectl = [&](const std::vector<std::string>& args) {
      calls.push_back(args);
      return Captured{0, R"({"items": []})", ""};
    };
    std::ostringstream out, err;
    EXPECT_EQ(run_kubectl_plugin(c.args, kubectl, out, err, TimePoint{}), 1) << c.name;
    EXPECT_NE(err.str().find(c.want), std::string::npos) << c.name << "\n" << err.str();
    EXPECT_TRUE(calls.empty()) << c.name << ": nothing is asked of the cluster";
  }
  EXPECT_EQ(kPluginUsage, 1) << "kubectl exits 1 for a usage error";
}

// Item 7: a wrong apiVersion reached the server; it is caught here, saying the right one.
TEST(KubectlPluginTrial, a_wrong_api_version_is_caught_before_the_server_is_asked) {
  const ScratchDir dir;
  for (const auto& [version, want] : std::vector<std::pair<std::string, std::string>>{
           {"commgate.io/v1", "apiVersion \"commgate.io/v1\""},
           {"commgate.io/v1beta1", "apiVersion \"commgate.io/v1beta1\""},
           {"batch/v1", "apiVersion \"batch/v1\""}}) {
    std::vector<std::vector<std::string>> calls;
    const KubectlRunner kubectl = [&](const std::vector<std::string>& args) {
      calls.push_back(args);
      return Captured{1, "", "unexpected\n"};
    };
    std::ostringstream out, err;
    EXPECT_EQ(run_kubectl_plugin({"evaluate", "-f", a_trainingjob_file(dir, version)}, kubectl, out,
                                 err, TimePoint{}),
              kPluginError)
        << version;
    EXPECT_NE(err.str().find(want), std::string::npos) << version << "\n" << err.str();
    EXPECT_NE(err.str().find("apiVersion: commgate.io/v1alpha1"), std::string::npos) << err.str();
    EXPECT_TRUE(calls.empty()) << version << ": nothing is sent";
  }
}

// Item 9: the first line said what the webhook would do, not that the job was over policy.
TEST(KubectlPluginTrial, evaluates_first_line_says_the_verdict_plainly) {
  struct Case {
    std::string name;
    std::string action, reason;
    int requested, admitted;
    std::string want_first_line_head;
  };
  for (const Case& c : std::vector<Case>{
           {"downsized", "Downsize", "OverPolicyDownsized", 4, 1,
            "Downsize: over policy, downsized from 4 to 1 node (OverPolicyDownsized); if submitted "
            "now"},
           {"denied", "Deny", "OverPolicyDenied", 8, 0,
            "Deny: over policy, denied (OverPolicyDenied); if submitted now, the admission webhook "
            "would refuse nlp/x"},
           {"no_count_passes", "Deny", "NoNodeCountMeetsPolicy", 8, 0,
            "Deny: over policy, denied (NoNodeCountMeetsPolicy)"},
           {"dry_run_policy", "Admit", "OverPolicyDryRun", 4, 4,
            "Admit: over policy, admitted with 4 nodes only because the policy's "
            "enforcementAction is dryrun"},
           {"warned", "Warn", "OverPolicyWarned", 4, 4,
            "Warn: over policy, admitted with 4 nodes anyway"},
           {"within", "Admit", "WithinPolicy", 2, 2, "Admit: admitted with 2 nodes as asked"},
           {"gated", "Gate", "MeasurementMissing", 4, 4,
            "Gate: not admitted yet, suspended (MeasurementMissing)"}}) {
    json e = decision_document("nlp/x",
                               {{"action", c.action},
                                {"reason", c.reason},
                                {"requestedNodes", c.requested},
                                {"admittedNodes", c.admitted},
                                {"policy", "default"},
                                {"message", "m"}},
                               json());
    const std::string table = evaluation_table(e);
    const std::string first = table.substr(0, table.find('\n'));
    EXPECT_EQ(first.rfind(c.want_first_line_head, 0), 0u) << c.name << "\n" << first;
    if (c.reason == "WithinPolicy" || c.action == "Gate")
      EXPECT_EQ(first.find("over policy"), std::string::npos) << c.name << ": " << first;
  }
}

// Item 10: `pools` as a namespace's edit user got a bare Forbidden; it names the
// ClusterRole an admin can bind (charts/commgate/templates/researcher-rbac.yaml).
TEST(KubectlPluginTrial, forbidden_pools_name_the_policy_reader_cluster_role) {
  const std::string forbidden =
      "Error from server (Forbidden): commprofiles.commgate.io is forbidden: User \"alice\" "
      "cannot list resource \"commprofiles\" in API group \"commgate.io\" at the cluster scope\n";
  struct Case {
    std::string name;
    bool profiles_forbidden;
    int want_code;
  };
  for (const Case& c : std::vector<Case>{{"profiles_forbidden", true, kPluginError},
                                         {"only_policies_forbidden", false, kPluginOk}}) {
    const KubectlRunner kubectl = [&](const std::vector<std::string>& args) {
      if (args.at(1) == "commprofiles.commgate.io" && !c.profiles_forbidden)
        return Captured{0, R"({"items": []})", ""};
      return Captured{1, "", forbidden};
    };
    std::ostringstream out, err;
    EXPECT_EQ(run_kubectl_plugin({"pools"}, kubectl, out, err, TimePoint{}), c.want_code) << c.name;
    EXPECT_NE(err.str().find("ClusterRole commgate-policy-reader"), std::string::npos)
        << c.name << "\n"
        << err.str();
    EXPECT_NE(err.str().find("--clusterrole=commgate-policy-reader"), std::string::npos)
        << c.name << "\n"
        << err.str();
  }
  // Another failure gets no such hint.
  const KubectlRunner down = [](const std::vector<std::string>&) {
    return Captured{1, "", "The connection to the server localhost:8080 was refused\n"};
  };
  std::ostringstream out, err;
  EXPECT_EQ(run_kubectl_plugin({"pools"}, down, out, err, TimePoint{}), kPluginError);
  EXPECT_EQ(err.str().find("policy-reader"), std::string::npos) << err.str();
}

// Item 10: --as was refused; it goes to every kubectl call, as `kubectl --as` sends
// Impersonate-User (and --as-group Impersonate-Group).
TEST(KubectlPluginTrial, as_user_and_group_pass_to_every_kubectl_call) {
  std::vector<std::vector<std::string>> calls;
  const KubectlRunner kubectl = [&](const std::vector<std::string>& args) {
    calls.push_back(args);
    return Captured{0, R"({"items": []})", ""};
  };
  std::ostringstream out, err;
  EXPECT_EQ(run_kubectl_plugin({"pools", "--as", "alice", "--as-group=researchers", "--as-group",
                                "ml", "--as-uid", "42"},
                               kubectl, out, err, TimePoint{}),
            kPluginOk)
      << err.str();
  ASSERT_EQ(calls.size(), 2u);
  for (const auto& call : calls) {
    const auto has = [&](const std::string& flag, const std::string& value) {
      for (size_t i = 0; i + 1 < call.size(); ++i)
        if (call[i] == flag && call[i + 1] == value) return true;
      return false;
    };
    EXPECT_TRUE(has("--as", "alice")) << call[1];
    EXPECT_TRUE(has("--as-group", "researchers")) << call[1];
    EXPECT_TRUE(has("--as-group", "ml")) << call[1];
    EXPECT_TRUE(has("--as-uid", "42")) << call[1];
  }
}

// Item 10: a poor fit without a note read "Caution: ." in the message; the fit's numbers
// are said instead.
TEST(KubectlPluginTrial, a_poor_fit_without_a_note_gives_the_fits_numbers_not_an_empty_caution) {
  json probe = json::parse(
      testing::slurp(testing::example("measurements/probe-netns-2-nodes-1gbit-350M-params.json")));
  json& fit = probe["allReduce"]["fit"];
  fit["poor"] = true;
  fit.erase("note");
  const testing::TempFile file(probe.dump());
  const testing::CliRun table =
      testing::run({"evaluate", "-f", testing::example("jobs/bert-large-350m.yaml"),
                    "--measurement", file.path()});
  const testing::CliRun doc =
      testing::run({"evaluate", "-f", testing::example("jobs/bert-large-350m.yaml"),
                    "--measurement", file.path(), "-o", "json"});
  ASSERT_EQ(doc.exit_code, 0) << doc.err;
  const std::string message = json::parse(doc.out)["decision"]["message"];
  EXPECT_EQ(message.find("Caution: ."), std::string::npos) << message;
  EXPECT_NE(message.find("Caution: the probe marked its fit of the link poor without saying "
                         "why (busbw "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("largest relative residual"), std::string::npos) << message;
  EXPECT_EQ(table.out.find("Caution: ."), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("poor fit: )"), std::string::npos) << table.out;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
