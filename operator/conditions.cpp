#include "operator/conditions.h"

namespace commgate::op {

using nlohmann::json;

const json* find_condition(const json& conditions, const std::string& type) {
  if (!conditions.is_array()) return nullptr;
  for (const json& c : conditions) {
    if (c.is_object() && c.value("type", "") == type) return &c;
  }
  return nullptr;
}

bool condition_is(const json& conditions, const std::string& type, const std::string& status) {
  const json* c = find_condition(conditions, type);
  return c && c->value("status", "") == status;
}

bool set_condition(json& conditions, const Condition& wanted, TimePoint now) {
  if (!conditions.is_array()) conditions = json::array();
  json entry = {{"type", wanted.type},
                {"status", wanted.status},
                {"reason", wanted.reason},
                {"message", wanted.message},
                {"observedGeneration", wanted.observed_generation},
                {"lastTransitionTime", format_rfc3339(now)}};
  for (json& c : conditions) {
    if (!c.is_object() || c.value("type", "") != wanted.type) continue;
    if (c.value("status", "") == wanted.status && c.contains("lastTransitionTime"))
      entry["lastTransitionTime"] = c["lastTransitionTime"];
    if (c == entry) return false;
    c = std::move(entry);
    return true;
  }
  conditions.push_back(std::move(entry));
  return true;
}

bool remove_condition(json& conditions, const std::string& type) {
  if (!conditions.is_array()) return false;
  for (auto it = conditions.begin(); it != conditions.end(); ++it) {
    if (it->is_object() && it->value("type", "") == type) {
      conditions.erase(it);
      return true;
    }
  }
  return false;
}

}  // namespace commgate::op
