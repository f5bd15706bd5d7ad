// The nodes of a pool and how many of them a job can use (issue #20 defect 2): a job
// larger than its pool used to be admitted and hang, its first pods holding their nodes
// while the rest stayed Pending. The webhook and the operator read the cluster's Nodes
// through their snapshot (core/snapshot.h) as PoolNodes, a summary small enough to hold
// for thousands of nodes, and count the nodes a job could be placed on the way the
// scheduler's filters would: its nodeSelector, cordons, readiness, the NoSchedule and
// NoExecute taints it does not tolerate, and the accelerators a pod asks for against a
// node's allocatable. This is the pool's size, not what is free now: sharing the nodes is
// the scheduler's (or Kueue's) business, and a pod waiting for a busy node is not stuck.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate {

// The extended resource NVIDIA's device plugin advertises on GPU nodes: what a
// TrainingJob's pods ask for on a GPU pool when their template names no accelerator.
inline constexpr const char* kNvidiaGpu = "nvidia.com/gpu";
// The node label kubelet sets to the node's hostname (corev1.LabelHostname): the values
// Kueue's topology-aware scheduling assigns at its lowest level.
inline constexpr const char* kHostnameLabel = "kubernetes.io/hostname";

struct NodeTaint {
  std::string key, value, effect;
  bool operator==(const NodeTaint&) const = default;
};

struct PoolNode {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<NodeTaint> taints;  // only NoSchedule and NoExecute: they keep pods off
  bool cordoned = false;          // spec.unschedulable
  bool ready = false;             // a Ready condition with status True
  // status.allocatable of every accelerator resource (core/workload_shape.h's
  // is_accelerator_resource): nvidia.com/gpu, amd.com/gpu, ...
  std::map<std::string, double> accelerators;
  bool operator==(const PoolNode&) const = default;
};

// The summary of a v1 Node. Total: missing or ill-typed fields read as absent (a node
// without a Ready condition is not ready).
PoolNode pool_node_of(const nlohmann::json& node);

// What a cache of Nodes keeps (a watch's transform, kube/watcher.h): metadata.name,
// resourceVersion and labels, spec.unschedulable and taints, the allocatable accelerators
// and the Ready condition's status. A real Node is mostly images and heartbeats; this
// leaves well under a kilobyte of it, and pool_node_of reads the same from it.
void keep_pool_node_fields(nlohmann::json& node);

// Whether `tolerations` ([]corev1.Toleration) tolerate `taint`, as
// k8s.io/api/core/v1/toleration.go ToleratesTaint: an empty effect matches every effect,
// an empty key with Exists every taint, Exists any value, Equal (or no operator) the value.
bool tolerates(const nlohmann::json& tolerations, const NodeTaint& taint);

// What a job asks of each node of its pool.
struct PoolDemand {
  std::map<std::string, std::string> node_selector;
  nlohmann::json tolerations = nlohmann::json::array();
  std::map<std::string, double> accelerators_per_pod;  // resource -> amount, > 0
  // When not empty, only the selector's nodes whose kHostnameLabel is one of these
  // (TrainingJobSpec::hostnames).
  std::vector<std::string> hostnames;
};

// The nodes of a pool, each counted once, under the first filter it fails.
struct PoolCount {
  int selected = 0;   // match the nodeSelector
  int cordoned = 0;   // of those: spec.unschedulable
  int not_ready = 0;  // not Ready
  int tainted = 0;    // a NoSchedule/NoExecute taint the pods do not tolerate
  int too_small = 0;  // fewer allocatable accelerators than one pod asks for
  int usable = 0;     // the rest: nodes the job's pods could be placed on
  // The first taint counted in `tainted`, "key=value:Effect", to name in messages.
  std::string untolerated_taint;
};

PoolCount count_pool(const std::vector<PoolNode>& nodes, const PoolDemand& demand);

// True when some node matching `node_selector` has a GPU (allocatable nvidia.com/gpu > 0):
// what a job's pods ask for by default, and what `probe.backend: auto` reads as NCCL.
bool pool_has_gpus(const std::vector<PoolNode>& nodes,
                   const std::map<std::string, std::string>& node_selector);

// "2 usable nodes (3 match the nodeSelector: 1 cordoned)", "no node (none matches the
// nodeSelector)", "1 usable node (4 match the nodeSelector: 3 have fewer than 8
// nvidia.com/gpu)": for messages.
std::string describe_pool_count(const PoolCount& count, const PoolDemand& demand);

// Why no node matches `node_selector`, for a job whose selector matches none: the first
// pair no node has, with the closest label key or value that nodes do have when one is
// within two edits (a typo: `tinyy` for `tiny`), so a researcher who cannot list Nodes
// learns what to fix without seeing the cluster's other labels: "no node has
// commgate.io/pool=tinyy (did you mean \"tiny\"?)", "no node has the label gpu-typ (did you
// mean \"gpu-type\"?)"; "no node has all of them" when each pair alone matches some node.
std::string selector_miss(const std::vector<PoolNode>& nodes,
                          const std::map<std::string, std::string>& node_selector);

}  // namespace commgate
