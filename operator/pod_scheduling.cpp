#include "operator/pod_scheduling.h"

namespace commgate::op {

std::optional<std::string> unschedulable_message(const nlohmann::json& pod) {
  if (!pod.is_object() || !pod.contains("status") || !pod["status"].is_object())
    return std::nullopt;
  const nlohmann::json& status = pod["status"];
  if (!status.contains("conditions") || !status["conditions"].is_array()) return std::nullopt;
  auto text = [](const nlohmann::json& c, const char* key) {
    return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : std::string();
  };
  for (const auto& c : status["conditions"]) {
    if (c.is_object() && text(c, "type") == "PodScheduled" && text(c, "status") == "False" &&
        text(c, "reason") == "Unschedulable")
      return text(c, "message");
  }
  return std::nullopt;
}

std::optional<TimePoint> unschedulable_since(const nlohmann::json& pod) {
  if (!unschedulable_message(pod)) return std::nullopt;
  auto time_at = [](const nlohmann::json& object,
                    const nlohmann::json::json_pointer& at) -> std::optional<TimePoint> {
    if (!object.contains(at) || !object.at(at).is_string()) return std::nullopt;
    return parse_rfc3339(object.at(at).get<std::string>());
  };
  for (const auto& c : pod["status"]["conditions"]) {
    if (c.is_object() && c.value("type", "") == "PodScheduled") {
      if (auto t = time_at(c, nlohmann::json::json_pointer("/lastTransitionTime"))) return t;
    }
  }
  return time_at(pod, nlohmann::json::json_pointer("/metadata/creationTimestamp"));
}

}  // namespace commgate::op
