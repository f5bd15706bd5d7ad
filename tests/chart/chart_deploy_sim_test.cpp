// End to end without shortcuts: the whole rendered chart, with its default values (two
// webhook and two operator replicas), applied with the real kubectl to the simulated
// cluster, which runs it as a cluster does. Its nodes are two scripts/netsim.sh network
// namespaces (198.18.0.1 and .2), so each pod binds the chart's ports in its node's
// namespace only and the two replicas of each Deployment, spread over the nodes by the
// chart's topologySpreadConstraints (the sim's scheduler honours them), do not collide.
// The Deployment controller makes the ReplicaSets and pods; the kubelet runs the chart's
// `commgate/commgate` container as the local build's `commgate` (--image-entrypoint)
// under `ip netns exec`, writes the chart's TLS Secret into the pod (the args'
// /etc/commgate/tls paths lead there) and the pod's service-account volume, whose token
// is the one the sim knows for that ServiceAccount, bind-mounted at
// /var/run/secrets/kubernetes.io/serviceaccount in the pod's own mount namespace, so each
// binary uses the in-cluster config (127.0.0.1:<port> inside the node's namespace, which
// the kubelet relays to the API server) and RBAC decides its requests as its
// ServiceAccount; readiness probes on /readyz, run inside the node's namespace, make the
// pods Ready and `kubectl rollout status` waits for both Deployments. The sim calls the
// webhook through the rendered Service (selector, named targetPort, its Ready pods in
// turn, dialled inside their node's namespace) and caBundle, and one operator takes the
// Lease and decides the gated job (status.decision; its probe, unschedulable on nodes
// without the example's pool label, reported in the Probed condition). Then the leader's
// pod is deleted and another replica leads and decides a second job; a webhook pod is
// deleted and admission still gates a third.
//
// With COMMGATE_POD_CONTAINERS=1 (ctest's chart.deploy_in_containers, label images) the
// same runs with the kubelet's container mode (sim/container_runtime.h): each pod runs in
// the image an admin would push (`commgate/commgate:test`, scripts/images-from-binaries.sh,
// the chart's image.tag=test) with podman, as the chart's securityContext says (user
// 65532, fsGroup, no capabilities, no privilege escalation, read-only root filesystem),
// its Secret volumes bind-mounted at their mountPaths with the chart's 0440 mode and the
// pod's fsGroup, its service-account token at the fixed path; the test checks from
// outside (/proc of the container's process, podman inspect) that they hold.
//
// Left as in chart_sim_test.cpp: namespaces are labelled kubernetes.io/metadata.name by
// the test (kube-apiserver does it; the sim does not). Root only (network and mount
// namespaces); skipped otherwise. Label netns.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/api_server.h"
#include "sim/cluster.h"
#include "sim/podman.h"
#include "tests/chart/chart_render.h"
#include "tests/chart/chart_sim_fixture.h"
#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

// Two emulated nodes (scripts/netsim.sh) for the test's lifetime, named after this process
// (netsim.sh reaps the leftovers of a killed run by that owner pid); removed by the
// destructor, also when the test failed.
class Netns {
 public:
  Netns() : prefix_("cd" + std::to_string(getpid() % 1000000)) {
    ok_ = std::system(command("up 2 1gbit").c_str()) == 0;
  }
  ~Netns() { [[maybe_unused]] int rc = std::system(command("down").c_str()); }
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;
  bool ok() const { return ok_; }
  std::string node_ns(int i) const { return prefix_ + "-n" + std::to_string(i); }

 private:
  std::string command(const std::string& args) const {
    return "NETSIM_PREFIX=" + prefix_ + " NETSIM_OWNER_PID=" + std::to_string(getpid()) + " " +
           COMMGATE_NETSIM_SCRIPT + " " + args + " >/dev/null";
  }
  std::string prefix_;
  bool ok_ = false;
};

class ChartDeployedOnSim : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(COMMGATE_KUBECTL)) GTEST_SKIP() << "no kubectl";
    if (geteuid() != 0)
      GTEST_SKIP() << "the nodes' network namespaces and the pods' mount namespaces need root";
    netns_ = std::make_unique<Netns>();
    ASSERT_TRUE(netns_->ok()) << "netsim.sh up failed";
    api_.start();
    dir_ = api_.pki_dir();
    kubectl_ = Kubectl::with_kubeconfig(COMMGATE_KUBECTL, dir_, api_.kubeconfig(), 120s);
    sim::KubeletOptions kubelet;
    kubelet.work_dir = dir_ + "/pods";
    if (in_containers_) {
      const auto podman = sim::run_podman(sim::default_podman_command(),
                                          {"image", "exists", "commgate/commgate:test"});
      if (podman.exit_code == 127) GTEST_SKIP() << "podman is not installed";
      ASSERT_EQ(podman.exit_code, 0)
          << "commgate/commgate:test is missing (the images.FromBinaries.build fixture makes it)";
      kubelet.podman = sim::default_podman_command();
      kubelet.podman_run_options = sim::default_podman_run_options();
    } else {
      kubelet.image_entrypoints = {{"commgate/commgate", COMMGATE_BINARY}};
      kubelet.mount_namespaces = true;
    }
    sim::point_pods_at(kubelet, api_, options_.users);
    cluster_ = std::make_unique<sim::SimCluster>(api_.store(), kubelet);
    cluster_->start();
    for (int i = 0; i < 2; ++i) {
      sim::NodeSpec node = sim::node_spec("sim-node-" + std::to_string(i));
      node.netns = netns_->node_ns(i);
      node.address = "198.18.0." + std::to_string(i + 1);
      // In containers, a pool of its own for the probe stage (the examples' pool is
      // bert-large's, whose 350M-parameter probe would take minutes).
      if (in_containers_) node.labels["commgate.io/pool"] = kImagesPool;
      cluster_->add_node(node);
    }
    // The defaults: 2 replicas of each (in containers, the test images' tag).
    chart_ = render_chart(
        in_containers_ ? std::vector<std::string>{"--include-crds", "--set", "image.tag=test"}
                       : std::vector<std::string>{"--include-crds"});
    ASSERT_EQ(chart_.exit_code, 0) << chart_.output;
  }
  void TearDown() override {
    if (cluster_) cluster_->stop();
  }

  using Result = KubectlResult;
  Result kubectl(const std::vector<std::string>& args) { return kubectl_.run(args); }
  Result apply(const std::vector<json>& objects, const std::string& name) {
    return apply_objects(kubectl_, dir_, objects, name);
  }
  // The logs of the pods of one of the chart's components (for failure messages).
  std::string logs(const std::string& component) {
    std::string out;
    for (const auto& entry : fs::recursive_directory_iterator(dir_ + "/pods"))
      if (entry.path().filename() == component + ".log")
        out += "== " + entry.path().string() + "\n" + read_file(entry.path());
    return out;
  }

  // The pods of a component, from `kubectl get pods -o json`.
  json pods_of(const std::string& component) {
    const auto got = kubectl({"get", "pods", "-n", "commgate-system", "-l",
                              "app.kubernetes.io/component=" + component, "-o", "json"});
    return got.code == 0 ? json::parse(got.output)["items"] : json::array();
  }
  // A copy of the bert-large example under another name, as a file to apply.
  std::string bert_named(const std::string& name) {
    std::string text = read_file(source_path("examples/jobs/bert-large-350m.yaml"));
    const std::string from = "name: bert-large\n";
    text.replace(text.find(from), from.size(), "name: " + name + "\n");
    const std::string file = dir_ + "/" + name + ".yaml";
    std::ofstream(file) << text;
    return file;
  }
  // The Lease's holder identity ("" when none or unreadable).
  std::string lease_holder(const std::string& lease_name) {
    const auto got = kubectl({"get", "lease", "-n", "commgate-system", lease_name, "-o", "json"});
    if (got.code != 0) return "";
    return json::parse(got.output)["spec"].value("holderIdentity", "");
  }
  // Whether the operator decided the job (status.decision, which only it writes): no node
  // carries the example's pool label, so it waits for its pool (PoolTooSmall, issue #20),
  // which the Admitted condition says.
  bool decided(const std::string& name, json& job) {
    const auto got = kubectl({"get", "tj", "-n", "nlp", name, "-o", "json"});
    if (got.code != 0) return false;
    job = json::parse(got.output);
    const json status = job.value("status", json::object());
    const json decision = status.value("decision", json::object());
    if (decision.value("action", "") != "Gate" || decision.value("reason", "") != "PoolTooSmall")
      return false;
    for (const auto& cond : status.value("conditions", json::array()))
      if (cond.value("type", "") == "Admitted" && cond.value("reason", "") == "PoolTooSmall")
        return cond.value("message", "").find("has no node (none matches the nodeSelector)") !=
               std::string::npos;
    return false;
  }
  // Applies a job file (with `retry`, until the webhook answers: its Service may still be
  // settling; else once, and admission must answer the first time) and returns the
  // created object.
  json create_job(const std::string& file, const std::string& name, bool retry) {
    Result created{};
    EXPECT_TRUE(wait_until(
        [&] {
          created = kubectl({"apply", "-f", file});
          return created.code == 0 || !retry;
        },
        30s));
    EXPECT_EQ(created.code, 0) << created.output << logs("webhook");
    const auto got = kubectl({"get", "tj", "-n", "nlp", name, "-o", "json"});
    return got.code == 0 ? json::parse(got.output) : json::object();
  }

  void probe_in_the_probe_image();
  // Container mode: the container's process as the runtime started it, checked from
  // outside: its uid and gid, capabilities, no_new_privs, and a read-only root.
  void expect_restricted_container(const json& pod) {
    const std::string name = "k8s_" + pod["spec"]["containers"][0].value("name", "") + "_" +
                             pod["metadata"].value("name", "") + "_commgate-system_" +
                             pod["metadata"].value("uid", "");
    const auto podman = sim::default_podman_command();
    auto inspect = sim::run_podman(
        podman, {"inspect", "--format", "{{.State.Pid}} {{.HostConfig.ReadonlyRootfs}}", name});
    ASSERT_EQ(inspect.exit_code, 0) << name << ": " << inspect.output;
    std::istringstream fields(inspect.output);
    std::string pid, read_only;
    fields >> pid >> read_only;
    EXPECT_EQ(read_only, "true") << name;
    const std::string status = read_file("/proc/" + pid + "/status");
    EXPECT_NE(status.find("Uid:\t65532\t65532\t65532\t65532"), std::string::npos) << status;
    EXPECT_NE(status.find("Gid:\t65532\t65532\t65532\t65532"), std::string::npos) << status;
    for (const char* set : {"CapEff", "CapPrm", "CapBnd"})
      EXPECT_NE(status.find(std::string(set) + ":\t0000000000000000"), std::string::npos)
          << set << "\n"
          << status;
    EXPECT_NE(status.find("NoNewPrivs:\t1"), std::string::npos) << status;
    EXPECT_NE(status.find("Groups:\t65532"), std::string::npos) << "fsGroup\n" << status;
  }

  static constexpr const char* kImagesPool = "in-images";
  const bool in_containers_ = std::getenv("COMMGATE_POD_CONTAINERS") != nullptr &&
                              std::string(std::getenv("COMMGATE_POD_CONTAINERS")) == "1";
  std::unique_ptr<Netns> netns_;  // first: removed after everything that runs in it
  sim::ApiServerOptions options_ = chart_sim_options();
  sim::ApiServer api_{options_};
  std::unique_ptr<sim::SimCluster> cluster_;
  std::string dir_;
  Kubectl kubectl_;
  RenderedChart chart_;
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
  // Two replicas of each, one per node (the chart's topology spread), each at its node's
  // address in the emulated network.
  for (const char* component : {"webhook", "operator"}) {
    const json pods = pods_of(component);
    ASSERT_EQ(pods.size(), 2u) << pods.dump(2);
    std::set<std::string> nodes, ips;
    for (const auto& p : pods) {
      nodes.insert(p["spec"].value("nodeName", ""));
      ips.insert(p["status"].value("podIP", ""));
    }
    EXPECT_EQ(nodes, (std::set<std::string>{"sim-node-0", "sim-node-1"})) << component;
    EXPECT_EQ(ips, (std::set<std::string>{"198.18.0.1", "198.18.0.2"})) << component;
    if (in_containers_)
      for (const auto& p : pods) expect_restricted_container(p);
  }

  // A researcher's job: the sim calls the webhook through the chart's Service (its
  // selector leads to the Ready webhook pods' named port, in their node's namespace) and
  // verifies it with the chart's caBundle; with no node of its pool the webhook gates it.
  const json job =
      create_job(source_path("examples/jobs/bert-large-350m.yaml"), "bert-large", true);
  EXPECT_EQ(job.value("spec", json::object()).value("suspend", false), true) << job.dump(2);
  EXPECT_EQ(job.value("metadata", json::object())
                .value("annotations", json::object())
                .value("commgate.io/decision", ""),
            "Gate")
      << job.dump(2);

  // One operator pod, as its ServiceAccount under the chart's RBAC, leads on the Lease its
  // Role names (the other stands by) and starts the measurement the gate waits for: the
  // pool's probe.
  const json& role = chart_.get("Role", "commgate-operator-leader-election");
  const std::string lease_name = role["rules"][0]["resourceNames"][0];
  std::set<std::string> operators;
  for (const auto& p : pods_of("operator")) operators.insert(p["metadata"]["name"]);
  auto pod_of_holder = [](const std::string& holder) {
    return holder.substr(0, holder.find('_'));  // "<pod>_<uid>"
  };
  std::string leader;
  ASSERT_TRUE(wait_until(
      [&] {
        leader = pod_of_holder(lease_holder(lease_name));
        return operators.count(leader) > 0;
      },
      30s))
      << leader << logs("operator");
  json decided_job;
  ASSERT_TRUE(wait_until([&] { return decided("bert-large", decided_job); }, 30s))
      << decided_job.dump(2) << logs("operator");

  // The leader's pod goes (as a node drain or a rollout would take it): it releases the
  // Lease on SIGTERM and another replica takes it, the standby or the leader's
  // replacement, whichever asks first (both do, as on a cluster), and decides the next job.
  const auto deleted = kubectl({"delete", "pod", "-n", "commgate-system", leader, "--wait=false"});
  ASSERT_EQ(deleted.code, 0) << deleted.output;
  std::string successor;
  ASSERT_TRUE(wait_until(
      [&] {
        successor = pod_of_holder(lease_holder(lease_name));
        if (successor.empty() || successor == leader) return false;
        for (const auto& p : pods_of("operator"))
          if (p["metadata"]["name"] == successor) return true;
        return false;
      },
      40s))
      << "holder: " << successor << "\n"
      << logs("operator");
  create_job(bert_named("bert-large-2"), "bert-large-2", false);
  ASSERT_TRUE(wait_until([&] { return decided("bert-large-2", decided_job); }, 30s))
      << decided_job.dump(2) << logs("operator");

  // A webhook pod goes: its Service leads to the other, and admission (failurePolicy
  // Fail) still gates a job while the replacement starts.
  const std::string webhook_pod = pods_of("webhook")[0]["metadata"]["name"];
  const auto gone =
      kubectl({"delete", "pod", "-n", "commgate-system", webhook_pod, "--wait=false"});
  ASSERT_EQ(gone.code, 0) << gone.output;
  const json third = create_job(bert_named("bert-large-3"), "bert-large-3", false);
  EXPECT_EQ(third.value("spec", json::object()).value("suspend", false), true) << third.dump(2);
  EXPECT_EQ(third.value("metadata", json::object())
                .value("annotations", json::object())
                .value("commgate.io/decision", ""),
            "Gate")
      << third.dump(2);
  for (const char* deployment : {"deployment/commgate-webhook", "deployment/commgate-operator"}) {
    const auto rollout =
        kubectl({"rollout", "status", "-n", "commgate-system", deployment, "--timeout=60s"});
    EXPECT_EQ(rollout.code, 0) << deployment << "\n"
                               << rollout.output << logs("webhook") << logs("operator");
  }
  EXPECT_EQ(logs("operator").find("forbidden"), std::string::npos) << logs("operator");
  if (in_containers_) probe_in_the_probe_image();
}

// The operator's probe Job in the image an admin would push (commgate/commgate-probe:test,
// restricted as the operator writes it), one rank per node over Gloo between the two
// containers, its result read from the pods' termination messages: ddp-tiny's pool is
// measured and the job decided from that measurement.
void ChartDeployedOnSim::probe_in_the_probe_image() {
  std::string text = read_file(source_path("examples/jobs/ddp-tiny.yaml"));
  const std::string from = "commgate.io/pool: cpu-1gbe";
  text.replace(text.find(from), from.size(), std::string("commgate.io/pool: ") + kImagesPool);
  std::ofstream(dir_ + "/ddp-tiny.yaml") << text;
  ASSERT_EQ(apply({labelled_namespace("vision")}, "vision").code, 0);
  const auto applied = kubectl({"apply", "-f", dir_ + "/ddp-tiny.yaml"});
  ASSERT_EQ(applied.code, 0) << applied.output;
  // The probe's pods, as the store saw them (the operator removes its Job once read).
  std::mutex mu;
  std::set<std::string> probe_images, succeeded_probe_pods;
  sim::WatchRequest watch;
  watch.ns = "commgate-system";
  watch.from = api_.store().resource_version();
  watch.deliver = [&](const sim::WatchEvent& e) {
    const json& labels = e.object["metadata"].value("labels", json::object());
    if (labels.value("commgate.io/role", "") != "probe") return true;
    std::lock_guard<std::mutex> lock(mu);
    probe_images.insert(e.object["spec"]["containers"][0].value("image", ""));
    if (e.object.value("status", json::object()).value("phase", "") == "Succeeded")
      succeeded_probe_pods.insert(e.object["metadata"].value("name", ""));
    return true;
  };
  const uint64_t watch_id =
      api_.store().watch(*api_.store().find_resource("", "v1", "pods"), std::move(watch));
  json job;
  ASSERT_TRUE(wait_until(
      [&] {
        const auto got = kubectl({"get", "tj", "-n", "vision", "ddp-tiny", "-o", "json"});
        if (got.code != 0) return false;
        job = json::parse(got.output);
        return !job.value("status", json::object())
                    .value("decision", json::object())
                    .value("predictions", json::array())
                    .empty();
      },
      240s))
      << job.dump(2) << logs("operator") << logs("probe");
  EXPECT_EQ(job["metadata"]["annotations"].value("commgate.io/decision", ""), "Downsize")
      << job.dump(2);
  api_.store().unwatch(watch_id);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(probe_images, (std::set<std::string>{"commgate/commgate-probe:test"}));
  EXPECT_EQ(succeeded_probe_pods.size(), 2u) << "one rank per node, both Succeeded";
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
