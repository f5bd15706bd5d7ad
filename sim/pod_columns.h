// `kubectl get pods`' READY, STATUS and RESTARTS, computed as kube-apiserver's pod table
// printer computes them (kubernetes pkg/printers/internalversion/printers.go printPod),
// for the sim's Table responses (sim/table.h): a registry printer column with "compute"
// instead of "jsonPath" names one of them. What the sim's pods never have (init
// containers, sidecars, scheduling gates, readiness gates) is left out.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace commgate::sim {

// "podReady" ("1/2"), "podStatus" (the phase, or a container's waiting or terminated
// reason, "Terminating" once deleting: "Running", "ErrImagePull", "Completed", "Error",
// "CreateContainerConfigError", "Terminating", ...), "podRestarts" (the sum of the
// containers' restartCount). Null for any other name.
nlohmann::json pod_column(const std::string& which, const nlohmann::json& pod);

}  // namespace commgate::sim
