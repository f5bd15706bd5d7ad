// How many nodes a GPU workload that commgate did not create can take at once, read from
// the object a user writes: a Job, CronJob, JobSet, PyTorchJob or bare Pod. The workload
// gate (CommPolicy spec.unmanagedWorkloads: Deny, issue #19 item 4) refuses such an object
// when it is multi-node and asks for GPUs; docs/policy.md "Workloads commgate did not
// create" lists what is read for each kind and what is not covered.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace commgate {

// The workload kinds the gate reads, by API group and kind.
enum class WorkloadKind { kJob, kCronJob, kJobSet, kPyTorchJob, kPod };

// nullopt for a kind the gate does not read.
std::optional<WorkloadKind> workload_kind_of(std::string_view group, std::string_view kind);
const char* to_string(WorkloadKind kind);

// True for the extended resources that GPU (and other accelerator) device plugins
// advertise: any "<vendor>/gpu" (nvidia.com/gpu, amd.com/gpu), "<vendor>/gpu.*" (NVIDIA's
// time-sliced nvidia.com/gpu.shared), "<vendor>/*vgpu" (k8s.amazonaws.com/vgpu), NVIDIA's
// MIG slices (nvidia.com/mig-*), gpu.intel.com/*, habana.ai/gaudi, aws.amazon.com/neuron*,
// google.com/tpu, cloud-tpus.google.com/*.
bool is_accelerator_resource(std::string_view name);

// Accelerators one pod with this PodSpec holds (every accelerator resource its containers
// limit, or request where no limit names it), as the scheduler counts them: the containers
// plus the sidecars (init containers with restartPolicy Always), or an init container's
// stage when larger.
long long pod_accelerators(const nlohmann::json& pod_spec);

struct WorkloadShape {
  // Pods that can run at the same time and ask for accelerators (0 when none asks).
  long long accelerated_pods = 0;
  // Accelerators one such pod asks for (the largest, where pods differ).
  long long accelerators_per_pod = 0;
  // Where the pod count was read, for messages ("spec.parallelism",
  // "spec.replicatedJobs[0].replicas x spec.replicatedJobs[0].template.spec.parallelism").
  std::string count_from;
  // Where the accelerators were read ("spec.template.spec.containers[0].resources").
  std::string accelerators_from;

  bool multi_node() const { return accelerated_pods > 1 && accelerators_per_pod > 0; }
};

// The shape of `object` (as the API server sends it to a webhook) of `kind`. Missing or
// ill-typed fields read as Kubernetes' defaults (a Job's parallelism 1, a replica count 1):
// the API server's own validation refuses what cannot be created, after the webhook.
//
// A bare Pod is one node. It counts as one node of a multi-node run when it says so the
// way torchrun and the Kubeflow operators do: `--nnodes N` or `--nnodes MIN:MAX` (or an
// abbreviation argparse accepts, --nn, --nnode) in its command and args (split between
// them, or inside a `sh -c "..."` string), or the environment variable PET_NNODES or
// NNODES with a value, with more than one node (a best effort: a pod that hides it, in a
// variable or a script, is not detected). The pods of a Job, CronJob, JobSet or PyTorchJob
// count the same way: a workload whose pods declare a larger run than its own count is
// that large (N one-pod Jobs, each saying --nnodes=N).
WorkloadShape workload_shape(WorkloadKind kind, const nlohmann::json& object);

}  // namespace commgate
