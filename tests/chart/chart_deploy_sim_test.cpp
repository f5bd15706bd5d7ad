// End to end without shortcuts: the whole rendered chart applied with the real kubectl to
// the simulated cluster, which runs it as a cluster does. Its Deployment controller makes
// the ReplicaSets and pods; its kubelet runs the chart's `commgate/commgate` container as
// the local build's `commgate` (--image-entrypoint), writes the chart's TLS Secret into
// the pod (the args' /etc/commgate/tls paths lead there) and the pod's service-account
// volume, whose token is the one the sim knows for that ServiceAccount, bind-mounted at
// /var/run/secrets/kubernetes.io/serviceaccount in the pod's own mount namespace (root),
// so each binary uses the in-cluster config and RBAC decides its requests as its
// ServiceAccount; readiness probes on /readyz make the pods Ready and `kubectl rollout
// status` waits for both Deployments. The sim then calls the webhook through the
// rendered Service (selector, named targetPort) and caBundle, and the operator takes the
// Lease and decides the gated job (status.decision; its probe, unschedulable on nodes
// without the example's pool label, reported in the Probed condition).
//
// Left as in chart_sim_test.cpp: namespaces are labelled kubernetes.io/metadata.name by
// the test (kube-apiserver does it; the sim does not). One replica of each Deployment
// (--set webhook.replicas=1,operator.replicas=1): pods on host-network nodes share
// 127.0.0.1, so two replicas of one port would collide (docs/testing.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/api_server.h"
#include "sim/cluster.h"
#include "tests/chart/chart_render.h"
#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kOperatorUser = "system:serviceaccount:commgate-system:commgate-operator";
constexpr const char* kWebhookUser = "system:serviceaccount:commgate-system:commgate-webhook";

sim::ApiServerOptions rbac_options() {
  sim::ApiServerOptions options;
  options.authorization = sim::AuthorizationMode::kRbac;
  options.users = {sim::parse_user_flag(std::string("operator-sa-token=") + kOperatorUser),
                   sim::parse_user_flag(std::string("webhook-sa-token=") + kWebhookUser)};
  return options;
}

json labelled_namespace(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Namespace"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/metadata.name", name}}}}}};
}

class ChartDeployedOnSim : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(COMMGATE_KUBECTL)) GTEST_SKIP() << "no kubectl";
    if (geteuid() != 0)
      GTEST_SKIP() << "the pods' in-cluster config needs their mount namespaces (root)";
    api_.start();
    dir_ = api_.pki_dir();
    kubeconfig_ = dir_ + "/kubeconfig";
    std::ofstream(kubeconfig_) << api_.kubeconfig();
    sim::KubeletOptions kubelet;
    kubelet.work_dir = dir_ + "/pods";
    kubelet.image_entrypoints = {{"commgate/commgate", COMMGATE_BINARY}};
    kubelet.mount_namespaces = true;
    sim::point_pods_at(kubelet, api_, options_.users);
    cluster_ = std::make_unique<sim::SimCluster>(api_.store(), kubelet);
    cluster_->start();
    for (const char* node : {"sim-node-0", "sim-node-1"}) cluster_->add_node(sim::node_spec(node));
    chart_ = render_chart({"--include-crds", "--set", "webhook.replicas=1,operator.replicas=1"});
    ASSERT_EQ(chart_.exit_code, 0) << chart_.output;
  }
  void TearDown() override {
    if (cluster_) cluster_->stop();
  }

  struct Result {
    int code;
    std::string output;
  };
  Result kubectl(std::vector<std::string> args) {
    std::vector<std::string> argv = {COMMGATE_KUBECTL, "--kubeconfig",  kubeconfig_,
                                     "--cache-dir",    dir_ + "/cache", "--request-timeout=10s"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv, dir_ + "/kubectl-" + std::to_string(++calls_) + ".out");
    const int code = p.wait_exit(120s);
    return {code, p.output()};
  }
  Result apply(const std::vector<json>& objects, const std::string& name) {
    std::string stream;
    for (const auto& o : objects) stream += "---\n" + o.dump(2) + "\n";
    const std::string file = dir_ + "/" + name + ".yaml";
    std::ofstream(file) << stream;
    return kubectl({"apply", "-f", file});
  }
  // The logs of the pods of one of the chart's components (for failure messages).
  std::string logs(const std::string& component) {
    std::string out;
    for (const auto& entry : fs::recursive_directory_iterator(dir_ + "/pods"))
      if (entry.path().filename() == component + ".log")
        out += "== " + entry.path().string() + "\n" + read_file(entry.path());
    return out;
  }

  sim::ApiServerOptions options_ = rbac_options();
  sim::ApiServer api_{options_};
  std::unique_ptr<sim::SimCluster> cluster_;
  std::string dir_, kubeconfig_;
  RenderedChart chart_;
  int calls_ = 0;
};

TEST_F(ChartDeployedOnSim, the_applied_chart_runs_its_webhook_and_operator_as_a_cluster_would) {
  // As `helm install` does: CRDs first, then the release's objects (all of them at once).
  std::vector<json> crds, release;
  for (const auto& o : chart_.objects)
    (o["kind"] == "CustomResourceDefinition" ? crds : release).push_back(o);
  const auto c = apply(crds, "crds");
  ASSERT_EQ(c.code, 0) << c.output;
  const auto ns =
      apply({labelled_namespace("commgate-system"), labelled_namespace("nlp")}, "namespaces");
  ASSERT_EQ(ns.code, 0) << ns.output;
  const auto r = apply(release, "release");
  ASSERT_EQ(r.code, 0) << r.output;

  for (const char* deployment : {"deployment/commgate-webhook", "deployment/commgate-operator"}) {
    const auto rollout =
        kubectl({"rollout", "status", "-n", "commgate-system", deployment, "--timeout=90s"});
    ASSERT_EQ(rollout.code, 0) << deployment << "\n"
                               << rollout.output << logs("webhook") << logs("operator");
    EXPECT_NE(rollout.output.find("successfully rolled out"), std::string::npos);
  }

  // A researcher's job: the sim calls the webhook through the chart's Service (its
  // selector leads to the Ready webhook pod's named port) and verifies it with the
  // chart's caBundle; with no measurement yet the webhook gates it.
  const std::string bert = source_path("examples/jobs/bert-large-350m.yaml");
  Result created{};
  ASSERT_TRUE(wait_until(
      [&] {
        created = kubectl({"apply", "-f", bert});
        return created.code == 0;
      },
      30s))
      << created.output << logs("webhook");
  const json job =
      json::parse(kubectl({"get", "tj", "-n", "nlp", "bert-large", "-o", "json"}).output);
  EXPECT_EQ(job["spec"]["suspend"], true) << job.dump(2);
  EXPECT_EQ(job["metadata"]["annotations"].value("commgate.io/decision", ""), "Gate")
      << job.dump(2);

  // The operator pod, as its ServiceAccount under the chart's RBAC, leads on the Lease its
  // Role names and starts the measurement the gate waits for: the pool's probe.
  const json pods = json::parse(kubectl({"get", "pods", "-n", "commgate-system", "-l",
                                         "app.kubernetes.io/component=operator", "-o", "json"})
                                    .output);
  ASSERT_EQ(pods["items"].size(), 1u) << pods.dump(2);
  const std::string operator_pod = pods["items"][0]["metadata"]["name"];
  const json& role = chart_.get("Role", "commgate-operator-leader-election");
  const std::string lease_name = role["rules"][0]["resourceNames"][0];
  json lease;
  ASSERT_TRUE(wait_until(
      [&] {
        const auto got =
            kubectl({"get", "lease", "-n", "commgate-system", lease_name, "-o", "json"});
        if (got.code != 0) return false;
        lease = json::parse(got.output);
        return lease["spec"].value("holderIdentity", "").rfind(operator_pod + "_", 0) == 0;
      },
      30s))
      << lease.dump(2) << logs("operator");
  // It decides the job: the gate stands (status.decision), and the probe it created for
  // the pool (a Job in the release namespace, allowed by the chart's RBAC) is reported
  // as it fared on the sim: no node carries the example's pool label, so the scheduler's
  // message comes back in the Probed condition.
  json decided;
  ASSERT_TRUE(wait_until(
      [&] {
        decided =
            json::parse(kubectl({"get", "tj", "-n", "nlp", "bert-large", "-o", "json"}).output);
        const json status = decided.value("status", json::object());
        if (status.value("decision", json::object()).value("action", "") != "Gate") return false;
        for (const auto& cond : status.value("conditions", json::array()))
          if (cond.value("type", "") == "Probed" &&
              cond.value("reason", "") == "ProbeUnschedulable")
            return cond.value("message", "").find("didn't match Pod's node affinity/selector") !=
                   std::string::npos;
        return false;
      },
      30s))
      << decided.dump(2) << logs("operator");
  EXPECT_EQ(logs("operator").find("forbidden"), std::string::npos) << logs("operator");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
