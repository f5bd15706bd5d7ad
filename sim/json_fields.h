// Lenient reads of fields of stored objects for the sim's controllers (kubelet, scheduler,
// Job and Deployment controllers, Service lookup): a missing or mistyped field reads as
// empty, as the controllers treat an object the API server already validated.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace commgate::sim {

// The string, or "" for anything else.
inline std::string str(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : "";
}

// obj[key], or null when obj is not an object or has no such key.
inline const nlohmann::json& at(const nlohmann::json& obj, const char* key) {
  static const nlohmann::json null;
  return obj.is_object() && obj.contains(key) ? obj[key] : null;
}

inline int int_or(const nlohmann::json& v, int fallback) {
  return v.is_number_integer() ? v.get<int>() : fallback;
}

// True when status.conditions has `type` with status "True".
inline bool condition_true(const nlohmann::json& object, const std::string& type) {
  const nlohmann::json& conds = at(at(object, "status"), "conditions");
  if (conds.is_array())
    for (const auto& c : conds)
      if (str(at(c, "type")) == type) return str(at(c, "status")) == "True";
  return false;
}

// The uid of the object's controller (the owner reference with controller: true) of
// `kind`, or of any kind when `kind` is empty; "" when it has none.
inline std::string controller_uid(const nlohmann::json& object, const std::string& kind = "") {
  const nlohmann::json& refs = at(at(object, "metadata"), "ownerReferences");
  if (refs.is_array())
    for (const auto& r : refs)
      if (at(r, "controller").is_boolean() && r["controller"].get<bool>() &&
          (kind.empty() || str(at(r, "kind")) == kind))
        return str(at(r, "uid"));
  return "";
}

}  // namespace commgate::sim
