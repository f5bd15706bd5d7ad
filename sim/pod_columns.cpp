#include "sim/pod_columns.h"

#include "sim/json_fields.h"

namespace commgate::sim {
namespace {

using nlohmann::json;

// printPod's reason: the phase (or status.reason), overridden by the last container's
// waiting or terminated reason read from the end of containerStatuses, as upstream walks
// them; "Completed" with a container still running reads Running (Ready) or NotReady.
std::string pod_status(const json& pod) {
  const json& status = at(pod, "status");
  std::string reason = str(at(status, "phase"));
  if (!str(at(status, "reason")).empty()) reason = str(status["reason"]);
  bool has_running = false;
  const json& containers = at(status, "containerStatuses");
  if (containers.is_array())
    for (auto it = containers.rbegin(); it != containers.rend(); ++it) {
      const json& state = at(*it, "state");
      const json& waiting = at(state, "waiting");
      const json& terminated = at(state, "terminated");
      if (!str(at(waiting, "reason")).empty()) {
        reason = str(waiting["reason"]);
      } else if (!str(at(terminated, "reason")).empty()) {
        reason = str(terminated["reason"]);
      } else if (terminated.is_object()) {
        reason = at(terminated, "signal").is_number_integer() && terminated["signal"] != 0
                     ? "Signal:" + std::to_string(terminated["signal"].get<int>())
                     : "ExitCode:" + std::to_string(int_or(at(terminated, "exitCode"), 0));
      } else if (at(*it, "ready") == true && at(state, "running").is_object()) {
        has_running = true;
      }
    }
  if (reason == "Completed" && has_running)
    reason = condition_true(pod, "Ready") ? "Running" : "NotReady";
  if (at(at(pod, "metadata"), "deletionTimestamp").is_string())
    reason = str(at(status, "reason")) == "NodeLost" ? "Unknown" : "Terminating";
  return reason;
}

}  // namespace

json pod_column(const std::string& which, const json& pod) {
  const json& containers = at(at(pod, "status"), "containerStatuses");
  if (which == "podReady") {
    int ready = 0;
    if (containers.is_array())
      for (const auto& c : containers)
        ready += at(c, "ready") == true && at(at(c, "state"), "running").is_object();
    const json& spec_containers = at(at(pod, "spec"), "containers");
    const size_t total = spec_containers.is_array() ? spec_containers.size() : 0;
    return std::to_string(ready) + "/" + std::to_string(total);
  }
  if (which == "podStatus") return pod_status(pod);
  if (which == "podRestarts") {
    long long restarts = 0;
    if (containers.is_array())
      for (const auto& c : containers) restarts += int_or(at(c, "restartCount"), 0);
    return restarts;
  }
  return nullptr;
}

}  // namespace commgate::sim
