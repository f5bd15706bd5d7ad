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
// advertise: any "<vendor>/gpu" (nvidia.com/gpu, amd.com/gpu), NVIDIA's MIG slices
// (nvidia.com/mig-*), gpu.intel.com/*, habana.ai/gaudi, aws.amazon.com/neuron*,
// google.com/tpu.
bool is_accelerator_resource(std::string_view name);

// Accelerators one pod with this PodSpec holds (every accelerator resource its containers
// limit, or request where no limit names it; its largest init container's when larger).
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
// way torchrun and the Kubeflow operators do: `--nnodes N` or `--nnodes MIN:MAX` in its
// command or args, or the environment variable PET_NNODES or NNODES, with more than one
// node (a best effort: a pod that hides it is not detected).
WorkloadShape workload_shape(WorkloadKind kind, const nlohmann::json& object);

}  // namespace commgate
