// How many nodes, and how many DDP processes per node, the training in a Kueue Workload
// takes: the decision's "numNodes" and "numProcPerNode" for a job commgate did not create.
// Which pod sets are the training depends on the job kind that owns the Workload, named by
// Kueue after the job's parts:
//   - PyTorchJob (kubeflow.org): "master" (0 or 1 pod; elastic jobs have none) and
//     "worker", the replica types lower-cased: both run DDP ranks.
//   - TrainJob (trainer.kubeflow.org): the trainer's pod set only, not the dataset or model
//     initializers. It is the pod set whose template carries the label (or annotation)
//     trainer.kubeflow.org/trainjob-ancestor-step: trainer; as Trainer v2.3.0 puts that
//     label on the runtime's Job template and Kueue copies only the pod template into the
//     Workload, no Workload carries it in practice, so the pod set named "node" (the name
//     Trainer gives the trainer's replicated job, and looks for itself) is taken instead.
//   - JobSet (jobset.x-k8s.io): every pod set (one per replicated job, count replicas x
//     min(parallelism, completions) already) whose pods ask for GPUs; every pod set when
//     none does (a CPU training).
//   - Job (batch): "main" (count min(parallelism, completions)).
// The pod count of each is what the quota was reserved for (Workload::admitted_count).
//
// Nodes and processes. One DDP process per GPU, as commgate runs every job (a pod asking
// for no GPU runs one process). Pods of the training must all ask for the same whole
// number of nvidia.com/gpu. Then:
//   - with topology-aware scheduling down to kubernetes.io/hostname for every training pod
//     set: the nodes are the distinct hostnames of the assignment, the processes per node
//     those of the fullest host;
//   - otherwise, pods that ask for no GPU, or a node size that is not known
//     (gpus_per_node <= 0): one pod per node;
//   - otherwise, pods asking for fewer GPUs than a node has are packed: several pods share
//     a node. pods_per_node = gpus_per_node / gpus_per_pod when it divides (an error when
//     it does not: a node would keep GPUs no pod can take, and the scheduler's placement
//     is not predictable), nodes = ceil(pods * gpus_per_pod / gpus_per_node), and the
//     processes per node are those of a full node (pods_per_node * gpus_per_pod); the last
//     node holds fewer when the pods do not fill it. Packing is the fewest nodes the pods
//     can take; kube-scheduler's default scoring may spread them wider, which only TAS
//     rules out. A pod asking for more GPUs than a node has is an error (it cannot run).
//
// Models (kubernetes-sigs/kueue v0.19.2): pkg/controller/jobs/kubeflow/kubeflowjob/
// kubeflowjob_controller.go (PodSets, OrderedReplicaTypes, podsCount),
// pkg/controller/jobs/kubeflow/jobs/pytorchjob/pytorchjob_controller.go
// (OrderedReplicaTypes: Master, Worker), pkg/controller/jobs/jobset/jobset_controller.go
// (PodSets, podsCount, PodsCountPerReplica), pkg/controller/jobs/trainjob/
// trainjob_controller.go (pod sets of the TrainJob's JobSet), pkg/controller/jobs/job/
// job_controller.go (PodSets: "main", podsCount), apis/kueue/v1beta2/workload_types.go
// (NewPodSetReference lower-cases). kubeflow/trainer v2.3.0: pkg/constants/constants.go
// (LabelTrainJobAncestor, AncestorTrainer, Node), pkg/runtime/framework/plugins/jobset/
// builder.go and pkg/runtime/runtime.go (the trainer job found by the label or the name
// "node").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_table.h"
#include "operator/kueue_workload.h"

namespace commgate::op::kueue {

// The label Trainer puts on the runtime's replicated Job templates, and its trainer value.
inline constexpr const char* kTrainJobAncestorLabel = "trainer.kubeflow.org/trainjob-ancestor-step";
inline constexpr const char* kTrainJobAncestorTrainer = "trainer";
// The name of the trainer's replicated job, hence its Kueue pod set, in Trainer's runtimes.
inline constexpr const char* kTrainJobTrainerPodSet = "node";

enum class JobKind { kPyTorchJob, kTrainJob, kJobSet, kJob };
inline constexpr std::array<EnumName<JobKind>, 4> kJobKinds = {{
    {JobKind::kPyTorchJob, "PyTorchJob"},
    {JobKind::kTrainJob, "TrainJob"},
    {JobKind::kJobSet, "JobSet"},
    {JobKind::kJob, "Job"},
}};
const char* to_string(JobKind kind);

// The kind of job an owner reference names, by API group and kind; nullopt for others.
std::optional<JobKind> job_kind_of(const OwnerReference& owner);

struct TrainingShape {
  JobKind kind = JobKind::kJob;
  std::vector<std::string> pod_sets;  // the training pod sets, in the Workload's order
  int64_t pods = 0;
  int64_t gpus_per_pod = 0;
  int64_t nodes = 0;
  int64_t pods_per_node = 0;   // on the fullest node
  int64_t procs_per_node = 0;  // DDP processes (one per GPU, 1 for a pod without) there
  // The nodes, from a hostname-level topology assignment; empty without one.
  std::vector<std::string> hostnames;
  // How the nodes were counted, for messages ("8 pods of 2 GPUs packed 4 per node on nodes
  // of 8 GPUs").
  std::string basis;
};

// The shape of `workload`'s training on nodes of `gpus_per_node` nvidia.com/gpu (<= 0:
// not known). Throws ValidationError naming the field at fault: no owner or an owner kind
// commgate does not read (metadata.ownerReferences), no training pod set (spec.podSets),
// pods asking for different or fractional GPU counts, or for a count that does not fit or
// divide a node (spec.podSets[i].template.spec).
TrainingShape training_shape(const Workload& workload, int64_t gpus_per_node);

}  // namespace commgate::op::kueue
