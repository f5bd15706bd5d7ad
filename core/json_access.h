// Reading fields of objects others wrote (a Job, a Pod, a webhook's request) without
// exceptions: a missing key, or a value that is not an object where one is looked into,
// reads as absent.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

namespace commgate {

// object[key], or null when `object` is not an object or has no such key.
inline const nlohmann::json* json_member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// object[path[0]][path[1]]..., or a null value when any step is absent.
inline const nlohmann::json& json_at(const nlohmann::json& object,
                                     std::initializer_list<const char*> path) {
  static const nlohmann::json kNull;
  const nlohmann::json* v = &object;
  for (const char* key : path) {
    v = json_member(*v, key);
    if (!v) return kNull;
  }
  return *v;
}

// object[path...] when it is a string, else "" (a field of another type reads as absent).
inline std::string json_string(const nlohmann::json& object,
                               std::initializer_list<const char*> path) {
  const nlohmann::json& v = json_at(object, path);
  return v.is_string() ? v.get<std::string>() : std::string();
}

// The object's controller ownerReference (metadata.ownerReferences[] with controller:
// true; a controller field of another type is not true), or null.
inline const nlohmann::json* controller_reference(const nlohmann::json& object) {
  const nlohmann::json& refs = json_at(object, {"metadata", "ownerReferences"});
  if (!refs.is_array()) return nullptr;
  for (const nlohmann::json& r : refs) {
    const nlohmann::json* controller = json_member(r, "controller");
    if (controller && *controller == nlohmann::json(true)) return &r;
  }
  return nullptr;
}

}  // namespace commgate
