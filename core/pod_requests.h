// What one pod asks the scheduler for, per resource, as kube-scheduler counts it
// (k8s.io/component-helpers resource.PodRequests, with KEP-753's sidecars). One rule for
// every reader: the simulated cluster's scheduler places pods by it, core's workload gate
// counts a pod's accelerators by it, and the pool capacity check (core/pool_nodes.h)
// compares a node's allocatable with it.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace commgate {

// A resource quantity as the API carries it ("8", "500m", "1Gi", or a number); 0 for one
// that does not parse (the API server refuses those first).
double resource_quantity(const nlohmann::json& value);

// A container's requests: each resource's request, else its limit (the API server
// defaults a missing request to the limit). Quantities that do not parse count as 0 (the
// API server refuses them first).
std::map<std::string, double> container_requests(const nlohmann::json& container);

// The pod's requests from its PodSpec: the containers add up; a restartable init
// container (a sidecar, restartPolicy Always) runs beside every later init container and
// the containers; an ordinary init container beside the sidecars started before it; the
// pod needs the larger of the containers' stage and any init container's.
std::map<std::string, double> pod_requests(const nlohmann::json& pod_spec);

}  // namespace commgate
