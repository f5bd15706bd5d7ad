// The simulated cluster of the operator's end-to-end tests (issue #10 "End to end", issue
// #23), shared by tests/operator/operator_e2e_test.cpp (TrainingJobs) and
// tests/operator/kueue_e2e_test.cpp (Kueue Workloads): commgate-sim with node pools in
// network namespaces whose links tc shapes (scripts/netsim.sh), the real `commgate
// webhook` (deploy/webhook-configurations.yaml, called by the sim over HTTPS), the real
// `commgate operator` authenticated as its service account, commgate-probe pods run by the
// sim's kubelet on the pools' nodes, and a researcher driving it with the real kubectl.
//
// Compiled into each test program, which defines COMMGATE_SOURCE_DIR, COMMGATE_KUBECTL,
// COMMGATE_NETSIM_SCRIPT, COMMGATE_SIM_BIN, COMMGATE_PROBE_BIN and COMMGATE_BINARY
// (tests/operator/CMakeLists.txt). Functions that set the cluster up fail with gtest's
// ASSERT_*: the caller checks HasFatalFailure() after each.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/pki.h"
#include "tests/support/child_process.h"

namespace commgate::testing {

using E2eClock = std::chrono::steady_clock;

inline const std::string kE2eOperatorUser =
    "system:serviceaccount:commgate-system:commgate-operator";
inline const std::string kE2eWebhookUser = "system:serviceaccount:commgate-system:commgate-webhook";
inline const std::string kE2eResearcher = "alice";

double seconds_since(E2eClock::time_point start);

// Polls `condition` every `interval` (each poll runs kubectl, so not every few ms) until
// it holds or `timeout` passes.
bool poll_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds interval = std::chrono::milliseconds(500));

// `command` under /bin/sh; its exit status, -1 when it did not exit normally.
int run_shell(const std::string& command);

// Emulated nodes (scripts/netsim.sh) for the test's lifetime. The prefix carries this
// process's pid, and netsim.sh records the pid as owner, so a later run reaps what a
// killed test left behind.
class EmulatedPool {
 public:
  EmulatedPool(std::string prefix, int nodes, const std::string& rate,
               const std::filesystem::path& log);
  ~EmulatedPool();
  EmulatedPool(const EmulatedPool&) = delete;
  EmulatedPool& operator=(const EmulatedPool&) = delete;
  bool ok() const { return ok_; }
  const std::string& prefix() const { return prefix_; }

 private:
  std::string command(const std::string& args) const;
  std::string prefix_;
  std::filesystem::path log_;
  bool ok_ = false;
};

struct E2eResult {
  int code;
  std::string output;
};

// One pool of the cluster: `nodes` nodes of one GPU each (as GPU nodes advertise; there is
// no CUDA here), labelled commgate.io/pool=<label>; on `rate`-shaped links in network
// namespaces named <netns_stem><pid>, or on the host's network when `rate` is "" (a pool
// no probe is meant to measure).
struct E2ePoolSpec {
  std::string label;
  int nodes = 2;
  std::string rate;
  std::string netns_stem;  // a few letters: netns names are short
};

struct E2eClusterOptions {
  std::string name;  // the scratch directory's stem: /tmp/commgate-<name>-<pid>
  std::vector<E2ePoolSpec> pools;
  bool kueue = false;                                               // commgate-sim --kueue
  std::vector<std::string> namespaces = {"commgate-system", "ml"};  // created at start
};

class E2eCluster {
 public:
  explicit E2eCluster(E2eClusterOptions options);
  // Stops the webhook and the sim (which kills the pods' processes), then the pools (the
  // caller stops its operator replicas first). The directory is removed unless keep_dir().
  ~E2eCluster();
  E2eCluster(const E2eCluster&) = delete;
  E2eCluster& operator=(const E2eCluster&) = delete;

  // Why this machine cannot run the cluster ("" when it can): root for the network
  // namespaces, kubectl, commgate-probe.
  static std::string missing_prerequisite();

  // The pools, the sim, the webhook, commgate's CRDs, the namespaces and the webhook
  // configurations (with the test CA as their caBundle). ASSERTs.
  void start();

  // `kubectl apply -f path` as the admin, retried while the webhook refuses because its
  // caches have not listed the CRDs applied just now (503 "has not loaded"). ASSERTs.
  void apply_through_webhook(const std::filesystem::path& path);
  // `kubectl create -f` of each file, as the admin. ASSERTs.
  void create_files(const std::vector<std::filesystem::path>& paths);

  // The probe with one compute thread: the emulated nodes share this machine's cores, so
  // the default (every core) would oversubscribe them with several probe pods at once and
  // time the contention instead of the model.
  static std::string probe_command();

  // Starts a `commgate operator` replica (leader election on unless `extra_args` says
  // otherwise) as its service account, logging to `log`.
  std::unique_ptr<ChildProcess> operator_replica(const std::filesystem::path& log,
                                                 const std::vector<std::string>& extra_args = {});
  // True once `process` printed `needle` (within `timeout`).
  static bool wait_for_output(ChildProcess& process, const std::string& needle,
                              std::chrono::milliseconds timeout = std::chrono::seconds(30));

  E2eResult kubectl(const std::string& kubeconfig, std::vector<std::string> args,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30));
  E2eResult admin(std::vector<std::string> args);
  // The researcher: alice's own kubeconfig.
  E2eResult alice(std::vector<std::string> args);
  // `kubectl get <args> -o json` as the admin; null when it fails.
  nlohmann::json get_json(std::vector<std::string> args);

  // The probe Jobs that exist now: name -> uid.
  std::map<std::string, std::string> probe_jobs();
  // Probe Jobs the API server created, from the sim's audit log (kube-apiserver's record of
  // every request): the creates that succeeded of Jobs in commgate-system whose names
  // start with `name_prefix` (every probe by default).
  int probe_job_creates(const std::string& name_prefix = "commgate-probe-");
  // How many probes the operator created, from its ProbeCreated Events (a repeated one is
  // a series, counted by its count).
  int probes_created();
  // The probe pods that exist now (finished ones stay until their Job goes).
  std::vector<nlohmann::json> probe_pods();
  // What the pods whose names start with `prefix` printed: the sim's kubelet keeps each
  // container's output in <pod dir>/<container>.log (there is no `kubectl logs`).
  std::string pod_logs(const std::string& ns, const std::string& prefix);
  // What a failed wait needs to be understood: the Jobs and Pods with their states, and
  // the probe pods' descriptions (termination messages, the scheduler's reasons).
  std::string cluster_dump();

  const std::filesystem::path& dir() const { return dir_; }
  const std::string& admin_kubeconfig() const { return admin_kubeconfig_; }
  // Keeps the directory for a look after a failure (printed at teardown).
  void keep_dir() { keep_ = true; }
  std::string webhook_output() const { return webhook_ ? webhook_->output() : ""; }

 private:
  void start_sim();
  void start_webhook();
  void install();

  E2eClusterOptions options_;
  server::CertificateAuthority ca_{"commgate operator e2e CA", 1, std::chrono::hours(24)};
  std::filesystem::path dir_;
  std::string admin_kubeconfig_;
  std::vector<std::unique_ptr<EmulatedPool>> pools_;
  std::unique_ptr<ChildProcess> sim_, webhook_;
  int calls_ = 0;
  bool keep_ = false;
};

}  // namespace commgate::testing
