#include "operator/pool_waiters.h"

#include <algorithm>
#include <map>

#include "core/comm_profile.h"
#include "operator/object_fields.h"

namespace commgate::op {

using nlohmann::json;

std::vector<std::string> trainingjobs_waiting_on_pool(const std::vector<json>& trainingjobs,
                                                      const std::string& pool) {
  std::vector<std::string> keys;
  for (const json& tj : trainingjobs) {
    if (!tj.is_object()) continue;
    const json spec = tj.value("spec", json::object());
    if (!spec.is_object() || spec.value("suspend", json(false)) != json(true)) continue;
    std::map<std::string, std::string> selector;
    const json ns_sel = spec.value("nodeSelector", json::object());
    if (ns_sel.is_object()) {
      for (const auto& [k, v] : ns_sel.items()) {
        if (v.is_string()) selector[k] = v.get<std::string>();
      }
    }
    if (pool_name(selector) != pool) continue;
    keys.push_back(detail::meta_string(tj, "namespace") + "/" + detail::meta_string(tj, "name"));
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace commgate::op
