// Every object charts/commgate renders, checked as the API server and an admin's policy
// engine would: against the Kubernetes 1.32 OpenAPI schemas (and the CRDs' own schemas
// for commgate's kinds), Pod Security "restricted" on every pod spec, and RBAC that grants
// the webhook exactly what its code calls.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <tuple>

#include "tests/chart/chart_render.h"
#include "tests/chart/k8s_openapi.h"
#include "tests/crds/schema_check.h"
#include "webhook/kube_policy_source.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

// Kinds the fixtures hold no schema for (policy/v1 and networking.k8s.io/v1 are not among
// kubectl-validate's files here; cert-manager's and prometheus-operator's are CRDs). Each
// is checked field by field by a test below instead. A new kind must be added here on
// purpose.
const std::set<std::string> kNoOpenApiSchema = {
    "PodDisruptionBudget", "NetworkPolicy",  "Issuer",
    "Certificate",         "ServiceMonitor", "PrometheusRule"};

const std::vector<std::vector<std::string>>& variations() {
  static const std::vector<std::vector<std::string>> v = {
      {},
      {"--set", "certManager.enabled=true"},
      {"-f", std::string(COMMGATE_SOURCE_DIR) + "/tests/chart/testdata/values-netpol-policy.yaml",
       "--set",
       "monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,"
       "monitoring.grafanaDashboard.enabled=true,webhook.replicas=1"},
      {"--set", "kueue.enabled=true"},
  };
  return v;
}

std::string id(const json& o) {
  return o.value("kind", "?") + "/" + o["metadata"].value("name", "?");
}

class ChartSchemas : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::filesystem::is_directory(kube_openapi_dir()))
      api_ = new KubeOpenApi(kube_openapi_dir());
  }
  static void TearDownTestSuite() {
    delete api_;
    api_ = nullptr;
  }
  void SetUp() override {
    if (!api_) GTEST_SKIP() << "no OpenAPI fixtures at " << kube_openapi_dir();
  }
  static KubeOpenApi* api_;
};
KubeOpenApi* ChartSchemas::api_ = nullptr;

TEST_F(ChartSchemas, every_rendered_object_is_valid_against_the_kubernetes_schemas) {
  const json object_meta = api_->component("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  const json comm_policy = crd_schema(load_crd("commpolicies.commgate.io.yaml"));
  std::set<std::string> unchecked;
  for (const auto& args : variations()) {
    const auto r = render_chart(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const auto& o : r.objects) {
      const std::string kind = o["kind"];
      SCOPED_TRACE(id(o));
      EXPECT_TRUE(validate(object_meta, o["metadata"], "metadata").empty())
          << to_string(validate(object_meta, o["metadata"], "metadata"));
      if (kind == "CommPolicy") {
        EXPECT_TRUE(validate(comm_policy, o).empty()) << to_string(validate(comm_policy, o));
        continue;
      }
      const auto schema = api_->schema_for(o["apiVersion"], kind);
      if (!schema) {
        unchecked.insert(kind);
        continue;
      }
      const auto issues = validate(*schema, o);
      EXPECT_TRUE(issues.empty()) << to_string(issues);
    }
  }
  EXPECT_EQ(unchecked, kNoOpenApiSchema);
}

TEST_F(ChartSchemas, the_validator_catches_what_the_api_server_would_refuse) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json deploy = r.get("Deployment", "commgate-webhook");
  deploy["spec"]["replicas"] = "two";
  deploy["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "https";
  deploy["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["sheme"] =
      "HTTPS";
  const auto issues = validate(*api_->schema_for("apps/v1", "Deployment"), deploy);
  EXPECT_EQ(to_string(issues),
            "  spec.replicas: must be integer, got string\n"
            "  spec.template.spec.containers[0].ports[0].containerPort: must be integer, got "
            "string\n"
            "  spec.template.spec.containers[0].readinessProbe.httpGet.sheme: unknown field "
            "(not in the CRD schema)\n");
}

TEST_F(ChartSchemas, the_crds_are_valid_custom_resource_definitions) {
  const auto schema = api_->schema_for("apiextensions.k8s.io/v1", "CustomResourceDefinition");
  ASSERT_TRUE(schema);
  const auto r = render_chart({"--include-crds"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto crds = r.of_kind("CustomResourceDefinition");
  EXPECT_EQ(crds.size(), 3u) << "charts/commgate/crds/ holds the three CRDs";
  for (const auto& crd : crds) {
    SCOPED_TRACE(id(crd));
    const auto issues = validate(*schema, crd);
    EXPECT_TRUE(issues.empty()) << to_string(issues);
  }
}

// ---- Pod Security Standards, "restricted"
// (kubernetes.io/docs/concepts/security/pod-security-standards) ----

std::vector<std::string> restricted_violations(const json& pod) {
  std::vector<std::string> out;
  const json psc = pod.value("securityContext", json::object());
  for (const char* host : {"hostNetwork", "hostPID", "hostIPC"})
    if (pod.value(host, false)) out.push_back(std::string(host) + " is true");
  for (const auto& v : pod.value("volumes", json::array())) {
    static const std::set<std::string> allowed = {"name",
                                                  "configMap",
                                                  "csi",
                                                  "downwardAPI",
                                                  "emptyDir",
                                                  "ephemeral",
                                                  "persistentVolumeClaim",
                                                  "projected",
                                                  "secret"};
    for (const auto& [key, _] : v.items())
      if (!allowed.count(key)) out.push_back("volume " + v.value("name", "") + " is " + key);
  }
  const auto seccomp_ok = [](const json& sc) {
    const std::string t = sc.value("seccompProfile", json::object()).value("type", "");
    return t == "RuntimeDefault" || t == "Localhost";
  };
  std::vector<json> containers;
  for (const char* list : {"containers", "initContainers", "ephemeralContainers"})
    for (const auto& c : pod.value(list, json::array())) containers.push_back(c);
  for (const auto& c : containers) {
    const std::string name = c.value("name", "");
    const json sc = c.value("securityContext", json::object());
    if (sc.value("privileged", false)) out.push_back(name + ": privileged");
    if (sc.value("allowPrivilegeEscalation", true))
      out.push_back(name + ": allowPrivilegeEscalation is not false");
    if (!sc.value("runAsNonRoot", psc.value("runAsNonRoot", false)))
      out.push_back(name + ": runAsNonRoot is not true");
    if (sc.value("runAsUser", psc.value("runAsUser", 1)) == 0)
      out.push_back(name + ": runAsUser 0");
    if (!seccomp_ok(sc) && !seccomp_ok(psc))
      out.push_back(name + ": seccompProfile is not RuntimeDefault or Localhost");
    const json caps = sc.value("capabilities", json::object());
    const json drop = caps.value("drop", json::array());
    if (std::find(drop.begin(), drop.end(), "ALL") == drop.end())
      out.push_back(name + ": capabilities do not drop ALL");
    for (const auto& add : caps.value("add", json::array()))
      if (add != "NET_BIND_SERVICE") out.push_back(name + ": adds capability " + add.dump());
    for (const auto& p : c.value("ports", json::array()))
      if (p.value("hostPort", 0) != 0) out.push_back(name + ": hostPort");
    // The chart's own bar, beyond "restricted".
    if (!sc.value("readOnlyRootFilesystem", false))
      out.push_back(name + ": root filesystem is writable");
    if (!c.contains("resources") || !c["resources"].contains("requests"))
      out.push_back(name + ": no resource requests");
    if (!c.contains("livenessProbe") || !c.contains("readinessProbe"))
      out.push_back(name + ": no liveness or readiness probe");
  }
  return out;
}

std::vector<json> pod_specs(const RenderedChart& r) {
  std::vector<json> out;
  for (const auto& o : r.objects) {
    const std::string kind = o["kind"];
    if (kind == "Pod") out.push_back(o["spec"]);
    if (kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet" || kind == "Job")
      out.push_back(o["spec"]["template"]["spec"]);
  }
  return out;
}

TEST(ChartPodSecurity, every_pod_spec_meets_the_restricted_standard) {
  for (const auto& args : variations()) {
    const auto r = render_chart(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto pods = pod_specs(r);
    EXPECT_FALSE(pods.empty());
    for (const auto& pod : pods) {
      const auto v = restricted_violations(pod);
      EXPECT_TRUE(v.empty()) << ::testing::PrintToString(v);
    }
  }
}

TEST(ChartPodSecurity, the_check_finds_each_kind_of_violation) {
  const json pod = json::parse(R"({
    "hostNetwork": true,
    "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
    "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}],
                    "securityContext": {"privileged": true, "runAsUser": 0,
                                        "capabilities": {"add": ["SYS_ADMIN"]}}}]})");
  EXPECT_EQ(restricted_violations(pod),
            (std::vector<std::string>{
                "hostNetwork is true", "volume root is hostPath", "c: privileged",
                "c: allowPrivilegeEscalation is not false", "c: runAsNonRoot is not true",
                "c: runAsUser 0", "c: seccompProfile is not RuntimeDefault or Localhost",
                "c: capabilities do not drop ALL", "c: adds capability \"SYS_ADMIN\"",
                "c: hostPort", "c: root filesystem is writable", "c: no resource requests",
                "c: no liveness or readiness probe"}));
}

// ---- RBAC ----

using Grant = std::tuple<std::string, std::string, std::string>;  // (apiGroup, resource, verb)

std::set<Grant> grants_of(const json& role) {
  std::set<Grant> out;
  for (const auto& rule : role.value("rules", json::array()))
    for (const auto& g : rule.value("apiGroups", json::array()))
      for (const auto& res : rule.value("resources", json::array()))
        for (const auto& v : rule.value("verbs", json::array()))
          out.insert(Grant{g.get<std::string>(), res.get<std::string>(), v.get<std::string>()});
  return out;
}

// What the webhook's code calls: a list and a watch (kube::Watcher) of each collection
// KubePolicySource watches, from the paths it uses.
std::set<Grant> webhook_calls() {
  std::set<Grant> out;
  for (std::string path : {webhook::kCommPoliciesPath, webhook::kCommProfilesPath,
                           webhook::kNamespacesPath, webhook::kNodesPath}) {
    // "/api/v1/RESOURCE" or "/apis/GROUP/VERSION/RESOURCE"
    std::vector<std::string> parts;
    for (size_t at = 1, next; at <= path.size(); at = next + 1) {
      next = path.find('/', at);
      if (next == std::string::npos) next = path.size();
      parts.push_back(path.substr(at, next - at));
    }
    const std::string group = parts[0] == "api" ? "" : parts[1];
    for (const char* verb : {"list", "watch"}) out.insert({group, parts.back(), verb});
  }
  return out;
}

TEST(ChartRbac, no_role_has_a_wildcard) {
  for (const auto& args : variations()) {
    const auto r = render_chart(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* kind : {"Role", "ClusterRole"})
      for (const auto& role : r.of_kind(kind))
        for (const auto& rule : role.value("rules", json::array()))
          for (const char* field : {"apiGroups", "resources", "verbs", "nonResourceURLs"})
            for (const auto& v : rule.value(field, json::array()))
              EXPECT_EQ(v.get<std::string>().find('*'), std::string::npos)
                  << id(role) << " " << field << " " << v;
  }
}

TEST(ChartRbac, the_webhook_gets_exactly_what_its_code_calls) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(grants_of(r.get("ClusterRole", "commgate-webhook")), webhook_calls());
  for (const char* kind : {"Role", "RoleBinding"})
    for (const auto& o : r.of_kind(kind))
      EXPECT_EQ(o["metadata"]["labels"]["app.kubernetes.io/component"], "operator") << id(o);
  // Bound to the webhook's ServiceAccount, which its pods run as.
  const json& binding = r.get("ClusterRoleBinding", "commgate-webhook");
  EXPECT_EQ(binding["roleRef"]["name"], "commgate-webhook");
  EXPECT_EQ(
      binding["subjects"],
      json::parse(
          R"([{"kind":"ServiceAccount","name":"commgate-webhook","namespace":"commgate-system"}])"));
  EXPECT_EQ(
      r.get("Deployment", "commgate-webhook")["spec"]["template"]["spec"]["serviceAccountName"],
      "commgate-webhook");
  EXPECT_EQ(r.of_kind("ClusterRoleBinding").size(), 2u);  // the webhook's and the operator's
}

// What the operator's reconcile calls (OPERATOR_CONTRACT, issue 10), one row per grant:
// a rule more is a privilege nobody asked for, a rule less a 403 at run time.
const std::set<Grant> kOperatorGrants = {
    {"commgate.io", "trainingjobs", "get"},
    {"commgate.io", "trainingjobs", "list"},
    {"commgate.io", "trainingjobs", "watch"},
    {"commgate.io", "trainingjobs", "patch"},
    {"commgate.io", "trainingjobs/status", "update"},
    {"commgate.io", "trainingjobs/finalizers", "update"},
    {"commgate.io", "commprofiles", "get"},
    {"commgate.io", "commprofiles", "list"},
    {"commgate.io", "commprofiles", "watch"},
    {"commgate.io", "commprofiles", "create"},
    {"commgate.io", "commprofiles", "delete"},  // an empty one nobody waits on (#21)
    {"commgate.io", "commprofiles/status", "update"},
    {"commgate.io", "commpolicies", "get"},
    {"commgate.io", "commpolicies", "list"},
    {"commgate.io", "commpolicies", "watch"},
    {"commgate.io", "commpolicies/status", "update"},
    {"commgate.io", "commpolicies/status", "patch"},  // status.governance
    {"", "namespaces", "get"},
    {"", "namespaces", "list"},
    {"", "namespaces", "watch"},
    {"", "nodes", "list"},  // the pool check and a probe's size and backend (#20)
    {"", "nodes", "watch"},
    {"batch", "jobs", "create"},
    {"batch", "jobs", "get"},
    {"batch", "jobs", "list"},
    {"batch", "jobs", "watch"},
    {"batch", "jobs", "patch"},  // a training Job resized by someone else is restored
    {"batch", "jobs", "delete"},
    {"", "services", "create"},
    {"", "services", "delete"},
    {"", "pods", "get"},
    {"", "pods", "list"},
    {"", "pods", "watch"},
    {"events.k8s.io", "events", "create"},
    {"events.k8s.io", "events", "patch"},
};

TEST(ChartRbac, the_operator_gets_exactly_what_its_reconcile_calls) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& role = r.get("ClusterRole", "commgate-operator");
  EXPECT_EQ(grants_of(role), kOperatorGrants);
  for (const auto& rule : role["rules"]) {
    EXPECT_FALSE(rule.contains("resourceNames")) << rule.dump();
    EXPECT_FALSE(rule.contains("nonResourceURLs")) << rule.dump();
  }
  const json& binding = r.get("ClusterRoleBinding", "commgate-operator");
  EXPECT_EQ(binding["roleRef"], json::parse(R"({"apiGroup":"rbac.authorization.k8s.io",
      "kind":"ClusterRole","name":"commgate-operator"})"));
  EXPECT_EQ(binding["subjects"], json::parse(R"([{"kind":"ServiceAccount",
      "name":"commgate-operator","namespace":"commgate-system"}])"));
  EXPECT_EQ(
      r.get("Deployment", "commgate-operator")["spec"]["template"]["spec"]["serviceAccountName"],
      "commgate-operator");
}

// kueue.enabled (issue #23): the admission check's reads and its two status applies, on
// top of the rest; nothing of Kueue's without it (the test above).
const std::set<Grant> kKueueCheckGrants = {
    {"kueue.x-k8s.io", "workloads", "get"},
    {"kueue.x-k8s.io", "workloads", "list"},
    {"kueue.x-k8s.io", "workloads", "watch"},
    {"kueue.x-k8s.io", "workloads/status", "patch"},  // our entry, server-side apply
    {"kueue.x-k8s.io", "admissionchecks", "get"},
    {"kueue.x-k8s.io", "admissionchecks", "list"},
    {"kueue.x-k8s.io", "admissionchecks", "watch"},
    {"kueue.x-k8s.io", "admissionchecks/status", "patch"},  // the Active condition
    {"kueue.x-k8s.io", "resourceflavors", "get"},
    {"kueue.x-k8s.io", "resourceflavors", "list"},
    {"kueue.x-k8s.io", "resourceflavors", "watch"},
    {"kueue.x-k8s.io", "topologies", "get"},
    {"kueue.x-k8s.io", "topologies", "list"},
    {"kueue.x-k8s.io", "topologies", "watch"},
    // the job that owns a Workload (batch Jobs: kOperatorGrants)
    {"kubeflow.org", "pytorchjobs", "get"},
    {"trainer.kubeflow.org", "trainjobs", "get"},
    {"jobset.x-k8s.io", "jobsets", "get"},
};

TEST(ChartRbac, the_kueue_check_adds_exactly_its_grants_to_the_operator) {
  const auto r = render_chart({"--set", "kueue.enabled=true"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::set<Grant> want = kOperatorGrants;
  want.insert(kKueueCheckGrants.begin(), kKueueCheckGrants.end());
  EXPECT_EQ(grants_of(r.get("ClusterRole", "commgate-operator")), want);
  EXPECT_EQ(grants_of(r.get("ClusterRole", "commgate-webhook")), webhook_calls());
}

TEST(ChartRbac, the_operators_lease_is_granted_by_name_in_the_release_namespace_only) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& role = r.get("Role", "commgate-operator-leader-election");
  EXPECT_EQ(role["metadata"]["namespace"], "commgate-system");
  // get and update on the one Lease; create cannot name it (resourceNames never match a
  // create), so it is a rule of its own.
  EXPECT_EQ(role["rules"], json::parse(R"([
      {"apiGroups":["coordination.k8s.io"],"resources":["leases"],
       "resourceNames":["commgate-operator"],"verbs":["get","update"]},
      {"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["create"]}])"));
  const json& binding = r.get("RoleBinding", "commgate-operator-leader-election");
  EXPECT_EQ(binding["metadata"]["namespace"], "commgate-system");
  EXPECT_EQ(binding["roleRef"]["kind"], "Role");
  EXPECT_EQ(binding["roleRef"]["name"], "commgate-operator-leader-election");
  EXPECT_EQ(binding["subjects"][0]["name"], "commgate-operator");
  // That the operator's own Lease name is this one: chart_operator_flags_test.cpp.
}

// Nodes are read (list, watch: the pool check, issue #20), never written.
TEST(ChartRbac, no_role_grants_secrets_configmaps_rbac_or_a_write_of_nodes) {
  for (const auto& args : variations()) {
    const auto r = render_chart(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const char* kind : {"Role", "ClusterRole"})
      for (const auto& role : r.of_kind(kind))
        for (const auto& [group, resource, verb] : grants_of(role)) {
          // Roles for people: the researchers' edit role (aggregated into the built-in
          // edit, which grants deletecollection wherever it grants delete) may empty a
          // namespace's TrainingJobs, and commgate-researcher, bound instead of edit,
          // writes the ConfigMaps a pod template mounts. commgate's own identities do
          // neither.
          const std::string component =
              role["metadata"]["labels"].value("app.kubernetes.io/component", "");
          const bool for_people =
              component == "researcher-access" || component == "researcher-role";
          EXPECT_TRUE(resource != "secrets" && (for_people || resource != "configmaps") &&
                      (resource != "nodes" || verb == "list" || verb == "watch"))
              << id(role) << " grants " << verb << " " << resource;
          EXPECT_NE(group, "rbac.authorization.k8s.io") << id(role);
          if (!for_people) EXPECT_NE(verb, "deletecollection") << id(role);
          EXPECT_NE(verb, "escalate") << id(role);
          EXPECT_NE(verb, "impersonate") << id(role);
        }
  }
}

// ---- kinds without an OpenAPI schema here, field by field ----

TEST(ChartObjects, disruption_budget_and_spread_keep_the_webhook_up) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& pdb = r.get("PodDisruptionBudget", "commgate-webhook");
  EXPECT_EQ(pdb["apiVersion"], "policy/v1");
  EXPECT_EQ(pdb["spec"], json::parse(R"({"minAvailable":1,"selector":{"matchLabels":{
      "app.kubernetes.io/component":"webhook","app.kubernetes.io/instance":"commgate",
      "app.kubernetes.io/name":"commgate"}}})"));
  const json& deploy = r.get("Deployment", "commgate-webhook");
  EXPECT_EQ(deploy["spec"]["selector"]["matchLabels"], pdb["spec"]["selector"]["matchLabels"]);
  EXPECT_EQ(r.get("Service", "commgate-webhook")["spec"]["selector"],
            pdb["spec"]["selector"]["matchLabels"]);
  const json& spread = deploy["spec"]["template"]["spec"]["topologySpreadConstraints"][0];
  EXPECT_EQ(spread["topologyKey"], "kubernetes.io/hostname");
  EXPECT_EQ(spread["labelSelector"]["matchLabels"], pdb["spec"]["selector"]["matchLabels"]);
  EXPECT_EQ(deploy["spec"]["replicas"], 2);
}

TEST(ChartObjects, disruption_budget_and_spread_keep_a_standby_operator) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& pdb = r.get("PodDisruptionBudget", "commgate-operator");
  EXPECT_EQ(pdb["apiVersion"], "policy/v1");
  EXPECT_EQ(pdb["spec"], json::parse(R"({"minAvailable":1,"selector":{"matchLabels":{
      "app.kubernetes.io/component":"operator","app.kubernetes.io/instance":"commgate",
      "app.kubernetes.io/name":"commgate"}}})"));
  const json& deploy = r.get("Deployment", "commgate-operator");
  EXPECT_EQ(deploy["spec"]["replicas"], 2);
  EXPECT_EQ(deploy["spec"]["selector"]["matchLabels"], pdb["spec"]["selector"]["matchLabels"]);
  EXPECT_EQ(r.get("Service", "commgate-operator-metrics")["spec"]["selector"],
            pdb["spec"]["selector"]["matchLabels"]);
  const json& spread = deploy["spec"]["template"]["spec"]["topologySpreadConstraints"][0];
  EXPECT_EQ(spread["topologyKey"], "kubernetes.io/hostname");
  EXPECT_EQ(spread["labelSelector"]["matchLabels"], pdb["spec"]["selector"]["matchLabels"]);
  // The webhook's selector does not catch operator pods (nor the other way round).
  EXPECT_NE(r.get("PodDisruptionBudget", "commgate-webhook")["spec"]["selector"],
            pdb["spec"]["selector"]);

  const auto three = render_chart({"--set",
                                   "operator.replicas=3,operator.podDisruptionBudget."
                                   "minAvailable=2,operator.topologySpread."
                                   "whenUnsatisfiable=DoNotSchedule"});
  ASSERT_EQ(three.exit_code, 0) << three.output;
  EXPECT_EQ(three.get("Deployment", "commgate-operator")["spec"]["replicas"], 3);
  EXPECT_EQ(three.get("PodDisruptionBudget", "commgate-operator")["spec"]["minAvailable"], 2);
  EXPECT_EQ(three.get("Deployment",
                      "commgate-operator")["spec"]["template"]["spec"]["topologySpreadConstraints"]
                                          [0]["whenUnsatisfiable"],
            "DoNotSchedule");
}

TEST(ChartPodSecurity, the_operator_pod_is_restricted_and_probed_over_https) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& pod = r.get("Deployment", "commgate-operator")["spec"]["template"]["spec"];
  EXPECT_EQ(restricted_violations(pod), std::vector<std::string>{});
  const json& c = pod["containers"][0];
  EXPECT_EQ(c["livenessProbe"]["httpGet"], json::parse(R"({"path":"/healthz","port":"https",
      "scheme":"HTTPS"})"));
  EXPECT_EQ(c["readinessProbe"]["httpGet"], json::parse(R"({"path":"/readyz","port":"https",
      "scheme":"HTTPS"})"));
  EXPECT_EQ(c["ports"], json::parse(R"([{"name":"https","containerPort":8443,"protocol":"TCP"}])"));
  EXPECT_EQ(pod["securityContext"]["runAsUser"], 65532);
}

TEST(ChartObjects, network_policy_admits_only_the_api_server_and_scrapers_to_the_webhook_port) {
  const auto r = render_chart(
      {"-f", std::string(COMMGATE_SOURCE_DIR) + "/tests/chart/testdata/values-netpol-policy.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& np = r.get("NetworkPolicy", "commgate-webhook");
  EXPECT_EQ(np["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(np["spec"]["policyTypes"], json::parse(R"(["Ingress"])"));
  EXPECT_EQ(np["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"], "webhook");
  EXPECT_EQ(np["spec"]["ingress"], json::parse(R"([{
      "from": [{"ipBlock": {"cidr": "10.0.0.0/24"}}, {"ipBlock": {"cidr": "10.0.1.10/32"}},
               {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
      "ports": [{"protocol": "TCP", "port": 9443}]}])"));
}

TEST(ChartObjects, cert_manager_certificate_covers_the_service_names_and_is_injected) {
  const auto r = render_chart({"--set", "certManager.enabled=true"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& cert = r.get("Certificate", "commgate-webhook");
  EXPECT_EQ(cert["apiVersion"], "cert-manager.io/v1");
  EXPECT_EQ(cert["spec"]["secretName"], "commgate-webhook-tls");
  EXPECT_EQ(cert["spec"]["dnsNames"], json::parse(R"(["commgate-webhook",
      "commgate-webhook.commgate-system", "commgate-webhook.commgate-system.svc",
      "commgate-webhook.commgate-system.svc.cluster.local"])"));
  EXPECT_EQ(cert["spec"]["issuerRef"]["name"], "commgate-webhook-selfsigned");
  EXPECT_EQ(r.get("Issuer", "commgate-webhook-selfsigned")["spec"],
            json::parse(R"({"selfSigned":{}})"));
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})
    for (const auto& config : r.of_kind(kind)) {
      EXPECT_EQ(config["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                "commgate-system/commgate-webhook");
      for (const auto& hook : config["webhooks"])
        EXPECT_FALSE(hook["clientConfig"].contains("caBundle")) << id(config);
    }
  const auto secrets = r.of_kind("Secret");
  ASSERT_EQ(secrets.size(), 1u) << "cert-manager writes the certificates' Secrets";
  EXPECT_EQ(secrets[0]["metadata"]["name"], "commgate-decision-key");
}

TEST(ChartObjects, monitoring_objects_point_at_the_webhook) {
  const auto r = render_chart({"--set",
                               "monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule."
                               "enabled=true,monitoring.grafanaDashboard.enabled=true"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& op = r.get("ServiceMonitor", "commgate-operator");
  EXPECT_EQ(op["spec"]["selector"]["matchLabels"],
            r.get("Service", "commgate-operator-metrics")["spec"]["selector"]);
  EXPECT_EQ(op["spec"]["endpoints"][0]["tlsConfig"]["serverName"],
            "commgate-operator-metrics.commgate-system.svc");
  EXPECT_EQ(op["spec"]["endpoints"][0]["tlsConfig"]["ca"]["secret"]["name"],
            "commgate-operator-tls");
  const json& sm = r.get("ServiceMonitor", "commgate-webhook");
  EXPECT_EQ(sm["apiVersion"], "monitoring.coreos.com/v1");
  EXPECT_EQ(sm["spec"]["selector"]["matchLabels"],
            r.get("Service", "commgate-webhook")["spec"]["selector"]);
  EXPECT_EQ(sm["spec"]["endpoints"][0]["port"], "https");
  EXPECT_EQ(sm["spec"]["endpoints"][0]["tlsConfig"]["serverName"],
            "commgate-webhook.commgate-system.svc");
  const json& rule = r.get("PrometheusRule", "commgate");
  std::set<std::string> alerts;
  for (const auto& a : rule["spec"]["groups"][0]["rules"]) {
    alerts.insert(a["alert"].get<std::string>());
    EXPECT_NE(
        a["expr"].get<std::string>().find(R"(job="commgate-webhook",namespace="commgate-system")"),
        std::string::npos)
        << a.dump();
  }
  EXPECT_EQ(alerts, (std::set<std::string>{"CommgateWebhookDown", "CommgateWebhookErrors",
                                           "CommgateWebhookSlow", "CommgateManyDenials",
                                           "CommgateWatchUnhealthy", "CommgateRejectedObjects",
                                           "CommgateWebhookCertificateExpiring"}));
  // The operator's, on its metrics Service's job and metric families its /metrics has
  // (docs/operator.md).
  ASSERT_EQ(rule["spec"]["groups"].size(), 2u);
  EXPECT_EQ(rule["spec"]["groups"][1]["name"], "commgate-operator");
  std::set<std::string> operator_alerts;
  for (const auto& a : rule["spec"]["groups"][1]["rules"]) {
    operator_alerts.insert(a["alert"].get<std::string>());
    const std::string expr = a["expr"];
    EXPECT_NE(expr.find(R"(job="commgate-operator-metrics",namespace="commgate-system")"),
              std::string::npos)
        << expr;
    EXPECT_NE(expr.find("commgate_operator_"), std::string::npos) << expr;
  }
  EXPECT_EQ(operator_alerts,
            (std::set<std::string>{"CommgateOperatorNoLeader", "CommgateOperatorReconcileErrors",
                                   "CommgateProbeFailures", "CommgateOperatorWatchUnhealthy",
                                   "CommgateOperatorCertificateExpiring"}));
  // Prometheus's own template braces survive Helm's.
  EXPECT_NE(rule.dump().find("{{ $labels.reason }}"), std::string::npos);
  const json& cm = r.get("ConfigMap", "commgate-dashboard");
  EXPECT_EQ(cm["metadata"]["labels"]["grafana_dashboard"], "1");
  const json dashboard = json::parse(cm["data"]["commgate.json"].get<std::string>());
  EXPECT_EQ(dashboard["uid"], "commgate-overview");
  EXPECT_GE(dashboard["panels"].size(), 10u);
  // The operator's panels read the families its /metrics declares (docs/operator.md).
  std::string exprs;
  for (const auto& panel : dashboard["panels"])
    for (const auto& t : panel["targets"]) exprs += t["expr"].get<std::string>() + "\n";
  for (const char* family :
       {"commgate_operator_decisions_total", "commgate_operator_probe_duration_seconds_sum",
        "commgate_operator_probe_failures_total", "commgate_operator_leader",
        "commgate_operator_reconcile_errors_total", "commgate_operator_watch_errors_total"})
    EXPECT_NE(exprs.find(family), std::string::npos) << family;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
