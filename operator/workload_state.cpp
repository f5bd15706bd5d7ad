#include "operator/workload_state.h"

#include "operator/pod_failure.h"
#include "operator/pod_scheduling.h"

namespace commgate::op {
namespace {

using nlohmann::json;

int count_of(const json& status, const char* field) {
  if (!status.contains(field)) return 0;
  const json& v = status[field];
  return v.is_number_integer() ? v.get<int>() : 0;
}

std::string text_of(const json& object, const char* field) {
  if (!object.contains(field) || !object[field].is_string()) return "";
  return object[field].get<std::string>();
}

// The condition of `type` whose status is "True", or nullptr.
const json* true_condition(const json& status, const std::string& type) {
  if (!status.contains("conditions") || !status["conditions"].is_array()) return nullptr;
  for (const auto& c : status["conditions"])
    if (c.is_object() && text_of(c, "type") == type && text_of(c, "status") == "True") return &c;
  return nullptr;
}

WorkloadState terminal(WorkloadPhase phase, const json& condition, const char* default_reason,
                       WorkloadState state) {
  state.phase = phase;
  state.reason = text_of(condition, "reason");
  if (state.reason.empty()) state.reason = default_reason;
  state.message = text_of(condition, "message");
  return state;
}

}  // namespace

WorkloadState workload_state(const nlohmann::json& job, const std::vector<nlohmann::json>& pods) {
  WorkloadState state;
  const json status = job.is_object() && job.contains("status") && job["status"].is_object()
                          ? job["status"]
                          : json::object();
  state.active = count_of(status, "active");
  state.succeeded = count_of(status, "succeeded");
  state.failed = count_of(status, "failed");

  // Terminal conditions first: a finished Job keeps its counts, and a Failed one may still
  // list active pods for a moment. Failed wins over Complete (both never hold at once in
  // kube; if they did, a failure must not read as success).
  if (const json* c = true_condition(status, "Failed")) {
    state = terminal(WorkloadPhase::kFailed, *c, "Failed", state);
    if (const std::string why = first_pod_failure(pods); !why.empty())
      state.message += (state.message.empty() ? "" : "; ") + why;
    return state;
  }
  if (const json* c = true_condition(status, "Complete"))
    return terminal(WorkloadPhase::kSucceeded, *c, "Complete", state);
  if (const json* c = true_condition(status, "Suspended")) {
    state.phase = WorkloadPhase::kPending;
    state.reason = "Suspended";
    state.message = text_of(*c, "message");
    return state;
  }
  // FailureTarget / SuccessCriteriaMet (kube 1.31+) say how it will end while pods are
  // still terminating: the phase waits for Failed / Complete, the reason says it now.
  const json* ending = true_condition(status, "FailureTarget");
  if (!ending) ending = true_condition(status, "SuccessCriteriaMet");

  int unschedulable = 0;
  std::string scheduler_says;
  for (const json& pod : pods) {
    if (auto m = unschedulable_message(pod)) {
      if (unschedulable++ == 0) scheduler_says = *m;
      if (auto since = op::unschedulable_since(pod);
          since && (!state.unschedulable_since || *since < *state.unschedulable_since))
        state.unschedulable_since = since;
    }
  }
  if (unschedulable > 0) {
    const json spec = job.is_object() && job.contains("spec") ? job["spec"] : json::object();
    const int nodes = count_of(spec, "parallelism");
    state.phase = WorkloadPhase::kPending;
    state.reason = "PodsUnschedulable";  // op_reason::kPodsUnschedulable
    state.message = std::to_string(unschedulable) + " of " + std::to_string(pods.size()) +
                    " pod(s) cannot be scheduled" +
                    (scheduler_says.empty() ? "" : ": " + scheduler_says) +
                    "; torchrun waits for all " +
                    (nodes > 0 ? std::to_string(nodes) + " nodes" : std::string("its nodes")) +
                    ", so the training has not started";
    return state;
  }

  // Running once a pod ran: ready (kube 1.24+ counts pods whose Ready condition holds),
  // or finished. Active pods that are not ready are still being scheduled or started (an
  // unschedulable pod is active too): that is Pending. Without a `ready` field (older
  // kube), an active pod counts as running.
  const bool has_ready = status.contains("ready") && status["ready"].is_number_integer();
  const int ready = count_of(status, "ready");
  const bool ran =
      state.succeeded > 0 || state.failed > 0 || (has_ready ? ready > 0 : state.active > 0);
  if (!ran) {
    if (state.active > 0) {
      state.reason = "PodsStarting";
      state.message = std::to_string(state.active) +
                      " pod(s) active, none ready yet (being scheduled or started)";
    } else {
      state.reason = "WorkloadPending";
      state.message = "the Job has not created a pod yet";
    }
    return state;
  }
  state.phase = WorkloadPhase::kRunning;
  if (ending) {
    state.reason = text_of(*ending, "reason");
    state.message = text_of(*ending, "message");
  }
  if (state.reason.empty()) {
    state.reason = "WorkloadRunning";
    // The counts are in the state's fields; the message adds what they do not say.
    state.message = has_ready ? std::to_string(ready) + " of " + std::to_string(state.active) +
                                    " active pod(s) ready"
                              : std::to_string(state.active) + " pod(s) active";
  }
  return state;
}

const char* to_string(WorkloadPhase phase) {
  switch (phase) {
    case WorkloadPhase::kPending:
      return "Pending";
    case WorkloadPhase::kRunning:
      return "Running";
    case WorkloadPhase::kSucceeded:
      return "Succeeded";
    case WorkloadPhase::kFailed:
      return "Failed";
  }
  return "Pending";
}

}  // namespace commgate::op
