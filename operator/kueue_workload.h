// A Kueue Workload (kueue.x-k8s.io/v1beta2), read into the parts commgate's admission
// check uses: who owns it (the job), whether it may run (spec.active), its pod sets, the
// conditions that say where it stands, its admission (the quota reserved: counts,
// flavors, topology) and the admission-check entries in its status. Field-path errors in
// one pass, as every commgate parser (core/object_reader.h); fields commgate does not
// read are left alone (Kueue adds fields between releases).
//
// Models (kubernetes-sigs/kueue v0.19.2):
//   apis/kueue/v1beta2/workload_types.go  WorkloadSpec (podSets, active default true),
//     PodSet (name default "main", count default 1, template), WorkloadStatus (conditions,
//     admission, admissionChecks), Admission, PodSetAssignment (flavors, count,
//     topologyAssignment, delayedTopologyRequest), AdmissionCheckState, the condition
//     types QuotaReserved, Admitted, Finished, Evicted;
//   apis/kueue/v1beta2/admissioncheck_types.go  CheckState (Pending, Ready, Retry,
//     Rejected);
//   pkg/workload/workload.go, pkg/workload/finish/finish.go, pkg/workload/evict/evict.go
//     HasQuotaReservation, IsAdmitted, IsFinished, IsEvicted (a condition whose status is
//     "True"), IsActive (spec.active, nil = true);
//   pkg/controller/admissionchecks/provisioning/controller.go  reqIsNeeded: a pod set's
//     count is its assignment's count, else spec.podSets[].count (workloads admitted
//     before the field existed).
// The pod set template's per-pod requests are counted as kube-scheduler counts them
// (core/pod_requests.h; Kueue's UseLimitsAsMissingRequestsInPod is the same limit rule).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_table.h"
#include "core/field_errors.h"
#include "core/object_meta.h"
#include "core/time_format.h"
#include "operator/kueue_topology.h"

namespace commgate::op::kueue {

inline constexpr const char* kApiVersion = "kueue.x-k8s.io/v1beta2";
inline constexpr const char* kWorkloadKind = "Workload";

// The condition types of a Workload that decide whether the check acts.
namespace condition {
inline constexpr const char* kQuotaReserved = "QuotaReserved";
inline constexpr const char* kAdmitted = "Admitted";
inline constexpr const char* kFinished = "Finished";
inline constexpr const char* kEvicted = "Evicted";
}  // namespace condition

// What an admission check says (the CRD's enum of status.admissionChecks[].state).
enum class CheckState { kPending, kReady, kRetry, kRejected };
inline constexpr std::array<EnumName<CheckState>, 4> kCheckStates = {{
    {CheckState::kPending, "Pending"},
    {CheckState::kReady, "Ready"},
    {CheckState::kRetry, "Retry"},
    {CheckState::kRejected, "Rejected"},
}};
const char* to_string(CheckState state);

// The delayed topology request of a pod set assignment (DelayedTopologyRequestState).
enum class DelayedTopology { kPending, kReady };
inline constexpr std::array<EnumName<DelayedTopology>, 2> kDelayedTopologyStates = {{
    {DelayedTopology::kPending, "Pending"},
    {DelayedTopology::kReady, "Ready"},
}};

// The job that owns the Workload: its controller ownerReference, which Kueue's job
// framework sets on every Workload it creates for a job.
struct OwnerReference {
  std::string api_version;  // "kubeflow.org/v1"
  std::string kind;         // "PyTorchJob"
  std::string name;
  std::string uid;

  // The API group of api_version ("" for the core group, "batch" for batch/v1).
  std::string group() const;
};

struct PodSet {
  std::string name = "main";  // the CRD's default
  int64_t count = 1;          // the CRD's default
  // From the pod template.
  std::map<std::string, std::string> node_selector;      // template.spec.nodeSelector
  std::map<std::string, std::string> labels;             // template.metadata.labels
  std::map<std::string, std::string> annotations;        // template.metadata.annotations
  nlohmann::json tolerations = nlohmann::json::array();  // template.spec.tolerations, verbatim
  // nvidia.com/gpu that one pod asks for (its request, else its limit; 0 when none).
  double gpus_per_pod = 0;
};

struct PodSetAssignment {
  std::string name = "main";
  std::map<std::string, std::string> flavors;  // resource name -> ResourceFlavor name
  std::optional<int64_t> count;                // absent on workloads admitted before it existed
  std::optional<TopologyAssignment> topology_assignment;
  std::optional<DelayedTopology> delayed_topology_request;
};

struct Admission {
  std::string cluster_queue;
  std::vector<PodSetAssignment> pod_set_assignments;

  const PodSetAssignment* find(const std::string& pod_set) const;
};

// One entry of status.admissionChecks[].
struct AdmissionCheckState {
  std::string name;
  CheckState state = CheckState::kPending;
  std::string message;
  std::optional<TimePoint> last_transition_time;
  std::optional<int64_t> requeue_after_seconds;
  std::optional<int64_t> retry_count;  // Kueue's: never written by a check controller
  nlohmann::json pod_set_updates;      // verbatim; null when absent

  bool operator==(const AdmissionCheckState&) const = default;
};

// Each condition type that decides whether the check acts: true when the Workload has it
// with status "True".
struct WorkloadConditions {
  bool quota_reserved = false;
  bool admitted = false;
  bool finished = false;
  bool evicted = false;
};

struct Workload {
  ObjectMeta metadata;                  // name, namespace, uid, resourceVersion, labels...
  std::optional<OwnerReference> owner;  // the controller ownerReference, when present
  bool active = true;                   // spec.active (nil means true)
  std::vector<PodSet> pod_sets;
  WorkloadConditions conditions;
  std::optional<Admission> admission;
  std::vector<AdmissionCheckState> admission_checks;

  const PodSet* pod_set(const std::string& name) const;
  const AdmissionCheckState* check(const std::string& name) const;
  // The pods the quota was reserved for in pod set `name`: its assignment's count, else
  // its spec count; 0 for a pod set the Workload does not have.
  int64_t admitted_count(const std::string& name) const;
};

// Thrown for a Workload of another apiVersion (a v1beta1 object, or anything not
// kueue.x-k8s.io/v1beta2): the controller logs it and ignores the object. A
// ValidationError, so a caller that does not tell them apart still reports it.
class UnsupportedWorkloadVersion : public ValidationError {
 public:
  UnsupportedWorkloadVersion(const std::string& what, FieldErrors errors)
      : ValidationError(what, std::move(errors)) {}
};

// Reads a Workload as the API server returns it. Throws UnsupportedWorkloadVersion for
// another apiVersion, and ValidationError naming every malformed field it reads
// ("status.admissionChecks[1].state: must be one of Pending, Ready, Retry, Rejected, got
// \"Done\"").
Workload read_workload(const nlohmann::json& doc);

}  // namespace commgate::op::kueue
