// The whole flow on the simulated cluster, every part real (issue #10, "End to end"):
// commgate-sim with two node pools in network namespaces whose links tc shapes
// (scripts/netsim.sh: a slow pool at 20mbit, a fast one at 5gbit), the real
// `commgate webhook` (deploy/webhook-configurations.yaml, called by the sim over HTTPS),
// the real `commgate operator` authenticated as its service account, commgate-probe pods
// run by the sim's kubelet on the pool's nodes, and a researcher driving it all with the
// real kubectl:
//
//   1. a small model over the slow pool's 3 nodes is gated, probed, and decided Downsized
//      or Rejected with the numbers (kubectl describe shows the Events);
//   2. the same model on the fast pool is probed and Admitted; its training Job runs a real
//      DDP training (examples/training/ddp_tiny.py under torchrun, reading the environment
//      the operator injects) and the TrainingJob's phase follows it to Succeeded;
//   3. a resubmission to the slow pool, whose profile is now fresh, is decided at
//      admission by the webhook, with no new probe.
//
// Root only (network namespaces), with kubectl, commgate-probe and Debian's python3-torch;
// skipped with the reason otherwise. Prints how long each step took.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/time_format.h"
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

const std::string kSource = COMMGATE_SOURCE_DIR;
const std::string kSlowPool = "cpu-20mbit";
const std::string kFastPool = "cpu-5gbit";

// A cluster per test (tests/operator/e2e_cluster.h): a slow pool of 3 nodes at 20mbit, a
// fast one of 2 at 5gbit, the webhook, commgate's CRDs, the policy below and the operator.
class OperatorE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = E2eCluster::missing_prerequisite(); !why.empty())
      GTEST_SKIP() << why;
    if (testing::run_shell(std::string(COMMGATE_PYTHON) + " -c 'import torch' >/dev/null 2>&1") !=
        0)
      GTEST_SKIP() << COMMGATE_PYTHON << " cannot import torch (Debian: python3-torch)";
    const auto start = Clock::now();
    cluster_ = std::make_unique<E2eCluster>(testing::E2eClusterOptions{
        "operator-e2e", {{kSlowPool, 3, "20mbit", "oes"}, {kFastPool, 2, "5gbit", "oef"}}});
    dir_ = cluster_->dir();
    cluster_->start();
    if (HasFatalFailure()) return;
    install_policy();
    if (HasFatalFailure()) return;
    operator_ = operator_replica(dir_ / "operator.log");
    ASSERT_TRUE(wait_for_output(*operator_, "started reconciling")) << operator_->output();
    std::cout << "[e2e] set-up (pools, sim, webhook, CRDs, operator): " << seconds_since(start)
              << " s" << std::endl;
  }

  void TearDown() override {
    standby_.reset();
    operator_.reset();
    if (cluster_ && HasFailure()) cluster_->keep_dir();
    cluster_.reset();
  }

  void install_policy() {
    // A probe kept short: few sizes and iterations, on gloo (the nodes' GPUs are
    // advertised only; there is no CUDA here). The limit sits between the pools with room
    // for this machine's noise: the slow pool's 3 nodes measure about 88%, the fast pool's
    // 2 about 25% alone and up to 38% while another end-to-end test shares the 2 cores
    // (the default's 30% made the fast pool's admission a coin toss under `ctest -j2`).
    std::ofstream(dir_ / "policy.yaml") << R"(apiVersion: commgate.io/v1alpha1
kind: CommPolicy
metadata:
  name: e2e
spec:
  maxCommShare: 0.50
  enforcementAction: downsize
  onMissingMeasurement: gate
  measurementTTL: 1h
  probe:
    timeoutSeconds: 180
    backend: gloo
    sizes: {min: 64Ki, max: 8Mi}
    iterations: 3
    warmupIterations: 1
    maxNodes: 3
)";
    cluster_->apply_through_webhook(dir_ / "policy.yaml");
  }

  // The shared cluster's helpers under the names this test's steps read with.
  std::unique_ptr<ChildProcess> operator_replica(const fs::path& log) {
    return cluster_->operator_replica(log);
  }
  static bool wait_for_output(ChildProcess& process, const std::string& needle,
                              std::chrono::milliseconds timeout = 30s) {
    return E2eCluster::wait_for_output(process, needle, timeout);
  }
  Result admin(std::vector<std::string> args) { return cluster_->admin(std::move(args)); }
  Result alice(std::vector<std::string> args) { return cluster_->alice(std::move(args)); }
  json get_json(std::vector<std::string> args) { return cluster_->get_json(std::move(args)); }
  std::map<std::string, std::string> probe_jobs() { return cluster_->probe_jobs(); }
  int probe_job_creates() { return cluster_->probe_job_creates(); }
  int probes_created() { return cluster_->probes_created(); }
  std::vector<json> probe_pods() { return cluster_->probe_pods(); }
  std::string pod_logs(const std::string& ns, const std::string& prefix) {
    return cluster_->pod_logs(ns, prefix);
  }
  std::string cluster_dump() { return cluster_->cluster_dump(); }

  json trainingjob(const std::string& name) { return get_json({"get", "tj", "-n", "ml", name}); }
  static std::string phase_of(const json& tj) {
    return tj.is_object() ? tj.value("status", json::object()).value("phase", "") : "";
  }

  // A TrainingJob of `nodes` nodes on `pool` with a small model: 1M parameters (a 4 MB
  // gradient all-reduce: about 2 s over three 20mbit nodes, under 10 ms over two 5gbit
  // ones) and a batch of 4096 (a step computes in about 1.5 s on one core here: the CPU
  // that gloo's all-reduce takes from the compute on these shared cores stays a small
  // part of it), its pods
  // running ddp_tiny.py under torchrun (examples/training/ddp_tiny.py reads what the
  // operator injects, so a wrong MASTER_ADDR, rank or world size fails the Job).
  std::string training_job(const std::string& name, const std::string& pool, int nodes,
                           const std::string& parameters = "1M", int batch = 4096) {
    const std::string path = (dir_ / (name + ".yaml")).string();
    std::ofstream(path) << "apiVersion: commgate.io/v1alpha1\n"
                           "kind: TrainingJob\n"
                           "metadata:\n  name: "
                        << name << "\n  namespace: ml\n"
                        << "spec:\n  numNodes: " << nodes
                        << "\n  numProcPerNode: 1\n"
                           "  nodeSelector:\n    commgate.io/pool: "
                        << pool
                        << "\n"
                           "  model:\n"
                           "    parameters: "
                        << parameters
                        << "\n"
                           "    gradientDtype: fp32\n"
                           "    batchSize: "
                        << batch
                        << "\n"
                           "    optimizer: sgd\n"
                           "  template:\n"
                           "    spec:\n"
                           "      containers:\n"
                           "        - name: trainer\n"
                           "          image: registry.example/ml/ddp-tiny:1.0\n"
                           "          command: [\""
                        << COMMGATE_PYTHON << "\", \"-m\", \"torch.distributed.run\", \"" << kSource
                        << "/examples/training/ddp_tiny.py\"]\n"
                           "          env:\n"
                           "            - {name: DDP_TINY_STEPS, value: \"5\"}\n"
                           // Debian's torch 1.13 under Python 3.11: torchrun's default
                           // --redirects/--tee "0" parse to None and it crashes before
                           // starting a worker (Std.NONE is not iterated); "1" works.
                           "            - {name: PET_REDIRECTS, value: \"1\"}\n"
                           "            - {name: PET_TEE, value: \"1\"}\n";
    return path;
  }

  // The cold-pool figure of docs/benchmarks.md, from the operator's Events (MicroTime):
  // `kubectl apply` -> the decision's Event, split into the probe (ProbeCreated ->
  // ProbeSucceeded: its Job created, scheduled, started, measuring, its result recorded)
  // and the rest (the webhook's gate, the operator seeing the job, deciding and patching).
  // Printed, not asserted (speed is measured, not asserted in tests).
  void print_cold_pool_split(const std::string& name,
                             std::chrono::system_clock::time_point applied) {
    const json events = get_json({"get", "events.v1.events.k8s.io", "-n", "ml"});
    std::map<std::string, std::chrono::system_clock::time_point> at;
    for (const json& e : events.value("items", json::array())) {
      if (e.value(json::json_pointer("/regarding/name"), std::string()) != name) continue;
      if (auto t = parse_rfc3339(e.value("eventTime", std::string())))
        at.emplace(e.value("reason", std::string()), *t);
    }
    auto decided = at.find("Downsized");
    if (decided == at.end()) decided = at.find("Denied");
    if (decided == at.end()) decided = at.find("Admitted");
    if (!at.count("ProbeCreated") || !at.count("ProbeSucceeded") || decided == at.end()) {
      std::cout << "[e2e] cold pool: the Events to split it are missing" << std::endl;
      return;
    }
    auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
    const double total = seconds(decided->second - applied);
    const double probe = seconds(at["ProbeSucceeded"] - at["ProbeCreated"]);
    std::cout << "[e2e] cold pool: apply -> decision " << total << " s = probe " << probe
              << " s (ProbeCreated -> ProbeSucceeded) + the rest " << total - probe
              << " s (goal: <= 2 s); apply -> ProbeCreated "
              << seconds(at["ProbeCreated"] - applied) << " s, ProbeSucceeded -> " << decided->first
              << " " << seconds(decided->second - at["ProbeSucceeded"]) << " s" << std::endl;
  }

  // Waits for the TrainingJob's decision; prints how long it took.
  json wait_for_decision(const std::string& name, std::chrono::seconds limit) {
    const auto start = Clock::now();
    json tj;
    const bool decided = poll_until(
        [&] {
          tj = trainingjob(name);
          const std::string phase = phase_of(tj);
          return phase == "Admitted" || phase == "Downsized" || phase == "Rejected" ||
                 phase == "Running" || phase == "Succeeded" || phase == "Failed";
        },
        limit, 1s);
    std::cout << "[e2e] " << name << ": decided in " << seconds_since(start) << " s, phase "
              << phase_of(tj) << std::endl;
    EXPECT_TRUE(decided) << name << " has no decision after " << limit.count() << " s:\n"
                         << tj.dump(2) << "\n--- operator:\n"
                         << operator_->output() << "\n--- the cluster's Jobs and Pods:\n"
                         << (decided ? "" : cluster_dump());
    return tj;
  }

  std::unique_ptr<E2eCluster> cluster_;
  fs::path dir_;
  std::unique_ptr<ChildProcess> operator_, standby_;
};

TEST_F(OperatorE2eTest, probes_decide_and_train_on_slow_and_fast_pools) {
  const auto t0 = Clock::now();

  // 1. Slow pool: gated at admission, probed, then downsized or rejected. Two jobs of
  // different models and counts wait at once: one probe of the pool times both (issue
  // #21). The operator is stopped (it releases its Lease) while they are submitted and
  // started again, so both wait when it first looks at the pool: a running operator could
  // start the probe between the two submissions, and the second job would rightly get
  // the next one.
  ASSERT_EQ(operator_->terminate(), 0) << operator_->output();
  const auto slow_applied_at = std::chrono::system_clock::now();
  const Result slow_apply = alice({"apply", "-f", training_job("tiny-slow", kSlowPool, 3)});
  ASSERT_EQ(slow_apply.code, 0) << slow_apply.output << cluster_->webhook_output();
  const Result other_apply =
      alice({"apply", "-f", training_job("tiny-slow-other", kSlowPool, 2, "500k", 64)});
  ASSERT_EQ(other_apply.code, 0) << other_apply.output;
  operator_ = operator_replica(dir_ / "operator-2.log");
  ASSERT_TRUE(wait_for_output(*operator_, "started reconciling")) << operator_->output();
  EXPECT_NE(slow_apply.output.find("Warning: commgate: suspended until measured"),
            std::string::npos)
      << slow_apply.output;
  EXPECT_EQ(trainingjob("tiny-slow")["spec"]["suspend"], true);

  const json slow = wait_for_decision("tiny-slow", 300s);
  const std::string slow_phase = phase_of(slow);
  ASSERT_TRUE(slow_phase == "Downsized" || slow_phase == "Rejected" ||
              (slow.contains("status") && slow["status"].contains("decision") &&
               (slow["status"]["decision"]["action"] == "Downsize" ||
                slow["status"]["decision"]["action"] == "Deny")))
      << slow.dump(2);
  const json& decision = slow["status"]["decision"];
  EXPECT_EQ(decision["requestedNodes"], 3);
  EXPECT_LT(decision["admittedNodes"].get<int>(), 3);
  EXPECT_GT(decision.value("predictedCommShare", 0.0), 0.50) << decision.dump(2);
  EXPECT_EQ(decision.value("policy", ""), "e2e");
  const json& measurement = slow["status"]["measurement"];
  EXPECT_EQ(measurement.value("nodesProbed", 0), 3) << measurement.dump(2);
  // The link the probe saw is the shaped one: 20 Mbit/s is 0.0025 GB/s.
  EXPECT_LT(measurement.value("busbwGBps", 1.0), 0.003) << measurement.dump(2);
  EXPECT_GT(measurement.value("busbwGBps", 0.0), 0.001) << measurement.dump(2);
  print_cold_pool_split("tiny-slow", slow_applied_at);
  // The other model's job was decided from the same probe (its own compute record), and
  // is deleted before it trains beside the rest of the test.
  const json other = wait_for_decision("tiny-slow-other", 60s);
  EXPECT_EQ(other["status"]["measurement"].value("nodesProbed", 0), 3) << other.dump(2);
  EXPECT_GT(other["status"]["measurement"].value("computeStepMs", 0.0), 0) << other.dump(2);
  EXPECT_EQ(probe_job_creates(), 1) << "one probe for both models";
  EXPECT_EQ(alice({"delete", "tj", "-n", "ml", "tiny-slow-other", "--wait=false"}).code, 0);

  // The researcher reads why in kubectl describe: the Event carries the numbers.
  const Result described = alice({"describe", "tj", "-n", "ml", "tiny-slow"});
  ASSERT_EQ(described.code, 0) << described.output;
  std::cout << "[e2e] kubectl describe tj tiny-slow:\n" << described.output << std::endl;
  EXPECT_NE(described.output.find("Events:"), std::string::npos) << described.output;
  EXPECT_NE(described.output.find(slow_phase == "Rejected" ? "Rejected" : "Downsized"),
            std::string::npos)
      << described.output;
  EXPECT_NE(described.output.find("%"), std::string::npos) << described.output;

  // 2. Fast pool: admitted as asked; the training Job runs DDP and succeeds. Submitted
  // once the slow pool's probe and (downsized) training are done: anything else running
  // on this machine's shared cores while the probe times a step would be timed with it.
  ASSERT_TRUE(
      poll_until([&] { return phase_of(trainingjob("tiny-slow")) == "Succeeded"; }, 120s, 1s))
      << trainingjob("tiny-slow").dump(2) << pod_logs("ml", "tiny-slow");
  const Result fast_apply = alice({"apply", "-f", training_job("tiny-fast", kFastPool, 2)});
  ASSERT_EQ(fast_apply.code, 0) << fast_apply.output;
  const json fast = wait_for_decision("tiny-fast", 300s);
  ASSERT_NE(phase_of(fast), "Rejected") << fast.dump(2);
  ASSERT_NE(phase_of(fast), "Downsized") << fast.dump(2);
  EXPECT_EQ(fast["status"]["decision"]["action"], "Admit") << fast.dump(2);
  EXPECT_EQ(fast["status"]["admittedNodes"], 2);
  EXPECT_GT(fast["status"]["measurement"].value("busbwGBps", 0.0), 0.1)
      << fast["status"]["measurement"].dump(2);
  const auto training_start = Clock::now();
  json done;
  const bool finished = poll_until(
      [&] {
        done = trainingjob("tiny-fast");
        return phase_of(done) == "Succeeded" || phase_of(done) == "Failed";
      },
      240s, 1s);
  std::cout << "[e2e] tiny-fast: training finished in " << seconds_since(training_start)
            << " s, phase " << phase_of(done) << std::endl;
  const json workload = get_json({"get", "job", "-n", "ml", "tiny-fast"});
  ASSERT_TRUE(finished) << done.dump(2) << "\n" << workload.dump(2);
  EXPECT_EQ(phase_of(done), "Succeeded") << done.dump(2) << "\n"
                                         << workload.dump(2) << "\n"
                                         << pod_logs("ml", "tiny-fast");
  EXPECT_EQ(workload["status"].value("succeeded", 0), 2) << workload.dump(2);
  // Each rank printed its line (ddp_tiny.py): the world the operator set up.
  const std::string logs = pod_logs("ml", "tiny-fast");
  EXPECT_NE(logs.find("ddp_tiny: rank 0 of 2"), std::string::npos) << logs;
  EXPECT_NE(logs.find("ddp_tiny: rank 1 of 2"), std::string::npos) << logs;

  // 3. A resubmission to the slow pool: the profile is fresh, so the webhook decides at
  // admission (the numbers in its warning or refusal) and no probe runs again.
  const int probes_before = probe_job_creates();
  EXPECT_EQ(probes_before, 2);
  const auto resubmit_start = Clock::now();
  const Result again = alice({"apply", "-f", training_job("tiny-slow-2", kSlowPool, 3)});
  std::cout << "[e2e] tiny-slow-2: decided at admission in " << seconds_since(resubmit_start)
            << " s:\n"
            << again.output << std::endl;
  EXPECT_EQ(again.output.find("suspended until measured"), std::string::npos) << again.output;
  if (slow_phase == "Rejected") {
    EXPECT_NE(again.code, 0) << again.output;
    EXPECT_NE(again.output.find("denied the request"), std::string::npos) << again.output;
  } else {
    ASSERT_EQ(again.code, 0) << again.output;
    EXPECT_NE(again.output.find("Warning: commgate: spec.numNodes lowered from 3 to " +
                                std::to_string(decision["admittedNodes"].get<int>())),
              std::string::npos)
        << again.output;
    const json stored = trainingjob("tiny-slow-2");
    EXPECT_NE(stored["spec"].value("suspend", false), true) << stored.dump(2);
    // The operator takes the admitted job as decided: it launches it, probing nothing.
    const json launched = wait_for_decision("tiny-slow-2", 60s);
    EXPECT_EQ(launched["status"]["admittedNodes"], decision["admittedNodes"]) << launched.dump(2);
  }
  EXPECT_EQ(probe_job_creates(), probes_before);

  std::cout << "[e2e] whole flow: " << seconds_since(t0) << " s" << std::endl;
  const Result table = alice({"get", "trainingjobs", "-n", "ml"});
  std::cout << "[e2e] kubectl get trainingjobs:\n" << table.output << std::endl;
}

// Faults (issue #10): two replicas, only the leader acts; the leader is killed mid-probe,
// the standby takes the Lease over and carries on with the same probe Job (a deterministic name,
// created if absent): no second probe, no lost job. The killed one is restarted, comes back
// as a standby and does nothing.
TEST_F(OperatorE2eTest, a_standby_takes_over_mid_probe_without_a_second_probe) {
  const auto t0 = Clock::now();
  standby_ = operator_replica(dir_ / "operator-standby.log");
  ASSERT_TRUE(wait_for_output(*standby_, "waiting to lead")) << standby_->output();

  const Result applied = alice({"apply", "-f", training_job("tiny-slow", kSlowPool, 3)});
  ASSERT_EQ(applied.code, 0) << applied.output;
  std::map<std::string, std::string> probes;
  ASSERT_TRUE(poll_until(
      [&] {
        for (const auto& pod : probe_pods())
          if (pod.value("status", json::object()).value("phase", "") == "Running") return true;
        return false;
      },
      120s))
      << "no probe pod ran:\n"
      << operator_->output();
  // Read after a pod ran (its Job exists by then): read before, the Job could be created
  // and its pod start between the two reads, as a run of 2026-12-06 saw.
  probes = probe_jobs();
  ASSERT_EQ(probes.size(), 1u);
  std::cout << "[e2e] probe running after " << seconds_since(t0) << " s; stopping the leader"
            << std::endl;
  // Only the leader acted so far.
  EXPECT_EQ(standby_->output().find("started reconciling"), std::string::npos)
      << standby_->output();

  // Killed: no Lease release, the standby waits out the lease (15 s) and takes over.
  const auto stop = Clock::now();
  ASSERT_EQ(::kill(operator_->pid(), SIGKILL), 0);
  // The standby, once leading, finds the probe Job by its name and keeps it.
  EXPECT_EQ(operator_->wait_exit(10s), 128 + SIGKILL);
  ASSERT_TRUE(wait_for_output(*standby_, "started reconciling", 60s)) << standby_->output();
  const auto after = probe_jobs();
  EXPECT_TRUE(after.empty() || after == probes) << json(after).dump();  // done, or the same
  std::cout << "[e2e] the standby leads " << seconds_since(stop) << " s after the kill"
            << std::endl;
  operator_ = operator_replica(dir_ / "operator-restarted.log");

  std::swap(operator_, standby_);  // wait_for_decision shows the leader's log on failure
  const json decided = wait_for_decision("tiny-slow", 300s);
  std::swap(operator_, standby_);
  const std::string phase = phase_of(decided);
  EXPECT_TRUE(phase == "Downsized" || phase == "Rejected" || phase == "Running" ||
              phase == "Succeeded")
      << decided.dump(2);
  EXPECT_EQ(probes_created(), 1);  // never created twice
  // The restarted replica waits; it never led.
  EXPECT_NE(operator_->output().find("waiting to lead"), std::string::npos) << operator_->output();
  EXPECT_EQ(operator_->output().find("started reconciling"), std::string::npos)
      << operator_->output();
  std::cout << "[e2e] fail-over flow: " << seconds_since(t0) << " s" << std::endl;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
