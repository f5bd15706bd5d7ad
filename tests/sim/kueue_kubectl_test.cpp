// The Kueue stand-in (sim/kueue_controller.h) driven by the real kubectl: the upstream
// CRDs and queue objects created with `kubectl create -f`, `kubectl get workloads` with
// the CRD's printer columns, and an admission check's entry set with
// `kubectl apply --server-side --subresource=status --force-conflicts`, which admits
// the Workload and starts its Job.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "sim/cluster.h"
#include "tests/sim/kubectl_on_sim.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

const char* kKueueQueues = R"(apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: h100
spec:
  nodeLabels:
    commgate.io/gpu: h100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: comm-check
spec:
  controllerName: commgate.io/comm-check
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: gpus
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
    flavors:
    - name: h100
      resources:
      - name: cpu
        nominalQuota: 64
      - name: memory
        nominalQuota: 512Gi
      - name: nvidia.com/gpu
        nominalQuota: 32
  admissionChecksStrategy:
    admissionChecks:
    - name: comm-check
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: user-queue
  namespace: team
spec:
  clusterQueue: gpus
---
apiVersion: batch/v1
kind: Job
metadata:
  name: sample
  namespace: team
  labels:
    kueue.x-k8s.io/queue-name: user-queue
spec:
  suspend: true
  parallelism: 2
  completions: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        resources:
          limits:
            nvidia.com/gpu: 1
)";

class KueueKubectlTest : public KubectlOnSim {
 protected:
  void SetUp() override {
    KubectlOnSim::SetUp();
    if (IsSkipped()) return;
    cluster_ = std::make_unique<SimCluster>(api_.store());
    cluster_->start_kueue();
  }
  void TearDown() override {
    if (cluster_) cluster_->stop();
  }
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  // Runs `args` until its output contains `text` (10 s at most); the last output.
  std::string wait_for_output(const std::vector<std::string>& args, const std::string& text) {
    std::string last;
    for (int i = 0; i < 100; ++i) {
      last = kubectl(args).output;
      if (last.find(text) != std::string::npos) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "no \"" << text << "\" in the output of kubectl: " << last;
    return last;
  }
  std::unique_ptr<SimCluster> cluster_;
};

TEST_F(KueueKubectlTest, get_workloads_and_apply_a_check_entry) {
  const auto fixtures =
      std::filesystem::path(COMMGATE_SOURCE_DIR) / "../shared/fixtures/ecosystem/kueue-v0.19.2";
  // `create`, not `apply`: the Workload CRD is larger than the last-applied annotation may be.
  for (const char* crd :
       {"kueue.x-k8s.io_resourceflavors.yaml", "kueue.x-k8s.io_admissionchecks.yaml",
        "kueue.x-k8s.io_clusterqueues.yaml", "kueue.x-k8s.io_localqueues.yaml",
        "kueue.x-k8s.io_workloads.yaml"}) {
    const auto r = kubectl({"create", "-f", (fixtures / crd).string()});
    ASSERT_EQ(r.code, 0) << crd << ": " << r.output;
  }
  auto r = kubectl({"create", "-f", file("queues.yaml", kKueueQueues)});
  ASSERT_EQ(r.code, 0) << r.output;
  r = kubectl({"patch", "admissioncheck", "comm-check", "--subresource=status", "--type=merge",
               "-p",
               R"({"status":{"conditions":[{"type":"Active","status":"True","reason":"Active",)"
               R"("message":"ok","lastTransitionTime":"2026-12-06T12:00:00Z"}]}})"});
  ASSERT_EQ(r.code, 0) << r.output;

  // The Workload with the CRD's columns: its queue, where it reserved quota, not admitted.
  std::string out = wait_for_output({"get", "workloads", "-n", "team"}, "gpus");
  EXPECT_NE(out.find("QUEUE"), std::string::npos) << out;
  EXPECT_NE(out.find("RESERVED IN"), std::string::npos) << out;
  EXPECT_NE(out.find("job-sample-"), std::string::npos) << out;
  EXPECT_NE(out.find("user-queue"), std::string::npos) << out;
  r = kubectl({"get", "workloads", "-n", "team", "-o", "jsonpath={.items[0].metadata.name}"});
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string name = r.output;
  out = wait_for_output(
      {"get", "workload", name, "-n", "team", "-o", "jsonpath={.status.admissionChecks[0].state}"},
      "Pending");

  // The check controller's apply of its entry, as commgate's operator makes it.
  const std::string entry = file("entry.yaml", R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: )" + name + R"(
  namespace: team
status:
  admissionChecks:
  - name: comm-check
    state: Ready
    message: within policy
    lastTransitionTime: "2026-12-06T12:00:00Z"
)");
  r = kubectl({"apply", "--server-side", "--subresource=status", "--force-conflicts",
               "--field-manager=commgate.io/comm-check", "-f", entry});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("serverside-applied"), std::string::npos) << r.output;
  out = wait_for_output({"get", "workload", name, "-n", "team", "-o",
                         "jsonpath={.status.conditions[?(@.type=='Admitted')].status}"},
                        "True");
  // The CRD's Admitted column (=='Admitted', single-quoted in Kueue's CRD) shows it.
  out = kubectl({"get", "workloads", "-n", "team"}).output;
  EXPECT_NE(out.find("True"), std::string::npos) << out;
  out = wait_for_output({"get", "job", "sample", "-n", "team", "-o",
                         "jsonpath={.spec.suspend} {.spec.template.spec.nodeSelector}"},
                        "false");
  EXPECT_NE(out.find("h100"), std::string::npos) << out;
  // Both managers on the entry: ours by the apply, kueue-admission by its forced applies.
  r = kubectl({"get", "workload", name, "-n", "team", "-o", "json", "--show-managed-fields"});
  ASSERT_EQ(r.code, 0) << r.output;
  const json workload = json::parse(r.output);
  std::set<std::string> managers;
  for (const auto& m : workload["metadata"]["managedFields"])
    managers.insert(m["manager"].get<std::string>());
  EXPECT_EQ(managers.count("commgate.io/comm-check"), 1u) << r.output;
  EXPECT_EQ(managers.count("kueue-admission"), 1u) << r.output;
  EXPECT_EQ(managers.count("kueue"), 1u) << r.output;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
