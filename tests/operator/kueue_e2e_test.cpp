// commgate's Kueue admission check end to end on the simulated cluster (issue #23), every
// part real: commgate-sim with its Kueue stand-in (`--kueue`, sim/kueue_controller.h,
// modelled on kubernetes-sigs/kueue v0.19.2) and the upstream Kueue v0.19.2 and Kubeflow
// training-operator v1.9.4 CRDs (../shared/fixtures/ecosystem/), pools of emulated nodes in
// network namespaces on tc-shaped links (scripts/netsim.sh), the real webhook, the real
// `commgate operator --kueue` as its service account, commgate-probe pods run by the sim's
// kubelet, and a researcher submitting PyTorchJobs to LocalQueues with the real kubectl
// (tests/operator/e2e_cluster.h). What each case asserts is what a user sees through
// kubectl: the Workload's status.admissionChecks entries and their messages, spec.active,
// the job's suspend, the Events, the probe Jobs the operator created.
//
// One cluster for every case (SetUpTestSuite), the cases in order, each building on the
// ones before (registered as one ctest test: tests/operator/CMakeLists.txt); a case run
// alone whose predecessor did not run skips, saying so. The order keeps the probes few:
// one of the fast pool, one of the slow pool, and unschedulable ones of a tainted pool
// (which start no process):
//
//   1. (docs/kueue.md "The AdmissionCheck") a check whose spec.parameters name a CommPolicy
//      that does not exist is Active=False BadParametersRef; its ClusterQueue reserves no
//      quota for the job queued there;
//   2. a PyTorchJob on the fast pool: commgate's entry Pending with the probe's progress,
//      then Ready with the numbers, the job unsuspended by Kueue; another controller's
//      check on the same ClusterQueue keeps its entry and managedFields byte for byte;
//   3. the missing CommPolicy created: the check Active=True, the job's Workload gets
//      quota, the pool's probe cannot be scheduled (its nodes carry a taint the probe does
//      not tolerate; the policy's onInsufficientNodes: ignore lets the probe be created):
//      Retry with requeueAfterSeconds, Kueue evicts and requeues it (retryCount grows),
//      and the admitted Workload of case 2 keeps Ready;
//   4. a larger job on the slow pool, the operator SIGKILLed and restarted mid-probe:
//      Rejected with the largest count that passes, one probe Job for the pool, the
//      Workload deactivated, the job suspended, a Warning Event;
//   5. that Workload deleted: the stand-in creates a new one for the same job, which gets
//      the same answer without a second probe;
//   6. a TrainJob (Trainer v2 on its torch runtime) and a JobSet queued to the fast pool
//      with the same model: Ready from its measurement, no second probe, started by Kueue;
//   7. topology-aware scheduling on the slow pool: Kueue assigns 2 of its 3 hosts, and
//      commgate probes exactly those (a CommProfile with spec.hostnames, the probe's pods
//      on them) and decides from that measurement;
//   8. a delayed topology (a ProvisioningRequest check beside ours on a TAS flavor) is
//      decided on the flavor's pool, without a probe;
//   9. model annotations that do not parse: Pending naming the annotation, on the
//      Workload and in an Event on the job.
//
// Root only (network namespaces), with kubectl, commgate-probe and the ecosystem CRDs;
// skipped with the reason otherwise. Prints how long each case took.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/comm_profile.h"
#include "tests/operator/e2e_cluster.h"
#include "tests/support/child_process.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::E2eCluster;
using testing::poll_until;
using testing::seconds_since;
using Clock = testing::E2eClock;
using Result = testing::E2eResult;

const fs::path kEcosystem = fs::path(COMMGATE_SOURCE_DIR) / "../shared/fixtures/ecosystem";
const std::string kSlowPool = "cpu-20mbit";
const std::string kFastPool = "cpu-5gbit";
const std::string kTaintedPool = "cpu-tainted";
const std::string kOtherManager = "other-check";
const std::string kCommManager = "commgate.io/comm-check";

// The probe Job of the pool a flavor's nodeLabels commgate.io/pool=<label> name.
std::string probe_job_of(const std::string& label) {
  return "commgate-probe-" + pool_name({{"commgate.io/pool", label}});
}

// status.admissionChecks[name] of `workload`, or {} (so that .value() reads defaults).
json check_entry(const json& workload, const std::string& name) {
  const json entries =
      workload.is_object()
          ? workload.value(json::json_pointer("/status/admissionChecks"), json::array())
          : json::array();
  for (const json& e : entries)
    if (e.value("name", "") == name) return e;
  return json::object();
}

std::string entry_state(const json& entry) {
  return entry.is_object() ? entry.value("state", "") : "";
}
std::string entry_message(const json& entry) {
  return entry.is_object() ? entry.value("message", "") : "";
}

// `type` of status.conditions, or {}.
json condition_of(const json& object, const std::string& type) {
  const json conditions =
      object.is_object() ? object.value(json::json_pointer("/status/conditions"), json::array())
                         : json::array();
  for (const json& c : conditions)
    if (c.value("type", "") == type) return c;
  return json::object();
}

// The managedFields entry of `manager`'s server-side applies, or {}.
json managed_fields_of(const json& object, const std::string& manager) {
  const json all = object.is_object()
                       ? object.value(json::json_pointer("/metadata/managedFields"), json::array())
                       : json::array();
  for (const json& m : all)
    if (m.value("manager", "") == manager && m.value("operation", "") == "Apply") return m;
  return json::object();
}

class KueueE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_reason_ = E2eCluster::missing_prerequisite();
    if (skip_reason_.empty() && !fs::exists(kEcosystem / "kueue-v0.19.2"))
      skip_reason_ = "no Kueue CRDs in " + kEcosystem.string();
    if (!skip_reason_.empty()) {
      // What ctest reads to report the whole program skipped (SKIP_REGULAR_EXPRESSION).
      std::cout << "[kueue-e2e] skipped: " << skip_reason_ << std::endl;
      return;
    }
    const auto start = Clock::now();
    cluster_ = std::make_unique<E2eCluster>(
        testing::E2eClusterOptions{"kueue-e2e",
                                   // The tainted pool is never measured: on the host's network.
                                   {{kSlowPool, 3, "20mbit", "kes"},
                                    {kFastPool, 2, "5gbit", "kef"},
                                    {kTaintedPool, 2, "", ""}},
                                   /*kueue=*/true,
                                   {"commgate-system", "ml", "ml-taint"}});
    set_up_cluster();
    if (::testing::Test::HasFatalFailure()) {
      setup_failed_ = true;
      return;
    }
    std::cout << "[kueue-e2e] set-up (pools, sim, webhook, CRDs, queues, operator): "
              << seconds_since(start) << " s" << std::endl;
  }

  static void TearDownTestSuite() {
    operator_.reset();
    if (cluster_ && any_failed_) cluster_->keep_dir();
    cluster_.reset();
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_FALSE(setup_failed_) << "the cluster did not start (the suite's set-up failed)";
    started_ = Clock::now();
  }
  void TearDown() override {
    if (HasFailure()) {
      any_failed_ = true;
      if (operator_) std::cout << "--- operator:\n" << operator_->output() << std::endl;
    }
    if (!IsSkipped())
      std::cout << "[kueue-e2e] " << ::testing::UnitTest::GetInstance()->current_test_info()->name()
                << ": " << seconds_since(started_) << " s" << std::endl;
  }

  static void set_up_cluster() {
    cluster_->start();
    if (::testing::Test::HasFatalFailure()) return;
    const fs::path dir = cluster_->dir();
    // The namespace ml's policy; the probe kept short as in operator_e2e_test (few sizes
    // and iterations, gloo: the nodes' GPUs are advertised only), and its sizes only up to
    // 4Mi, the model's 4 MB gradient (an 8Mi all-reduce over the slow pool's 3 nodes takes
    // about 4.5 s, a quarter of a minute with its iterations). The limit between the
    // pools: the slow pool's 3 nodes measure about 88%, the fast pool's 2 under 40%.
    write(dir / "policy.yaml", policy_yaml("e2e", "ml", ""));
    cluster_->apply_through_webhook(dir / "policy.yaml");
    if (::testing::Test::HasFatalFailure()) return;
    // `create`, not `apply`: the Workload CRD is larger than the last-applied annotation
    // may be.
    std::vector<fs::path> crds;
    for (const char* kind :
         {"resourceflavors", "admissionchecks", "clusterqueues", "localqueues", "workloads"})
      crds.push_back(kEcosystem / "kueue-v0.19.2" /
                     ("kueue.x-k8s.io_" + std::string(kind) + ".yaml"));
    crds.push_back(kEcosystem / "training-operator-v1.9.4/kubeflow.org_pytorchjobs.yaml");
    crds.push_back(kEcosystem / "jobset-v0.12.0/jobset.x-k8s.io_jobsets.yaml");
    crds.push_back(kEcosystem / "trainer-v2.3.0/trainer.kubeflow.org_trainjobs.yaml");
    crds.push_back(kEcosystem / "trainer-v2.3.0/trainer.kubeflow.org_clustertrainingruntimes.yaml");
    cluster_->create_files(crds);
    if (::testing::Test::HasFatalFailure()) return;
    // Trainer's own torch runtime, which TrainJobs name.
    const Result runtime = cluster_->admin(
        {"apply", "-f", (kEcosystem / "trainer-v2.3.0/runtime-torch_distributed.yaml").string()});
    ASSERT_EQ(runtime.code, 0) << runtime.output;
    if (::testing::Test::HasFatalFailure()) return;
    write(dir / "kueue.yaml", queues_yaml());
    const Result queues = cluster_->admin({"apply", "-f", (dir / "kueue.yaml").string()});
    ASSERT_EQ(queues.code, 0) << queues.output;
    // The other controller says its check is active, as its own controller would.
    write(dir / "other-active.yaml", R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: other
status:
  conditions:
    - type: Active
      status: "True"
      reason: Active
      message: the other controller is ready
      lastTransitionTime: "2026-12-07T00:00:00Z"
)");
    const Result active =
        cluster_->admin({"apply", "--server-side", "--field-manager", kOtherManager,
                         "--subresource", "status", "-f", (dir / "other-active.yaml").string()});
    ASSERT_EQ(active.code, 0) << active.output;
    // So does Kueue's ProvisioningRequest controller for its check (it never provisions here:
    // its entries stay Pending).
    std::string prov = read_text(dir / "other-active.yaml");
    prov.replace(prov.find("name: other"), 11, "name: prov");
    write(dir / "prov-active.yaml", prov);
    const Result prov_active =
        cluster_->admin({"apply", "--server-side", "--field-manager", "kueue-provisioning",
                         "--subresource", "status", "-f", (dir / "prov-active.yaml").string()});
    ASSERT_EQ(prov_active.code, 0) << prov_active.output;
    // The tainted pool's nodes are dedicated to something else: no probe tolerates them.
    const Result nodes =
        cluster_->admin({"get", "nodes", "-l", "commgate.io/pool=" + kTaintedPool, "-o", "name"});
    ASSERT_EQ(nodes.code, 0) << nodes.output;
    int tainted = 0;
    std::istringstream names(nodes.output);
    for (std::string node; std::getline(names, node);) {
      if (node.empty()) continue;
      const Result r = cluster_->admin({"patch", node, "--type", "merge", "-p",
                                        R"({"spec":{"taints":[{"key":"dedicated","value":"other",)"
                                        R"("effect":"NoSchedule"}]}})"});
      ASSERT_EQ(r.code, 0) << r.output;
      ++tainted;
    }
    ASSERT_EQ(tainted, 2) << nodes.output;
    // Leases short enough that a replica restarted after a SIGKILL leads within seconds.
    operator_ = start_operator("operator.log");
    ASSERT_TRUE(E2eCluster::wait_for_output(*operator_, "started reconciling"))
        << operator_->output();
  }

  static std::unique_ptr<ChildProcess> start_operator(const std::string& log) {
    return cluster_->operator_replica(
        cluster_->dir() / log,
        {"--kueue", "--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s",
         "--leader-elect-retry-period", "1s"});
  }

  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
  static std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // A CommPolicy for namespace `ns` (by the label the API server sets on every namespace);
  // `extra`: more spec lines.
  static std::string policy_yaml(const std::string& name, const std::string& ns,
                                 const std::string& extra) {
    return "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata:\n  name: " + name +
           "\nspec:\n"
           "  namespaceSelector:\n"
           "    matchLabels:\n"
           "      kubernetes.io/metadata.name: " +
           ns +
           "\n"
           "  maxCommShare: 0.50\n"
           "  enforcementAction: downsize\n"
           "  onMissingMeasurement: gate\n"
           "  measurementTTL: 1h\n"
           "  probe:\n"
           "    timeoutSeconds: 180\n"
           "    backend: gloo\n"
           "    sizes: {min: 64Ki, max: 4Mi}\n"
           "    iterations: 2\n"
           "    warmupIterations: 1\n"
           "    maxNodes: 3\n" +
           extra;
  }

  // docs/kueue.md's setup: commgate's check `comm` and another controller's `other` on the
  // fast pool's ClusterQueue, `comm` alone on the slow pool's, and `comm-taint` (holding
  // Workloads to CommPolicy e2e-taint, created by case 3) on the tainted pool's; a
  // ResourceFlavor per pool (its nodeLabels the pool), GPU quota, a LocalQueue each.
  static std::string queues_yaml() {
    std::string out = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: comm
spec:
  controllerName: commgate.io/comm-check
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: other
spec:
  controllerName: example.com/other-check
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: prov
spec:
  controllerName: kueue.x-k8s.io/provisioning-request
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: comm-taint
spec:
  controllerName: commgate.io/comm-check
  parameters:
    apiGroup: commgate.io
    kind: CommPolicy
    name: e2e-taint
)";
    struct Queue {
      std::string name, pool, ns, checks;
    };
    for (const Queue& q :
         {Queue{"fast", kFastPool, "ml", "[comm, other]"}, Queue{"slow", kSlowPool, "ml", "[comm]"},
          Queue{"tainted", kTaintedPool, "ml-taint", "[comm-taint]"},
          Queue{"fast-only", kFastPool, "ml", "[comm]"},
          Queue{"slow-tas", kSlowPool, "ml", "[comm]"},
          Queue{"slow-tas-prov", kSlowPool, "ml", "[comm, prov]"}}) {
      std::string checks;
      for (const char* c : {"comm", "other", "comm-taint", "prov"})
        if (q.checks.find(std::string(c) + ",") != std::string::npos ||
            q.checks.find(std::string(c) + "]") != std::string::npos)
          checks += "      - name: " + std::string(c) + "\n";
      // slow-tas: topology-aware scheduling down to the hostname (every flavor of its
      // ClusterQueue has a topologyName: Kueue's implied TAS).
      out += "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: " +
             q.name + "\nspec:\n" +
             (q.name.rfind("slow-tas", 0) == 0 ? "  topologyName: hosts\n" : "") +
             "  nodeLabels:\n    commgate.io/pool: " + q.pool +
             "\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: " +
             q.name +
             "\nspec:\n  namespaceSelector: {}\n  resourceGroups:\n"
             "    - coveredResources: [\"nvidia.com/gpu\"]\n      flavors:\n        - name: " +
             q.name +
             "\n          resources:\n            - name: nvidia.com/gpu\n"
             "              nominalQuota: 8\n  admissionChecksStrategy:\n    admissionChecks:\n" +
             checks +
             "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: " +
             q.name + "\n  namespace: " + q.ns + "\nspec:\n  clusterQueue: " + q.name + "\n";
    }
    return out;
  }

  // The upstream example's shape (training-operator-v1.9.4/example-simple.yaml: a Master
  // and `workers` Workers, restartPolicy OnFailure) with the queue label, commgate's model
  // annotations (the tiny model: 1M parameters, batch 4096, sgd, as `make demo`), a GPU per
  // pod, suspended as Kueue wants it. Its file's path.
  static std::string pytorchjob(const std::string& name, const std::string& ns,
                                const std::string& queue, int workers) {
    const fs::path path = cluster_->dir() / (name + ".yaml");
    std::string replica;
    const auto spec = [](const std::string& type, int replicas) {
      return "    " + type + ":\n      replicas: " + std::to_string(replicas) +
             "\n      restartPolicy: OnFailure\n      template:\n        spec:\n"
             "          containers:\n            - name: pytorch\n"
             "              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727\n"
             "              imagePullPolicy: Always\n"
             "              command: [\"python3\", \"/opt/pytorch-mnist/mnist.py\", "
             "\"--epochs=1\"]\n"
             "              resources:\n                limits:\n"
             "                  nvidia.com/gpu: 1\n";
    };
    write(path, "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: " + name +
                    "\n  namespace: " + ns +
                    "\n  labels:\n    kueue.x-k8s.io/queue-name: " + queue +
                    "\n  annotations:\n    commgate.io/parameters: 1M\n"
                    "    commgate.io/batch-size: \"4096\"\n    commgate.io/optimizer: sgd\n"
                    "spec:\n  runPolicy:\n    suspend: true\n  pytorchReplicaSpecs:\n" +
                    spec("Master", 1) + spec("Worker", workers));
    return path.string();
  }

  // The Workload the stand-in made for PyTorchJob `job` (its controller owner), or null.
  static json workload_of(const std::string& ns, const std::string& job) {
    const json list = cluster_->get_json({"get", "workloads", "-n", ns, "--show-managed-fields"});
    const json items = list.is_object() ? list.value("items", json::array()) : json::array();
    for (const json& w : items)
      for (const json& o : w.value(json::json_pointer("/metadata/ownerReferences"), json::array()))
        if (o.value("kind", "") == "PyTorchJob" && o.value("name", "") == job) return w;
    return json();
  }
  static json workload(const std::string& ns, const std::string& name) {
    return cluster_->get_json({"get", "workload", "-n", ns, name, "--show-managed-fields"});
  }
  static json pytorchjob_object(const std::string& ns, const std::string& name) {
    return cluster_->get_json({"get", "pytorchjob", "-n", ns, name});
  }
  static bool suspended(const json& job) {
    return job.is_object() &&
           job.value(json::json_pointer("/spec/runPolicy/suspend"), false) == true;
  }
  static std::string name_of(const json& object) {
    return object.is_object() ? object.value(json::json_pointer("/metadata/name"), std::string())
                              : "";
  }
  // The messages of the Events about `object` in `ns` with `reason`.
  // `uid`: only those about that object (a re-created one has the same name).
  static std::vector<std::string> events_about(const std::string& ns, const std::string& object,
                                               const std::string& reason,
                                               const std::string& uid = "") {
    std::vector<std::string> out;
    const json list = cluster_->get_json({"get", "events", "-n", ns});
    for (const json& e : list.is_object() ? list.value("items", json::array()) : json::array())
      if (e.value(json::json_pointer("/involvedObject/name"), std::string()) == object &&
          e.value("reason", "") == reason &&
          (uid.empty() || e.value(json::json_pointer("/involvedObject/uid"), std::string()) == uid))
        out.push_back(e.value("type", "") + ": " + e.value("message", ""));
    return out;
  }
  static std::string dump(const json& object) { return object.is_null() ? "null" : object.dump(2); }

  static inline std::string skip_reason_;
  static inline bool setup_failed_ = false;
  static inline bool any_failed_ = false;
  static inline std::unique_ptr<E2eCluster> cluster_;
  static inline std::unique_ptr<ChildProcess> operator_;
  // What the cases hand on.
  static inline bool taint_job_submitted_ = false;
  static inline std::string fast_workload_;  // admitted by case 2
  static inline std::string slow_workload_;  // rejected by case 4
  static inline std::string slow_message_;   // its entry's message
  Clock::time_point started_;
};

// Case 4 of the issue, first half: a check naming a CommPolicy that does not exist.
TEST_F(KueueE2eTest, a_check_naming_a_missing_policy_is_inactive_and_its_queue_reserves_no_quota) {
  json check;
  ASSERT_TRUE(poll_until(
      [&] {
        check = cluster_->get_json({"get", "admissioncheck", "comm-taint"});
        return !condition_of(check, "Active").empty();
      },
      30s))
      << dump(check);
  const json active = condition_of(check, "Active");
  EXPECT_EQ(active.value("status", ""), "False") << dump(active);
  EXPECT_EQ(active.value("reason", ""), "BadParametersRef") << dump(active);
  EXPECT_NE(active.value("message", "").find("CommPolicy \"e2e-taint\" not found"),
            std::string::npos)
      << dump(active);
  // commgate's own check without parameters is active meanwhile.
  EXPECT_EQ(condition_of(cluster_->get_json({"get", "admissioncheck", "comm"}), "Active")
                .value("status", ""),
            "True");

  const Result applied =
      cluster_->alice({"apply", "-f", pytorchjob("pt-taint", "ml-taint", "tainted", 1)});
  ASSERT_EQ(applied.code, 0) << applied.output;
  taint_job_submitted_ = true;
  json wl;
  ASSERT_TRUE(poll_until(
      [&] {
        wl = workload_of("ml-taint", "pt-taint");
        return wl.is_object();
      },
      30s))
      << "the stand-in made no Workload for pt-taint";
  // Its quota is looked at again by the case after the next, which has had the whole of
  // the next case's time to reserve it; here, right away, it has none.
  EXPECT_FALSE(wl.contains("status") && wl["status"].contains("admission")) << dump(wl);
}

// Cases 1 and 3 of the issue: Pending while probed, then Ready; another check's entry
// untouched.
TEST_F(KueueE2eTest, fast_pool_job_is_pending_while_probed_then_ready_beside_another_check) {
  const int probes_before = cluster_->probe_job_creates();
  const Result applied = cluster_->alice({"apply", "-f", pytorchjob("pt-fast", "ml", "fast", 1)});
  ASSERT_EQ(applied.code, 0) << applied.output;

  // Our entry Pending, written by commgate with the probe's progress.
  json wl;
  ASSERT_TRUE(poll_until(
      [&] {
        wl = workload_of("ml", "pt-fast");
        return entry_state(check_entry(wl, "comm")) == "Pending" &&
               !managed_fields_of(wl, kCommManager).empty();
      },
      60s))
      << dump(wl);
  const json pending = check_entry(wl, "comm");
  EXPECT_NE(entry_message(pending).find("pool"), std::string::npos) << dump(pending);
  std::cout << "[kueue-e2e] pt-fast Pending: " << entry_message(pending) << std::endl;
  fast_workload_ = name_of(wl);
  EXPECT_TRUE(suspended(pytorchjob_object("ml", "pt-fast"))) << "runs before it is checked";

  // The other controller's entry, as that controller writes it.
  write(cluster_->dir() / "other-entry.yaml",
        "apiVersion: kueue.x-k8s.io/v1beta2\n"
        "kind: Workload\nmetadata:\n  name: " +
            fast_workload_ +
            "\n  namespace: ml\nstatus:\n"
            "  admissionChecks:\n"
            "    - name: other\n"
            "      state: Ready\n"
            "      message: capacity booked by other\n"
            "      lastTransitionTime: "
            "\"2026-12-07T00:00:01Z\"\n");
  const Result other = cluster_->admin({"apply", "--server-side", "--force-conflicts",
                                        "--field-manager", kOtherManager, "--subresource", "status",
                                        "-f", (cluster_->dir() / "other-entry.yaml").string()});
  ASSERT_EQ(other.code, 0) << other.output;
  const json before = workload("ml", fast_workload_);
  const json other_before = check_entry(before, "other");
  const json fields_before = managed_fields_of(before, kOtherManager);
  ASSERT_EQ(entry_state(other_before), "Ready") << dump(before);
  ASSERT_FALSE(fields_before.empty()) << dump(before);
  // commgate still measures: what it writes from here on is written beside the entry.
  ASSERT_EQ(entry_state(check_entry(before, "comm")), "Pending")
      << "the fast pool was measured before the other entry was written: " << dump(before);

  // While the probe runs, the message follows it (the probe Job, its pods' stages).
  json ready;
  std::string progress;
  ASSERT_TRUE(poll_until(
      [&] {
        ready = workload("ml", fast_workload_);
        const json e = check_entry(ready, "comm");
        if (entry_state(e) == "Pending" &&
            entry_message(e).find("waiting for the measurement of pool") != std::string::npos)
          progress = entry_message(e);
        return entry_state(e) != "Pending";
      },
      240s))
      << dump(ready) << cluster_->cluster_dump();
  std::cout << "[kueue-e2e] pt-fast Pending while probed: " << progress << std::endl;
  EXPECT_NE(progress.find("probe commgate-system/" + probe_job_of(kFastPool)), std::string::npos)
      << "no progress message seen while the pool was probed: " << progress;
  const json ours = check_entry(ready, "comm");
  ASSERT_EQ(entry_state(ours), "Ready") << dump(ours);
  // The numbers: the predicted share at the node count, from the probe.
  EXPECT_NE(entry_message(ours).find("%"), std::string::npos) << dump(ours);
  EXPECT_NE(entry_message(ours).find("2 nodes"), std::string::npos) << dump(ours);
  std::cout << "[kueue-e2e] pt-fast Ready: " << entry_message(ours) << std::endl;
  EXPECT_EQ(cluster_->probe_job_creates(probe_job_of(kFastPool)), 1);
  EXPECT_EQ(cluster_->probe_job_creates(), probes_before + 1);

  // Kueue admits (both checks Ready) and unsuspends the job.
  json job;
  EXPECT_TRUE(poll_until(
      [&] {
        job = pytorchjob_object("ml", "pt-fast");
        return job.is_object() && !suspended(job);
      },
      30s))
      << dump(job);
  const json admitted = workload("ml", fast_workload_);
  EXPECT_EQ(condition_of(admitted, "Admitted").value("status", ""), "True") << dump(admitted);

  // The other controller's entry and its managedFields entry, byte for byte.
  EXPECT_EQ(check_entry(admitted, "other").dump(), other_before.dump()) << dump(admitted);
  EXPECT_EQ(managed_fields_of(admitted, kOtherManager).dump(), fields_before.dump())
      << dump(admitted);
  EXPECT_EQ(events_about("ml", fast_workload_, "AdmissionCheckUpdated").size(), 1u)
      << "one Event, for Pending -> Ready";
}

// Case 4, second half, and case 5 of the issue.
TEST_F(KueueE2eTest, the_created_policy_activates_the_check_and_an_unschedulable_probe_is_retry) {
  if (!taint_job_submitted_) GTEST_SKIP() << "needs the first case's job: run the whole program";
  // The job waited through the whole previous case with no quota: its ClusterQueue lists
  // an inactive check.
  json wl = workload_of("ml-taint", "pt-taint");
  ASSERT_TRUE(wl.is_object());
  EXPECT_FALSE(wl.contains("status") && wl["status"].contains("admission")) << dump(wl);

  // The policy the check names: the namespace's own; onInsufficientNodes: ignore creates
  // the probe's pods whatever the pool has (they then cannot be scheduled); a 1 s backoff
  // keeps the requeues quick.
  write(cluster_->dir() / "policy-taint.yaml",
        policy_yaml("e2e-taint", "ml-taint",
                    "  onInsufficientNodes: ignore\n"
                    "  retryStrategy:\n    backoffLimitCount: 3\n"
                    "    backoffBaseSeconds: 1\n    backoffMaxSeconds: 2\n"));
  cluster_->apply_through_webhook(cluster_->dir() / "policy-taint.yaml");
  ASSERT_FALSE(HasFatalFailure());
  json active;
  ASSERT_TRUE(poll_until(
      [&] {
        active =
            condition_of(cluster_->get_json({"get", "admissioncheck", "comm-taint"}), "Active");
        return active.value("status", "") == "True";
      },
      30s))
      << dump(active);
  EXPECT_NE(active.value("message", "").find("e2e-taint"), std::string::npos) << dump(active);

  // Quota, a probe that cannot be scheduled, Retry; Kueue evicts the Workload, resets the
  // entry to Pending with retryCount + 1 and requeues it after requeueAfterSeconds, and it
  // comes round again (the pool's probe backs off, so Retry again).
  const std::string name = name_of(wl);
  json retried;
  ASSERT_TRUE(poll_until(
      [&] {
        retried = workload("ml-taint", name);
        return check_entry(retried, "comm-taint").value("retryCount", 0) >= 2;
      },
      120s))
      << dump(retried) << cluster_->cluster_dump();
  const json entry = check_entry(retried, "comm-taint");
  std::cout << "[kueue-e2e] pt-taint after two retries: " << dump(entry) << std::endl;
  // Kept by Kueue's reset from the Retry entry commgate wrote.
  EXPECT_GE(entry.value("requeueAfterSeconds", 0), 1) << dump(entry);
  // commgate's Retry, in its Warning Event on the Workload: why the probe failed.
  std::string retry;
  for (const std::string& e : events_about("ml-taint", name, "AdmissionCheckUpdated"))
    if (e.find("to Retry") != std::string::npos) retry = e;
  ASSERT_FALSE(retry.empty()) << "no Event for the Retry: " << dump(retried);
  std::cout << "[kueue-e2e] pt-taint: " << retry << std::endl;
  EXPECT_EQ(retry.rfind("Warning: ", 0), 0u) << retry;
  EXPECT_NE(retry.find("failed"), std::string::npos) << retry;
  EXPECT_NE(retry.find("taint"), std::string::npos) << retry;
  EXPECT_TRUE(suspended(pytorchjob_object("ml-taint", "pt-taint")));

  // Never Retry on an admitted Workload: the fast one stays Ready and admitted.
  if (!fast_workload_.empty()) {
    const json fast = workload("ml", fast_workload_);
    EXPECT_EQ(entry_state(check_entry(fast, "comm")), "Ready") << dump(fast);
    EXPECT_EQ(condition_of(fast, "Admitted").value("status", ""), "True") << dump(fast);
  }
  // The job goes: nothing waits on the tainted pool any more, so no more probes of it.
  EXPECT_EQ(cluster_->alice({"delete", "pytorchjob", "-n", "ml-taint", "pt-taint"}).code, 0);
  // Its last probe is recorded and deleted: it would hold the probe slot the next case's
  // probe needs.
  EXPECT_TRUE(poll_until(
      [&] { return cluster_->probe_jobs().count(probe_job_of(kTaintedPool)) == 0; }, 60s))
      << json(cluster_->probe_jobs()).dump();
}

// Cases 2 and 6 of the issue: Rejected with the largest passing count, through a SIGKILL
// of the operator mid-probe.
TEST_F(KueueE2eTest, slow_pool_job_is_rejected_with_one_probe_though_the_operator_was_killed) {
  const std::string probe = probe_job_of(kSlowPool);
  ASSERT_EQ(cluster_->probe_job_creates(probe), 0);
  const Result applied = cluster_->alice({"apply", "-f", pytorchjob("pt-slow", "ml", "slow", 2)});
  ASSERT_EQ(applied.code, 0) << applied.output;

  // Mid-probe: a probe pod of the slow pool runs.
  ASSERT_TRUE(poll_until(
      [&] {
        for (const json& pod : cluster_->probe_pods())
          if (pod.value(json::json_pointer("/metadata/name"), std::string()).rfind(probe, 0) == 0 &&
              pod.value(json::json_pointer("/status/phase"), std::string()) == "Running")
            return true;
        return false;
      },
      120s))
      << "no probe pod of the slow pool ran:\n"
      << operator_->output() << cluster_->cluster_dump();
  std::cout << "[kueue-e2e] pt-slow: its pool's probe runs after " << seconds_since(started_)
            << " s; killing the operator" << std::endl;
  const auto probes = cluster_->probe_jobs();
  ASSERT_EQ(probes.count(probe), 1u) << json(probes).dump();
  json wl = workload_of("ml", "pt-slow");
  EXPECT_EQ(entry_state(check_entry(wl, "comm")), "Pending") << dump(wl);

  const auto killed_at = Clock::now();
  ASSERT_EQ(::kill(operator_->pid(), SIGKILL), 0);
  EXPECT_EQ(operator_->wait_exit(10s), 128 + SIGKILL);
  operator_ = start_operator("operator-restarted.log");
  ASSERT_TRUE(E2eCluster::wait_for_output(*operator_, "started reconciling", 60s))
      << operator_->output();
  std::cout << "[kueue-e2e] the restarted operator leads " << seconds_since(killed_at)
            << " s after the kill" << std::endl;

  ASSERT_TRUE(poll_until(
      [&] {
        wl = workload_of("ml", "pt-slow");
        return wl.is_object() && wl.value(json::json_pointer("/spec/active"), true) == false;
      },
      240s, 1s))
      << dump(wl) << cluster_->cluster_dump();
  slow_workload_ = name_of(wl);
  std::cout << "[kueue-e2e] pt-slow: deactivated " << seconds_since(killed_at)
            << " s after the kill" << std::endl;
  EXPECT_EQ(cluster_->probe_job_creates(probe), 1) << "the restarted operator probed again";

  // commgate's message is in its Event (Kueue resets the entry to Pending after the
  // deactivation, "Previously: Rejected"): the share and the largest count that passes.
  const auto events = events_about("ml", slow_workload_, "AdmissionCheckUpdated");
  std::string rejected;
  for (const std::string& e : events)
    if (e.find("to Rejected") != std::string::npos) rejected = e;
  ASSERT_FALSE(rejected.empty()) << json(events).dump(2);
  std::cout << "[kueue-e2e] pt-slow: " << rejected << std::endl;
  EXPECT_EQ(rejected.rfind("Warning: ", 0), 0u) << rejected;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(rejected, m, std::regex("largest count that passes is ([0-9]+) node")))
      << rejected;
  EXPECT_LT(std::stoi(m[1]), 3) << rejected;
  EXPECT_NE(rejected.find("%"), std::string::npos) << rejected;
  ASSERT_NE(rejected.find("with message: "), std::string::npos) << rejected;
  slow_message_ = rejected.substr(rejected.find("with message: "));
  // The entry as the user reads it: Rejected, or Kueue's reset saying it was.
  const json entry = check_entry(wl, "comm");
  EXPECT_TRUE(entry_state(entry) == "Rejected" ||
              entry_message(entry).find("Previously: Rejected") != std::string::npos)
      << dump(entry);
  EXPECT_TRUE(suspended(pytorchjob_object("ml", "pt-slow"))) << "runs although rejected";
}

// Case 7 of the issue: a re-created Workload gets the same answer, probing nothing.
TEST_F(KueueE2eTest, a_recreated_workload_gets_the_same_answer_without_a_probe) {
  if (slow_workload_.empty()) GTEST_SKIP() << "needs the slow job's case: run the whole program";
  const std::string old_uid =
      workload("ml", slow_workload_).value(json::json_pointer("/metadata/uid"), std::string());
  ASSERT_FALSE(old_uid.empty());
  const Result deleted =
      cluster_->admin({"delete", "workload", "-n", "ml", slow_workload_, "--wait=false"});
  ASSERT_EQ(deleted.code, 0) << deleted.output;

  // The stand-in creates a new one for the same job (same name: it is the job's), which
  // queues, gets quota, and is rejected again.
  json wl;
  std::string uid;
  ASSERT_TRUE(poll_until(
      [&] {
        wl = workload_of("ml", "pt-slow");
        uid = wl.is_object() ? wl.value(json::json_pointer("/metadata/uid"), std::string()) : "";
        return !uid.empty() && uid != old_uid &&
               wl.value(json::json_pointer("/spec/active"), true) == false;
      },
      120s, 1s))
      << dump(wl) << operator_->output();
  std::string again;
  for (const std::string& e : events_about("ml", slow_workload_, "AdmissionCheckUpdated", uid))
    if (e.find("to Rejected") != std::string::npos) again = e;
  ASSERT_FALSE(again.empty()) << "no Rejected Event on the new Workload " << uid;
  EXPECT_EQ(again.substr(again.find("with message: ")), slow_message_);
  EXPECT_EQ(cluster_->probe_job_creates(probe_job_of(kSlowPool)), 1) << "a second probe";
  EXPECT_TRUE(suspended(pytorchjob_object("ml", "pt-slow")));
}

// Issue #23's first case, for the other job kinds: a TrainJob (Trainer v2, the upstream
// example on Trainer's torch runtime) and a JobSet (the upstream example), each queued to
// the fast pool with the same model, are Ready from the pool's measurement (no second
// probe) and started by Kueue.
TEST_F(KueueE2eTest, a_trainjob_and_a_jobset_are_checked_as_a_pytorchjob_is) {
  if (fast_workload_.empty()) GTEST_SKIP() << "needs the fast job's case: run the whole program";
  const std::string annotations =
      "  annotations:\n    commgate.io/parameters: 1M\n"
      "    commgate.io/batch-size: \"4096\"\n    commgate.io/optimizer: sgd\n";
  write(cluster_->dir() / "trainjob.yaml",
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n"
        "  name: tj-fast\n  namespace: ml\n  labels:\n"
        "    kueue.x-k8s.io/queue-name: fast-only\n" +
            annotations +
            "spec:\n  runtimeRef:\n    apiGroup: trainer.kubeflow.org\n"
            "    kind: ClusterTrainingRuntime\n    name: torch-distributed\n"
            "  suspend: true\n  trainer:\n    numNodes: 2\n    image: python:3.11-slim\n"
            "    command: [python3, -c, \"print('training')\"]\n"
            "    resourcesPerNode:\n      limits:\n        nvidia.com/gpu: 1\n");
  write(cluster_->dir() / "jobset.yaml",
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: js-fast\n"
        "  namespace: ml\n  labels:\n    kueue.x-k8s.io/queue-name: fast-only\n" +
            annotations +
            "spec:\n  suspend: true\n  replicatedJobs:\n  - name: workers\n    template:\n"
            "      spec:\n        parallelism: 2\n        completions: 2\n"
            "        backoffLimit: 0\n        template:\n          spec:\n"
            "            restartPolicy: Never\n            containers:\n"
            "            - name: pytorch\n"
            "              image: gcr.io/k8s-staging-jobset/pytorch-mnist:latest\n"
            "              resources:\n                limits:\n"
            "                  nvidia.com/gpu: 1\n");
  for (const char* file : {"trainjob.yaml", "jobset.yaml"}) {
    const Result r = cluster_->alice({"apply", "-f", (cluster_->dir() / file).string()});
    ASSERT_EQ(r.code, 0) << r.output;
  }
  struct Kind {
    std::string kind, resource, name;
  };
  for (const Kind& k :
       {Kind{"TrainJob", "trainjob", "tj-fast"}, Kind{"JobSet", "jobset", "js-fast"}}) {
    SCOPED_TRACE(k.kind);
    json wl, job;
    ASSERT_TRUE(poll_until(
        [&] {
          wl = json();
          const json list = cluster_->get_json({"get", "workloads", "-n", "ml"});
          for (const json& w :
               list.is_object() ? list.value("items", json::array()) : json::array())
            for (const json& o :
                 w.value(json::json_pointer("/metadata/ownerReferences"), json::array()))
              if (o.value("kind", "") == k.kind && o.value("name", "") == k.name) wl = w;
          job = cluster_->get_json({"get", k.resource, "-n", "ml", k.name});
          return entry_state(check_entry(wl, "comm")) == "Ready" && job.is_object() &&
                 job.value(json::json_pointer("/spec/suspend"), true) == false;
        },
        60s))
        << dump(wl) << dump(job) << operator_->output();
    const std::string message = entry_message(check_entry(wl, "comm"));
    std::cout << "[kueue-e2e] " << k.kind << " " << k.name << " Ready: " << message << std::endl;
    EXPECT_NE(message.find("2 nodes"), std::string::npos) << message;
  }
  EXPECT_EQ(cluster_->probe_job_creates(probe_job_of(kFastPool)), 1)
      << "the fast pool's measurement serves them: no second probe";
}

// The hostnames of a v1beta2 topologyAssignment at the kubernetes.io/hostname level
// (valuesPerLevel: universal, or individual prefix + roots[i] + suffix), as Kueue's
// tas_assignment.go decodes it.
std::vector<std::string> assigned_hosts(const json& assignment) {
  std::vector<std::string> hosts;
  for (const json& slice : assignment.value("slices", json::array())) {
    const int count = slice.value("domainCount", 0);
    const json level = slice.value("valuesPerLevel", json::array()).at(0);
    for (int i = 0; i < count; ++i) {
      if (level.contains("universal")) {
        hosts.push_back(level["universal"].get<std::string>());
      } else {
        const json& ind = level.at("individual");
        hosts.push_back(ind.value("prefix", "") + ind.at("roots").at(i).get<std::string>() +
                        ind.value("suffix", ""));
      }
    }
  }
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  return hosts;
}

// Topology-aware scheduling (issue #23 "Which nodes"): Kueue assigns 2 of the slow pool's 3
// hosts; commgate measures exactly those (a pool of its own, its probe's pods on them) and
// decides the Workload from that measurement.
TEST_F(KueueE2eTest, a_topology_assignment_is_probed_on_exactly_its_hosts) {
  const Result applied =
      cluster_->alice({"apply", "-f", pytorchjob("pt-tas", "ml", "slow-tas", 1)});
  ASSERT_EQ(applied.code, 0) << applied.output;
  json wl;
  std::vector<std::string> hosts;
  ASSERT_TRUE(poll_until(
      [&] {
        wl = workload_of("ml", "pt-tas");
        hosts.clear();
        for (const json& a :
             wl.is_object() ? wl.value(json::json_pointer("/status/admission/podSetAssignments"),
                                       json::array())
                            : json::array())
          if (a.contains("topologyAssignment"))
            for (const std::string& h : assigned_hosts(a["topologyAssignment"])) hosts.push_back(h);
        std::sort(hosts.begin(), hosts.end());
        return hosts.size() == 2;
      },
      60s))
      << dump(wl);
  std::cout << "[kueue-e2e] pt-tas assigned hosts " << json(hosts).dump() << std::endl;
  const std::string pool = pool_name({{"commgate.io/pool", kSlowPool}}, hosts);
  const std::string probe = "commgate-probe-" + pool;

  // The hosts' probe: its pods only on those hosts; the pool's CommProfile names them.
  std::set<std::string> probed_on;
  json profile;
  ASSERT_TRUE(poll_until(
      [&] {
        for (const json& pod : cluster_->probe_pods())
          if (pod.value(json::json_pointer("/metadata/name"), std::string()).rfind(probe, 0) == 0 &&
              !pod.value(json::json_pointer("/spec/nodeName"), std::string()).empty())
            probed_on.insert(pod.value(json::json_pointer("/spec/nodeName"), std::string()));
        profile = cluster_->get_json({"get", "commprofile", pool});
        return profile.is_object() && profile.contains("status") &&
               profile["status"].contains("link");
      },
      240s, 500ms))
      << dump(profile) << cluster_->cluster_dump();
  EXPECT_EQ(profile.value(json::json_pointer("/spec/hostnames"), json()), json(hosts))
      << dump(profile);
  EXPECT_EQ(profile.value(json::json_pointer("/status/link/nodesProbed"), 0), 2) << dump(profile);
  EXPECT_EQ(probed_on, std::set<std::string>(hosts.begin(), hosts.end()))
      << "the probe's pods ran elsewhere than the assigned hosts";
  EXPECT_EQ(cluster_->probe_job_creates(probe), 1);

  // Decided from the hosts' measurement: Ready or Rejected (on this slow link, Rejected).
  ASSERT_TRUE(poll_until(
      [&] {
        wl = workload_of("ml", "pt-tas");
        const std::string state = entry_state(check_entry(wl, "comm"));
        return state == "Ready" || state == "Rejected" ||
               wl.value(json::json_pointer("/spec/active"), true) == false;
      },
      60s, 1s))
      << dump(wl) << operator_->output();
  std::string decided;
  for (const std::string& e : events_about("ml", name_of(wl), "AdmissionCheckUpdated"))
    if (e.find("to Ready") != std::string::npos || e.find("to Rejected") != std::string::npos)
      decided = e;
  std::cout << "[kueue-e2e] pt-tas: " << decided << std::endl;
  EXPECT_NE(decided.find("2 nodes probed"), std::string::npos)
      << "decided from the hosts' 2-node measurement: " << decided;
}

// "Which nodes": a delayed topology (a ProvisioningRequest check beside commgate's on a TAS
// flavor: Kueue assigns hosts only once every check is Ready) is decided on the flavor's
// pool, whose measurement (case 4's) exists: no probe, no wait for hosts.
TEST_F(KueueE2eTest, a_delayed_topology_is_decided_on_the_flavors_pool) {
  if (slow_workload_.empty()) GTEST_SKIP() << "needs the slow job's case: run the whole program";
  const int probes_before = cluster_->probe_job_creates();
  const Result applied =
      cluster_->alice({"apply", "-f", pytorchjob("pt-delayed", "ml", "slow-tas-prov", 1)});
  ASSERT_EQ(applied.code, 0) << applied.output;
  json wl;
  ASSERT_TRUE(poll_until(
      [&] {
        wl = workload_of("ml", "pt-delayed");
        return wl.is_object() && wl.value(json::json_pointer("/spec/active"), true) == false;
      },
      60s, 1s))
      << dump(wl) << operator_->output();
  std::string rejected;
  for (const std::string& e : events_about("ml", name_of(wl), "AdmissionCheckUpdated"))
    if (e.find("to Rejected") != std::string::npos) rejected = e;
  std::cout << "[kueue-e2e] pt-delayed: " << rejected << std::endl;
  EXPECT_NE(rejected.find("3 nodes probed"), std::string::npos)
      << "decided from the flavor's pool (its 3-node measurement): " << rejected;
  EXPECT_EQ(cluster_->probe_job_creates(), probes_before) << "a probe for a delayed topology";
}

// Bad input: model annotations that do not parse leave our entry Pending with the
// annotation named, and Kueue copies the message into an Event on the job.
TEST_F(KueueE2eTest, annotations_that_do_not_parse_are_named_on_the_workload_and_the_job) {
  std::string yaml = read_text(pytorchjob("pt-typo", "ml", "fast-only", 1));
  yaml.replace(yaml.find("commgate.io/optimizer: sgd"), 26, "commgate.io/optimizer: AdamW");
  write(cluster_->dir() / "pt-typo.yaml", yaml);
  const Result applied =
      cluster_->alice({"apply", "-f", (cluster_->dir() / "pt-typo.yaml").string()});
  ASSERT_EQ(applied.code, 0) << applied.output;
  const std::string want = "metadata.annotations[commgate.io/optimizer]: must be one of";
  json wl;
  std::vector<std::string> events;
  ASSERT_TRUE(poll_until(
      [&] {
        wl = workload_of("ml", "pt-typo");
        events = events_about("ml", "pt-typo", "UpdatedAdmissionCheck");
        const bool on_job = std::any_of(events.begin(), events.end(), [&](const std::string& e) {
          return e.find(want) != std::string::npos;
        });
        return entry_state(check_entry(wl, "comm")) == "Pending" &&
               entry_message(check_entry(wl, "comm")).find(want) != std::string::npos && on_job;
      },
      60s))
      << dump(wl) << json(events).dump(2);
  std::cout << "[kueue-e2e] pt-typo: " << entry_message(check_entry(wl, "comm")) << std::endl;
  EXPECT_TRUE(suspended(pytorchjob_object("ml", "pt-typo")));
  EXPECT_EQ(cluster_->alice({"delete", "pytorchjob", "-n", "ml", "pt-typo"}).code, 0);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
