// commgate's Kueue admission check (issue #23): the reconcile of one Workload
// (kueue.x-k8s.io/v1beta2), the second consumer of the measurement controller beside the
// TrainingJob reconcile. It only decides and acts; the pool's probe is the measurement
// controller's (operator/measurement_reconciler.h), which sees the Workloads that wait
// through workload_measurement_demand below. Top to bottom, as Kueue's own check
// controllers (provisioning/controller.go: get, guard, filter its checks, sync, write):
//
//   read     the Workload (gone or of another apiVersion: nothing to do, logged), the
//            AdmissionChecks that are ours (spec.controllerName commgate.io/comm-check)
//   guard    should_act (operator/kueue_should_act.h): quota reserved, not finished,
//            evicted or inactive, one of our entries Pending
//   request  what the Workload stands for (workload_request): the training pod sets'
//            node count and processes (operator/kueue_training_shape.h), the pool (the
//            assigned ResourceFlavor's nodeLabels + the pod set's nodeSelector, narrowed
//            to the hosts of a topology assignment), the
//            model from the owner job's annotations (operator/kueue_model_annotations.h),
//            the CommPolicy of the AdmissionCheck's parameters or of the namespace
//   decide   the decision record for the job's UID and pod-set counts when one is held;
//            else core's decide_for_job on the request, once (the webhook's and the
//            TrainingJob reconcile's decision), and the pool's probe state for a gate
//   state    step 1's next_check_state: Pending while measured / probed, Retry on a
//            failed probe (never on an admitted Workload), Ready within policy, Rejected
//            over it with the largest count that passes
//   write    our entry only, by server-side apply on workloads/status (field manager
//            commgate.io/comm-check, force, uid + resourceVersion preconditions), when it
//            changed; an Event on the Workload when its state changed
//
// The decision record. Ready and Rejected are kept per job UID and pod-set counts (the
// owner job's metadata.uid, "master=1,worker=3"), in this process's memory: another
// controller's Retry resets our Ready to Pending, and a re-created Workload starts at
// Pending; both get the same answer back without a second decision or probe. Shortcut: a
// restarted operator has none, and decides again from the pool's CommProfile (no second
// probe while the measurement is within the policy's measurementTTL).
//
// The wait is bounded: a Pending entry waiting for the pool's probe (needed or running)
// longer than the policy's spec.admissionCheck.maxPendingSeconds, counted from the later of
// its lastTransitionTime and the quota's reservation, becomes Retry (requeueAfterSeconds:
// the policy's retryStrategy backoff at Kueue's retryCount + 1), never on an admitted
// Workload; a Workload within the bound is looked at again when it ends (or at the poll,
// if sooner). Other Pending entries (bad annotations, a job larger than its pool, no
// policy) wait for what their message names, unbounded. A job without model annotations
// is Ready or Rejected as the policy's spec.admissionCheck.withoutModel says.
//
// Topology-aware scheduling: with hostnames assigned (kueue_training_shape.h), the pool is
// the flavor's nodeSelector narrowed to those hosts (TrainingJobSpec::hostnames), a
// CommProfile of its own, probed on exactly them. A delayed topology has no hostnames yet:
// the flavor's pool.
// Shortcut: when pods ask for fewer GPUs than a node has, the node size is the largest
// nvidia.com/gpu allocatable among the pool's Nodes the snapshot holds (none: one pod per
// node).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "core/log.h"
#include "core/snapshot.h"
#include "core/training_job.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/reconcile_result.h"
#include "operator/kueue_admission_check.h"
#include "operator/kueue_check_state.h"
#include "operator/kueue_workload.h"
#include "operator/measurement_demand.h"

namespace commgate::op::kueue {

// API paths of the Kueue objects the check reads and writes.
inline constexpr const char* kWorkloads = "/apis/kueue.x-k8s.io/v1beta2/workloads";
inline constexpr const char* kResourceFlavors = "/apis/kueue.x-k8s.io/v1beta2/resourceflavors";
std::string workload_path(const std::string& ns, const std::string& name);
// The path of the job that owns a Workload; nullopt for an owner kind commgate does not read.
std::optional<std::string> owner_job_path(const std::string& ns, const OwnerReference& owner);

// What a Workload stands for, as a TrainingJob request the core decision takes.
struct WorkloadRequest {
  enum class Kind {
    kRequest,  // `job` holds it
    kNoModel,  // the owner job has no model annotation: the policy says (no_model_outcome)
    kInvalid,  // `message` says what is wrong, with field paths
    // The training pod sets run on different pools: `message` says which; it cannot be
    // checked as one (Rejected).
    kMixedPools,
  };
  Kind kind = Kind::kInvalid;
  // metadata: the Workload's namespace, name, uid and creation time; spec.policyRef (also
  // for kNoModel, to select the policy); for kRequest also spec: numNodes (and
  // minNodes: a Workload is not resized), numProcPerNode, nodeSelector, tolerations, model,
  // suspend true.
  TrainingJob job;
  // The decision record's key (kRequest): the owner job's uid, the training pod sets'
  // counts, the policy reference, the pool (hostnames included), the processes per node,
  // the GPUs per pod and the model.
  std::string record_key;
  std::string message;
};

// The request `workload` stands for. owner_job: the job named by its controller
// ownerReference (null: not found); flavors: ResourceFlavors by name; policy_ref: the
// AdmissionCheck's CommPolicy ("" for the namespace's); gpus_per_node: the pool's node
// size (<= 0: not known); namespace_defaults: the commgate.io/ annotations of the
// Workload's Namespace, the defaults of the job's model annotations.
WorkloadRequest workload_request(const Workload& workload, const nlohmann::json* owner_job,
                                 const std::map<std::string, nlohmann::json>& flavors,
                                 const std::string& policy_ref, int64_t gpus_per_node,
                                 const std::map<std::string, std::string>& namespace_defaults = {});

// The check's outcome for a request decided as `jd` (decide_for_job); for a gate for the
// pool's measurement, from `profile`, the pool's CommProfile as read (null: none yet):
// Pending while its probe runs or is due, Retry (requeueAfterSeconds: the pool's backoff)
// while the pool waits out a failed probe's backoff or has none left.
// Its pool (CheckOutcome::pool) is set on a Pending that waits for the pool's probe, which
// the policy's maxPendingSeconds bounds (pending_bound).
CheckOutcome check_outcome(const JobDecision& jd, const nlohmann::json* profile, TimePoint now);

// The outcome for a job that names no model under `policy` (nullopt: none applies, as
// `policy_error` says: Pending): its spec.admissionCheck.withoutModel, Ready (the message
// saying how to opt in) or Rejected (naming the annotations to add, the policy that asks
// for them and how to resubmit).
CheckOutcome no_model_outcome(const std::optional<CommPolicy>& policy,
                              const std::string& policy_error);

// Which version of `policy` a decision record was made under: its name, uid and
// resourceVersion (the built-in default has none).
std::string policy_record_version(const CommPolicy& policy);

// The bound `policy` puts on the Pending wait of our entry `current`: maxPendingSeconds, and
// the Retry's delay from its retryStrategy (probe_retry_delay at Kueue's retryCount + 1:
// each requeue of the same Workload waits twice as long, up to backoffMaxSeconds).
PendingBound pending_bound(const CommPolicy& policy, const AdmissionCheckState& current);

// The decision records (the header says why in memory): the Ready and Rejected outcomes
// by WorkloadRequest::record_key. Shared by the reconcile, which writes them, and the
// measurement demand, for which a recorded Workload waits for nothing. At most
// `capacity` records, the oldest forgotten first: a forgotten one is decided again from
// the pool's CommProfile (no probe while it is fresh), so a cluster that runs jobs for
// months holds a bounded map. Thread-safe.
class CheckDecisionRecords {
 public:
  static constexpr size_t kDefaultCapacity = 10000;
  explicit CheckDecisionRecords(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}
  // The outcome recorded for `record_key` under the policy version `policy_version`
  // (policy_record_version) no earlier than `not_before` (now less the policy's
  // measurementTTL: a decision lasts as long as the measurement it came from); nullopt
  // otherwise (a tightened policy, or an old record, decides again).
  std::optional<CheckOutcome> find(const std::string& record_key, const std::string& policy_version,
                                   TimePoint not_before) const;
  // Kept only when `outcome` is a decision (Ready or Rejected).
  void remember(const std::string& record_key, const CheckOutcome& outcome,
                const std::string& policy_version, TimePoint decided_at);
  size_t size() const;

 private:
  struct Record {
    CheckOutcome outcome;
    std::string policy_version;
    TimePoint decided_at{};
  };
  const size_t capacity_;
  mutable std::mutex mu_;
  std::map<std::string, Record> records_;
  std::deque<std::string> order_;  // record keys, oldest first
};

// When each Workload's entry was last Pending for something other than its pool's probe
// (a pool too small, bad annotations, no policy), as this process saw it: maxPendingSeconds
// bounds the wait for the probe, which begins after that (the trial of 2026-12-07: a
// Workload Pending 3 minutes for nodes its pool lacked got Retry the moment the nodes came,
// before any probe ran, its entry's lastTransitionTime being that old). Keyed by the
// Workload's uid and the check; forgotten once decided. A restarted operator knows none and
// counts from the entry's lastTransitionTime, as before. At most `capacity` keys, the
// oldest forgotten first. Thread-safe.
class OtherPendingWaits {
 public:
  static constexpr size_t kDefaultCapacity = 10000;
  explicit OtherPendingWaits(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}
  void saw(const std::string& key, TimePoint now);
  std::optional<TimePoint> last_seen(const std::string& key) const;
  void forget(const std::string& key);
  size_t size() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::map<std::string, TimePoint> last_;
};

// The pool the Workload `object` waits on while the check acts on it (a Pending entry of
// ours, quota reserved: should_act), read through `reader` (AdmissionChecks, its
// ResourceFlavors); nullopt otherwise. The operator indexes Workloads by it, so that a
// pool's probe and CommProfile wake the Workloads that wait on them.
std::optional<std::string> workload_waiting_pool(const kube::Reader& reader,
                                                 const nlohmann::json& object);

// The measurement the Workload of key `key` (kWorkloadDemandPrefix + "namespace/name")
// waits for, read through `reader` (Workload, AdmissionChecks, owner job, flavors) and
// decided by `snapshot` at `now`; nullopt when the check does not act on it, `records`
// holds its decision, or it needs no probe. MeasurementSettings::workload_demand.
std::optional<MeasurementDemand> workload_measurement_demand(const kube::Reader& reader,
                                                             const CheckDecisionRecords& records,
                                                             const std::string& key,
                                                             const Snapshot& snapshot,
                                                             TimePoint now);

struct CheckReconcilerSettings {
  // Each reconcile logs with the Workload's key (field `workload`).
  Logger log = Logger::discard();
};

class KueueCheckReconciler {
 public:
  // reader: the caches (Workloads, AdmissionChecks, ResourceFlavors, the owner jobs,
  // CommProfiles); status_writer: the apply on workloads/status; records: the decision
  // records, shared with workload_measurement_demand. All references must outlive the
  // reconciler.
  KueueCheckReconciler(const kube::Reader& reader, kube::StatusWriter& status_writer,
                       CheckDecisionRecords& records,
                       std::function<std::shared_ptr<const Snapshot>()> snapshot,
                       kube::EventRecorder& events, std::function<TimePoint()> now,
                       CheckReconcilerSettings settings);

  // key: the Workload's "namespace/name".
  kube::ReconcileResult reconcile(const std::string& key);

 private:
  struct Context;
  CheckOutcome decide(Context& ctx);
  // The outcome before the Pending wait's bound; `policy` set to the policy that decided
  // a request.
  CheckOutcome decide_unbounded(Context& ctx, std::optional<CommPolicy>& policy);
  void write(Context& ctx, const std::string& check, const CheckOutcome& outcome);

  const kube::Reader& reader_;
  kube::StatusWriter& status_writer_;
  std::function<std::shared_ptr<const Snapshot>()> snapshot_;
  kube::EventRecorder& events_;
  std::function<TimePoint()> now_;
  CheckReconcilerSettings settings_;
  CheckDecisionRecords& records_;
  OtherPendingWaits other_waits_;
};

}  // namespace commgate::op::kueue
