// The Kueue stand-in's topology-aware scheduling (sim/kueue_controller.h): at quota
// reservation, the nodes of a TAS ResourceFlavor (spec.topologyName) each pod set is
// placed on, written as status.admission.podSetAssignments[].topologyAssignment in
// v1beta2's compressed form, or delayedTopologyRequest Pending until the checks that
// provision or dispatch the workload are Ready. Pure functions.
//
// Modelled on kubernetes-sigs/kueue v0.19.2 (feature gates at their defaults:
// TopologyAwareScheduling, TASProfileMixed and TASAssignmentsEncodingByHostnamePrefix on,
// TASBalancedPlacement off):
// - pkg/scheduler/flavorassigner/tas_flavorassigner.go: which pod sets ask for TAS
//   (isTASRequested: spec.podSets[].topologyRequest, or implied when every flavor of the
//   ClusterQueue is a TAS flavor, cache IsTASOnly), checkPodSetAndFlavorMatchForTAS (a
//   TAS flavor serves only pod sets that ask for TAS; a pod set that asks explicitly
//   skips a non-TAS flavor covering what it requests), podSetTopologyRequest's delay
//   (any MultiKueue check on the ClusterQueue; a ProvisioningRequest check on the pod
//   set's flavor while the workload holds no quota yet) and flavorassigner.go
//   UpdateForTASResult (Pending -> Ready once assigned);
// - pkg/workload/workload.go NeedsSecondPass / HasTopologyAssignmentsPending (the
//   scheduler's second pass: quota held, every check entry Ready, a delayed request
//   Pending, not admitted, evicted or finished);
// - pkg/cache/scheduler/tas_flavor_snapshot.go, for a Topology whose only level is the
//   hostname: findLevelWithFitDomains and updateCountsToMinimumGeneric with slice size 1
//   (an implied or unconstrained request: LeastFreeCapacity, the nodes that can take the
//   fewest pods first, the first that takes them all, else filled in that order; a
//   required or preferred request: BestFit, the node taking the most pods first, the
//   smallest that takes them all, a preferred one else filled from the largest; a
//   required one fits one node or not at all), sortedDomains' ties (pods, then the
//   hostname), buildAssignment (domains sorted by hostname), notFitMessage's "topology
//   ... allows to fit only N out of M pod(s)";
// - pkg/cache/scheduler/tas_nodes_cache.go (nodes Ready and not unschedulable, carrying
//   the flavor's nodeLabels), tas_non_tas_pod_cache.go (the requests of non-terminated
//   pods bound to a node, TAS pods excepted: label kueue.x-k8s.io/tas) and the TAS usage
//   of the workloads holding quota in the flavor (ComputeUsagePerDomain: the pod set's
//   single-pod requests times each domain's count, plus one "pods" each);
// - pkg/util/tas/tas_assignment.go: V1Beta2From's encoding (fillSingleCompactSliceValues:
//   a universal value when all are equal, else prefix + roots + suffix; pod counts
//   universal when all are equal; hostname-prefix runs split at '-' boundaries, at most
//   100000 domains a slice and 1000 slices, kept unless the single-slice encoding
//   serialises shorter) and InternalSeqFrom's decoding.
// Shortcuts (docs/testing.md): no Topology objects are read (the fixtures have no Topology
// CRD): a flavor's topologyName is taken to name a Topology whose only level is
// kubernetes.io/hostname, so a request for another level fits nowhere and
// TopologyNotFound never happens; no pod sets' slice topology, leader/worker groups,
// node affinity scores or taints (the template's nodeSelector and the flavor's
// nodeLabels select nodes); no unhealthy-node replacement.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace commgate::sim {

inline constexpr const char* kKueueHostnameLevel = "kubernetes.io/hostname";
// Pods that Kueue's TAS placed carry it; the non-TAS usage of a node leaves them out.
inline constexpr const char* kKueueTasLabel = "kueue.x-k8s.io/tas";
inline constexpr const char* kKueueProvisioningController = "kueue.x-k8s.io/provisioning-request";
inline constexpr const char* kKueueMultiKueueController = "kueue.x-k8s.io/multikueue";

// One hostname-level domain: a node (its kubernetes.io/hostname label) and its pods.
struct KueueTasDomain {
  std::string host;
  int32_t count = 0;

  bool operator==(const KueueTasDomain&) const = default;
};

// A pod set's request, as the placement reads it.
enum class KueueTasMode {
  kUnconstrained,  // implied or unconstrained: LeastFreeCapacity
  kPreferred,      // preferred: kubernetes.io/hostname: BestFit, may spread
  kRequired,       // required: kubernetes.io/hostname: one node
};

// How many more pods of `pod_requests` (one pod's requests; "pods" counts 1 on its own)
// each node can take: `free` is what the node has left, by resource.
struct KueueTasNode {
  std::string host;
  std::map<std::string, double> free;
};
int32_t kueue_tas_pod_capacity(const KueueTasNode& node,
                               const std::map<std::string, double>& pod_requests);

// The placement of `count` pods on `nodes` (Go's algorithm above, one level); nullopt with
// `why` set when they do not fit. Domains sorted by host, none with zero pods.
std::optional<std::vector<KueueTasDomain>> kueue_tas_place(
    const std::vector<KueueTasNode>& nodes, const std::map<std::string, double>& pod_requests,
    int32_t count, KueueTasMode mode, const std::string& topology, std::string& why);

// V1Beta2From: the compressed topologyAssignment of hostname-level domains.
nlohmann::json kueue_tas_encode(const std::vector<KueueTasDomain>& domains);
// InternalSeqFrom for a hostname-level (or any) assignment: the lowest level's values
// with their counts; empty for anything malformed.
std::vector<KueueTasDomain> kueue_tas_decode(const nlohmann::json& topology_assignment);

// What the stand-in's TAS reads of the cluster.
struct KueueTasCluster {
  const nlohmann::json* flavors = nullptr;                        // ResourceFlavors by name
  const std::map<std::string, nlohmann::json>* checks = nullptr;  // AdmissionChecks by name
  std::vector<nlohmann::json> nodes;
  std::vector<nlohmann::json> pods;
  std::vector<nlohmann::json> workloads;  // every Workload (their held TAS usage)
};

// Whether every flavor of the ClusterQueue's resource groups has a topologyName (false
// when it lists none).
bool kueue_cluster_queue_tas_only(const nlohmann::json& cluster_queue,
                                  const nlohmann::json& flavors);
// The pod set's TAS request: its topologyRequest, else implied on a TAS-only ClusterQueue;
// nullopt when it asks for none. `level` gets the level named (the hostname if implied).
std::optional<KueueTasMode> kueue_tas_request(const nlohmann::json& pod_set, bool tas_only,
                                              std::string& level);
// checkPodSetAndFlavorMatchForTAS: why `flavor` cannot serve `pod_set` ("" when it can).
// `covers_requested`: whether the resource group covers a resource the pod set requests.
std::string kueue_tas_flavor_mismatch(const nlohmann::json& pod_set, const nlohmann::json& flavor,
                                      bool tas_only, bool covers_requested);

// Fills the TAS part of `admission` (from kueue_reserve_quota) for `workload`: each pod set
// that asks for TAS and got a TAS flavor gets topologyAssignment, or delayedTopologyRequest
// Pending (see the header). With `second_pass`, only pod sets whose request is Pending are
// placed, and become Ready. Returns "" or why a pod set does not fit.
std::string kueue_tas_assign(nlohmann::json& admission, const nlohmann::json& workload,
                             const nlohmann::json& cluster_queue, const KueueTasCluster& cluster,
                             bool second_pass);

// NeedsSecondPass for a delayed topology request.
bool kueue_tas_needs_second_pass(const nlohmann::json& workload);
// HasTopologyAssignmentsPending.
bool kueue_tas_pending(const nlohmann::json& workload);

}  // namespace commgate::sim
