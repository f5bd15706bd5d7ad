// meta.k8s.io/v1 Table responses (Accept: application/json;as=Table;v=v1;g=meta.k8s.io),
// which `kubectl get` prints. Custom resources: Name plus the CRD's
// additionalPrinterColumns (Age only when the CRD declares none), as kube-apiserver's CR
// table convertor does; built-ins: Name, the few columns the registry gives them
// (namespaces: Status; pods: Status, and with -o wide IP and Node), Age.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/time_format.h"
#include "sim/resource.h"

namespace commgate::sim {

// include_object: "Object" (whole object in each row), otherwise "Metadata"
// (PartialObjectMetadata, the upstream default), "None".
nlohmann::json to_table(const ResourceInfo& r, const std::vector<nlohmann::json>& objects,
                        const std::string& resource_version, const std::string& include_object,
                        TimePoint now);

// kubectl's duration.HumanDuration: "45s", "3m12s", "5h", "2d3h", ...
std::string human_duration(std::chrono::seconds d);

// A value at a simple JSONPath (".status.phase", ".spec.items[0].name"); null when absent.
nlohmann::json json_path_value(const nlohmann::json& object, const std::string& path);

}  // namespace commgate::sim
