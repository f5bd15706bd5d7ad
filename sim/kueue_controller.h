// A Kueue stand-in for the simulated cluster (started with SimCluster::start_kueue or
// `commgate-sim --kueue`), modelled on kubernetes-sigs/kueue v0.19.2 for what an external
// admission check such as commgate's depends on. It acts once the Kueue CRDs
// (../shared/fixtures/ecosystem/kueue-v0.19.2/) are created through the API, so every
// object it writes is checked against their schemas.
//
// Modelled (the pure rules live in sim/kueue_workloads.h, sim/kueue_quota.h,
// sim/kueue_admission.h, which name the upstream files):
// - jobframework/reconciler.go: a Workload (kueue.x-k8s.io/v1beta2) created, with an
//   Update-manager "kueue" entry, for each suspended batch/v1 Job or kubeflow.org/v1
//   PyTorchJob labelled kueue.x-k8s.io/queue-name; the job started (suspend false, the
//   flavors' nodeLabels and tolerations and the checks' podSetUpdates merged into its pod
//   templates) when the Workload is Admitted; stopped (templates restored) when it is
//   evicted or deactivated, then the quota released once no pod of it runs
//   (QuotaReserved=False reason Pending, Requeued=False with the eviction's reason).
// - the scheduler: oldest pending Workload first, quota reserved on the LocalQueue's
//   ClusterQueue (status.admission, QuotaReserved=True), only while the ClusterQueue is
//   active (every AdmissionCheck its strategy names exists with condition Active=True)
//   and the workload's backoff (requeueState.requeueAt, Requeued=False) is over.
// - core/workload_controller.go: check entries added Pending with a plain status Update
//   (manager "kueue"); Admitted when every entry is Ready; Retry -> evicted (reason
//   AdmissionCheck), entries reset to Pending with retryCount + 1, requeued after the
//   entry's requeueAfterSeconds; Rejected -> DeactivationTarget, spec.active=false (an
//   Update), evicted with reason DeactivatedDueToAdmissionCheck, the job kept suspended.
// - every status write of admission, eviction and requeueing is a forced server-side
//   apply as "kueue-admission" (patching.go PatchAdmissionStatus) with the uid and
//   resourceVersion the controller read as preconditions, so other managers' fields (an
//   external check's own entry and its managedFields) stay as a real cluster keeps them.
// Shortcuts (docs/testing.md): the controller polls (every kKueuePollInterval) instead of
// watching the Kueue resources, which may not exist when it starts; it writes through
// the store with the sim's field manager and schema code but without admission webhooks;
// no ClusterQueue, LocalQueue or AdmissionCheck status is written; no Events; no
// cohorts, borrowing, preemption, fair sharing, TAS, MultiKueue, ProvisioningRequest,
// waitForPodsReady; namespaceSelector and stopPolicy of ClusterQueues are not read.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/change_loop.h"
#include "sim/kueue_workloads.h"
#include "sim/object_store.h"

namespace commgate::sim {

inline constexpr std::chrono::milliseconds kKueuePollInterval{200};

class KueueController {
 public:
  explicit KueueController(ObjectStore& store);
  ~KueueController();  // stop()
  KueueController(const KueueController&) = delete;
  KueueController& operator=(const KueueController&) = delete;

  void start();
  void stop();
  // One pass: jobs, then Workloads, then quota. Returns when the next pass is due.
  std::optional<TimePoint> sync_once();

 private:
  struct Kinds {
    ResourceInfo workloads, cluster_queues, local_queues, flavors, checks;
  };
  struct Snapshot {
    std::vector<nlohmann::json> workloads;
    std::map<std::string, nlohmann::json> cluster_queues, flavors, checks;
    std::map<std::string, nlohmann::json> local_queues;  // "ns/name"
  };
  std::optional<Kinds> kinds() const;
  Snapshot snapshot(const Kinds& k) const;

  bool reconcile_job(const Kinds& k, const Snapshot& s, const KueueJobKind& kind,
                     const ResourceInfo& jobs, const nlohmann::json& job);
  bool reconcile_workload(const Kinds& k, const Snapshot& s, const nlohmann::json& workload,
                          TimePoint now);
  bool schedule(const Kinds& k, const Snapshot& s, TimePoint now);

  // The ClusterQueue of the workload's LocalQueue, or null.
  const nlohmann::json* cluster_queue_of(const Snapshot& s, const nlohmann::json& workload) const;

  // The writes, as Kueue makes them (see the header comment).
  void create_workload(const ResourceInfo& r, nlohmann::json workload);
  void apply_admission_status(const ResourceInfo& r, const nlohmann::json& read,
                              const nlohmann::json& changed);
  void update(const ResourceInfo& r, const nlohmann::json& read, const nlohmann::json& changed,
              WritePart part);

  ObjectStore& store_;
  ResourceInfo jobs_;
  ChangeLoop loop_;  // last: its thread uses the members above
};

}  // namespace commgate::sim
