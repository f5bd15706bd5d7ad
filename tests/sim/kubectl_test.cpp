// End to end: the real kubectl (v1.32) against the simulated API server, as a user would
// drive a cluster. If kubectl reads our answers as it reads kube-apiserver's, the sim
// speaks the protocol.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sim/api_server.h"
#include "sim/cluster.h"
#include "tests/sim/kubectl_on_sim.h"
#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using namespace std::chrono_literals;

using testing::ChildProcess;
using testing::read_file;

using testing::wait_until;

class KubectlTest : public KubectlOnSim {
 protected:
  void SetUp() override {
    KubectlOnSim::SetUp();
    if (IsSkipped()) return;
    std::ofstream(dir_ + "/ns.yaml")
        << "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: vision\n";
  }

  void apply_example() {
    ASSERT_EQ(kubectl({"apply", "-f",
                       std::string(COMMGATE_SOURCE_DIR) + "/crds/trainingjobs.commgate.io.yaml"})
                  .code,
              0);
    ASSERT_EQ(kubectl({"apply", "-f", dir_ + "/ns.yaml"}).code, 0);
    Result r = kubectl(
        {"apply", "-f", std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/resnet50-5m.yaml"});
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("trainingjob.commgate.io/resnet-small created"), std::string::npos)
        << r.output;
  }
};

TEST_F(KubectlTest, apply_crd_and_trainingjob_then_get_shows_printer_columns) {
  apply_example();
  Result get = kubectl({"get", "tj", "-A"});
  ASSERT_EQ(get.code, 0) << get.output;
  EXPECT_EQ(
      get.output.rfind("NAMESPACE   NAME           NODES   REQUESTED   COMMSHARE   DECISION   "
                       "PHASE   AGE",
                       0),
      0u)
      << get.output;
  // NODES is spec.numNodes; REQUESTED and DECISION (the webhook's annotations) are empty
  // without the webhook.
  EXPECT_NE(get.output.find("vision      resnet-small   4"), std::string::npos) << get.output;

  Result as_json = kubectl({"get", "tj", "-n", "vision", "resnet-small", "-o", "json"});
  ASSERT_EQ(as_json.code, 0) << as_json.output;
  json obj = json::parse(as_json.output);
  EXPECT_EQ(obj["spec"]["numNodes"], 4);
  EXPECT_EQ(obj["metadata"]["generation"], 1);
  EXPECT_TRUE(
      obj["metadata"]["annotations"].contains("kubectl.kubernetes.io/last-applied-configuration"));

  // A second apply of the same files is a no-op patch.
  Result crd_again = kubectl(
      {"apply", "-f", std::string(COMMGATE_SOURCE_DIR) + "/crds/trainingjobs.commgate.io.yaml"});
  EXPECT_NE(crd_again.output.find("trainingjobs.commgate.io unchanged"), std::string::npos)
      << crd_again.output;
  Result again = kubectl(
      {"apply", "-f", std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/resnet50-5m.yaml"});
  EXPECT_NE(again.output.find("resnet-small unchanged"), std::string::npos) << again.output;
}

TEST_F(KubectlTest, patch_status_scale_and_delete) {
  apply_example();
  Result patch = kubectl({"patch", "tj", "-n", "vision", "resnet-small", "--type", "merge", "-p",
                          R"({"spec":{"numNodes":2}})"});
  ASSERT_EQ(patch.code, 0) << patch.output;
  Result status =
      kubectl({"patch", "tj", "-n", "vision", "resnet-small", "--subresource=status", "--type",
               "merge", "-p", R"({"status":{"phase":"Running","admittedNodes":2}})"});
  ASSERT_EQ(status.code, 0) << status.output;
  Result scale = kubectl({"scale", "tj", "-n", "vision", "resnet-small", "--replicas=3"});
  ASSERT_EQ(scale.code, 0) << scale.output;
  json obj =
      json::parse(kubectl({"get", "tj", "-n", "vision", "resnet-small", "-o", "json"}).output);
  EXPECT_EQ(obj["spec"]["numNodes"], 3);
  EXPECT_EQ(obj["status"]["phase"], "Running");
  EXPECT_EQ(obj["metadata"]["generation"], 3);
  Result del = kubectl({"delete", "tj", "-n", "vision", "resnet-small"});
  ASSERT_EQ(del.code, 0) << del.output;
  EXPECT_NE(del.output.find("\"resnet-small\" deleted"), std::string::npos) << del.output;
  Result gone = kubectl({"get", "tj", "-n", "vision", "resnet-small"});
  EXPECT_NE(gone.code, 0);
  EXPECT_NE(gone.output.find(R"(trainingjobs.commgate.io "resnet-small" not found)"),
            std::string::npos)
      << gone.output;
}

TEST_F(KubectlTest, get_watch_sees_a_change) {
  apply_example();
  ChildProcess watch({COMMGATE_KUBECTL, "--kubeconfig", kubectl_.kubeconfig().string(),
                      "--cache-dir", dir_ + "/cache", "get", "tj", "-n", "vision", "-w"},
                     dir_ + "/watch.out");
  ASSERT_TRUE(watch.started());
  ASSERT_TRUE(wait_until([&] { return watch.output().find("resnet-small") != std::string::npos; }))
      << watch.output();
  ASSERT_EQ(kubectl({"patch", "tj", "-n", "vision", "resnet-small", "--subresource=status",
                     "--type", "merge", "-p", R"({"status":{"phase":"Probing"}})"})
                .code,
            0);
  EXPECT_TRUE(wait_until([&] { return watch.output().find("Probing") != std::string::npos; }))
      << watch.output();
}

TEST_F(KubectlTest, wait_for_condition_and_jsonpath_then_delete_by_file) {
  apply_example();
  Result established = kubectl(
      {"wait", "--for=condition=established", "--timeout=10s", "crd/trainingjobs.commgate.io"});
  ASSERT_EQ(established.code, 0) << established.output;
  EXPECT_NE(established.output.find("condition met"), std::string::npos) << established.output;
  ASSERT_EQ(kubectl({"patch", "tj", "-n", "vision", "resnet-small", "--subresource=status",
                     "--type", "merge", "-p", R"({"status":{"phase":"Succeeded"}})"})
                .code,
            0);
  Result phase = kubectl({"wait", "-n", "vision", "tj/resnet-small", "--timeout=10s",
                          "--for=jsonpath={.status.phase}=Succeeded"});
  ASSERT_EQ(phase.code, 0) << phase.output;
  Result describe = kubectl({"describe", "tj", "-n", "vision", "resnet-small"});
  ASSERT_EQ(describe.code, 0) << describe.output;
  EXPECT_NE(describe.output.find("Phase:  Succeeded"), std::string::npos) << describe.output;
  Result del = kubectl(
      {"delete", "-f", std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/resnet50-5m.yaml"});
  ASSERT_EQ(del.code, 0) << del.output;
  Result none = kubectl({"get", "tj", "-A"});
  EXPECT_NE(none.output.find("No resources found"), std::string::npos) << none.output;
}

TEST_F(KubectlTest, apply_into_a_missing_namespace_reports_not_found) {
  ASSERT_EQ(kubectl({"apply", "-f",
                     std::string(COMMGATE_SOURCE_DIR) + "/crds/trainingjobs.commgate.io.yaml"})
                .code,
            0);
  Result r = kubectl(
      {"apply", "-f", std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/resnet50-5m.yaml"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find(R"(namespaces "vision" not found)"), std::string::npos) << r.output;
}

TEST(KubectlBinary, commgate_sim_writes_a_kubeconfig_kubectl_uses) {
  if (!std::filesystem::exists(COMMGATE_KUBECTL)) GTEST_SKIP() << "no kubectl";
  const auto dir =
      std::filesystem::temp_directory_path() / ("commgate-sim-bin-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string kubeconfig = (dir / "kubeconfig").string();
  {
    ChildProcess sim({COMMGATE_SIM_BIN, "--port", "0", "--kubeconfig-out", kubeconfig},
                     (dir / "sim.out").string());
    ASSERT_TRUE(sim.started());
    ASSERT_TRUE(wait_until([&] {
      return sim.output().find("listening on https://127.0.0.1:") != std::string::npos;
    })) << sim.output();
    ChildProcess get({COMMGATE_KUBECTL, "--kubeconfig", kubeconfig, "--cache-dir",
                      (dir / "cache").string(), "get", "namespaces"},
                     (dir / "get.out").string());
    EXPECT_EQ(get.wait_exit(20s), 0) << get.output();
    EXPECT_NE(get.output().find("kube-system   Active"), std::string::npos) << get.output();
    EXPECT_EQ(get.output().rfind("NAME          STATUS   AGE", 0), 0u) << get.output();
    // Issue #19: the kubeconfig carries a bearer token, so only its owner may read it.
    namespace fs = std::filesystem;
    EXPECT_EQ(fs::status(kubeconfig).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);
  }
  std::filesystem::remove_all(dir);
}

// The workload side: a Job's pods scheduled, run as processes and described by kubectl.
TEST_F(KubectlTest, job_pods_show_node_and_termination_message_and_go_with_the_job) {
  SimCluster cluster(api_.store());
  cluster.start();
  cluster.add_node(node_spec("n1", 1));
  cluster.add_node(node_spec("n2", 1));
  std::ofstream(dir_ + "/job.yaml") << R"(apiVersion: batch/v1
kind: Job
metadata:
  name: probe
spec:
  completionMode: Indexed
  completions: 2
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: probe
        image: commgate/probe
        command: ["sh", "-c", "sleep 1; echo rank $JOB_COMPLETION_INDEX done > /dev/termination-log"]
        resources:
          limits:
            nvidia.com/gpu: 1
)";
  // The pods run a second, as probe ranks run together: a pod that finished at once would
  // free its node's GPU before its sibling is scheduled, and both could land on n1.
  ASSERT_EQ(kubectl({"apply", "-f", dir_ + "/job.yaml"}).code, 0);
  Result wait = kubectl({"wait", "--for=condition=complete", "job/probe", "--timeout=20s"});
  ASSERT_EQ(wait.code, 0) << wait.output;
  Result wide = kubectl({"get", "pods", "-o", "wide"});
  ASSERT_EQ(wide.code, 0) << wide.output;
  // Upstream's pod columns: READY, STATUS (a finished container's reason), RESTARTS, AGE,
  // and -o wide's IP and NODE after them.
  EXPECT_EQ(
      wide.output.rfind("NAME            READY   STATUS      RESTARTS   AGE   IP          NODE", 0),
      0u)
      << wide.output;
  for (const char* node : {"n1", "n2"})
    EXPECT_TRUE(std::regex_search(
        wide.output,
        std::regex(std::string("0/1 +Completed +0 +[0-9]+s +127\\.0\\.0\\.1 +") + node)))
        << wide.output;
  EXPECT_NE(wide.output.find(" IP "), std::string::npos)
      << "the trial looked for it: " << wide.output;
  Result describe = kubectl({"describe", "pods", "-l", "job-name=probe"});
  ASSERT_EQ(describe.code, 0) << describe.output;
  for (const char* want : {"Message:  rank 0 done", "Message:  rank 1 done",
                           "Controlled By:  Job/probe", "Reason:   Completed"})
    EXPECT_NE(describe.output.find(want), std::string::npos) << want << "\n" << describe.output;
  EXPECT_NE(describe.output.find("/127.0.0.1"), std::string::npos) << describe.output;
  // kubectl deletes with propagationPolicy=Background: the pods go with the Job.
  ASSERT_EQ(kubectl({"delete", "job", "probe"}).code, 0);
  Result left = kubectl({"get", "pods", "-o", "name"});
  EXPECT_EQ(left.output.find("pod/probe-"), std::string::npos) << left.output;
}

// Issue #20 defect 5: `kubectl logs`, which docs/researcher.md tells researchers to run,
// answered NotFound.
TEST_F(KubectlTest, logs_of_a_pods_container_with_tail_and_the_errors_upstream_gives) {
  SimCluster cluster(api_.store());
  api_.serve_pod_logs_from(cluster.work_dir());
  cluster.start();
  cluster.add_node(node_spec("n1", 0));
  std::ofstream(dir_ + "/pod.yaml") << R"(apiVersion: v1
kind: Pod
metadata:
  name: talk
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "echo one; echo two; echo three"]
  - name: side
    image: busybox
    command: ["sh", "-c", "echo side"]
)";
  ASSERT_EQ(kubectl({"apply", "-f", dir_ + "/pod.yaml"}).code, 0);
  Result wait =
      kubectl({"wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/talk", "--timeout=20s"});
  ASSERT_EQ(wait.code, 0) << wait.output;
  Result all = kubectl({"logs", "talk", "-c", "main"});
  ASSERT_EQ(all.code, 0) << all.output;
  EXPECT_EQ(all.output, "one\ntwo\nthree\n");
  EXPECT_EQ(kubectl({"logs", "talk", "-c", "main", "--tail=2"}).output, "two\nthree\n");
  EXPECT_EQ(kubectl({"logs", "talk", "-c", "side"}).output, "side\n");
  // Without -c kubectl picks the first container and says so.
  Result first = kubectl({"logs", "talk"});
  EXPECT_NE(first.output.find("Defaulted container \"main\" out of: main, side"), std::string::npos)
      << first.output;
  Result unknown = kubectl({"logs", "talk", "-c", "nope"});
  EXPECT_NE(unknown.output.find("container nope is not valid for pod talk"), std::string::npos)
      << unknown.output;
  Result missing = kubectl({"logs", "nobody"});
  EXPECT_NE(missing.output.find("pods \"nobody\" not found"), std::string::npos) << missing.output;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
