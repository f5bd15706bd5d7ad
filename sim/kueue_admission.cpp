#include "sim/kueue_admission.h"

#include <algorithm>
#include <vector>

#include "sim/json_fields.h"
#include "sim/kueue_tas.h"
#include "sim/kueue_workloads.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

// patching.go admissionManagedConditions: the conditions Kueue's admission applies carry.
const char* const kAdmissionManagedConditions[] = {
    "QuotaReserved", "BlockedOnPreemptionGates", "Evicted",  "Admitted", "Preempted",
    "Requeued",      "DeactivationTarget",       "Finished", "PodsReady"};

// The fields of AdmissionCheckState as Go serializes it.
const char* const kCheckEntryFields[] = {
    "name",      "state", "message", "lastTransitionTime", "podSetUpdates", "requeueAfterSeconds",
    "retryCount"};

json& conditions_of(json& workload) {
  json& status = workload["status"];
  if (!status.is_object()) status = json::object();
  json& conditions = status["conditions"];
  if (!conditions.is_array()) conditions = json::array();
  return conditions;
}

const json& check_entries(const json& workload) {
  return at(at(workload, "status"), "admissionChecks");
}

bool has_entry_in(const json& workload, const char* state) {
  const json& entries = check_entries(workload);
  if (entries.is_array())
    for (const auto& e : entries)
      if (str(at(e, "state")) == state) return true;
  return false;
}

bool all_checks_ready(const json& workload) {
  const json& entries = check_entries(workload);
  if (entries.is_array())
    for (const auto& e : entries)
      if (str(at(e, "state")) != "Ready") return false;
  return true;
}

std::optional<TimePoint> requeue_at(const json& workload) {
  const std::string text = str(at(at(at(workload, "status"), "requeueState"), "requeueAt"));
  if (text.empty()) return std::nullopt;
  return parse_rfc3339(text);
}

// NeedsRequeueAtUpdate.
bool needs_requeue_at_update(const json& workload, TimePoint now) {
  const auto latest = kueue_max_retry_time(workload);
  if (!latest || *latest <= now) return false;
  const auto current = requeue_at(workload);
  return !current || *current < *latest;
}

}  // namespace

const json& kueue_condition(const json& workload, const std::string& type) {
  static const json null;
  const json& conditions = at(at(workload, "status"), "conditions");
  if (conditions.is_array())
    for (const auto& c : conditions)
      if (str(at(c, "type")) == type) return c;
  return null;
}

bool kueue_set_condition(json& workload, json condition, const std::string& now) {
  const json& generation = at(at(workload, "metadata"), "generation");
  if (generation.is_number_integer()) condition["observedGeneration"] = generation;
  json& conditions = conditions_of(workload);
  for (auto& c : conditions) {
    if (str(at(c, "type")) != str(condition["type"])) continue;
    const json before = c;
    if (str(at(c, "status")) != str(condition["status"])) {
      c["status"] = condition["status"];
      c["lastTransitionTime"] = now;
    }
    for (const char* k : {"reason", "message", "observedGeneration"})
      if (condition.contains(k)) c[k] = condition[k];
    return c != before;
  }
  condition["lastTransitionTime"] = now;
  conditions.push_back(condition);
  return true;
}

bool kueue_remove_condition(json& workload, const std::string& type) {
  json& conditions = conditions_of(workload);
  const auto before = conditions.size();
  json kept = json::array();
  for (const auto& c : conditions)
    if (str(at(c, "type")) != type) kept.push_back(c);
  conditions = kept;
  return kept.size() != before;
}

bool kueue_has_quota_reservation(const json& workload) {
  return condition_true(workload, "QuotaReserved");
}
bool kueue_is_admitted(const json& workload) {
  return condition_true(workload, "Admitted");
}
bool kueue_is_evicted(const json& workload) {
  return condition_true(workload, "Evicted");
}
bool kueue_is_active(const json& workload) {
  const json& active = at(at(workload, "spec"), "active");
  return !active.is_boolean() || active.get<bool>();
}
bool kueue_is_finished(const json& workload) {
  return condition_true(workload, "Finished");
}

std::set<std::string> kueue_cluster_queue_checks(const json& cluster_queue, const json& workload) {
  std::set<std::string> out;
  std::set<std::string> assigned;
  const json& assignments = at(at(at(workload, "status"), "admission"), "podSetAssignments");
  if (assignments.is_array())
    for (const auto& a : assignments)
      if (at(a, "flavors").is_object())
        for (const auto& [resource, flavor] : a["flavors"].items()) assigned.insert(str(flavor));
  const json& checks =
      at(at(at(cluster_queue, "spec"), "admissionChecksStrategy"), "admissionChecks");
  if (!checks.is_array()) return out;
  for (const auto& c : checks) {
    const json& on = at(c, "onFlavors");
    bool applies = !on.is_array() || on.empty();
    if (!applies)
      for (const auto& f : on) applies = applies || assigned.count(str(f)) > 0;
    if (applies) out.insert(str(at(c, "name")));
  }
  return out;
}

std::optional<json> kueue_synced_check_entries(const json& workload,
                                               const std::set<std::string>& checks,
                                               const std::string& now) {
  const json& current = check_entries(workload);
  json entries = current.is_array() ? current : json::array();
  if (checks.empty()) {
    if (entries.empty()) return std::nullopt;
    return json::array();
  }
  bool changed = false;
  std::set<std::string> present;
  for (const auto& e : entries) present.insert(str(at(e, "name")));
  for (const auto& name : checks) {
    if (present.count(name) > 0) continue;
    entries.push_back(
        {{"name", name}, {"state", "Pending"}, {"message", ""}, {"lastTransitionTime", now}});
    changed = true;
  }
  if (entries.size() > checks.size()) {
    json kept = json::array();
    for (const auto& e : entries)
      if (checks.count(str(at(e, "name"))) > 0) kept.push_back(e);
    entries = kept;
    changed = true;
  }
  std::stable_sort(entries.begin(), entries.end(), [](const json& a, const json& b) {
    return str(at(a, "name")) < str(at(b, "name"));
  });
  if (!changed) return std::nullopt;
  return entries;
}

std::string kueue_truncate_event_message(const std::string& message) {
  constexpr std::size_t kLimit = 1024;  // api.go maxEventMsgSize
  if (message.size() <= kLimit) return message;
  const std::string suffix = " ...";
  return message.substr(0, kLimit - suffix.size()) + suffix;
}

std::string kueue_pending_checks_note(const json& workload) {
  std::string note;
  const json& entries = check_entries(workload);
  if (entries.is_array())
    for (const auto& e : entries) {
      if (str(at(e, "state")) != "Pending" || str(at(e, "message")).empty()) continue;
      if (!note.empty()) note += "; ";
      note += str(at(e, "name")) + ": " + str(at(e, "message"));
    }
  return kueue_truncate_event_message(note);
}

std::string kueue_checks_message(const json& workload, const std::string& state) {
  std::vector<std::pair<std::string, std::string>> matching;
  const json& entries = check_entries(workload);
  if (entries.is_array())
    for (const auto& e : entries)
      if (str(at(e, "state")) == state)
        matching.emplace_back(str(at(e, "name")), str(at(e, "message")));
  std::sort(matching.begin(), matching.end());
  std::string parts;
  for (const auto& [name, message] : matching) {
    if (!parts.empty()) parts += "; ";
    // Go's %q of a plain name: the name in double quotes.
    parts += "\"" + name + "\"";
    if (!message.empty()) parts += " (" + message + ")";
  }
  const std::string noun = matching.size() > 1 ? "AdmissionChecks" : "AdmissionCheck";
  return noun + " in " + state + " state: " + parts;
}

std::optional<TimePoint> kueue_max_retry_time(const json& workload) {
  std::optional<TimePoint> latest;
  const json& entries = check_entries(workload);
  if (!entries.is_array()) return latest;
  for (const auto& e : entries) {
    if (str(at(e, "state")) != "Retry" || !at(e, "requeueAfterSeconds").is_number_integer())
      continue;
    const auto since = parse_rfc3339(str(at(e, "lastTransitionTime")));
    if (!since) continue;
    const TimePoint t = *since + std::chrono::seconds(e["requeueAfterSeconds"].get<int>());
    if (!latest || *latest < t) latest = t;
  }
  return latest;
}

bool kueue_sync_admitted_condition(json& workload, const std::string& now) {
  const bool reserved = kueue_has_quota_reservation(workload);
  const bool ready = all_checks_ready(workload);
  // UnadmittedWorkloadsObservability is off by default in v0.19: the condition is only
  // written when admission changes.
  const bool topology_ready = !kueue_tas_pending(workload);
  if (kueue_is_admitted(workload) == (reserved && ready && topology_ready)) return false;
  json c = {{"type", "Admitted"},
            {"status", "True"},
            {"reason", "Admitted"},
            {"message", "The workload is admitted"}};
  if (!reserved && !ready) {
    c = {{"type", "Admitted"},
         {"status", "False"},
         {"reason", "NoReservationUnsatisfiedChecks"},
         {"message", "The workload has no reservation and not all checks ready"}};
  } else if (!reserved) {
    c = {{"type", "Admitted"},
         {"status", "False"},
         {"reason", "NoReservation"},
         {"message", "The workload has no reservation"}};
  } else if (!ready) {
    c = {{"type", "Admitted"},
         {"status", "False"},
         {"reason", "UnsatisfiedChecks"},
         {"message", "The workload has not all checks ready"}};
  } else if (!topology_ready) {
    c = {{"type", "Admitted"},
         {"status", "False"},
         {"reason", "PendingDelayedTopologyRequests"},
         {"message", "There are pending delayed topology requests"}};
  }
  return kueue_set_condition(workload, c, now);
}

bool kueue_set_quota_reservation(json& workload, const json& admission, const std::string& now) {
  workload["status"]["admission"] = admission;
  kueue_set_condition(
      workload,
      {{"type", "QuotaReserved"},
       {"status", "True"},
       {"reason", "QuotaReserved"},
       {"message", "Quota reserved in ClusterQueue " + str(at(admission, "clusterQueue"))}},
      now);
  // resetActiveCondition: an Evicted or Preempted condition still True turns False.
  for (const char* type : {"Evicted", "Preempted", "BlockedOnPreemptionGates"}) {
    const json& prev = kueue_condition(workload, type);
    if (!prev.is_object() || str(at(prev, "status")) != "True") continue;
    const std::string message = "Previously: " + str(at(prev, "message"));
    kueue_set_condition(
        workload,
        {{"type", type}, {"status", "False"}, {"reason", "QuotaReserved"}, {"message", message}},
        now);
  }
  return true;  // the admission is new
}

bool kueue_unset_quota_reservation(json& workload, const std::string& reason,
                                   const std::string& message, const std::string& now) {
  bool changed = kueue_set_condition(
      workload,
      {{"type", "QuotaReserved"}, {"status", "False"}, {"reason", reason}, {"message", message}},
      now);
  if (at(workload, "status").contains("admission")) {
    workload["status"].erase("admission");
    changed = true;
  }
  return kueue_sync_admitted_condition(workload, now) || changed;
}

void kueue_prepare_for_eviction(json& workload, const std::string& reason,
                                const std::string& message, const std::string& now) {
  kueue_set_condition(
      workload, {{"type", "Evicted"}, {"status", "True"}, {"reason", reason}, {"message", message}},
      now);
  json& status = workload["status"];
  status.erase("clusterName");
  status.erase("nominatedClusterNames");
  status.erase("unhealthyNodes");
  if (!status.contains("admissionChecks") || !status["admissionChecks"].is_array()) return;
  for (auto& e : status["admissionChecks"]) {
    const std::string state = str(at(e, "state"));
    if (state == "Pending") continue;
    json reset = {{"name", e["name"]},
                  {"state", "Pending"},
                  {"message", "Reset to Pending after eviction. Previously: " + state},
                  {"lastTransitionTime", now}};
    if (e.contains("requeueAfterSeconds")) reset["requeueAfterSeconds"] = e["requeueAfterSeconds"];
    if (state == "Retry") reset["retryCount"] = int_or(at(e, "retryCount"), 0) + 1;
    e = reset;
  }
}

bool kueue_set_requeue_at(json& workload, const std::string& requeue_at_text) {
  json& state = workload["status"]["requeueState"];
  if (!state.is_object()) state = json::object();
  const auto current = parse_rfc3339(str(at(state, "requeueAt")));
  const auto wanted = parse_rfc3339(requeue_at_text);
  if (current && wanted && !(*current < *wanted)) return false;
  state["requeueAt"] = requeue_at_text;
  return true;
}

KueueWorkloadStep kueue_next_workload_step(const json& workload,
                                           const std::optional<std::set<std::string>>& checks,
                                           TimePoint now) {
  if (kueue_is_finished(workload)) return KueueWorkloadStep::kNone;
  if (!kueue_is_active(workload))
    return kueue_is_evicted(workload) ? KueueWorkloadStep::kNone
                                      : KueueWorkloadStep::kEvictDeactivated;
  if (condition_true(workload, "DeactivationTarget")) return KueueWorkloadStep::kDeactivate;
  if (needs_requeue_at_update(workload, now)) return KueueWorkloadStep::kSetRequeueAt;
  const json& requeued = kueue_condition(workload, "Requeued");
  if (requeued.is_object() && str(at(requeued, "status")) == "False") {
    // Reconcile's switch on the Requeued=False reason, matched whole: "Deactivated" (set
    // when a deactivated job released its quota) is reactivated; "DeactivatedDueTo<cause>"
    // matches no case, so such a workload stays Requeued=False, out of the scheduler's
    // queue (v0.19.2, kubernetes-sigs/kueue#14870).
    const std::string reason = str(at(requeued, "reason"));
    if (reason == "Deactivated") return KueueWorkloadStep::kReactivate;
    if (reason == "AdmissionCheck" && !kueue_has_quota_reservation(workload)) {
      const auto at_time = requeue_at(workload);
      if (!at_time || *at_time <= now) return KueueWorkloadStep::kBackoffFinished;
    }
  }
  if (!kueue_has_quota_reservation(workload)) return KueueWorkloadStep::kNone;
  if (checks) {
    if (kueue_synced_check_entries(workload, *checks, format_rfc3339(now)))
      return KueueWorkloadStep::kSyncChecks;
  }
  json probe = workload;
  if (kueue_sync_admitted_condition(probe, format_rfc3339(now)))
    return KueueWorkloadStep::kSyncAdmitted;
  if (kueue_is_evicted(workload)) return KueueWorkloadStep::kNone;
  if (has_entry_in(workload, "Rejected")) return KueueWorkloadStep::kSetDeactivationTarget;
  if (has_entry_in(workload, "Retry")) return KueueWorkloadStep::kEvictForRetry;
  return KueueWorkloadStep::kNone;
}

json kueue_admission_status_apply(const json& workload) {
  const json& meta = at(workload, "metadata");
  json config_meta = json::object();
  for (const char* k : {"name", "namespace", "uid", "resourceVersion"})
    if (at(meta, k).is_string()) config_meta[k] = meta[k];
  json status = json::object();
  const json& live = at(workload, "status");
  if (at(live, "admission").is_object()) status["admission"] = live["admission"];
  const json& requeue = at(live, "requeueState");
  if (requeue.is_object()) {
    json kept = json::object();
    for (const char* k : {"count", "requeueAt"})
      if (requeue.contains(k) && !requeue[k].is_null()) kept[k] = requeue[k];
    if (!kept.empty()) status["requeueState"] = kept;
  }
  json conditions = json::array();
  for (const char* type : kAdmissionManagedConditions) {
    const json& c = kueue_condition(workload, type);
    if (c.is_object()) conditions.push_back(c);
  }
  if (!conditions.empty()) status["conditions"] = conditions;
  if (at(live, "accumulatedPastExecutionTimeSeconds").is_number_integer())
    status["accumulatedPastExecutionTimeSeconds"] = live["accumulatedPastExecutionTimeSeconds"];
  const json& entries = at(live, "admissionChecks");
  if (entries.is_array() && !entries.empty()) {
    json whole = json::array();
    for (const auto& e : entries) {
      json copy = json::object();
      for (const char* k : kCheckEntryFields)
        if (e.contains(k) && !e[k].is_null()) copy[k] = e[k];
      whole.push_back(copy);
    }
    status["admissionChecks"] = whole;
  }
  return {{"apiVersion", kKueueApiVersion},
          {"kind", "Workload"},
          {"metadata", config_meta},
          {"status", status}};
}

}  // namespace commgate::sim
