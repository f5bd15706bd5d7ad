#include "core/pod_requests.h"

#include <algorithm>

#include "core/json_access.h"
#include "core/quantity.h"

namespace commgate {

using Json = nlohmann::json;

double resource_quantity(const Json& v) {
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return 0;
  std::string error;
  return parse_quantity(v.get<std::string>(), &error).value_or(0.0);
}

std::map<std::string, double> container_requests(const Json& container) {
  std::map<std::string, double> mine;
  const Json* resources = json_member(container, "resources");
  if (!resources) return mine;
  for (const char* part : {"limits", "requests"}) {  // requests last: they win
    const Json* list = json_member(*resources, part);
    if (!list || !list->is_object()) continue;
    for (const auto& [name, value] : list->items()) mine[name] = resource_quantity(value);
  }
  return mine;
}

std::map<std::string, double> pod_requests(const Json& pod_spec) {
  std::map<std::string, double> total;
  if (const Json* cs = json_member(pod_spec, "containers"); cs && cs->is_array())
    for (const Json& c : *cs)
      for (const auto& [k, v] : container_requests(c)) total[k] += v;
  std::map<std::string, double> sidecars;  // of the restartable init containers so far
  std::map<std::string, double> init;      // the most any init container's stage holds
  if (const Json* cs = json_member(pod_spec, "initContainers"); cs && cs->is_array())
    for (const Json& c : *cs) {
      const Json* restart = json_member(c, "restartPolicy");
      const bool sidecar =
          restart && restart->is_string() && restart->get<std::string>() == "Always";
      const std::map<std::string, double> mine = container_requests(c);
      std::map<std::string, double> stage = sidecars;
      for (const auto& [k, v] : mine) stage[k] += v;
      if (sidecar) sidecars = stage;
      for (const auto& [k, v] : stage) init[k] = std::max(init[k], v);
    }
  for (const auto& [k, v] : sidecars) total[k] += v;
  for (const auto& [k, v] : init) total[k] = std::max(total[k], v);
  return total;
}

}  // namespace commgate
