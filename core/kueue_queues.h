// Which Kueue LocalQueues send their workloads through commgate's admission check: what the
// webhook's workload gate (webhook/validate_workload.h) reads to let a multi-node job that
// Kueue queues past `spec.unmanagedWorkloads: deny`, since commgate decides it through its
// Workload before it may start (docs/kueue.md). Pure: built from the stored LocalQueues,
// ClusterQueues and AdmissionChecks (kueue.x-k8s.io/v1beta2) by kube/snapshot_cache.
//
// A LocalQueue counts as checked when its ClusterQueue's admissionChecksStrategy names an
// AdmissionCheck whose spec.controllerName is commgate's, for every flavor of the
// ClusterQueue (onFlavors empty, or listing each flavor of its resourceGroups): a check on
// some flavors only lets a workload admitted on another flavor start undecided.
// Models kubernetes-sigs/kueue v0.19.2 apis/kueue/v1beta2/clusterqueue_types.go
// (AdmissionChecksStrategy, AdmissionCheckStrategyRule.onFlavors: "if empty, the
// AdmissionCheck will run for all workloads") and localqueue_types.go (spec.clusterQueue).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate {

// spec.controllerName of commgate's AdmissionChecks (operator/kueue_admission_check.h).
inline constexpr const char* kKueueCheckControllerName = "commgate.io/comm-check";
// The label a job names its LocalQueue with (Kueue's mutating webhook may add it from the
// namespace's default LocalQueue; the validating webhook sees it after that).
inline constexpr const char* kKueueQueueNameLabel = "kueue.x-k8s.io/queue-name";
// A job carrying this annotation or label (Kueue reads the annotation first: its
// WorkloadIdentifierAnnotations feature, on by default since v0.18) runs under the Workload
// it names, which someone created beforehand (MultiKueue's manager does, on a worker
// cluster), instead of one Kueue builds from the job: that Workload's spec.queueName
// decides the queue, not the job's label (pkg/controller/jobframework/utils.go
// PrebuiltWorkloadNameFor, reconciler.go, v0.19.2).
inline constexpr const char* kKueuePrebuiltWorkloadLabel = "kueue.x-k8s.io/prebuilt-workload-name";
// The annotation that names a queued job's model for commgate's check
// (operator/kueue_model_annotations.h): without it the check cannot measure the job.
inline constexpr const char* kKueueParametersAnnotation = "commgate.io/parameters";

struct KueueQueue {
  std::string cluster_queue;
  bool checked = false;
  // Why not, in words for a refusal: "ClusterQueue gpu (no AdmissionCheck of commgate's)".
  std::string why_not;
  bool operator==(const KueueQueue&) const = default;
};

struct KueueQueues {
  std::map<std::string, KueueQueue> local_queues;  // by "namespace/name"
  // Null when the LocalQueue does not exist (in this snapshot).
  const KueueQueue* find(const std::string& ns, const std::string& name) const;
  bool operator==(const KueueQueues&) const = default;
};

// A watch transform for the three kinds: only what kueue_queues reads (metadata's name,
// namespace and resourceVersion; a LocalQueue's spec.clusterQueue; a ClusterQueue's
// flavor names and admissionChecksStrategy; an AdmissionCheck's spec.controllerName), so
// that the webhook holds a few dozen bytes per queue whatever else the objects carry.
void keep_kueue_queue_fields(nlohmann::json& object);

KueueQueues kueue_queues(const std::vector<nlohmann::json>& local_queues,
                         const std::vector<nlohmann::json>& cluster_queues,
                         const std::vector<nlohmann::json>& admission_checks);

}  // namespace commgate
