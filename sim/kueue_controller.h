// A Kueue stand-in for the simulated cluster (started with SimCluster::start_kueue or
// `commgate-sim --kueue`), modelled on kubernetes-sigs/kueue v0.19.2 for what an external
// admission check such as commgate's depends on. It acts once the Kueue CRDs
// (../shared/fixtures/ecosystem/kueue-v0.19.2/) are created through the API, so every
// object it writes is checked against their schemas.
//
// Modelled (the pure rules live in sim/kueue_workloads.h, sim/kueue_quota.h,
// sim/kueue_admission.h, which name the upstream files):
// - jobframework/reconciler.go: a Workload (kueue.x-k8s.io/v1beta2) created, with an
//   Update-manager "kueue" entry, for each suspended batch/v1 Job, kubeflow.org/v1
//   PyTorchJob, JobSet or TrainJob labelled kueue.x-k8s.io/queue-name (a TrainJob once
//   its runtime exists); the job started (suspend false, the
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
//   Update), evicted with reason DeactivatedDueToAdmissionCheck, the job kept suspended;
//   spec.active set true again on a workload deactivated by hand (Requeued=False reason
//   Deactivated) -> Requeued=True reason Reactivated, queued and given quota again, its
//   entries (reset to Pending by the eviction) asked again; one deactivated by Kueue
//   (Requeued=False DeactivatedDueTo<cause>) stays unqueued, as v0.19.2's does
//   (kubernetes-sigs/kueue#14870).
// - the ClusterQueues' and LocalQueues' Active conditions (sim/kueue_queue_status.h),
//   written with a status Update when they change; the scheduler admits only in an
//   active ClusterQueue;
// - Events (events.k8s.io/v1, client-go tools/events series): UpdatedAdmissionCheck,
//   CreatedWorkload and Started on the job (jobframework/reconciler.go), QuotaReserved
//   and Admitted on the Workload (scheduler.go), Admitted, EvictedDueTo<reason> and
//   AdmissionCheckRejected (workload_controller.go, evict.go);
// - topology-aware scheduling at the hostname level (sim/kueue_tas.h): the
//   topologyAssignment written with the quota, or delayed behind ProvisioningRequest and
//   MultiKueue checks and assigned by the scheduler's second pass once they are Ready;
// - every status write of admission, eviction and requeueing is a forced server-side
//   apply as "kueue-admission" (patching.go PatchAdmissionStatus) with the uid and
//   resourceVersion the controller read as preconditions, so other managers' fields (an
//   external check's own entry and its managedFields) stay as a real cluster keeps them.
// Shortcuts (docs/testing.md): the controller polls (every kKueuePollInterval) instead of
// watching the Kueue resources, which may not exist when it starts; it writes through
// the store with the sim's field manager and schema code but without admission webhooks;
// of queue status only the Active conditions, no AdmissionCheck status; Events are
// written on the controller's thread, a series updated at each occurrence; no Topology
// objects, no TAS scheduling gates or ungater (the started job's pods are placed by the
// sim's scheduler); no cohorts, borrowing, preemption, fair sharing, MultiKueue or
// ProvisioningRequest controllers, waitForPodsReady; namespaceSelector is not read and
// stopPolicy only makes a queue inactive.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/change_loop.h"
#include "sim/kueue_tas.h"
#include "sim/kueue_workloads.h"
#include "sim/object_store.h"

namespace commgate::sim {

inline constexpr std::chrono::milliseconds kKueuePollInterval{200};
// client-go tools/events: isomorphic events within this window form one series.
inline constexpr std::chrono::minutes kKueueEventSeriesWindow{6};

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
  // An Event written, for client-go's isomorphic-event series (see record_event).
  struct EventSeries {
    std::string ns, name;
    int64_t count = 0;
    TimePoint last{};
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
  // The scheduler's second pass: a delayed topology assigned once every check is Ready.
  bool schedule_second_pass(const Kinds& k, const Snapshot& s, TimePoint now);
  // The ClusterQueues' and LocalQueues' Active conditions, written when they change.
  bool sync_queue_status(const Kinds& k, const Snapshot& s, TimePoint now);
  // What TAS reads (nodes, pods), listed once per pass when a flavor has a topologyName.
  KueueTasCluster tas_cluster(const Snapshot& s, const nlohmann::json& flavors) const;

  // The ClusterQueue of the workload's LocalQueue, or null.
  const nlohmann::json* cluster_queue_of(const Snapshot& s, const nlohmann::json& workload) const;

  // The writes, as Kueue makes them (see the header comment).
  bool create_workload(const ResourceInfo& r, nlohmann::json workload);  // false: it existed
  void apply_admission_status(const ResourceInfo& r, const nlohmann::json& read,
                              const nlohmann::json& changed);
  void update(const ResourceInfo& r, const nlohmann::json& read, const nlohmann::json& changed,
              WritePart part);
  // An events.k8s.io/v1 Event about `regarding` from `controller` (client-go
  // tools/events as controller-runtime's GetEventRecorder gives it): the same type,
  // reason, controller and object (uid and resourceVersion) within
  // kKueueEventSeriesWindow of the last one updates that Event's series (count,
  // lastObservedTime) instead of writing another; its note stays the first one's.
  void record_event(const nlohmann::json& regarding, const std::string& type,
                    const std::string& reason, const std::string& note,
                    const std::string& controller);

  ObjectStore& store_;
  ResourceInfo jobs_, nodes_, pods_, events_;
  // Only the controller's thread touches these.
  std::map<std::string, EventSeries> event_series_;  // by the isomorphic-event key
  // Per job uid, the job and Workload versions its last reconcile saw: a reconcile runs
  // (and records UpdatedAdmissionCheck) when either changed, as the watches trigger one.
  std::map<std::string, std::string> job_reconciled_;
  ChangeLoop loop_;  // last: its thread uses the members above
};

}  // namespace commgate::sim
