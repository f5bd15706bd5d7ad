// The kube-scheduler stand-in: binds Pending pods (no spec.nodeName) to a Node that fits,
// as the default scheduler's filter plugins decide (NodeUnschedulable, TaintToleration,
// NodeAffinity incl. nodeSelector, NodeResourcesFit for cpu/memory/pods/extended
// resources such as nvidia.com/gpu, InterPodAffinity for required anti-affinity on
// kubernetes.io/hostname, PodTopologySpread for topologySpreadConstraints). Scoring only
// for spreading: a pod with ScheduleAnyway constraints goes to the fitting node whose
// domains hold the fewest matching pods; otherwise the first fitting node in name order
// wins. Pods
// that fit nowhere stay Pending with PodScheduled=False, reason Unschedulable and the
// scheduler's "0/N nodes are available: ..." message (without the "preemption:" suffix;
// there is no preemption).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "sim/change_loop.h"
#include "sim/object_store.h"

namespace commgate::sim {

// --- Pure decisions (tested as tables) ---

// Sum of the containers' requests (a resource with only a limit requests the limit, as
// API defaulting makes it), in base units: cpu in cores, memory in bytes.
std::map<std::string, double> pod_requests(const nlohmann::json& pod);
// Succeeded or Failed: the pod no longer holds resources on its node.
bool is_terminal(const nlohmann::json& pod);
// Whether the pod's tolerations tolerate the taint.
bool tolerates(const nlohmann::json& pod, const nlohmann::json& taint);
// Why `node` cannot take `pod`, in the scheduler's words ("Insufficient nvidia.com/gpu",
// "node(s) had untolerated taint {k: v}", ...); empty when it fits. Like the scheduler,
// stops at the first filter that fails (one filter may give several reasons).
// `pods_on_node`: the pods bound to the node (terminal ones are ignored).
std::vector<std::string> fit_failures(const nlohmann::json& pod, const nlohmann::json& node,
                                      const std::vector<nlohmann::json>& pods_on_node);
// PodTopologySpread's filter, for the pod's whenUnsatisfiable: DoNotSchedule constraints
// (any topologyKey; labelSelector with matchLabelKeys' values of the pod's own labels
// added): placing the pod on `node` must leave the matching pods of its namespace (not
// terminal, not deleting) in the node's domain at most maxSkew above the least populated
// domain among the nodes that pass the pod's nodeSelector and required node affinity and
// carry the key (taints are not considered: nodeTaintsPolicy Ignore; minDomains is not
// modelled). Returns the scheduler's reason, or empty. `pods_by_node`: the pods bound to
// each node, by node name.
std::vector<std::string> spread_failures(
    const nlohmann::json& pod, const nlohmann::json& node, const std::vector<nlohmann::json>& nodes,
    const std::map<std::string, std::vector<nlohmann::json>>& pods_by_node);
// PodTopologySpread's score for the pod's ScheduleAnyway constraints, lower is better: the
// matching pods (counted as for the filter) in the node's domain of each constraint,
// summed; a node without a constraint's key counts as the most populated domain plus one.
// 0 for a pod without such constraints.
int spread_penalty(const nlohmann::json& pod, const nlohmann::json& node,
                   const std::vector<nlohmann::json>& nodes,
                   const std::map<std::string, std::vector<nlohmann::json>>& pods_by_node);
struct NodeUsage;
// InterPodAffinity's score of a node, the pod's own side (upstream
// pkg/scheduler/framework/plugins/interpodaffinity/scoring.go, processExistingPod): each
// live pod on the node that one of the pod's preferred anti-affinity terms on
// kubernetes.io/hostname selects costs that term's weight. Not modelled: preferred
// affinity, existing pods' own preferred terms, other topology keys, and the score's
// normalisation against the other plugins (the sim's only other score is soft spread).
// `terms` are the pod's preferred terms with their weights, read once per pod (not once
// per node); `ns` is the pod's namespace.
using WeightedTerms = std::vector<std::pair<int, nlohmann::json>>;
int anti_affinity_penalty(const WeightedTerms& terms, const std::string& ns,
                          const NodeUsage& usage);
// What the pods bound to one node hold, gathered once per scheduling pass: the filters
// read it instead of walking the node's pods for every pending pod and node (with a
// 10,000-pod Job pending on full nodes, that walk made each pass take minutes).
struct NodeUsage {
  std::size_t pods = 0;                     // live (non-terminal) pods bound to the node
  std::map<std::string, double> requested;  // their pod_requests, summed
  std::vector<nlohmann::json> live;         // those pods (InterPodAffinity reads labels)
  // The live pods' required anti-affinity terms on kubernetes.io/hostname, each with the
  // namespace of the pod that holds it.
  std::vector<std::pair<std::string, nlohmann::json>> anti_affinity;
};
// The usage of the pods bound to a node (terminal ones are ignored).
NodeUsage node_usage(const std::vector<nlohmann::json>& pods_on_node);
// Counts `pod` (bound to the node in this pass) in `usage`; a terminal pod is ignored.
void add_to_usage(NodeUsage& usage, const nlohmann::json& pod);
// fit_failures with the node's usage gathered and the pod's own requests computed
// (pod_requests) beforehand: what a pass over many pending pods calls.
std::vector<std::string> fit_failures(const nlohmann::json& pod,
                                      const std::map<std::string, double>& requests,
                                      const nlohmann::json& node, const NodeUsage& usage);
// FitError.Error(): "0/3 nodes are available: 1 node(s) ..., 2 Insufficient cpu."
std::string unschedulable_message(std::size_t node_count,
                                  const std::vector<std::vector<std::string>>& failures);

// --- The controller ---

class Scheduler {
 public:
  explicit Scheduler(ObjectStore& store);
  ~Scheduler();  // stop()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  void start();  // watches pods and nodes; schedules on a thread of its own
  void stop();
  // One pass over all pending pods (also what the thread runs); returns how many it bound.
  int schedule_once();

 private:
  ObjectStore& store_;
  ResourceInfo pods_, nodes_;
  ChangeLoop loop_;  // last: its thread uses the members above
};

}  // namespace commgate::sim
