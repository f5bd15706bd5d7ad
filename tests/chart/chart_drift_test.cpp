// The chart is the one home of commgate's install: a contract test between it and the
// files it was made from (STYLE.md, "A contract test between two sources of truth").
// - deploy/webhook-configurations.yaml and the chart's webhook configurations hold the
//   same webhooks, rules, paths and options; the chart only adds what a release decides
//   (caBundle, namespaceSelector, matchPolicy) and makes failurePolicy/timeoutSeconds
//   values whose defaults are the file's.
// - charts/commgate/crds/ holds crds/*.yaml byte for byte (Helm installs a chart's crds/
//   as they are, so the chart needs its own copies).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "core/yaml_json.h"
#include "tests/chart/chart_render.h"
#include "tests/support/child_process.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
namespace fs = std::filesystem;

// "MutatingWebhookConfiguration/commgate" -> its webhooks by name.
std::map<std::string, std::map<std::string, json>> webhooks_by_config(
    const std::vector<json>& objects) {
  std::map<std::string, std::map<std::string, json>> out;
  for (const auto& o : objects) {
    const std::string kind = o.value("kind", "");
    if (kind != "MutatingWebhookConfiguration" && kind != "ValidatingWebhookConfiguration")
      continue;
    auto& hooks = out[kind + "/" + o["metadata"]["name"].get<std::string>()];
    for (const auto& h : o["webhooks"]) hooks[h["name"]] = h;
  }
  return out;
}

// Every webhook of the deploy file's configurations is the chart's, but for what the chart
// adds for a release.
void expect_same_webhooks(const std::map<std::string, std::map<std::string, json>>& deployed,
                          const std::map<std::string, std::map<std::string, json>>& charted) {
  std::set<std::string> deployed_configs, charted_configs;
  for (const auto& [name, _] : deployed) deployed_configs.insert(name);
  for (const auto& [name, _] : charted) charted_configs.insert(name);
  ASSERT_EQ(charted_configs, deployed_configs);

  for (const auto& [config, hooks] : deployed) {
    const auto& chart_hooks = charted.at(config);
    std::set<std::string> want, got;
    for (const auto& [name, _] : hooks) want.insert(name);
    for (const auto& [name, _] : chart_hooks) got.insert(name);
    ASSERT_EQ(got, want) << config;
    for (const auto& [name, file_hook] : hooks) {
      SCOPED_TRACE(config + " " + name);
      json chart_hook = chart_hooks.at(name);
      // What the chart adds for a release; where the file sets it too, it must agree.
      for (const char* added : {"namespaceSelector", "matchPolicy"})
        if (!file_hook.contains(added)) chart_hook.erase(added);
      ASSERT_TRUE(chart_hook["clientConfig"].contains("caBundle"));
      EXPECT_NE(chart_hook["clientConfig"]["caBundle"], "REPLACE_WITH_BASE64_CA_BUNDLE");
      json file_copy = file_hook;
      file_copy["clientConfig"].erase("caBundle");
      chart_hook["clientConfig"].erase("caBundle");
      EXPECT_EQ(chart_hook, file_copy) << "chart:\n"
                                       << chart_hook.dump(2) << "\nfile:\n"
                                       << file_copy.dump(2);
    }
  }
}

TEST(ChartDrift, webhook_configurations_match_the_deploy_file) {
  const auto deployed = webhooks_by_config(
      parse_manifests(read_file(source_path("deploy/webhook-configurations.yaml"))));
  ASSERT_FALSE(deployed.empty());
  const auto r = render_chart();  // release "commgate" in "commgate-system", as the file assumes
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_same_webhooks(deployed, webhooks_by_config(r.objects));
}

// The workload gate (issue #19 item 4): off by default, deploy/workload-gate.yaml when on.
TEST(ChartDrift, the_workload_gate_matches_its_deploy_file) {
  auto deployed = webhooks_by_config(
      parse_manifests(read_file(source_path("deploy/webhook-configurations.yaml"))));
  for (auto& [name, hooks] :
       webhooks_by_config(parse_manifests(read_file(source_path("deploy/workload-gate.yaml")))))
    deployed[name] = hooks;
  const auto r = render_chart({"--set", "webhook.workloadGate.enabled=true"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto charted = webhooks_by_config(r.objects);
  ASSERT_TRUE(charted.contains("ValidatingWebhookConfiguration/commgate-workloads"));
  expect_same_webhooks(deployed, charted);
}

TEST(ChartDrift, every_webhook_gets_the_release_options) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& [config, hooks] : webhooks_by_config(r.objects))
    for (const auto& [name, hook] : hooks) {
      SCOPED_TRACE(config + " " + name);
      EXPECT_EQ(hook["sideEffects"], "None");
      EXPECT_EQ(hook["matchPolicy"], "Equivalent");
      EXPECT_LE(hook["timeoutSeconds"].get<int>(), 10);
      EXPECT_EQ(hook["admissionReviewVersions"], json::parse(R"(["v1"])"));
      bool namespaced = false;
      for (const auto& rule : hook["rules"]) namespaced |= rule.value("scope", "*") != "Cluster";
      if (namespaced) {
        EXPECT_EQ(hook["namespaceSelector"], json::parse(R"({"matchExpressions":[{
            "key":"kubernetes.io/metadata.name","operator":"NotIn",
            "values":["kube-system","commgate-system"]}]})"));
      }
    }
}

std::set<std::string> yaml_files(const fs::path& dir) {
  std::set<std::string> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.insert(e.path().filename().string());
  return out;
}

TEST(ChartDrift, the_charts_crds_are_byte_for_byte_the_crds) {
  const fs::path crds = source_path("crds");
  const fs::path chart_crds = chart_dir() + "/crds";
  const auto want = yaml_files(crds);
  ASSERT_EQ(want.size(), 3u);
  EXPECT_EQ(yaml_files(chart_crds), want);
  for (const auto& name : want)
    EXPECT_EQ(read_file(chart_crds / name), read_file(crds / name))
        << "charts/commgate/crds/" << name << " differs from crds/" << name
        << ": copy it again (cp crds/*.yaml charts/commgate/crds/)";
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
