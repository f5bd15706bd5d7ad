// The Deployment and ReplicaSet controllers with real processes (sim/deployment_controller.*):
// the real kubectl applies a Deployment to the sim's API server, waits with `kubectl
// rollout status`, scales it, rolls out a new template and deletes it; the objects are read
// back as kubectl shows them.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/api_server.h"
#include "sim/cluster.h"
#include "tests/support/kubectl.h"
#include "tests/support/wait.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

json a_deployment(const std::string& name, int replicas, const std::string& version) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "Deployment"},
          {"metadata", {{"name", name}, {"namespace", "default"}}},
          {"spec",
           {{"replicas", replicas},
            {"selector", {{"matchLabels", {{"app", name}}}}},
            {"template",
             {{"metadata", {{"labels", {{"app", name}}}}},
              {"spec",
               {{"containers",
                 {{{"name", "main"},
                   {"image", "busybox:" + version},
                   {"command", {"sleep", "600"}}}}}}}}}}}};
}

class DeploymentOnSim : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(COMMGATE_KUBECTL)) GTEST_SKIP() << "no kubectl";
    api_.start();
    cluster_ = std::make_unique<sim::SimCluster>(api_.store());
    cluster_->start();
    cluster_->add_node(sim::node_spec("sim-node-0"));
    dir_ = api_.pki_dir();
    kubectl_ = Kubectl::with_kubeconfig(COMMGATE_KUBECTL, dir_, api_.kubeconfig(), 60s);
  }
  void TearDown() override {
    if (cluster_) cluster_->stop();
  }

  using Result = KubectlResult;
  Result kubectl(const std::vector<std::string>& args) { return kubectl_.run(args); }
  Result apply(const json& object, const std::vector<std::string>& flags = {}) {
    const std::string file = dir_ + "/apply-" + std::to_string(++calls_) + ".json";
    std::ofstream(file) << object.dump(2);
    std::vector<std::string> args = {"apply", "-f", file};
    args.insert(args.end(), flags.begin(), flags.end());
    return kubectl(args);
  }
  json get_json(const std::vector<std::string>& what) {
    std::vector<std::string> args = {"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-n", "default", "-o", "json"});
    const auto r = kubectl(args);
    EXPECT_EQ(r.code, 0) << r.output;
    return r.code == 0 ? json::parse(r.output) : json::object();
  }
  // The running (not deleting) pods of `app`.
  std::vector<json> live_pods(const std::string& app) {
    std::vector<json> out;
    const json pods = get_json({"pods", "-l", "app=" + app});
    for (const auto& p : pods["items"])
      if (p["status"].value("phase", "") == "Running" &&
          !p["metadata"].contains("deletionTimestamp"))
        out.push_back(p);
    return out;
  }

  sim::ApiServer api_;
  std::unique_ptr<sim::SimCluster> cluster_;
  std::string dir_;
  Kubectl kubectl_;
  int calls_ = 0;
};

TEST_F(DeploymentOnSim, rollout_status_waits_for_a_replica_set_of_running_pods) {
  const auto applied = apply(a_deployment("web", 2, "1"));
  ASSERT_EQ(applied.code, 0) << applied.output;
  const auto rollout = kubectl({"rollout", "status", "deployment/web", "--timeout=30s"});
  ASSERT_EQ(rollout.code, 0) << rollout.output;
  EXPECT_NE(rollout.output.find("deployment \"web\" successfully rolled out"), std::string::npos)
      << rollout.output;

  const json d = get_json({"deployment", "web"});
  EXPECT_EQ(d["status"]["replicas"], 2) << d.dump(2);
  EXPECT_EQ(d["status"]["readyReplicas"], 2);
  EXPECT_EQ(d["status"]["availableReplicas"], 2);
  EXPECT_EQ(d["status"]["updatedReplicas"], 2);
  EXPECT_EQ(d["status"]["observedGeneration"], d["metadata"]["generation"]);
  EXPECT_EQ(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1");
  ASSERT_EQ(d["status"]["conditions"].size(), 2u);
  EXPECT_EQ(d["status"]["conditions"][0]["reason"], "MinimumReplicasAvailable");
  EXPECT_EQ(d["status"]["conditions"][1]["reason"], "NewReplicaSetAvailable");

  const json sets = get_json({"replicasets", "-l", "app=web"});
  ASSERT_EQ(sets["items"].size(), 1u) << sets.dump(2);
  const json& rs = sets["items"][0];
  const std::string hash = rs["metadata"]["labels"]["pod-template-hash"];
  EXPECT_EQ(rs["metadata"]["name"], "web-" + hash);
  EXPECT_EQ(rs["metadata"]["ownerReferences"][0]["uid"], d["metadata"]["uid"]);
  const auto pods = live_pods("web");
  ASSERT_EQ(pods.size(), 2u);
  for (const auto& p : pods) {
    EXPECT_EQ(p["metadata"]["name"].get<std::string>().rfind("web-" + hash + "-", 0), 0u);
    EXPECT_EQ(p["metadata"]["labels"]["pod-template-hash"], hash);
    EXPECT_EQ(p["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
  }
  const auto table = kubectl({"get", "deploy", "web"});
  EXPECT_NE(table.output.find("UP-TO-DATE"), std::string::npos) << table.output;
}

TEST_F(DeploymentOnSim, scaling_adds_and_removes_pods) {
  ASSERT_EQ(apply(a_deployment("web", 1, "1")).code, 0);
  ASSERT_EQ(kubectl({"rollout", "status", "deployment/web", "--timeout=30s"}).code, 0);
  ASSERT_EQ(apply(a_deployment("web", 3, "1")).code, 0);
  ASSERT_EQ(kubectl({"rollout", "status", "deployment/web", "--timeout=30s"}).code, 0);
  EXPECT_EQ(live_pods("web").size(), 3u);
  ASSERT_EQ(apply(a_deployment("web", 1, "1")).code, 0);
  ASSERT_TRUE(wait_until(
      [&] {
        return get_json({"pods", "-l", "app=web"})["items"].size() == 1;
      },
      20s));
  EXPECT_EQ(get_json({"replicasets", "-l", "app=web"})["items"].size(), 1u);
}

// Issue #20 defect 5: `kubectl scale deploy` went through a scale subresource the sim did
// not serve.
TEST_F(DeploymentOnSim, kubectl_scale_goes_through_the_scale_subresource) {
  ASSERT_EQ(apply(a_deployment("web", 1, "1")).code, 0);
  ASSERT_EQ(kubectl({"rollout", "status", "deployment/web", "--timeout=30s"}).code, 0);
  const auto scaled = kubectl({"scale", "deployment", "web", "--replicas=3"});
  ASSERT_EQ(scaled.code, 0) << scaled.output;
  EXPECT_NE(scaled.output.find("deployment.apps/web scaled"), std::string::npos) << scaled.output;
  ASSERT_EQ(kubectl({"rollout", "status", "deployment/web", "--timeout=30s"}).code, 0);
  EXPECT_EQ(live_pods("web").size(), 3u);
  const json scale = get_json({"deployment", "web", "--subresource=scale"});
  EXPECT_EQ(scale["kind"], "Scale");
  EXPECT_EQ(scale["spec"]["replicas"], 3);
  EXPECT_EQ(scale["status"]["replicas"], 3);
}

TEST_F(DeploymentOnSim, a_new_template_rolls_out_a_new_replica_set_and_empties_the_old) {
  ASSERT_EQ(apply(a_deployment("web", 2, "1")).code, 0);
  ASSERT_EQ(kubectl({"rollout", "status", "deployment/web", "--timeout=30s"}).code, 0);
  const std::string old_hash = get_json(
      {"replicasets", "-l", "app=web"})["items"][0]["metadata"]["labels"]["pod-template-hash"];
  // Server-side apply: the sim applies kubectl's strategic merge patches as merge patches,
  // which would replace the containers list with one that has the image but no command.
  const auto changed = apply(a_deployment("web", 2, "2"), {"--server-side", "--force-conflicts"});
  ASSERT_EQ(changed.code, 0) << changed.output;
  const auto rollout = kubectl({"rollout", "status", "deployment/web", "--timeout=30s"});
  ASSERT_EQ(rollout.code, 0) << rollout.output;
  const json sets = get_json({"replicasets", "-l", "app=web"});
  ASSERT_EQ(sets["items"].size(), 2u) << sets.dump(2);
  for (const auto& rs : sets["items"]) {
    const bool old = rs["metadata"]["labels"]["pod-template-hash"] == old_hash;
    EXPECT_EQ(rs["spec"]["replicas"], old ? 0 : 2) << rs.dump(2);
    EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], old ? "1" : "2");
  }
  ASSERT_TRUE(wait_until(
      [&] {
        const json pods = get_json({"pods", "-l", "app=web"});
        if (pods["items"].size() != 2) return false;
        for (const auto& p : pods["items"])
          if (p["spec"]["containers"][0]["image"] != "busybox:2") return false;
        return true;
      },
      20s));
}

TEST_F(DeploymentOnSim, deleting_the_deployment_removes_its_replica_sets_and_pods) {
  ASSERT_EQ(apply(a_deployment("web", 2, "1")).code, 0);
  ASSERT_EQ(kubectl({"rollout", "status", "deployment/web", "--timeout=30s"}).code, 0);
  const auto deleted = kubectl({"delete", "deployment", "web", "--wait=true"});
  ASSERT_EQ(deleted.code, 0) << deleted.output;
  ASSERT_TRUE(wait_until(
      [&] {
        return get_json({"replicasets,pods", "-l", "app=web"})["items"].empty();
      },
      20s));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
