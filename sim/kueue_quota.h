// The Kueue stand-in's quota reservation (sim/kueue_controller.h): which ResourceFlavor
// of a ClusterQueue each pod set gets, and the status.admission that records it. Pure
// functions.
//
// Modelled on kubernetes-sigs/kueue v0.19.2: pkg/scheduler/scheduler.go (one workload at
// a time, oldest first, its admission written with workload.SetQuotaReservation),
// pkg/scheduler/flavorassigner/flavorassigner.go (per pod set and resource group, the
// flavors in the ClusterQueue's order, the first whose nominal quota still fits every
// requested resource of the group; a flavor whose nodeLabels contradict the pod
// template's nodeSelector is skipped; a requested resource no group covers makes the
// workload inadmissible), pkg/workload/resources.go (a pod set's usage: the pod's
// requests, limits defaulting requests, times count) and
// apis/kueue/v1beta2/workload_types.go (PodSetAssignment: name, flavors, resourceUsage,
// count).
// Shortcuts (docs/testing.md): nominal quota only: no cohorts, borrowing or lending
// limits, no preemption, no fair sharing, flavor fungibility is "first flavor that fits";
// no LimitRange defaults or RuntimeClass overhead; flavors' nodeTaints are not matched
// against tolerations, node affinity is not read (nodeSelector only); a TAS flavor
// (spec.topologyName) serves only pod sets asking for TAS (sim/kueue_tas.h, which writes
// their topology assignment); resourceUsage quantities are written as integers, milli-units
// ("500m") or, for memory and ephemeral-storage, binary units ("64Mi").
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate::sim {

using KueueResources = std::map<std::string, double>;      // resource -> amount
using KueueUsage = std::map<std::string, KueueResources>;  // flavor -> resource -> amount

// A pod set's usage: its template's pod requests times its count.
KueueResources kueue_pod_set_usage(const nlohmann::json& pod_set);

// What the workloads holding quota in ClusterQueue `cluster_queue` use, by flavor, from
// their status.admission.podSetAssignments[].resourceUsage.
KueueUsage kueue_cluster_queue_usage(const std::vector<nlohmann::json>& workloads,
                                     const std::string& cluster_queue);

// A quantity as resource.Quantity would print it (see the header's shortcut).
std::string kueue_quantity_text(const std::string& resource, double amount);

struct KueueQuotaDecision {
  nlohmann::json admission;  // {clusterQueue, podSetAssignments}; null when nothing fits
  std::string message;       // why not, when admission is null
};

// The admission of `workload` in `cluster_queue` given what others use (`usage`), or
// why it does not fit. `flavors`: ResourceFlavors by name.
KueueQuotaDecision kueue_reserve_quota(const nlohmann::json& workload,
                                       const nlohmann::json& cluster_queue,
                                       const nlohmann::json& flavors, const KueueUsage& usage);

}  // namespace commgate::sim
