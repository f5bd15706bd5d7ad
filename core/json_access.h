// Reading fields of objects others wrote (a Job, a Pod, a webhook's request) without
// exceptions: a missing key, or a value that is not an object where one is looked into,
// reads as absent.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>

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

}  // namespace commgate
