// End to end: the rendered chart applied with the real kubectl to the simulated cluster,
// and the real `commgate webhook` run as the chart's Deployment would run it (its
// container's arguments, the chart's TLS Secret as its certificate files, the sim's
// kubeconfig instead of the in-cluster service account). The sim calls it through the
// chart's webhook configurations: the Service they name and the caBundle the chart
// generated, verified as kube-apiserver does. The real `commgate operator` runs the same
// way with its container's arguments and takes the Lease the chart's Role names.
//
// The sim runs with `--authorization rbac` (ApiServerOptions::authorization): the chart's
// Roles and bindings, as applied, decide every request of a service account; kubectl here
// is the admin (system:masters, always allowed).
//
// Shortcuts, kept here because they make these checks fast, independent of root and
// focused on one thing each: the test starts the webhook and the operator itself with a
// kubeconfig (not the pod's in-cluster service account), maps the TLS mount path by hand,
// registers where the webhook listens (ApiServer::register_service, which wins over the
// Service's selector), and labels namespaces with kubernetes.io/metadata.name as
// kube-apiserver would. chart_deploy_sim_test.cpp runs the same chart without the first
// three: the sim's Deployment controller and kubelet run the pods, and the webhook is
// reached through its Service.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/comm_profile.h"
#include "sim/api_server.h"
#include "sim/cluster.h"
#include "sim/rbac_authorizer.h"
#include "tests/chart/chart_render.h"
#include "tests/chart/chart_sim_fixture.h"
#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

class ChartOnSim : public ChartSimTest {
 protected:
  void SetUp() override {
    if (!fs::exists(COMMGATE_KUBECTL)) GTEST_SKIP() << "no kubectl";
    start_sim(30s);
    ASSERT_NO_FATAL_FAILURE(render({"--include-crds"}));
  }

  // Installs as `helm install` does: CRDs first, then the release's objects in Helm's
  // order, with the webhook running before its configurations make the sim call it.
  void install() {
    std::vector<json> crds, rest;
    for (const auto& o : chart_.objects)
      (o["kind"] == "CustomResourceDefinition" ? crds : rest).push_back(o);
    ASSERT_EQ(crds.size(), 3u);
    const auto c = apply(crds, "crds");
    ASSERT_EQ(c.code, 0) << c.output;
    const auto ns =
        apply({labelled_namespace("commgate-system"), labelled_namespace("nlp")}, "namespaces");
    ASSERT_EQ(ns.code, 0) << ns.output;

    const fs::path tls = mount_secret("commgate-webhook-tls");
    const json& container =
        chart_.get("Deployment", "commgate-webhook")["spec"]["template"]["spec"]["containers"][0];
    webhook_ = std::make_unique<ChildProcess>(
        local_argv(container, tls, kubeconfig_of(kWebhookUser)), dir_ + "/webhook.log");
    const uint16_t port =
        webhook_->wait_for_port(std::regex("listening on 127\\.0\\.0\\.1:([0-9]+)"));
    ASSERT_NE(port, 0) << webhook_->output();
    const json& service = chart_.get("MutatingWebhookConfiguration",
                                     "commgate")["webhooks"][0]["clientConfig"]["service"];
    api_.register_service(service["name"], service["namespace"],
                          "127.0.0.1:" + std::to_string(port));

    const auto r = apply(rest, "release");
    ASSERT_EQ(r.code, 0) << r.output;
    for (const auto& o : rest) {
      EXPECT_NE(r.output.find("/" + o["metadata"]["name"].get<std::string>() + " created"),
                std::string::npos)
          << o["kind"] << " " << o["metadata"]["name"] << "\n"
          << r.output;
    }
  }

  // The chart's operator as its Deployment runs it: its container's arguments, its
  // Secret's certificate, the downward-API environment, its ServiceAccount's identity.
  // Returns the port it serves /healthz /readyz /metrics on (0: it did not start).
  uint16_t start_operator() {
    const json& pod = chart_.get("Deployment", "commgate-operator")["spec"]["template"]["spec"];
    const json& container = pod["containers"][0];
    EXPECT_EQ(container["env"][0]["name"], "POD_NAME");
    EXPECT_EQ(container["env"][1]["name"], "POD_NAMESPACE");
    setenv("POD_NAME", "commgate-operator-5c7d9-x2kq4", 1);
    setenv("POD_NAMESPACE", "commgate-system", 1);
    operator_tls_ = mount_secret(pod["volumes"][0]["secret"]["secretName"]);
    operator_ = std::make_unique<ChildProcess>(
        local_argv(container, operator_tls_, kubeconfig_of(kOperatorUser)), dir_ + "/operator.log");
    unsetenv("POD_NAME");
    unsetenv("POD_NAMESPACE");
    return operator_->wait_for_port(
        std::regex("serving /healthz /readyz /metrics on [^ ]*:([0-9]+)"));
  }

  // GET https://<the metrics Service's name>:port/<path> with the chart's CA, as Prometheus
  // or the kubelet's probe would; the body, or nullopt when curl failed (HTTP >= 400 too).
  std::optional<std::string> operator_get(uint16_t port, const std::string& path) {
    const json& service = chart_.get("Service", "commgate-operator-metrics");
    const std::string host = service["metadata"]["name"].get<std::string>() + "." +
                             service["metadata"]["namespace"].get<std::string>() + ".svc";
    ChildProcess curl({"/usr/bin/curl", "-sS", "--fail", "--max-time", "5", "--cacert",
                       (operator_tls_ / "ca.crt").string(), "--resolve",
                       host + ":" + std::to_string(port) + ":127.0.0.1",
                       "https://" + host + ":" + std::to_string(port) + path},
                      dir_ + "/curl-" + std::to_string(++calls_) + ".out");
    const int code = curl.wait_exit(10s);
    if (code != 0) return std::nullopt;
    return curl.output();
  }

  std::unique_ptr<ChildProcess> webhook_, operator_;
  fs::path operator_tls_;
  int calls_ = 0;
};

TEST_F(ChartOnSim, kubectl_applies_every_rendered_object) {
  ASSERT_NO_FATAL_FAILURE(install());
  const auto get = kubectl(
      {"get", "deployment,service,serviceaccount,poddisruptionbudget,secret,role,rolebinding", "-n",
       "commgate-system", "-o", "name"});
  ASSERT_EQ(get.code, 0) << get.output;
  for (const char* want :
       {"deployment.apps/commgate-webhook", "service/commgate-webhook",
        "serviceaccount/commgate-webhook", "poddisruptionbudget.policy/commgate-webhook",
        "secret/commgate-webhook-tls", "deployment.apps/commgate-operator",
        "service/commgate-operator-metrics", "serviceaccount/commgate-operator",
        "poddisruptionbudget.policy/commgate-operator", "secret/commgate-operator-tls",
        "role.rbac.authorization.k8s.io/commgate-operator-leader-election",
        "rolebinding.rbac.authorization.k8s.io/commgate-operator-leader-election"})
    EXPECT_NE(get.output.find(want), std::string::npos) << want << "\n" << get.output;
  // A second apply of the same objects changes nothing, as `helm upgrade` with the same
  // values would not (the certificate aside, which lookup keeps on a real upgrade).
  std::vector<json> same;
  for (const auto& o : chart_.objects)
    if (o["kind"] == "ClusterRole" || o["kind"] == "Deployment") same.push_back(o);
  const auto again = apply(same, "again");
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_NE(again.output.find("clusterrole.rbac.authorization.k8s.io/commgate-webhook unchanged"),
            std::string::npos)
      << again.output;
}

// The RBAC objects as the sim stored them (read back with kubectl, as an authorizer's
// informer would) grant the operator's ServiceAccount its requests and nothing more.
TEST_F(ChartOnSim, the_stored_rbac_authorizes_the_operator_as_rendered) {
  ASSERT_NO_FATAL_FAILURE(install());
  const auto got = kubectl({"get", "clusterroles,clusterrolebindings,roles,rolebindings", "-A",
                            "-l", "app.kubernetes.io/instance=commgate", "-o", "json"});
  ASSERT_EQ(got.code, 0) << got.output;
  const auto rbac =
      sim::RbacObjects::from(json::parse(got.output)["items"].get<std::vector<json>>());
  // The operator's, the webhook's, the researchers' view, edit and policy reader, and
  // commgate-researcher.
  EXPECT_EQ(rbac.cluster_roles.size(), 6u);
  EXPECT_EQ(rbac.roles.size(), 1u);
  const auto op = sim::service_account_user("commgate-system", "commgate-operator");
  const auto request = [](std::string verb, std::string group, std::string resource, std::string ns,
                          std::string name, std::string sub = "") {
    sim::RequestAttributes r;
    r.verb = std::move(verb);
    r.api_group = std::move(group);
    r.resource = std::move(resource);
    r.ns = std::move(ns);
    r.name = std::move(name);
    r.subresource = std::move(sub);
    return r;
  };
  EXPECT_TRUE(sim::authorize(op, request("create", "batch", "jobs", "nlp", ""), rbac).allowed);
  EXPECT_TRUE(sim::authorize(
                  op, request("update", "commgate.io", "trainingjobs", "nlp", "b", "status"), rbac)
                  .allowed);
  EXPECT_TRUE(sim::authorize(op,
                             request("update", "coordination.k8s.io", "leases", "commgate-system",
                                     "commgate-operator"),
                             rbac)
                  .allowed);
  EXPECT_FALSE(
      sim::authorize(op, request("get", "", "secrets", "commgate-system", "commgate-operator-tls"),
                     rbac)
          .allowed);
}

// The real `commgate operator` with the chart's container arguments, its Secret's
// certificate and the downward-API environment of its pod: it starts, serves, and leads on
// the Lease the chart's Role grants it, in the release namespace.
TEST_F(ChartOnSim, the_charts_operator_starts_and_takes_the_lease_its_role_names) {
  ASSERT_NO_FATAL_FAILURE(install());
  const uint16_t port = start_operator();
  ASSERT_NE(port, 0) << operator_->output();
  ChildProcess& op = *operator_;

  const json& role = chart_.get("Role", "commgate-operator-leader-election");
  const std::string lease_name = role["rules"][0]["resourceNames"][0];
  json lease;
  ASSERT_TRUE(wait_until(
      [&] {
        const auto got = kubectl(
            {"get", "lease", "-n", role["metadata"]["namespace"], lease_name, "-o", "json"});
        if (got.code != 0) return false;
        lease = json::parse(got.output);
        return lease["spec"]
                   .value("holderIdentity", "")
                   .rfind("commgate-operator-5c7d9-x2kq4_", 0) == 0;
      },
      30s))
      << lease.dump(2) << op.output();

  // Scraped as the chart's ServiceMonitor has Prometheus do it: HTTPS to the metrics
  // Service's name, verified with the Secret's ca.crt. Every operator metric family the
  // chart's alerts and dashboard use is on /metrics.
  if (!fs::exists("/usr/bin/curl")) GTEST_SKIP() << "no /usr/bin/curl to scrape with";
  std::string metrics;
  ASSERT_TRUE(wait_until(
      [&] {
        const auto got = operator_get(port, "/metrics");
        metrics = got.value_or("");
        return got.has_value();
      },
      20s))
      << metrics;
  const auto monitored = render_chart({"--set",
                                       "monitoring.prometheusRule.enabled=true,monitoring."
                                       "grafanaDashboard.enabled=true"});
  ASSERT_EQ(monitored.exit_code, 0) << monitored.output;
  const std::string used = monitored.get("PrometheusRule", "commgate").dump() +
                           monitored.get("ConfigMap", "commgate-dashboard").dump();
  std::set<std::string> families;
  const std::regex family("commgate_operator_[a-z_]+");
  for (std::sregex_iterator m(used.begin(), used.end(), family), end; m != end; ++m)
    families.insert(m->str());
  EXPECT_GE(families.size(), 8u);
  for (const auto& f : families)
    EXPECT_NE(metrics.find(f), std::string::npos) << f << " is not on the operator's /metrics";
}

// Under RBAC, as its ServiceAccount with exactly the chart's rules: the operator lists and
// watches what it caches (ready), and for a job the webhook gated it creates the CommProfile
// and the pool's probe (Service and Job in the release namespace). A rule the chart lacks
// would show as a 403 in its log and no probe.
TEST_F(ChartOnSim, the_charts_rbac_lets_its_operator_probe_for_a_gated_job) {
  if (!fs::exists("/usr/bin/curl")) GTEST_SKIP() << "no /usr/bin/curl to ask /readyz with";
  ASSERT_NO_FATAL_FAILURE(install());
  // Two Nodes of the example's pool (objects only: no kubelet runs the probe's pods).
  const auto nodes = *api_.store().find_resource("", "v1", "nodes");
  for (const char* name : {"cpu-1", "cpu-2"}) {
    sim::NodeSpec spec = sim::node_spec(name);
    spec.labels["commgate.io/pool"] = "cpu-1gbe";
    api_.store().create(nodes, "", sim::node_object(spec));
  }
  const uint16_t port = start_operator();
  ASSERT_NE(port, 0) << operator_->output();
  ASSERT_TRUE(wait_until([&] { return operator_get(port, "/readyz").has_value(); }, 30s))
      << operator_->output();

  const std::string bert = source_path("examples/jobs/bert-large-350m.yaml");
  Result created{};
  ASSERT_TRUE(wait_until(
      [&] {
        created = kubectl({"apply", "-f", bert});
        return created.code == 0;
      },
      30s))
      << created.output << webhook_->output();
  Result probes{};
  ASSERT_TRUE(wait_until(
      [&] {
        probes = kubectl({"get", "jobs,services", "-n", "commgate-system", "-l",
                          "commgate.io/role=probe", "-o", "name"});
        return probes.code == 0 &&
               probes.output.find("job.batch/commgate-probe-pool-") != std::string::npos &&
               probes.output.find("service/commgate-probe-pool-") != std::string::npos;
      },
      30s))
      << probes.output << operator_->output();
  const auto profiles = kubectl({"get", "commprofiles", "-o", "name"});
  EXPECT_NE(profiles.output.find("commprofile.commgate.io/pool-"), std::string::npos)
      << profiles.output;
  EXPECT_EQ(operator_->output().find("forbidden"), std::string::npos) << operator_->output();
  // (The webhook starts before the release's RBAC is applied, so its first lists are 403s
  // it retries, as in a real install; the gate above shows it got its rules.)
}

TEST_F(ChartOnSim, the_sim_calls_the_webhook_through_the_charts_service_and_ca) {
  ASSERT_NO_FATAL_FAILURE(install());
  const std::string bert = source_path("examples/jobs/bert-large-350m.yaml");
  // Ready once its watches (through the sim, with the chart's CRDs) have listed; until then
  // it answers "not loaded" and failurePolicy Fail refuses.
  Result dry{};
  ASSERT_TRUE(wait_until(
      [&] {
        dry = kubectl({"apply", "--dry-run=server", "-f", bert});
        return dry.code == 0;
      },
      30s))
      << dry.output << webhook_->output();
  // No measurement of the pool yet: the webhook gates the job (suspended until measured).
  const auto created = kubectl({"apply", "-f", bert});
  ASSERT_EQ(created.code, 0) << created.output;
  const auto got = kubectl({"get", "tj", "-n", "nlp", "bert-large", "-o", "json"});
  ASSERT_EQ(got.code, 0) << got.output;
  const json job = json::parse(got.output);
  EXPECT_EQ(job["spec"]["suspend"], true) << job.dump(2);
  EXPECT_EQ(job["metadata"]["annotations"].value("commgate.io/decision", ""), "Gate")
      << job.dump(2);
}

TEST_F(ChartOnSim, the_release_namespace_is_never_sent_to_the_webhook) {
  ASSERT_NO_FATAL_FAILURE(install());
  std::string text = read_file(source_path("examples/jobs/bert-large-350m.yaml"));
  text = std::regex_replace(text, std::regex("namespace: nlp"), "namespace: commgate-system");
  std::ofstream(dir_ + "/in-release-ns.yaml") << text;
  // Even before the webhook is ready (it would refuse), a job here is admitted untouched.
  const auto r = kubectl({"apply", "-f", dir_ + "/in-release-ns.yaml"});
  ASSERT_EQ(r.code, 0) << r.output;
  const json job = json::parse(
      kubectl({"get", "tj", "-n", "commgate-system", "bert-large", "-o", "json"}).output);
  EXPECT_FALSE(
      job["metadata"].value("annotations", json::object()).contains("commgate.io/decision"))
      << job.dump(2);
}

// ---- kueue.enabled: the check on the sim's Kueue stand-in (issue #23) ----

// Kueue's queues for three pools: h100 (measured fast), slow (measured slow) and a10 (not
// measured), a ClusterQueue and LocalQueue for each, all listing our AdmissionCheck (no
// parameters: each Workload is held to its namespace's policy, the chart's default), and
// one more check whose parameters name a CommPolicy that does not exist.
std::string kueue_queues() {
  std::string out = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: comm-check
spec:
  controllerName: commgate.io/comm-check
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: comm-check-missing-policy
spec:
  controllerName: commgate.io/comm-check
  parameters:
    apiGroup: commgate.io
    kind: CommPolicy
    name: no-such-policy
)";
  for (const std::string pool : {"h100", "slow", "a10"}) {
    out += R"(---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: )" +
           pool + R"(
spec:
  nodeLabels:
    commgate.io/gpu: )" +
           pool + R"(
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: )" +
           pool + R"(
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["nvidia.com/gpu"]
    flavors:
    - name: )" +
           pool + R"(
      resources:
      - name: nvidia.com/gpu
        nominalQuota: 8
  admissionChecksStrategy:
    admissionChecks:
    - name: comm-check
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: )" +
           pool + R"(
  namespace: nlp
spec:
  clusterQueue: )" +
           pool + "\n";
  }
  return out;
}

// A batch Job of `pods` one-GPU pods queued to `queue`, naming the model the profiles
// measured (25M parameters, batch 32, adamw).
std::string kueue_job(const std::string& name, const std::string& queue, int pods) {
  return R"(apiVersion: batch/v1
kind: Job
metadata:
  name: )" +
         name + R"(
  namespace: nlp
  labels:
    kueue.x-k8s.io/queue-name: )" +
         queue + R"(
  annotations:
    commgate.io/parameters: 25M
    commgate.io/batch-size: "32"
    commgate.io/optimizer: adamw
spec:
  suspend: true
  parallelism: )" +
         std::to_string(pods) + R"(
  completions: )" +
         std::to_string(pods) + R"(
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: busybox
        resources:
          limits:
            nvidia.com/gpu: 1
)";
}

// With kueue.enabled, the chart's operator, as its ServiceAccount under exactly the chart's
// RBAC, serves Kueue AdmissionChecks on the sim's Kueue stand-in: our check turns Active
// and one naming a missing CommPolicy Active=False; a Job queued to the fast pool is
// decided Ready from its CommProfile, so Kueue admits it and unsuspends the Job; the same
// Job on the slow pool is Rejected with the count that would pass; on the unmeasured pool
// the Workload waits Pending while the operator creates the pool's probe. A rule the chart
// lacks would show as "forbidden" in the operator's log.
TEST_F(ChartOnSim, with_kueue_enabled_the_operator_decides_kueue_workloads) {
  if (!fs::exists("/usr/bin/curl")) GTEST_SKIP() << "no /usr/bin/curl to ask /readyz with";
  ASSERT_NO_FATAL_FAILURE(render({"--include-crds", "--set", "kueue.enabled=true"}));
  ASSERT_NO_FATAL_FAILURE(install());
  ASSERT_NO_FATAL_FAILURE(create_kueue_crds());
  sim::SimCluster kueue(api_.store());
  kueue.start_kueue();

  // The pools' Nodes (objects only: no kubelet runs the probe's pods) and the two measured
  // pools' CommProfiles, as a probe of 4 nodes would have left them.
  const auto nodes = *api_.store().find_resource("", "v1", "nodes");
  const auto profiles = *api_.store().find_resource("commgate.io", "v1alpha1", "commprofiles");
  for (const auto& [pool, busbw] :
       std::vector<std::pair<std::string, double>>{{"h100", 10.0}, {"slow", 0.1}, {"a10", 0.0}}) {
    for (int i = 1; i <= 4; ++i) {
      sim::NodeSpec spec = sim::node_spec(pool + "-" + std::to_string(i), 1);
      spec.labels["commgate.io/gpu"] = pool;
      api_.store().create(nodes, "", sim::node_object(spec));
    }
    if (busbw == 0) continue;
    CommProfile profile;
    profile.node_selector = {{"commgate.io/gpu", pool}};
    profile.metadata.name = pool_name(profile.node_selector);
    const TimePoint now = std::chrono::system_clock::now();
    LinkRecord link;
    link.latency_us = 200;
    link.busbw_gbps = busbw;
    link.algbw_gbps = busbw / 1.5;
    link.nodes_probed = 4;
    link.measured_at = now;
    profile.status.link = link;
    ComputeStepRecord step;
    step.parameters = 25e6;
    step.batch_size = 32;
    step.optimizer = "adamw";
    step.step_time_ms = 300;
    step.forward_ms = 90;
    step.backward_ms = 180;
    step.optimizer_ms = 30;
    step.measured_at = now;
    profile.status.compute_steps.push_back(step);
    // Created, then its status written through the status subresource, as the operator
    // writes a probe's outcome (a create drops status).
    const json doc = to_json(profile);
    json stored = api_.store().create(profiles, "", doc);
    stored["status"] = doc["status"];
    api_.store().update(profiles, "", profile.metadata.name, stored, sim::WritePart::kStatus);
  }

  const uint16_t port = start_operator();
  ASSERT_NE(port, 0) << operator_->output();
  ASSERT_TRUE(wait_until([&] { return operator_get(port, "/readyz").has_value(); }, 30s))
      << operator_->output();
  std::ofstream(dir_ + "/queues.yaml") << kueue_queues();
  auto r = kubectl({"apply", "-f", dir_ + "/queues.yaml"});
  ASSERT_EQ(r.code, 0) << r.output;

  const auto jsonpath = [&](const std::vector<std::string>& what, const std::string& path) {
    std::vector<std::string> args = {"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "jsonpath=" + path});
    const auto got = kubectl(args);
    return got.code == 0 ? got.output : "error: " + got.output;
  };
  std::string out;
  const auto eventually = [&](const std::vector<std::string>& what, const std::string& path,
                              const std::string& want) {
    return wait_until(
        [&] {
          out = jsonpath(what, path);
          return out.find(want) != std::string::npos;
        },
        30s);
  };
  EXPECT_TRUE(eventually({"admissioncheck", "comm-check"},
                         "{.status.conditions[?(@.type=='Active')].status}", "True"))
      << out << operator_->output();
  EXPECT_TRUE(eventually({"admissioncheck", "comm-check-missing-policy"},
                         "{.status.conditions[?(@.type=='Active')].reason} "
                         "{.status.conditions[?(@.type=='Active')].message}",
                         "BadParametersRef spec.parameters.name: CommPolicy \"no-such-policy\""))
      << out << operator_->output();

  for (const auto& [name, queue] : std::vector<std::pair<std::string, std::string>>{
           {"fast", "h100"}, {"over", "slow"}, {"unmeasured", "a10"}}) {
    std::ofstream(dir_ + "/" + name + ".yaml") << kueue_job(name, queue, 2);
    r = kubectl({"apply", "-f", dir_ + "/" + name + ".yaml"});
    ASSERT_EQ(r.code, 0) << r.output;
  }
  // Each Job's Workload, by the Job's name (Kueue names it job-<name>-<hash>).
  const auto workload_of = [&](const std::string& job) {
    std::string name;
    wait_until(
        [&] {
          const auto got = kubectl({"get", "workloads", "-n", "nlp", "-o",
                                    "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}"});
          std::istringstream lines(got.output);
          for (std::string line; std::getline(lines, line);)
            if (line.rfind("job-" + job + "-", 0) == 0) name = line;
          return !name.empty();
        },
        30s);
    return name;
  };
  const std::string entry = "{.status.admissionChecks[?(@.name=='comm-check')]";

  const std::string fast = workload_of("fast");
  ASSERT_FALSE(fast.empty());
  EXPECT_TRUE(eventually({"workload", "-n", "nlp", fast}, entry + ".state}", "Ready"))
      << out << kubectl({"get", "commprofiles", "-o", "yaml"}).output << operator_->output();
  EXPECT_TRUE(eventually({"job", "-n", "nlp", "fast"}, "{.spec.suspend}", "false"))
      << "Kueue admits the Workload once every check is Ready: " << out;

  const std::string over = workload_of("over");
  ASSERT_FALSE(over.empty());
  // Rejected: Kueue deactivates the Workload (and resets the entry to Pending, "Previously:
  // Rejected"); the numbers stay in our Event on the Workload.
  EXPECT_TRUE(eventually({"workload", "-n", "nlp", over}, "{.spec.active}", "false"))
      << out << operator_->output();
  EXPECT_TRUE(eventually({"events", "-n", "nlp"},
                         "{.items[?(@.involvedObject.name=='" + over + "')].message}", "Rejected"))
      << out;
  EXPECT_NE(out.find("The largest count that passes is 1 node"), std::string::npos)
      << "the numbers: " << out;
  EXPECT_EQ(jsonpath({"job", "-n", "nlp", "over"}, "{.spec.suspend}"), "true");

  const std::string unmeasured = workload_of("unmeasured");
  ASSERT_FALSE(unmeasured.empty());
  EXPECT_TRUE(eventually({"jobs", "-n", "commgate-system", "-l", "commgate.io/role=probe"},
                         "{.items[*].metadata.name}", "commgate-probe-pool-"))
      << out << operator_->output();
  EXPECT_EQ(jsonpath({"workload", "-n", "nlp", unmeasured}, entry + ".state}"), "Pending");
  EXPECT_EQ(jsonpath({"job", "-n", "nlp", "unmeasured"}, "{.spec.suspend}"), "true");

  EXPECT_EQ(operator_->output().find("forbidden"), std::string::npos) << operator_->output();
  kueue.stop();
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
