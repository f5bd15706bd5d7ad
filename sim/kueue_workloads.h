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
// parallelism capped by completions, spec.suspend),
// pkg/controller/jobs/kubeflow/kubeflowjob/kubeflowjob_controller.go (kubeflow.org/v1
// PyTorchJob: pod sets "master" then "worker", those present, count replicas (default 1),
// spec.runPolicy.suspend), pkg/controller/jobs/jobset/jobset_controller.go
// (jobset.x-k8s.io/v1alpha2 JobSet: one pod set per replicatedJob, named as it, count
// replicas x parallelism capped by completions, template the Job template's pod template;
// spec.suspend; PodSetInfo merged into and restored from each replicatedJob's pod
// template; active while a replicatedJobsStatus entry has active pods; finished on
// Completed or Failed) and pkg/controller/jobs/trainjob/trainjob_controller.go
// (trainer.kubeflow.org/v1alpha1 TrainJob, with kubeflow/trainer v2.2.1, the version
// Kueue v0.19.2 builds with: pkg/runtime/core/trainingruntime.go newRuntimeInfo,
// pkg/runtime/framework/plugins/jobset/builder.go, plugins/torch and plainml
// EnforceMLPolicy). A TrainJob's pod sets are those of the JobSet Trainer would build from
// the referenced ClusterTrainingRuntime or TrainingRuntime: one per replicatedJob of the
// runtime's template, in its order and named as it; the trainer's Job (the one whose Job
// template carries trainer.kubeflow.org/trainjob-ancestor-step: trainer) with count
// spec.trainer.numNodes (else the runtime's mlPolicy.numNodes, default 1), replicas 1, and
// in its "node" container the TrainJob's image, command, args, env and resourcesPerNode
// (the whole resources); the dataset and model initializers with replicas 1; every
// replicatedJob's parallelism and completions set to its count. The ancestor label stays on
// the Job template, as upstream's runtimes put it (trainer's runtimes and this fixture):
// the Workload's pod set template is the pod template and does not carry it, so a reader
// finds the trainer by the pod set name "node". Started: Kueue's runtime patch (manager
// kueue.x-k8s.io/manager) gets one replicatedJobs entry per pod set with the PodSetInfo
// (pod template labels, annotations, nodeSelector, tolerations) and spec.suspend false;
// stopped: spec.suspend true and that patch's replicatedJobs removed
// (RestorePodSetsInfo); active while a status.jobsStatus entry has active pods; finished
// on Complete or Failed.
// Shortcuts (docs/testing.md): no RayJob, MPIJob or other integrations; no Kueue
// webhook (a job created unsuspended is suspended by the reconciler once seen, as the
// reconciler does for a job that escaped the webhook; the runtime patch the TrainJob
// webhook adds on create is added when the stand-in first starts the TrainJob); no
// partial admission (minCount), no priority classes, no pod-set topology requests; a job
// whose pod sets change while suspended keeps its Workload (upstream replaces it); a
// finished job's Workload is not marked Finished; a PodSetInfo merge that conflicts
// overwrites (upstream refuses). TrainJob: the runtime's ML policy plugins are not run
// beyond numNodes (no PET_* or other env they add, no MPI launcher arithmetic, no pod
// group labels), the TrainJob's own runtimePatches and its initializer settings are not
// applied to the pod sets, and the start is one Update (upstream writes the patch while
// suspended, then unsuspends); the trainer controller that would turn a TrainJob into a
// JobSet, and a JobSet controller that would make its Jobs, are not part of the sim: no
// pods run for a TrainJob or JobSet unless something else creates them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace commgate::sim {

class ObjectStore;

inline constexpr const char* kKueueQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kKueueJobUidLabel = "kueue.x-k8s.io/job-uid";
inline constexpr const char* kKueueApiVersion = "kueue.x-k8s.io/v1beta2";
// trainer constants.go: on a runtime's replicatedJob's Job template, which step it is.
inline constexpr const char* kTrainJobAncestorLabel = "trainer.kubeflow.org/trainjob-ancestor-step";
// trainjob_controller.go runtimePatchManagerName: Kueue's entry of spec.runtimePatches.
inline constexpr const char* kKueueRuntimePatchManager = "kueue.x-k8s.io/manager";

// One job kind Kueue integrates with.
struct KueueJobKind {
  std::string group;    // "" for core
  std::string version;  // "v1"
  std::string plural;   // "jobs"
  std::string kind;     // "Job"
  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
};

// batch/v1 Job, kubeflow.org/v1 PyTorchJob, jobset.x-k8s.io/v1alpha2 JobSet and
// trainer.kubeflow.org/v1alpha1 TrainJob, in that order.
const std::vector<KueueJobKind>& kueue_job_kinds();
// The one of kueue_job_kinds() of this kind ("TrainJob"); throws std::invalid_argument.
const KueueJobKind& kueue_job_kind(const std::string& kind);

// GetWorkloadNameForOwnerWithGVK.
std::string kueue_workload_name(const std::string& owner_name, const std::string& owner_uid,
                                const std::string& kind, const std::string& group);

// What besides the job its pod sets are built from, read from `store`: a TrainJob's
// runtime (spec.runtimeRef: kind ClusterTrainingRuntime by default, cluster-scoped, or a
// TrainingRuntime in the TrainJob's namespace); null for the other kinds. nullopt when
// the runtime or its CRD does not exist: upstream's PodSets fails ("runtime '<name>' not
// found") and the reconcile is retried, with no Workload meanwhile.
std::optional<nlohmann::json> kueue_pod_set_source(const ObjectStore& store,
                                                   const KueueJobKind& kind,
                                                   const nlohmann::json& job);

// The job's pod sets as the integration builds them: [{name, count, template}].
// `source`: kueue_pod_set_source's; a TrainJob without one throws std::invalid_argument
// naming spec.runtimeRef.
nlohmann::json kueue_pod_sets(const KueueJobKind& kind, const nlohmann::json& job,
                              const nlohmann::json& source = nullptr);

// The Workload the reconciler creates for `job` (kueue.x-k8s.io/v1beta2; spec.active and
// other defaults are left to the CRD's schema).
nlohmann::json kueue_workload_for_job(const KueueJobKind& kind, const nlohmann::json& job,
                                      const nlohmann::json& source = nullptr);

bool kueue_job_suspended(const KueueJobKind& kind, const nlohmann::json& job);
// Whether pods of the job still run (Job: status.active; PyTorchJob: any replicaStatuses
// active; JobSet: any replicatedJobsStatus active; TrainJob: any jobsStatus active), which
// holds the quota release back after an eviction.
bool kueue_job_active(const KueueJobKind& kind, const nlohmann::json& job);
// Complete or Failed (Job, TrainJob) / Succeeded or Failed (PyTorchJob) / Completed or
// Failed (JobSet) condition True.
bool kueue_job_finished(const KueueJobKind& kind, const nlohmann::json& job);

// What the integration sets in each pod set's template when it starts the job:
// {podSetName: {nodeSelector, labels, annotations, tolerations}}, from the admission's
// flavors (their ResourceFlavors' spec.nodeLabels / nodeTaints' tolerations are not
// modelled) and the admission checks' podSetUpdates. `flavors`: ResourceFlavors by name.
nlohmann::json kueue_pod_set_infos(const nlohmann::json& workload, const nlohmann::json& flavors);

// The job started (RunWithPodSetsInfo): suspend false, `infos` merged into the templates
// (a TrainJob: written into Kueue's runtime patch).
nlohmann::json kueue_started_job(const KueueJobKind& kind, const nlohmann::json& job,
                                 const nlohmann::json& infos);
// The job stopped (Suspend + RestorePodSetsInfo): suspend true, each template's
// nodeSelector, labels and annotations as the Workload's pod set recorded them (a
// TrainJob: Kueue's runtime patch emptied).
nlohmann::json kueue_stopped_job(const KueueJobKind& kind, const nlohmann::json& job,
                                 const nlohmann::json& workload);

}  // namespace commgate::sim
