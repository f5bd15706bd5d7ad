// The training workload of an admitted TrainingJob (issue #10, step "workload"): a
// headless Service and an Indexed batch/v1 Job with spec.numNodes pods built from
// spec.template, with the torchrun environment injected both ways torchrun reads it
// (MASTER_ADDR, MASTER_PORT, NNODES, NODE_RANK, NPROC_PER_NODE, WORLD_SIZE and the
// PET_* defaults of its flags) plus the NCCL settings the pool's probe found to work.
// Pure: no I/O; docs/operator.md "The training workload" states every rule.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/comm_profile.h"
#include "core/training_job.h"

namespace commgate::op {

struct WorkloadSettings {
  int master_port = 29500;  // MASTER_ADDR's port: the Service's port and MASTER_PORT
  // How long a pod of the workload may stay unschedulable before the workload is stopped
  // (`--workload-unschedulable-timeout`; 0: never). torchrun waits for every node, so the
  // pods that did start hold their nodes, on a real cluster their GPUs, and train nothing
  // (issue #20 defect 2: a 6-node job on a 2-node pool).
  std::chrono::seconds unschedulable_timeout{600};
};

struct WorkloadObjects {
  nlohmann::json service;  // v1 Service, headless, named after the TrainingJob
  nlohmann::json job;      // batch/v1 Job, Indexed, named after the TrainingJob
};

// NCCL settings the probe found to work, from the pool's CommProfile status (transport,
// interface): NCCL_SOCKET_IFNAME, NCCL_IB_DISABLE=1 for a socket transport, ...; empty
// when unknown (nothing is invented).
std::map<std::string, std::string> nccl_env_of(const CommProfileStatus& profile);

// What the pool's probe ran on (CommProfile status.device: "cuda" or "cpu"). It decides
// whether the workload asks for GPUs when the template names none.
enum class PoolDevice { kNotMeasured, kCpu, kCuda };
PoolDevice pool_device_of(const CommProfileStatus& profile);

// `job_uid`: the TrainingJob's metadata.uid (ownerReference). Deterministic: the same
// inputs give the same JSON, so the reconciler can compare what it would create.
// `device`: on kCuda, a template whose containers name no nvidia.com/gpu gets
// `limits: {nvidia.com/gpu: numProcPerNode}` on its first container; otherwise the
// template's resources are kept as they are (a CPU pool's job still schedules on nodes
// without GPUs).
WorkloadObjects build_workload(const TrainingJob& job, const std::string& job_uid,
                               const std::map<std::string, std::string>& nccl_env,
                               const WorkloadSettings& settings,
                               PoolDevice device = PoolDevice::kNotMeasured);

// workload_name_problem (core/training_job.h) says whether the TrainingJob's name can
// name its workload.

// The template's env entries that build_workload replaces ("<container>/<NAME>", in
// container then env order): the torchrun variables are the operator's (its numNodes may
// differ from what the researcher wrote), so the reconciler can say so in a Warning Event.
std::vector<std::string> replaced_template_env(const TrainingJob& job);

// How the workload Job's size differs from the admitted node count, or "" when it does
// not: its spec.parallelism and spec.completions are both the admitted count when commgate
// creates it, and only someone else changes them (an `edit` user may patch a Job's
// parallelism, and an Indexed Job's completions together with it since Kubernetes 1.27).
// E.g. "Job ns/x runs 64 pods in parallel and 64 completions".
std::string workload_size_drift(const nlohmann::json& workload, int admitted_nodes);

// The merge patch that gives the workload Job the admitted size again (completions may
// change only together with parallelism, to the same value).
nlohmann::json workload_size_restore(int admitted_nodes);

}  // namespace commgate::op
