// The Kueue stand-in's ClusterQueue and LocalQueue conditions (sim/kueue_controller.h):
// whether a queue admits, in the Active condition Kueue writes on its status. Pure
// functions.
//
// Modelled on kubernetes-sigs/kueue v0.19.2:
// - pkg/cache/scheduler/clusterqueue.go: updateQueueStatus (pending while stopped, with
//   a missing ResourceFlavor, a missing or inactive AdmissionCheck, more than one
//   MultiKueue check, a MultiKueue check on some flavors only, or MultiKueue with
//   ProvisioningRequest; terminating while deleted) and inactiveReason (the first cause's
//   reason, every cause's message in "Can't admit new workloads: <m1>, <m2>.", the check
//   names sorted and joined with ","; Ready "Can admit new workloads" otherwise),
//   updateWithAdmissionChecks (a check is inactive unless its Active condition is True);
// - apis/kueue/v1beta2/clusterqueue_types.go: the ClusterQueueActiveReason strings;
// - pkg/controller/core/clusterqueue_controller.go updateCqStatusIfChanged and
//   localqueue_controller.go Reconcile/updateStatusIfChanged (Active set with
//   meta.SetStatusCondition and observedGeneration, written with a status Update only
//   when it changed; a LocalQueue is Active while its ClusterQueue's condition is True).
// Shortcuts (docs/testing.md): only the conditions (no pending/reserving/admitted counts,
// flavorsReservation, flavorsUsage, fairSharing); TopologyNotFound never happens (the
// stand-in reads no Topology objects, sim/kueue_tas.h); stopPolicy only makes the queue
// inactive (HoldAndDrain evicts nothing).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace commgate::sim {

struct KueueQueueCondition {
  bool active = false;
  std::string reason, message;

  // {type: Active, status, reason, message}, for kueue_set_condition.
  nlohmann::json to_json() const;
};

// The ClusterQueue's Active condition. `flavors`: ResourceFlavors by name; `checks`:
// AdmissionChecks by name.
KueueQueueCondition kueue_cluster_queue_condition(
    const nlohmann::json& cluster_queue, const nlohmann::json& flavors,
    const std::map<std::string, nlohmann::json>& checks);

// The LocalQueue's Active condition; `cluster_queue` null when it does not exist.
KueueQueueCondition kueue_local_queue_condition(const nlohmann::json& local_queue,
                                                const nlohmann::json* cluster_queue);

}  // namespace commgate::sim
