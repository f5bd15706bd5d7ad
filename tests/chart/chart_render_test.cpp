// chart-render against a chart that exercises each Helm feature it implements (does it
// behave as Helm does?), then charts/commgate rendered with the values an admin would
// choose, and with values the schema must refuse, as `helm install` would.
#include "tests/chart/chart_render.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "core/base64.h"
#include "core/yaml_json.h"
#include "kube/snapshot_cache.h"
#include "tests/support/child_process.h"
#include "tests/support/scratch_dir.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

const std::string kFeatures = std::string(COMMGATE_SOURCE_DIR) + "/tests/chart/testdata/features";

// ---- the renderer, against Helm's behaviour ----

TEST(ChartRenderer, renders_every_helm_feature_the_chart_uses_as_helm_does) {
  const auto r = render_chart({"--namespace", "ns1"}, kFeatures);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(r.objects.size(), 1u) << r.output;  // the comment-only document is dropped
  const json& data = r.get("ConfigMap", "commgate-features")["data"];
  EXPECT_EQ(data["included"], "greeting: hello\nlist:\n  - a\n  - b\n");
  EXPECT_EQ(data["tpl"], "hello from tpl");
  EXPECT_EQ(data["lookupIsEmpty"], "true");  // lookup finds nothing under `helm template`
  EXPECT_EQ(data["hasApps"], "true");
  EXPECT_EQ(data["hasMonitoring"], "false");
  EXPECT_EQ(data["kubeMinor"], "32");
  EXPECT_EQ(data["chart"], "features-1.2.3-4.5");
  EXPECT_EQ(data["release"], "Helm/features/templates/configmap.yaml/true/false");
  EXPECT_EQ(data["missing"], "");         // missingkey=zero and "<no value>" removed
  EXPECT_EQ(data["count"], "float64=3");  // values files go through JSON, as in Helm
  EXPECT_EQ(data["file"], "raw file, not templated: {{ .Values.greeting }}");
  EXPECT_EQ(data["toYaml"], "a:\n- x\nb: 1");  // sigs.k8s.io/yaml: sorted keys, no trailing newline
  EXPECT_EQ(data["fromYaml"], "v");
  EXPECT_EQ(r.notes, "Installed commgate with greeting hello.\n");
  EXPECT_EQ(r.output.rfind("---\n# Source: features/templates/configmap.yaml\n", 0), 0u)
      << r.output;
}

TEST(ChartRenderer, set_types_values_as_helm_strvals_and_null_removes_a_default) {
  const auto r = render_chart(
      {"--set", "count=7,nested.removed=null", "--set-string", "greeting=hi"}, kFeatures);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& data = r.get("ConfigMap", "commgate-features")["data"];
  EXPECT_EQ(data["count"], "int64=7");
  EXPECT_EQ(data["nested"], R"({"kept":"from-defaults"})");
  EXPECT_EQ(data["included"], "greeting: hi\nlist:\n  - a\n  - b\n");
}

TEST(ChartRenderer, values_files_merge_in_order_and_set_wins) {
  const std::string dir = commgate::testing::scratch_dir().string();
  std::ofstream(dir + "/a.yaml") << "greeting: hi\nnested: {added: a}\n";
  std::ofstream(dir + "/b.yaml") << "nested: {added: b}\n";
  const auto r =
      render_chart({"-f", dir + "/a.yaml", "-f", dir + "/b.yaml", "--set", "count=0"}, kFeatures);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& data = r.get("ConfigMap", "commgate-features")["data"];
  EXPECT_EQ(data["nested"], R"({"added":"b","kept":"from-defaults","removed":"by-null"})");
  EXPECT_EQ(data["count"], "int64=0");
}

struct FailureCase {
  std::string name;
  std::vector<std::string> args;
  std::string want_error;  // the whole message, as helm prints it
};

class ChartRendererFailures : public ::testing::TestWithParam<FailureCase> {};

// The message's lines in order, except that schema errors come in gojsonschema's order,
// which follows Go's map iteration (random, in Helm too): those lines are sorted.
std::vector<std::string> comparable_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto first_error = std::find_if(lines.begin(), lines.end(),
                                  [](const std::string& l) { return l.rfind("- ", 0) == 0; });
  std::sort(first_error, lines.end());
  return lines;
}

TEST_P(ChartRendererFailures, fails_with_helms_message) {
  const auto r = render_chart(GetParam().args, kFeatures);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(comparable_lines(r.output), comparable_lines(GetParam().want_error)) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ChartRendererFailures,
    ::testing::Values(
        FailureCase{"fail_names_the_template_and_position",
                    {"--set", "failWith=boom"},
                    "Error: execution error at (features/templates/configmap.yaml:1:29): boom\n"},
        FailureCase{"required_names_the_template_and_position",
                    {"--set", "demandNeeded=1"},
                    "Error: execution error at (features/templates/needed.yaml:7:10): needed is "
                    "required when demandNeeded is set\n"},
        FailureCase{"kube_version_below_the_charts_range",
                    {"--kube-version", "v1.28.3"},
                    "Error: chart requires kubeVersion: >=1.29.0-0 which is incompatible with "
                    "Kubernetes v1.28.3\n"},
        FailureCase{"schema_errors_listed_per_field",
                    {"--set", "count=-1,greeting=yo"},
                    "Error: values don't meet the specifications of the schema(s) in the "
                    "following chart(s):\nfeatures:\n- count: Must be greater than or equal to "
                    "0\n- greeting: greeting must be one of the following: \"hello\", \"hi\"\n"},
        FailureCase{"set_list_index_is_refused_clearly",
                    {"--set", "items[0]=a"},
                    "Error: --set items[0]: list indexes are not supported by this renderer "
                    "(use -f)\n"}),
    [](const auto& test) { return test.param.name; });

// Issue #20 defect 6: docs/install.md's values file, as written there, moves both images to
// the admin's registry (it sets only image.repository; the probe image is derived).
TEST(ChartRenderer, the_install_guides_values_file_renders_as_the_guide_says) {
  std::ifstream in(source_path("docs/install.md"));
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  const std::string start = "```yaml\n# my-values.yaml\n";
  const size_t from = text.find(start);
  ASSERT_NE(from, std::string::npos) << "docs/install.md lost its my-values.yaml block";
  const size_t body = from + start.size();
  const std::string values = text.substr(body, text.find("```", body) - body);
  const std::string file = commgate::testing::scratch_dir().string() + "/my-values.yaml";
  std::ofstream(file) << values;
  const auto r = render_chart({"-f", file});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto& op = r.get("Deployment", "commgate-operator")["spec"]["template"]["spec"];
  const std::string image = op["containers"][0]["image"];
  const auto args = op["containers"][0]["args"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(args.begin(), args.end(),
                      "--probe-image=" + image.substr(0, image.rfind(':')) + "-probe" +
                          image.substr(image.rfind(':'))),
            args.end())
      << image << "\n"
      << ::testing::PrintToString(args);
  EXPECT_EQ(image.rfind("registry.example/", 0), 0u) << image;
}

TEST(ChartRenderer, refuses_hooks_it_does_not_implement) {
  const std::string dir = commgate::testing::scratch_dir().string() + "/hooked";
  std::filesystem::create_directories(dir + "/templates");
  std::ofstream(dir + "/Chart.yaml") << "apiVersion: v2\nname: hooked\nversion: 0.1.0\n";
  std::ofstream(dir + "/templates/job.yaml")
      << "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: x\n  annotations:\n    "
         "helm.sh/hook: pre-install\n";
  const auto r = render_chart({}, dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "Error: hooked/templates/job.yaml: hooks (helm.sh/hook) are not supported by this "
            "renderer\n");
}

// ---- charts/commgate ----

std::set<std::string> kinds_of(const RenderedChart& r) {
  std::set<std::string> out;
  for (const auto& o : r.objects) out.insert(o["kind"].get<std::string>());
  return out;
}

struct ValuesCase {
  std::string name;
  std::vector<std::string> args;
  std::set<std::string> want_kinds;
};

void PrintTo(const ValuesCase& c, std::ostream* os) {
  *os << c.name;
}

class CommgateChart : public ::testing::TestWithParam<ValuesCase> {};

// The webhook's and the operator's kinds (the operator adds the leader-election Role and
// RoleBinding; the Secret is at least the decision key).
const std::set<std::string> kReleaseKinds = {"Secret",
                                             "ServiceAccount",
                                             "ClusterRole",
                                             "ClusterRoleBinding",
                                             "Role",
                                             "RoleBinding",
                                             "Service",
                                             "Deployment",
                                             "PodDisruptionBudget",
                                             "MutatingWebhookConfiguration",
                                             "ValidatingWebhookConfiguration"};

std::set<std::string> plus(std::set<std::string> a, const std::set<std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

TEST_P(CommgateChart, renders_exactly_the_kinds_the_values_ask_for) {
  const auto r = render_chart(GetParam().args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(kinds_of(r), GetParam().want_kinds) << r.output;
  EXPECT_FALSE(r.notes.empty());
}

const std::string kNetpolCidr = "networkPolicy.apiServerCIDRs[0]";

INSTANTIATE_TEST_SUITE_P(
    Values, CommgateChart,
    ::testing::Values(
        ValuesCase{"defaults_generate_the_webhook_certificate_secret",
                   {},
                   plus(kReleaseKinds, {"Secret"})},
        ValuesCase{"cert_manager_issues_the_certificate_instead",
                   {"--set", "certManager.enabled=true"},
                   plus(kReleaseKinds, {"Issuer", "Certificate"})},
        ValuesCase{"cert_manager_with_an_existing_cluster_issuer",
                   {"--set",
                    "certManager.enabled=true,certManager.issuerRef.name=corp-ca,certManager."
                    "issuerRef.kind=ClusterIssuer"},
                   plus(kReleaseKinds, {"Certificate"})},
        ValuesCase{"network_policy_and_default_policy",
                   {"-f", std::string(COMMGATE_SOURCE_DIR) +
                              "/tests/chart/testdata/values-netpol-policy.yaml"},
                   plus(kReleaseKinds, {"Secret", "NetworkPolicy", "CommPolicy"})},
        ValuesCase{
            "monitoring_on",
            {"--set",
             "monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled="
             "true,monitoring.grafanaDashboard.enabled=true"},
            plus(kReleaseKinds, {"Secret", "ServiceMonitor", "PrometheusRule", "ConfigMap"})},
        ValuesCase{"one_replica_each_without_disruption_budgets_or_leader_election",
                   {"--set",
                    "webhook.replicas=1,webhook.podDisruptionBudget.enabled=false,operator."
                    "replicas=1,operator.podDisruptionBudget.enabled=false,operator."
                    "leaderElection.enabled=false"},
                   {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Service", "Deployment",
                    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Secret"}},
        ValuesCase{"an_existing_secret_for_the_operators_certificate",
                   {"--set", "certManager.enabled=true,operator.tls.existingSecret=ops-tls"},
                   plus(kReleaseKinds, {"Issuer", "Certificate"})}),
    [](const auto& test) { return test.param.name; });

TEST(CommgateChart, values_change_what_they_say) {
  const auto r = render_chart({"--set",
                               "webhook.replicas=3,webhook.failurePolicy=Ignore,webhook."
                               "timeoutSeconds=2,priorityClassName=system-cluster-critical",
                               "--set", "webhook.excludeNamespaces=batch-infra", "--set-string",
                               "image.tag=1.2.3"});
  ASSERT_NE(r.exit_code, 0) << "excludeNamespaces is a list: --set of a string must fail";
  const auto ok = render_chart({"--set",
                                "webhook.replicas=3,webhook.failurePolicy=Ignore,webhook."
                                "timeoutSeconds=2,priorityClassName=system-cluster-critical",
                                "--set-string", "image.tag=1.2.3"});
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  const json& deploy = ok.get("Deployment", "commgate-webhook");
  EXPECT_EQ(deploy["spec"]["replicas"], 3);
  EXPECT_EQ(deploy["spec"]["template"]["spec"]["priorityClassName"], "system-cluster-critical");
  EXPECT_EQ(deploy["spec"]["template"]["spec"]["containers"][0]["image"],
            "commgate/commgate:1.2.3");
  const json& hook = ok.get("ValidatingWebhookConfiguration", "commgate")["webhooks"][0];
  EXPECT_EQ(hook["failurePolicy"], "Ignore");
  EXPECT_EQ(hook["timeoutSeconds"], 2);
  // CommPolicy validation fails open whatever the value says.
  EXPECT_EQ(
      ok.get("ValidatingWebhookConfiguration", "commgate-policies")["webhooks"][0]["failurePolicy"],
      "Ignore");
}

TEST(CommgateChart, a_release_under_another_name_and_namespace_renames_everything) {
  const auto r = render_chart({"--name", "gate", "--namespace", "ml-infra"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& hook = r.get("MutatingWebhookConfiguration", "gate-commgate")["webhooks"][0];
  EXPECT_EQ(hook["clientConfig"]["service"]["name"], "gate-commgate-webhook");
  EXPECT_EQ(hook["clientConfig"]["service"]["namespace"], "ml-infra");
  EXPECT_EQ(hook["namespaceSelector"]["matchExpressions"][0]["values"],
            json::parse(R"(["kube-system","ml-infra"])"));
  const json& args = r.get(
      "Deployment", "gate-commgate-webhook")["spec"]["template"]["spec"]["containers"][0]["args"];
  EXPECT_NE(std::find(args.begin(), args.end(),
                      "--operator-service-account=system:serviceaccount:ml-infra:gate-commgate-"
                      "operator"),
            args.end())
      << args.dump();
}

// ---- the operator ----

// The operator Deployment's container, whatever the release is called.
json operator_container(const RenderedChart& r) {
  for (const auto& d : r.of_kind("Deployment"))
    if (d["metadata"]["labels"]["app.kubernetes.io/component"] == "operator")
      return d["spec"]["template"]["spec"]["containers"][0];
  throw std::runtime_error("no operator Deployment");
}

std::vector<std::string> args_of(const json& container) {
  return container["args"].get<std::vector<std::string>>();
}

struct OperatorArgsCase {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::string> want_args;
};

void PrintTo(const OperatorArgsCase& c, std::ostream* os) {
  *os << c.name;
}

class OperatorArgs : public ::testing::TestWithParam<OperatorArgsCase> {};

TEST_P(OperatorArgs, reflect_the_values) {
  const auto r = render_chart(GetParam().args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json c = operator_container(r);
  EXPECT_EQ(c["command"], json::parse(R"(["/usr/local/bin/commgate"])"));
  EXPECT_EQ(args_of(c), GetParam().want_args);
}

INSTANTIATE_TEST_SUITE_P(
    Values, OperatorArgs,
    ::testing::Values(
        OperatorArgsCase{"defaults",
                         {},
                         {"operator", "--namespace=commgate-system",
                          "--probe-image=commgate/commgate-probe:0.1.0", "--leader-elect=true",
                          "--port=8443", "--tls-cert-file=/etc/commgate/tls/tls.crt",
                          "--tls-private-key-file=/etc/commgate/tls/tls.key",
                          "--decision-key-file=/etc/commgate/decision-key/key", "--kube-api-qps=20",
                          "--kube-api-burst=30", "--concurrency=4", "--max-concurrent-probes=8",
                          "--max-probes-per-namespace=2", "--workload-unschedulable-timeout=10m",
                          "--log-format=json"}},
        OperatorArgsCase{"tuned_and_one_replica_without_leader_election",
                         {"--set",
                          "operator.replicas=1,operator.leaderElection.enabled=false,operator."
                          "port=9444,operator.kubeApiQPS=50,operator.kubeApiBurst=100,"
                          "operator.concurrency=16,operator.logFormat=text",
                          "--set-string", "image.tag=1.2.3"},
                         {"operator", "--namespace=commgate-system",
                          "--probe-image=commgate/commgate-probe:1.2.3", "--leader-elect=false",
                          "--port=9444", "--tls-cert-file=/etc/commgate/tls/tls.crt",
                          "--tls-private-key-file=/etc/commgate/tls/tls.key",
                          "--decision-key-file=/etc/commgate/decision-key/key", "--kube-api-qps=50",
                          "--kube-api-burst=100", "--concurrency=16", "--max-concurrent-probes=8",
                          "--max-probes-per-namespace=2", "--workload-unschedulable-timeout=10m",
                          "--log-format=text"}},
        OperatorArgsCase{"a_probe_image_of_its_own",
                         {"--set",
                          "probe.image=registry.example/probe:cuda12,image.probeRepository="
                          "unused/probe"},
                         {"operator", "--namespace=commgate-system",
                          "--probe-image=registry.example/probe:cuda12", "--leader-elect=true",
                          "--port=8443", "--tls-cert-file=/etc/commgate/tls/tls.crt",
                          "--tls-private-key-file=/etc/commgate/tls/tls.key",
                          "--decision-key-file=/etc/commgate/decision-key/key", "--kube-api-qps=20",
                          "--kube-api-burst=30", "--concurrency=4", "--max-concurrent-probes=8",
                          "--max-probes-per-namespace=2", "--workload-unschedulable-timeout=10m",
                          "--log-format=json"}},
        OperatorArgsCase{"the_kueue_admission_check",
                         {"--set", "kueue.enabled=true"},
                         {"operator", "--namespace=commgate-system",
                          "--probe-image=commgate/commgate-probe:0.1.0", "--leader-elect=true",
                          "--port=8443", "--tls-cert-file=/etc/commgate/tls/tls.crt",
                          "--tls-private-key-file=/etc/commgate/tls/tls.key",
                          "--decision-key-file=/etc/commgate/decision-key/key", "--kube-api-qps=20",
                          "--kube-api-burst=30", "--concurrency=4", "--max-concurrent-probes=8",
                          "--max-probes-per-namespace=2", "--workload-unschedulable-timeout=10m",
                          "--log-format=json", "--kueue"}},
        OperatorArgsCase{
            "another_release_and_namespace",
            {"--name", "gate", "--namespace", "ml-infra"},
            {"operator", "--namespace=ml-infra", "--probe-image=commgate/commgate-probe:0.1.0",
             "--leader-elect=true", "--port=8443", "--tls-cert-file=/etc/commgate/tls/tls.crt",
             "--tls-private-key-file=/etc/commgate/tls/tls.key",
             "--decision-key-file=/etc/commgate/decision-key/key", "--kube-api-qps=20",
             "--kube-api-burst=30", "--concurrency=4", "--max-concurrent-probes=8",
             "--max-probes-per-namespace=2", "--workload-unschedulable-timeout=10m",
             "--log-format=json"}}),
    [](const auto& test) { return test.param.name; });

// The webhook lets exactly the operator's ServiceAccount through its checks: the user name
// it is given must be the one the operator's pods authenticate as, in every release.
TEST(CommgateChart, the_webhook_trusts_the_service_account_the_operator_runs_as) {
  for (const auto& [release, ns] : std::vector<std::pair<std::string, std::string>>{
           {"commgate", "commgate-system"}, {"gate", "ml-infra"}, {"prod-commgate", "ops"}}) {
    SCOPED_TRACE(release + " in " + ns);
    const auto r = render_chart({"--name", release, "--namespace", ns});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto deployments = r.of_kind("Deployment");
    ASSERT_EQ(deployments.size(), 2u);
    std::string webhook_user, operator_sa;
    for (const auto& d : deployments) {
      const json& pod = d["spec"]["template"]["spec"];
      const std::string component = d["metadata"]["labels"]["app.kubernetes.io/component"];
      if (component == "operator") operator_sa = pod["serviceAccountName"];
      if (component != "webhook") continue;
      for (const auto& a : args_of(pod["containers"][0]))
        if (a.rfind("--operator-service-account=", 0) == 0)
          webhook_user = a.substr(a.find('=') + 1);
    }
    ASSERT_FALSE(operator_sa.empty());
    EXPECT_EQ(webhook_user, "system:serviceaccount:" + ns + ":" + operator_sa);
    EXPECT_EQ(r.get("ServiceAccount", operator_sa)["metadata"]["namespace"], ns);
  }
}

// Issue #23: with the workload gate on too, the webhook watches Kueue's queues (--kueue)
// and trusts Kueue's controller to start a queued job, and its ClusterRole reads exactly
// the three kinds it watches (kube/snapshot_cache.h's paths).
TEST(CommgateChart, kueue_with_the_workload_gate_lets_the_webhook_read_kueues_queues) {
  const auto webhook_of = [](const RenderedChart& r) {
    return r.get("Deployment", "commgate-webhook")["spec"]["template"]["spec"]["containers"][0];
  };
  const auto gate = render_chart({"--set", "webhook.workloadGate.enabled=true"});
  ASSERT_EQ(gate.exit_code, 0) << gate.output;
  const auto both =
      render_chart({"--set", "webhook.workloadGate.enabled=true", "--set", "kueue.enabled=true",
                    "--set", "kueue.controllerServiceAccount=queues/kueue-manager"});
  ASSERT_EQ(both.exit_code, 0) << both.output;
  auto before = args_of(webhook_of(gate));
  const auto after = args_of(webhook_of(both));
  before.push_back("--kueue");
  before.push_back("--workload-controller=queues/kueue-manager");
  EXPECT_EQ(after, before);
  const json& rules = both.get("ClusterRole", "commgate-webhook")["rules"];
  EXPECT_EQ(rules.back(), json::parse(R"({"apiGroups":["kueue.x-k8s.io"],
      "resources":["localqueues","clusterqueues","admissionchecks"],"verbs":["list","watch"]})"));
  EXPECT_EQ(rules.size(), gate.get("ClusterRole", "commgate-webhook")["rules"].size() + 1);
  for (const char* path :
       {kube::kLocalQueuesPath, kube::kClusterQueuesPath, kube::kAdmissionChecksPath})
    EXPECT_NE(std::string(path).find("/apis/kueue.x-k8s.io/v1beta2/"), std::string::npos);
  // Without the gate, Kueue's value leaves the webhook as it was.
  const auto kueue_only = render_chart({"--set", "kueue.enabled=true"});
  ASSERT_EQ(kueue_only.exit_code, 0) << kueue_only.output;
  EXPECT_EQ(args_of(webhook_of(kueue_only)), args_of(webhook_of(render_chart())));
}

// Issue #23: kueue.enabled adds the admission check's flag and exactly its rules to the
// operator's ClusterRole (docs/kueue.md, "Install"); off by default, neither. That the
// operator's requests are the ones these rules allow: chart_rbac_test.cpp.
TEST(CommgateChart, the_kueue_value_adds_the_flag_and_exactly_the_checks_rules) {
  const auto plain = render_chart();
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const auto kueue = render_chart({"--set", "kueue.enabled=true"});
  ASSERT_EQ(kueue.exit_code, 0) << kueue.output;

  const auto has_flag = [](const RenderedChart& r) {
    const auto args = args_of(operator_container(r));
    return std::find(args.begin(), args.end(), "--kueue") != args.end();
  };
  EXPECT_FALSE(has_flag(plain));
  EXPECT_TRUE(has_flag(kueue));
  // The notes tell the admin what to create next.
  EXPECT_EQ(plain.notes.find("commgate.io/comm-check"), std::string::npos) << plain.notes;
  EXPECT_NE(kueue.notes.find("Kueue: the operator serves AdmissionChecks whose "
                             "spec.controllerName is\n   commgate.io/comm-check."),
            std::string::npos)
      << kueue.notes;
  // The webhook is not part of the check.
  EXPECT_EQ(kueue.get("Deployment", "commgate-webhook"),
            plain.get("Deployment", "commgate-webhook"));

  // The operator's ClusterRole: the default rules, then the check's, in this order.
  const json& before = plain.get("ClusterRole", "commgate-operator")["rules"];
  const json& after = kueue.get("ClusterRole", "commgate-operator")["rules"];
  ASSERT_GT(after.size(), before.size()) << after.dump();
  EXPECT_EQ(json(std::vector<json>(after.begin(), after.begin() + before.size())), before);
  EXPECT_EQ(json(std::vector<json>(after.begin() + before.size(), after.end())), json::parse(R"([
      {"apiGroups":["kueue.x-k8s.io"],
       "resources":["workloads","admissionchecks","resourceflavors","topologies"],
       "verbs":["get","list","watch"]},
      {"apiGroups":["kueue.x-k8s.io"],
       "resources":["workloads/status","admissionchecks/status"],"verbs":["patch"]},
      {"apiGroups":["kubeflow.org"],"resources":["pytorchjobs"],"verbs":["get"]},
      {"apiGroups":["trainer.kubeflow.org"],"resources":["trainjobs"],"verbs":["get"]},
      {"apiGroups":["jobset.x-k8s.io"],"resources":["jobsets"],"verbs":["get"]}])"));

  // Nothing else changes: every other object renders the same (but the generated
  // Secrets, drawn afresh on each render, and the webhook configurations' caBundle).
  std::set<std::string> others_before, others_after;
  for (const auto* r : {&plain, &kueue})
    for (const json& o : r->objects) {
      const std::string kind = o["kind"];
      if (kind == "Secret" || kind == "ClusterRole" || kind == "Deployment" ||
          kind == "MutatingWebhookConfiguration" || kind == "ValidatingWebhookConfiguration")
        continue;
      (r == &plain ? others_before : others_after).insert(o.dump());
    }
  EXPECT_EQ(others_after, others_before);
  // No other role of the chart names Kueue, with or without the value.
  for (const auto* r : {&plain, &kueue})
    for (const char* kind : {"Role", "ClusterRole"})
      for (const json& role : r->of_kind(kind)) {
        if (r == &kueue && role["metadata"]["name"] == "commgate-operator") continue;
        EXPECT_EQ(role.dump().find("kueue"), std::string::npos)
            << kind << " " << role["metadata"]["name"];
      }
}

TEST(CommgateChart, replicas_without_a_leader_are_refused) {
  const auto r = render_chart({"--set", "operator.leaderElection.enabled=false"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("operator.leaderElection.enabled: must be true when operator.replicas "
                          "is more than 1"),
            std::string::npos)
      << r.output;
}

// Issue #19: the TLS Secret was mounted 0644; decision records were not signed. Both
// Deployments mount the TLS Secret and the decision key 0440, readable through the pods'
// fsGroup only, and pass the key to the binary.
TEST(CommgateChart, the_secrets_are_mounted_0440_and_the_decision_key_reaches_both_binaries) {
  const auto rendered = render_chart();
  ASSERT_EQ(rendered.exit_code, 0) << rendered.output;
  const json& key = rendered.get("Secret", "commgate-decision-key");
  EXPECT_EQ(key["type"], "Opaque");
  // 64 random characters, base64: 88.
  EXPECT_EQ(key["data"]["key"].get<std::string>().size(), 88u);
  EXPECT_NE(render_chart().get("Secret", "commgate-decision-key")["data"]["key"],
            key["data"]["key"])
      << "a fresh install draws a fresh key";
  for (const std::string name : {"commgate-webhook", "commgate-operator"}) {
    const json& pod = rendered.get("Deployment", name)["spec"]["template"]["spec"];
    EXPECT_EQ(pod["securityContext"]["fsGroup"], 65532) << name;
    ASSERT_EQ(pod["volumes"].size(), 2u) << name;
    EXPECT_EQ(pod["volumes"][0]["name"], "tls") << name;
    EXPECT_EQ(pod["volumes"][1]["secret"]["secretName"], "commgate-decision-key") << name;
    for (const json& volume : pod["volumes"])
      EXPECT_EQ(volume["secret"]["defaultMode"], 0440) << name << " " << volume["name"];
    const json& container = pod["containers"][0];
    const json& args = container["args"];
    EXPECT_NE(
        std::find(args.begin(), args.end(), "--decision-key-file=/etc/commgate/decision-key/key"),
        args.end())
        << name << ": " << args.dump();
    bool mounted = false;
    for (const json& m : container["volumeMounts"])
      mounted |= m["name"] == "decision-key" && m["mountPath"] == "/etc/commgate/decision-key" &&
                 m["readOnly"] == true;
    EXPECT_TRUE(mounted) << name;
  }
}

// The review of 2026-12-05: on the simulated cluster (pods are processes, no cgroup) the
// webhook ran without a memory limit, so none of its memory bounds applied. The chart
// passes the container's limit; without one, none.
TEST(CommgateChart, the_webhook_is_told_its_memory_limit) {
  const auto args_of = [](const RenderedChart& r) {
    return r.get("Deployment",
                 "commgate-webhook")["spec"]["template"]["spec"]["containers"][0]["args"];
  };
  const auto has = [](const json& args, const std::string& arg) {
    return std::find(args.begin(), args.end(), arg) != args.end();
  };
  const auto plain = render_chart();
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_TRUE(has(args_of(plain), "--memory-limit=256Mi")) << args_of(plain).dump();
  const auto larger = render_chart({"--set", "webhook.resources.limits.memory=1Gi"});
  ASSERT_EQ(larger.exit_code, 0) << larger.output;
  EXPECT_TRUE(has(args_of(larger), "--memory-limit=1Gi")) << args_of(larger).dump();
  const auto none = render_chart({"--set", "webhook.resources.limits=null"});
  ASSERT_EQ(none.exit_code, 0) << none.output;
  for (const json& arg : args_of(none))
    EXPECT_EQ(arg.get<std::string>().rfind("--memory-limit", 0), std::string::npos) << arg;
}

// Days from now until a PEM certificate's notAfter.
int days_left(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
  if (!cert) return -1;
  int days = 0, seconds = 0;
  ASN1_TIME_diff(&days, &seconds, nullptr, X509_get0_notAfter(cert.get()));
  return days;
}

// #19: the chart's certificates lasted 10 years and were never renewed. Now a year, and
// an upgrade past two thirds of it (the Secret's commgate.io/renew-after) renews them,
// with the old CA still in the caBundle while the pods reload.
TEST(CommgateChart, its_certificates_last_a_year_and_an_upgrade_renews_them_when_due) {
  const auto installed = render_chart();
  ASSERT_EQ(installed.exit_code, 0) << installed.output;
  const long now = static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count());
  for (const char* name : {"commgate-webhook-tls", "commgate-operator-tls"}) {
    const json& secret = installed.get("Secret", name);
    EXPECT_NEAR(days_left(base64_decode(secret["data"]["tls.crt"].get<std::string>())), 365, 1)
        << name;
    EXPECT_NEAR(days_left(base64_decode(secret["data"]["ca.crt"].get<std::string>())), 365, 1)
        << name;
    const long renew_after =
        std::stol(secret["metadata"]["annotations"]["commgate.io/renew-after"].get<std::string>());
    EXPECT_NEAR(renew_after - now, 365L * 86400 * 2 / 3, 120) << name;
  }
  const json webhook_secret = installed.get("Secret", "commgate-webhook-tls");
  auto ca_bundle = [](const RenderedChart& r) {
    return r
        .get("ValidatingWebhookConfiguration",
             "commgate")["webhooks"][0]["clientConfig"]["caBundle"]
        .get<std::string>();
  };
  EXPECT_EQ(ca_bundle(installed), webhook_secret["data"]["ca.crt"]);

  // `helm upgrade` finds the Secret (chart-render --lookup, as lookup reads the cluster).
  auto upgrade_with = [](const json& secret) {
    const std::string file = (scratch_dir() / "cluster.yaml").string();
    std::ofstream(file) << secret.dump() << "\n---\n";
    return render_chart({"--is-upgrade", "--lookup", file});
  };
  const auto not_due = upgrade_with(webhook_secret);
  ASSERT_EQ(not_due.exit_code, 0) << not_due.output;
  EXPECT_EQ(not_due.get("Secret", "commgate-webhook-tls"), webhook_secret);
  EXPECT_EQ(ca_bundle(not_due), webhook_secret["data"]["ca.crt"]);

  json due = webhook_secret;
  due["metadata"]["annotations"]["commgate.io/renew-after"] = std::to_string(now - 1);
  const auto renewed = upgrade_with(due);
  ASSERT_EQ(renewed.exit_code, 0) << renewed.output;
  const json& fresh = renewed.get("Secret", "commgate-webhook-tls");
  EXPECT_NE(fresh["data"]["tls.crt"], webhook_secret["data"]["tls.crt"]);
  EXPECT_NE(fresh["data"]["ca.crt"], webhook_secret["data"]["ca.crt"]);
  EXPECT_GT(
      std::stol(fresh["metadata"]["annotations"]["commgate.io/renew-after"].get<std::string>()),
      now);
  // The new CA first, then the old one: the API server accepts either certificate.
  EXPECT_EQ(base64_decode(ca_bundle(renewed)),
            base64_decode(fresh["data"]["ca.crt"].get<std::string>()) +
                base64_decode(webhook_secret["data"]["ca.crt"].get<std::string>()));

  // The same as `kubectl get secret -o yaml` of several prints it: a List.
  {
    const std::string file = (scratch_dir() / "list.yaml").string();
    std::ofstream(file) << json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", {due}}}.dump();
    const auto from_list = render_chart({"--is-upgrade", "--lookup", file});
    ASSERT_EQ(from_list.exit_code, 0) << from_list.output;
    EXPECT_NE(base64_decode(ca_bundle(from_list))
                  .find(base64_decode(webhook_secret["data"]["ca.crt"].get<std::string>())),
              std::string::npos)
        << "the List's Secret was not found";
  }

  // A Secret from a chart before renew-after: kept as it is.
  json older = webhook_secret;
  older["metadata"].erase("annotations");
  const auto kept = upgrade_with(older);
  ASSERT_EQ(kept.exit_code, 0) << kept.output;
  EXPECT_EQ(kept.get("Secret", "commgate-webhook-tls")["data"], webhook_secret["data"]);
  EXPECT_FALSE(kept.get("Secret", "commgate-webhook-tls")["metadata"].contains("annotations"));
}

TEST(CommgateChart, the_operators_certificate_comes_from_the_values_choice) {
  const auto generated = render_chart();
  ASSERT_EQ(generated.exit_code, 0) << generated.output;
  const json& secret = generated.get("Secret", "commgate-operator-tls");
  EXPECT_EQ(secret["type"], "kubernetes.io/tls");
  for (const std::string key : {"ca.crt", "tls.crt", "tls.key"})
    EXPECT_GT(secret["data"][key].get<std::string>().size(), 100u) << key;
  const auto volume_of = [](const RenderedChart& r) {
    return r.get(
        "Deployment",
        "commgate-operator")["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"];
  };
  EXPECT_EQ(volume_of(generated), "commgate-operator-tls");

  const auto cm = render_chart({"--set", "certManager.enabled=true"});
  ASSERT_EQ(cm.exit_code, 0) << cm.output;
  const json& cert = cm.get("Certificate", "commgate-operator");
  EXPECT_EQ(cert["spec"]["secretName"], "commgate-operator-tls");
  EXPECT_EQ(cert["spec"]["dnsNames"], json::parse(R"(["commgate-operator-metrics",
      "commgate-operator-metrics.commgate-system", "commgate-operator-metrics.commgate-system.svc",
      "commgate-operator-metrics.commgate-system.svc.cluster.local"])"));
  EXPECT_EQ(cert["spec"]["issuerRef"]["name"], "commgate-webhook-selfsigned");
  EXPECT_EQ(volume_of(cm), "commgate-operator-tls");

  const auto existing = render_chart({"--set", "operator.tls.existingSecret=ops-tls"});
  ASSERT_EQ(existing.exit_code, 0) << existing.output;
  EXPECT_EQ(volume_of(existing), "ops-tls");
  std::set<std::string> secrets;
  for (const json& s : existing.of_kind("Secret"))
    secrets.insert(s["metadata"]["name"].get<std::string>());
  EXPECT_EQ(secrets, (std::set<std::string>{"commgate-webhook-tls", "commgate-decision-key"}))
      << "the webhook's certificate and the decision key, not the operator's certificate";
}

// Issue #19 item 4, trial D5: the default policy's workload gate without the webhook
// configuration that feeds it would do nothing; the chart says so instead of rendering.
TEST(CommgateChart, the_workload_gate_needs_its_webhook_configuration) {
  auto r = render_chart(
      {"--set", "defaultPolicy.enabled=true", "--set", "defaultPolicy.unmanagedWorkloads=deny"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("defaultPolicy.unmanagedWorkloads is deny, but "
                          "webhook.workloadGate.enabled is false"),
            std::string::npos)
      << r.output;
  r = render_chart(
      {"-f", std::string(COMMGATE_SOURCE_DIR) + "/tests/chart/testdata/values-workload-gate.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.get("CommPolicy", "default")["spec"]["unmanagedWorkloads"], "deny");
  const json args =
      r.get("Deployment", "commgate-webhook")["spec"]["template"]["spec"]["containers"][0]["args"];
  EXPECT_NE(std::find(args.begin(), args.end(), "--workload-gate"), args.end()) << args.dump();
  EXPECT_NE(std::find(args.begin(), args.end(),
                      "--workload-controller=jobset-system/jobset-controller-manager"),
            args.end())
      << args.dump();
  // Off by default: no flag, no configuration.
  r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json plain =
      r.get("Deployment", "commgate-webhook")["spec"]["template"]["spec"]["containers"][0]["args"];
  EXPECT_EQ(std::find(plain.begin(), plain.end(), "--workload-gate"), plain.end());
}

// The default policy's Kueue check fields (docs/kueue.md), set through the chart; {} leaves
// the CRD's defaults to the API server.
TEST(CommgateChart, the_default_policy_carries_the_kueue_checks_fields) {
  auto r = render_chart({"--set", "defaultPolicy.enabled=true", "--set",
                         "defaultPolicy.admissionCheck.maxPendingSeconds=600", "--set",
                         "defaultPolicy.admissionCheck.withoutModel=Rejected"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.get("CommPolicy", "default")["spec"]["admissionCheck"],
            json({{"maxPendingSeconds", 600}, {"withoutModel", "Rejected"}}));
  r = render_chart({"--set", "defaultPolicy.enabled=true"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(r.get("CommPolicy", "default")["spec"].contains("admissionCheck"));
}

struct BadValuesCase {
  std::string name;
  std::vector<std::string> args;
  std::string want_line;  // one "- field: message" line of the schema's answer
};

class CommgateChartBadValues : public ::testing::TestWithParam<BadValuesCase> {};

TEST_P(CommgateChartBadValues, are_refused_naming_the_field) {
  const auto r = render_chart(GetParam().args);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("Error: values don't meet the specifications of the schema(s) in the "
                          "following chart(s):\ncommgate:\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\n" + GetParam().want_line + "\n"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CommgateChartBadValues,
    ::testing::Values(
        BadValuesCase{"replicas_not_a_number",
                      {"--set", "webhook.replicas=two"},
                      "- webhook.replicas: Invalid type. Expected: integer, given: string"},
        BadValuesCase{"zero_replicas",
                      {"--set", "webhook.replicas=0"},
                      "- webhook.replicas: Must be greater than or equal to 1"},
        BadValuesCase{"unknown_failure_policy",
                      {"--set", "webhook.failurePolicy=Sometimes"},
                      "- webhook.failurePolicy: webhook.failurePolicy must be one of the "
                      "following: \"Fail\", \"Ignore\""},
        BadValuesCase{"timeout_over_the_api_servers_limit",
                      {"--set", "webhook.timeoutSeconds=31"},
                      "- webhook.timeoutSeconds: Must be less than or equal to 30"},
        BadValuesCase{"misspelt_value",
                      {"--set", "webhook.replica=2"},
                      "- webhook: Additional property replica is not allowed"},
        BadValuesCase{"network_policy_without_the_api_servers_addresses",
                      {"--set", "networkPolicy.enabled=true"},
                      "- networkPolicy.apiServerCIDRs: Array must have at least 1 items"},
        BadValuesCase{"comm_share_over_one",
                      {"--set", "defaultPolicy.enabled=true", "--set-string",
                       "defaultPolicy.maxCommShare=lots"},
                      "- defaultPolicy.maxCommShare: Invalid type. Expected: number, given: "
                      "string"},
        BadValuesCase{"workload_gate_value_in_the_wrong_case",
                      {"--set", "defaultPolicy.unmanagedWorkloads=Deny"},
                      "- defaultPolicy.unmanagedWorkloads: defaultPolicy.unmanagedWorkloads must "
                      "be one of the following: \"allow\", \"warn\", \"deny\""},
        BadValuesCase{"unknown_enforcement_action",
                      {"--set", "defaultPolicy.enforcementAction=block"},
                      "- defaultPolicy.enforcementAction: defaultPolicy.enforcementAction must be "
                      "one of the following: \"downsize\", \"deny\", \"warn\", \"dryrun\""},
        BadValuesCase{"ttl_not_a_duration",
                      {"--set", "defaultPolicy.measurementTTL=1day"},
                      "- defaultPolicy.measurementTTL: Does not match pattern "
                      "'^(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|ms|s|m|h))+$'"},
        BadValuesCase{"admission_check_without_model_in_the_wrong_case",
                      {"--set", "defaultPolicy.admissionCheck.withoutModel=ready"},
                      "- defaultPolicy.admissionCheck.withoutModel: "
                      "defaultPolicy.admissionCheck.withoutModel must be one of the following: "
                      "\"Ready\", \"Rejected\""},
        BadValuesCase{"operator_without_replicas",
                      {"--set", "operator.replicas=0"},
                      "- operator.replicas: Must be greater than or equal to 1"},
        BadValuesCase{"operator_log_format_unknown",
                      {"--set", "operator.logFormat=xml"},
                      "- operator.logFormat: operator.logFormat must be one of the following: "
                      "\"json\", \"text\""},
        BadValuesCase{"operator_concurrency_zero",
                      {"--set", "operator.concurrency=0"},
                      "- operator.concurrency: Must be greater than or equal to 1"},
        BadValuesCase{"operator_qps_not_positive",
                      {"--set", "operator.kubeApiQPS=0"},
                      "- operator.kubeApiQPS: Must be greater than 0"},
        BadValuesCase{"operator_leader_election_not_a_boolean",
                      {"--set-string", "operator.leaderElection.enabled=yes"},
                      "- operator.leaderElection.enabled: Invalid type. Expected: boolean, "
                      "given: string"},
        BadValuesCase{"kueue_enabled_not_a_boolean",
                      {"--set-string", "kueue.enabled=true"},
                      "- kueue.enabled: Invalid type. Expected: boolean, given: string"},
        BadValuesCase{"kueue_misspelt",
                      {"--set", "kueue.enable=true"},
                      "- kueue: Additional property enable is not allowed"},
        BadValuesCase{"probe_timeout_too_short",
                      {"--set", "probe.timeoutSeconds=1"},
                      "- probe.timeoutSeconds: Must be greater than or equal to 10"}),
    [](const auto& test) { return test.param.name; });

// values.yaml: every value has a comment and a schema entry, so an admin can read what
// each does and a misspelt one is refused. Sections (objects whose fields follow on the
// next lines) need no comment of their own; keys inside free maps (labels, resource
// lists) are content, not values.
const json* resolve(const json& root, const json* s) {
  while (s && s->contains("$ref")) {
    const std::string ref = (*s)["$ref"];  // "#/definitions/NAME"
    s = &root["definitions"][ref.substr(ref.rfind('/') + 1)];
  }
  return s;
}

TEST(CommgateChart, every_value_is_documented_and_in_the_schema) {
  const json schema = json::parse(read_file(chart_dir() + "/values.schema.json"));
  std::istringstream lines(read_file(chart_dir() + "/values.yaml"));
  std::string line, previous;
  std::vector<std::pair<int, const json*>> open;  // (indent, schema) of enclosing keys
  static const std::regex kKey(R"(^( *)([A-Za-z][A-Za-z0-9_]*):.*$)");
  int keys = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, kKey)) {
      const int indent = static_cast<int>(m[1].length());
      while (!open.empty() && open.back().first >= indent) open.pop_back();
      const json* parent = open.empty() ? &schema : open.back().second;
      const json* s = nullptr;
      if (parent && parent->contains("properties") && (*parent)["properties"].contains(m[2].str()))
        s = resolve(schema, &(*parent)["properties"][m[2].str()]);
      const bool in_free_map = parent && !parent->contains("properties");
      if (!in_free_map) {
        ++keys;
        EXPECT_NE(s, nullptr) << m[2] << " (line \"" << line << "\") is not in values.schema.json";
        // A section: an object whose fields follow on the next lines.
        const bool section =
            s && s->contains("type") && (*s)["type"] == "object" && line.back() == ':';
        if (!section) {
          EXPECT_EQ(previous.find_first_not_of(' '), previous.find('#'))
              << m[2] << " (line \"" << line << "\") has no comment above it in values.yaml";
        }
      }
      open.push_back({indent, s});
    }
    if (!line.empty()) previous = line;
  }
  EXPECT_GT(keys, 40);
}

TEST(CommgateChart, notes_tell_the_admin_what_to_check) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* want :
       {"kubectl -n commgate-system rollout status deployment/commgate-webhook",
        "kubectl apply --dry-run=server -f examples/jobs/bert-large-350m.yaml",
        "commgate-webhook.commgate-system.svc:443", "Secret commgate-system/commgate-webhook-tls",
        "failurePolicy is Fail", "kubectl get commpolicies",
        "kubectl -n commgate-system rollout status deployment/commgate-operator",
        "kubectl -n commgate-system get lease commgate-operator",
        "kubectl -n commgate-system get jobs -l commgate.io/role=probe",
        "Probes run commgate/commgate-probe:0.1.0"})
    EXPECT_NE(r.notes.find(want), std::string::npos) << want << "\n" << r.notes;
  const auto cm = render_chart({"--set", "certManager.enabled=true"});
  EXPECT_NE(cm.notes.find("kubectl -n commgate-system get certificate commgate-webhook"),
            std::string::npos)
      << cm.notes;
}

// #19 item 7: the release namespace, where probes run, should enforce Pod Security
// "restricted"; the chart cannot label a namespace it does not own, so the notes say so,
// as a warning where lookup finds the namespace without the label, and not at all once set.
TEST(CommgateChart, notes_ask_for_the_pod_security_label_on_the_release_namespace) {
  const std::string label =
      "kubectl label namespace commgate-system pod-security.kubernetes.io/enforce=restricted";
  const auto fresh = render_chart();
  EXPECT_NE(fresh.notes.find("Make namespace commgate-system enforce Pod Security"),
            std::string::npos)
      << fresh.notes;
  EXPECT_NE(fresh.notes.find(label), std::string::npos) << fresh.notes;
  auto with_namespace = [](const json& labels) {
    const std::string file = (scratch_dir() / "namespace.yaml").string();
    std::ofstream(file) << json{{"apiVersion", "v1"},
                                {"kind", "Namespace"},
                                {"metadata", {{"name", "commgate-system"}, {"labels", labels}}}}
                               .dump();
    return render_chart({"--lookup", file});
  };
  const auto unlabelled = with_namespace({{"kubernetes.io/metadata.name", "commgate-system"}});
  EXPECT_NE(
      unlabelled.notes.find("WARNING: namespace commgate-system does not enforce Pod Security"),
      std::string::npos)
      << unlabelled.notes;
  const auto labelled = with_namespace({{"pod-security.kubernetes.io/enforce", "restricted"}});
  EXPECT_EQ(labelled.notes.find(label), std::string::npos) << labelled.notes;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
