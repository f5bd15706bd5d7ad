// The Kueue stand-in's job integration (sim/kueue_controller.h): which jobs Kueue manages,
// the Workload it creates for one, and how it starts and stops the job. Pure functions.
//
// Modelled on kubernetes-sigs/kueue v0.19.2: pkg/controller/jobframework/reconciler.go
// (ReconcileGenericJob: a Workload for a suspended job carrying kueue.x-k8s.io/queue-name,
// owned by the job as its controller; the job started when the Workload is Admitted;
// stopped on eviction or deactivation; a running job without an admitted Workload
// suspended), jobframework/workload_names.go (GetWorkloadNameForOwnerWithGVK: "<kind>-<name>"
// truncated to 253-6 characters, "-" and 5 hex digits of the SHA-1 of kind, group, name
// and uid; ShortWorkloadNames is off by default), pkg/podset/podset.go (PodSetInfo merge
// on start: the assigned flavors' nodeLabels and the checks' podSetUpdates into the pod
// templates; RestorePodSetsInfo on stop: the templates' nodeSelector, labels and
// annotations as the Workload's pod sets recorded them), and per kind:
// pkg/controller/jobs/job/job_controller.go (batch/v1 Job: one pod set "main", count
// parallelism capped by completions, spec.suspend) and
// pkg/controller/jobs/kubeflow/kubeflowjob/kubeflowjob_controller.go (kubeflow.org/v1
// PyTorchJob: pod sets "master" then "worker", those present, count replicas (default 1),
// spec.runPolicy.suspend).
// Shortcuts (docs/testing.md): no TrainJob, JobSet or other integrations; no Kueue
// webhook (a job created unsuspended is suspended by the reconciler once seen, as the
// reconciler does for a job that escaped the webhook); no partial admission (minCount),
// no priority classes, no pod-set topology requests; a job whose pod sets change while
// suspended keeps its Workload (upstream replaces it); a finished job's Workload is not
// marked Finished; a PodSetInfo merge that conflicts overwrites (upstream refuses).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate::sim {

inline constexpr const char* kKueueQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kKueueJobUidLabel = "kueue.x-k8s.io/job-uid";
inline constexpr const char* kKueueApiVersion = "kueue.x-k8s.io/v1beta2";

// One job kind Kueue integrates with.
struct KueueJobKind {
  std::string group;    // "" for core
  std::string version;  // "v1"
  std::string plural;   // "jobs"
  std::string kind;     // "Job"
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
};

// batch/v1 Job and kubeflow.org/v1 PyTorchJob.
const std::vector<KueueJobKind>& kueue_job_kinds();

// GetWorkloadNameForOwnerWithGVK.
std::string kueue_workload_name(const std::string& owner_name, const std::string& owner_uid,
                                const std::string& kind, const std::string& group);

// The job's pod sets as the integration builds them: [{name, count, template}].
nlohmann::json kueue_pod_sets(const KueueJobKind& kind, const nlohmann::json& job);

// The Workload the reconciler creates for `job` (kueue.x-k8s.io/v1beta2; spec.active and
// other defaults are left to the CRD's schema).
nlohmann::json kueue_workload_for_job(const KueueJobKind& kind, const nlohmann::json& job);

bool kueue_job_suspended(const KueueJobKind& kind, const nlohmann::json& job);
// Whether pods of the job still run (Job: status.active; PyTorchJob: any replicaStatuses
// active), which holds the quota release back after an eviction.
bool kueue_job_active(const KueueJobKind& kind, const nlohmann::json& job);
// Complete or Failed (Job) / Succeeded or Failed (PyTorchJob) condition True.
bool kueue_job_finished(const KueueJobKind& kind, const nlohmann::json& job);

// What the integration sets in each pod set's template when it starts the job:
// {podSetName: {nodeSelector, labels, annotations, tolerations}}, from the admission's
// flavors (their ResourceFlavors' spec.nodeLabels / nodeTaints' tolerations are not
// modelled) and the admission checks' podSetUpdates. `flavors`: ResourceFlavors by name.
nlohmann::json kueue_pod_set_infos(const nlohmann::json& workload, const nlohmann::json& flavors);

// The job started (RunWithPodSetsInfo): suspend false, `infos` merged into the templates.
nlohmann::json kueue_started_job(const KueueJobKind& kind, const nlohmann::json& job,
                                 const nlohmann::json& infos);
// The job stopped (Suspend + RestorePodSetsInfo): suspend true, each template's
// nodeSelector, labels and annotations as the Workload's pod set recorded them.
nlohmann::json kueue_stopped_job(const KueueJobKind& kind, const nlohmann::json& job,
                                 const nlohmann::json& workload);

}  // namespace commgate::sim
