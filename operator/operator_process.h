// The operator process around the TrainingJob reconciler (issue #10) and the measurement
// controller (issue #21; docs/operator.md): the wiring controller-runtime's manager does,
// in one object that `commgate operator` starts and stops.
//
//   informers   trainingjobs (all namespaces); CommPolicies, CommProfiles, Namespaces
//               (kube/snapshot_cache.h: the decision's Snapshot); Jobs and Pods with
//               app.kubernetes.io/managed-by=commgate (all namespaces)
//   reader      a CachedReader over those stores; everything else goes to the API server
//   handlers    a TrainingJob change        -> its key; and its pool (when suspended, or
//                                              suspended before), through the PoolIndex
//               a workload Job/Pod change   -> its TrainingJob (label commgate.io/trainingjob)
//               a probe Job/Pod change      -> its pool, and the TrainingJobs waiting on it
//                                              (label commgate.io/pool)
//               a new Snapshot (a CommPolicy, CommProfile or Namespace changed)
//                                           -> every suspended TrainingJob, every pool
//                                              some job waits on
//   queues      TrainingJobs: a WorkQueue and a Runner (`concurrency` workers) calling
//               TrainingJobReconciler::reconcile(key); pools: one worker calling
//               MeasurementReconciler::reconcile(pool)
//   kueue       with --kueue (operator/kueue_check_reconciler.h): Workloads,
//               AdmissionChecks, ResourceFlavors watched; a Workload change -> its key
//               (a queue and a Runner calling KueueCheckReconciler::reconcile) and its
//               pool (a second PoolIndex of Workload keys, which the measurement
//               controller asks beside the TrainingJobs'); an AdmissionCheck or flavor
//               change -> every Workload; a new Snapshot -> the Workloads that wait on a
//               pool, and the AdmissionChecks' Active condition
//   election    only the leader runs the Runner; a leader that loses the Lease stops
//               reconciling at once and the process exits (lost() turns true), as
//               client-go's leader election does: Kubernetes restarts the pod as a
//               candidate
//   server      HTTPS: /healthz (alive), /readyz (every cache listed; leader and standby
//               alike), /metrics
//
// Lifecycle: start() once; then shutdown() (SIGTERM): no new key is handed out, the
// reconciles in flight finish, a leader releases the Lease, the watches and the server
// stop. The reconciler runs only after every cache has completed its first list.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/log.h"
#include "core/snapshot.h"
#include "kube/cluster_config.h"
#include "kube/store.h"
#include "operator/trainingjob_reconciler.h"
#include "server/server.h"

namespace commgate::op {

// The collections the operator watches.
inline constexpr const char* kTrainingJobsPath = "/apis/commgate.io/v1alpha1/trainingjobs";
inline constexpr const char* kJobsPath = "/apis/batch/v1/jobs";
inline constexpr const char* kPodsPath = "/api/v1/pods";
// The label selector of the Jobs and Pods watched: what the operator created.
inline constexpr const char* kManagedSelector = "app.kubernetes.io/managed-by=commgate";
// The workload's label naming its TrainingJob (operator/workload_job.h's objects).
inline constexpr const char* kTrainingJobLabel = "commgate.io/trainingjob";
// Events' reporting controller and the metric prefix.
inline constexpr const char* kReportingController = "commgate.io/operator";
inline constexpr const char* kMetricsPrefix = "commgate_operator";

struct OperatorOptions {
  kube::ClusterConfig cluster;  // where the API server is (kube/cluster_config.h)
  double kube_api_qps = 20;     // client-side rate limit (docs/kube-client.md, "Rate limit")
  int kube_api_burst = 30;
  int concurrency = 4;  // reconciles at once
  // The operator's namespace: the Lease, and the probes (reconciler.probe.ns).
  std::string ns = "commgate-system";
  bool leader_elect = true;  // false: one replica, reconciles at once
  std::string lease_name = "commgate-operator";
  std::chrono::seconds lease_duration{15};
  std::chrono::seconds renew_deadline{10};
  std::chrono::seconds retry_period{2};
  std::string pod_name;          // Events' reportingInstance, the Lease identity's base
  std::string identity;          // the Lease holder; "" -> pod_name + "_" + a random suffix
  server::ServerOptions server;  // /healthz /readyz /metrics (TLS files required)
  ReconcilerSettings reconciler;
  // Also serve Kueue AdmissionChecks (issue #23, docs/kueue.md): watch Workloads,
  // AdmissionChecks and ResourceFlavors (kueue.x-k8s.io/v1beta2) and decide the Workloads
  // queued through a check of ours. The Kueue CRDs must exist: until they list, the
  // process is not ready.
  bool kueue = false;
  std::string version;  // commgate_operator_build_info{version}
  Logger log;
};

// Which TrainingJobs an operator-created Job or Pod concerns, from its labels.
struct ManagedRef {
  std::string trainingjob;  // "ns/name" of a workload's TrainingJob ("" for a probe)
  std::string pool;         // a probe's pool ("" for a workload)
  bool operator==(const ManagedRef&) const = default;
};
ManagedRef managed_ref_of(const nlohmann::json& object);

// What a suspended job's decision reads from a snapshot: each CommPolicy's spec (by its
// generation), each CommProfile (its status is the measurement: by resourceVersion) and
// the namespaces' labels. A CommPolicy's status (its decision counters, written once per
// decision) is not in it: waking every suspended job on each counter write made n
// decisions cost n^2 reconciles (bench/operator, docs/benchmarks.md).
std::string decision_inputs_of(const Snapshot& snapshot);

// The Lease holder identity: `pod_name` (or "commgate-operator" when empty) + "_" +
// `suffix`, as client-go's examples use hostname + "_" + a UUID.
// What the operator's caches keep of a managed Job and Pod (the watches' transforms): the
// reconciler reads a Job's metadata, status and spec.completions/activeDeadlineSeconds,
// never its pod template (most of a workload Job's size); of a Pod its metadata, status
// and spec.nodeName. Measured: docs/benchmarks.md "RSS with 10,000 cached TrainingJobs".
void keep_what_the_reconciler_reads_of_a_job(nlohmann::json& job);
void keep_what_the_reconciler_reads_of_a_pod(nlohmann::json& pod);

std::string leader_identity(const std::string& pod_name, const std::string& suffix);

class OperatorProcess {
 public:
  // Throws std::runtime_error when the API client or the server cannot be configured,
  // std::invalid_argument for inconsistent leader election timings.
  explicit OperatorProcess(OperatorOptions options);
  ~OperatorProcess();  // shutdown()
  OperatorProcess(const OperatorProcess&) = delete;
  OperatorProcess& operator=(const OperatorProcess&) = delete;

  // Starts the server (throws when it cannot listen), the watches and the control thread.
  void start();
  // Stops taking work, lets in-flight reconciles finish, releases the Lease, stops the
  // watches and the server. Idempotent.
  void shutdown();
  // True once the Lease was lost (the process should exit, non-zero).
  bool lost() const { return lost_.load(); }
  // Waits until lost() or `timeout`; returns lost().
  bool wait_lost(std::chrono::milliseconds timeout);

  uint16_t port() const;
  bool ready() const;    // every cache listed
  bool leading() const;  // the Runner is running
  const std::string& identity() const { return options_.identity; }
  std::string metrics_text() const;

 private:
  struct Parts;
  void wire_handlers();
  void on_managed_change(const kube::Store& store, std::map<std::string, ManagedRef>& index,
                         std::mutex& index_mu, const std::vector<kube::StoreChange>& changes);
  // On a new snapshot: wakes the suspended jobs when decision_inputs_of changed.
  void on_snapshot();
  void enqueue_suspended();
  // With --kueue: the Workload of store key `key` looked at again, and its pool indexed.
  void on_workload_change(const std::string& key);
  // Every cached Workload (an AdmissionCheck or ResourceFlavor changed).
  void on_every_workload();
  // With --kueue: an error log line when the API server does not serve Kueue's v1beta2.
  void warn_if_kueue_is_not_served();
  void control_loop();
  void start_leading();
  void stop_leading();
  bool wait_synced();

  OperatorOptions options_;
  std::unique_ptr<Parts> parts_;

  std::mutex jobs_index_mu_, pods_index_mu_;
  std::mutex inputs_mu_;
  std::string decision_inputs_;  // of the last snapshot that woke the suspended jobs
  std::map<std::string, ManagedRef> jobs_index_, pods_index_;  // store key -> labels seen

  mutable std::mutex mu_;  // guards the flags below and the runner's start/stop
  std::condition_variable cv_;
  bool started_ = false, stopping_ = false, shut_down_ = false, runner_started_ = false;
  std::atomic<bool> leading_{false};
  std::atomic<bool> lost_{false};
  std::thread control_;
};

}  // namespace commgate::op
