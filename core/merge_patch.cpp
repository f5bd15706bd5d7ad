#include "core/merge_patch.h"

namespace commgate {

nlohmann::json merge_patch_from(const nlohmann::json& before, const nlohmann::json& after) {
  if (!before.is_object() || !after.is_object()) return after;
  nlohmann::json patch = nlohmann::json::object();
  for (const auto& [key, value] : before.items())
    if (!after.contains(key)) patch[key] = nullptr;
  for (const auto& [key, value] : after.items()) {
    const auto old = before.find(key);
    if (old == before.end()) {
      patch[key] = value;
    } else if (*old != value) {
      patch[key] = merge_patch_from(*old, value);
    }
  }
  return patch;
}

}  // namespace commgate
