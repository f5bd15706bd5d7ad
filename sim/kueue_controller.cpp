#include "sim/kueue_controller.h"

#include <algorithm>

#include "sim/api_status.h"
#include "sim/crd_schema.h"
#include "sim/garbage_collection.h"
#include "sim/json_fields.h"
#include "sim/kueue_admission.h"
#include "sim/kueue_quota.h"
#include "sim/server_side_apply.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

constexpr const char* kKueueGroup = "kueue.x-k8s.io";
constexpr const char* kKueueVersion = "v1beta2";
// A pass that wrote runs again soon: its write is the next step's input.
constexpr std::chrono::milliseconds kKueueAfterWrite{10};

std::string name_of(const json& object) {
  return str(at(at(object, "metadata"), "name"));
}
std::string namespace_of(const json& object) {
  return str(at(at(object, "metadata"), "namespace"));
}
std::string uid_of(const json& object) {
  return str(at(at(object, "metadata"), "uid"));
}

// Whether every AdmissionCheck the ClusterQueue names exists and is Active (upstream's
// ClusterQueue is inactive otherwise and admits nothing).
bool cluster_queue_active(const json& cq, const std::map<std::string, json>& checks) {
  const json& named = at(at(at(cq, "spec"), "admissionChecksStrategy"), "admissionChecks");
  if (!named.is_array()) return true;
  for (const auto& c : named) {
    const auto it = checks.find(str(at(c, "name")));
    if (it == checks.end() || !condition_true(it->second, "Active")) return false;
  }
  return true;
}

}  // namespace

KueueController::KueueController(ObjectStore& store)
    : store_(store),
      jobs_(*store.find_resource("batch", "v1", "jobs")),
      loop_(store, {jobs_}, [this]() -> std::optional<TimePoint> {
        try {
          return sync_once();
        } catch (const std::exception&) {
          return Clock::now() + kKueuePollInterval;  // retry after a store error
        }
      }) {}

KueueController::~KueueController() {
  stop();
}

void KueueController::start() {
  loop_.start();
}

void KueueController::stop() {
  loop_.stop();
}

std::optional<KueueController::Kinds> KueueController::kinds() const {
  auto wl = store_.find_resource(kKueueGroup, kKueueVersion, "workloads");
  auto cq = store_.find_resource(kKueueGroup, kKueueVersion, "clusterqueues");
  auto lq = store_.find_resource(kKueueGroup, kKueueVersion, "localqueues");
  auto rf = store_.find_resource(kKueueGroup, kKueueVersion, "resourceflavors");
  auto ac = store_.find_resource(kKueueGroup, kKueueVersion, "admissionchecks");
  if (!wl || !cq || !lq || !rf || !ac) return std::nullopt;
  return Kinds{*wl, *cq, *lq, *rf, *ac};
}

KueueController::Snapshot KueueController::snapshot(const Kinds& k) const {
  Snapshot s;
  s.workloads = store_.list(k.workloads, "", {}).items;
  // Oldest first, as the scheduler's queue orders them (then by name, for ties).
  std::stable_sort(s.workloads.begin(), s.workloads.end(), [](const json& a, const json& b) {
    const std::string ta = str(at(at(a, "metadata"), "creationTimestamp"));
    const std::string tb = str(at(at(b, "metadata"), "creationTimestamp"));
    return ta != tb ? ta < tb : name_of(a) < name_of(b);
  });
  for (auto& o : store_.list(k.cluster_queues, "", {}).items) s.cluster_queues[name_of(o)] = o;
  for (auto& o : store_.list(k.flavors, "", {}).items) s.flavors[name_of(o)] = o;
  for (auto& o : store_.list(k.checks, "", {}).items) s.checks[name_of(o)] = o;
  for (auto& o : store_.list(k.local_queues, "", {}).items)
    s.local_queues[namespace_of(o) + "/" + name_of(o)] = o;
  return s;
}

std::optional<TimePoint> KueueController::sync_once() {
  const auto k = kinds();
  if (!k) return Clock::now() + kKueuePollInterval;
  bool wrote = false;
  Snapshot s = snapshot(*k);
  for (const auto& kind : kueue_job_kinds()) {
    const auto jobs = store_.find_resource(kind.group, kind.version, kind.plural);
    if (!jobs) continue;
    for (const auto& job : store_.list(*jobs, "", {}).items) {
      if (str(at(at(at(job, "metadata"), "labels"), kKueueQueueNameLabel)).empty()) continue;
      try {
        wrote = reconcile_job(*k, s, kind, *jobs, job) || wrote;
      } catch (const ApiError&) {
        // Changed meanwhile (a 409 on the version read): the next pass reads it again.
      }
    }
  }
  s = snapshot(*k);
  const TimePoint now = Clock::now();
  for (const auto& wl : s.workloads) {
    try {
      wrote = reconcile_workload(*k, s, wl, now) || wrote;
    } catch (const ApiError&) {
    }
  }
  s = snapshot(*k);
  try {
    wrote = schedule(*k, s, now) || wrote;
  } catch (const ApiError&) {
  }
  return Clock::now() + (wrote ? std::chrono::milliseconds(kKueueAfterWrite) : kKueuePollInterval);
}

const json* KueueController::cluster_queue_of(const Snapshot& s, const json& workload) const {
  const std::string queue = str(at(at(workload, "spec"), "queueName"));
  const auto lq = s.local_queues.find(namespace_of(workload) + "/" + queue);
  if (lq == s.local_queues.end()) return nullptr;
  const auto cq = s.cluster_queues.find(str(at(at(lq->second, "spec"), "clusterQueue")));
  return cq == s.cluster_queues.end() ? nullptr : &cq->second;
}

bool KueueController::reconcile_job(const Kinds& k, const Snapshot& s, const KueueJobKind& kind,
                                    const ResourceInfo& jobs, const json& job) {
  if (is_deleting(job) || kueue_job_finished(kind, job)) return false;
  const json* workload = nullptr;
  for (const auto& wl : s.workloads)
    if (controller_uid(wl, kind.kind) == uid_of(job)) workload = &wl;
  const bool suspended = kueue_job_suspended(kind, job);
  if (workload == nullptr) {
    if (!suspended) {
      // Escaped the webhook (none here): suspended before its Workload is made.
      update(jobs, job, kueue_stopped_job(kind, job, json::object()), WritePart::kMain);
      return true;
    }
    create_workload(k.workloads, kueue_workload_for_job(kind, job));
    return true;
  }
  const json& wl = *workload;
  const bool evicted = kueue_is_evicted(wl);
  if (evicted || !kueue_is_active(wl)) {
    if (!suspended) {
      update(jobs, job, kueue_stopped_job(kind, job, wl), WritePart::kMain);
      return true;
    }
    if (evicted && kueue_has_quota_reservation(wl) && !kueue_job_active(kind, job)) {
      const json& evicted_condition = kueue_condition(wl, "Evicted");
      const std::string reason = str(at(evicted_condition, "reason"));
      const std::string message = str(at(evicted_condition, "message"));
      const std::string now = format_rfc3339(Clock::now());
      json next = wl;
      kueue_set_condition(
          next,
          {{"type", "Requeued"}, {"status", "False"}, {"reason", reason}, {"message", message}},
          now);
      kueue_unset_quota_reservation(next, "Pending", message, now);
      apply_admission_status(k.workloads, wl, next);
      return true;
    }
    return false;
  }
  if (kueue_is_admitted(wl)) {
    if (!suspended) return false;
    json flavors = json::object();
    for (const auto& [name, flavor] : s.flavors) flavors[name] = flavor;
    update(jobs, job, kueue_started_job(kind, job, kueue_pod_set_infos(wl, flavors)),
           WritePart::kMain);
    return true;
  }
  if (!suspended) {
    update(jobs, job, kueue_stopped_job(kind, job, wl), WritePart::kMain);
    return true;
  }
  return false;
}

bool KueueController::reconcile_workload(const Kinds& k, const Snapshot& s, const json& wl,
                                         TimePoint now) {
  if (is_deleting(wl)) return false;
  const json* cq = cluster_queue_of(s, wl);
  std::optional<std::set<std::string>> checks;
  if (cq != nullptr) checks = kueue_cluster_queue_checks(*cq, wl);
  const std::string now_text = format_rfc3339(now);
  json next = wl;
  switch (kueue_next_workload_step(wl, checks, now)) {
    case KueueWorkloadStep::kNone:
      return false;
    case KueueWorkloadStep::kDeactivate:
      next["spec"]["active"] = false;
      update(k.workloads, wl, next, WritePart::kMain);
      return true;
    case KueueWorkloadStep::kEvictDeactivated: {
      const json target = kueue_condition(wl, "DeactivationTarget");
      std::string reason = "Deactivated", message = "The workload is deactivated";
      if (target.is_object()) {
        reason += "DueTo" + str(at(target, "reason"));
        message += " due to " + str(at(target, "message"));
      }
      kueue_remove_condition(next, "DeactivationTarget");
      next["status"].erase("requeueState");
      kueue_prepare_for_eviction(next, reason, message, now_text);
      apply_admission_status(k.workloads, wl, next);
      return true;
    }
    case KueueWorkloadStep::kSetRequeueAt:
      kueue_set_requeue_at(next, format_rfc3339(*kueue_max_retry_time(wl)));
      apply_admission_status(k.workloads, wl, next);
      return true;
    case KueueWorkloadStep::kBackoffFinished:
      if (next["status"].contains("requeueState"))
        next["status"]["requeueState"].erase("requeueAt");
      kueue_set_condition(next,
                          {{"type", "Requeued"},
                           {"status", "True"},
                           {"reason", "BackoffFinished"},
                           {"message", "The workload backoff was finished"}},
                          now_text);
      apply_admission_status(k.workloads, wl, next);
      return true;
    case KueueWorkloadStep::kSyncChecks:
      next["status"]["admissionChecks"] = *kueue_synced_check_entries(wl, *checks, now_text);
      if (next["status"]["admissionChecks"].empty()) next["status"].erase("admissionChecks");
      update(k.workloads, wl, next, WritePart::kStatus);
      return true;
    case KueueWorkloadStep::kSyncAdmitted:
      kueue_sync_admitted_condition(next, now_text);
      apply_admission_status(k.workloads, wl, next);
      return true;
    case KueueWorkloadStep::kSetDeactivationTarget:
      kueue_set_condition(next,
                          {{"type", "DeactivationTarget"},
                           {"status", "True"},
                           {"reason", "AdmissionCheck"},
                           {"message", kueue_checks_message(wl, "Rejected")}},
                          now_text);
      apply_admission_status(k.workloads, wl, next);
      return true;
    case KueueWorkloadStep::kEvictForRetry:
      kueue_prepare_for_eviction(next, "AdmissionCheck",
                                 "Evicted due to " + kueue_checks_message(wl, "Retry"), now_text);
      apply_admission_status(k.workloads, wl, next);
      return true;
  }
  return false;
}

bool KueueController::schedule(const Kinds& k, const Snapshot& s, TimePoint now) {
  json flavors = json::object();
  for (const auto& [name, flavor] : s.flavors) flavors[name] = flavor;
  for (const auto& wl : s.workloads) {
    if (is_deleting(wl) || !kueue_is_active(wl) || kueue_is_finished(wl) ||
        kueue_has_quota_reservation(wl))
      continue;
    const json& requeued = kueue_condition(wl, "Requeued");
    if (requeued.is_object() && str(at(requeued, "status")) == "False") continue;  // backoff
    const auto requeue_at =
        parse_rfc3339(str(at(at(at(wl, "status"), "requeueState"), "requeueAt")));
    if (requeue_at && *requeue_at > now) continue;
    const json* cq = cluster_queue_of(s, wl);
    if (cq == nullptr || !cluster_queue_active(*cq, s.checks)) continue;
    const KueueQuotaDecision decision =
        kueue_reserve_quota(wl, *cq, flavors, kueue_cluster_queue_usage(s.workloads, name_of(*cq)));
    if (decision.admission.is_null()) continue;  // upstream: QuotaReserved=False Pending
    json next = wl;
    const std::string now_text = format_rfc3339(now);
    kueue_set_quota_reservation(next, decision.admission, now_text);
    // scheduler.go: admitted at once when the entries of every required check are there.
    const auto required = kueue_cluster_queue_checks(*cq, next);
    if (!kueue_synced_check_entries(next, required, now_text))
      kueue_sync_admitted_condition(next, now_text);
    apply_admission_status(k.workloads, wl, next);
    return true;  // one admission per pass: the next sees its usage
  }
  return false;
}

void KueueController::create_workload(const ResourceInfo& r, json workload) {
  const std::string name = name_of(workload), ns = namespace_of(workload);
  apply_schema(r, name, workload);
  workload = track_update(nullptr, std::move(workload), kKueueUpdateManager,
                          managed_fields_context(r, ""));
  try {
    store_.create(r, ns, std::move(workload));
  } catch (const ApiError& e) {
    if (e.code() != 409) throw;  // already there: the next pass finds it
  }
}

void KueueController::apply_admission_status(const ResourceInfo& r, const json& read,
                                             const json& changed) {
  const json config = kueue_admission_status_apply(changed);
  const std::string name = name_of(read);
  store_.mutate(r, namespace_of(read), name, WritePart::kStatus, [&](const json& current) {
    // The apply's uid and resourceVersion are preconditions (patch.go).
    if (uid_of(current) != uid_of(read)) throw not_found(r, name);
    if (str(at(at(current, "metadata"), "resourceVersion")) !=
        str(at(at(read, "metadata"), "resourceVersion")))
      throw conflict(r, name);
    json next = apply_configuration(current, config, kKueueAdmissionManager, /*force=*/true,
                                    managed_fields_context(r, "status"));
    apply_schema(r, name, next);
    return next;
  });
}

void KueueController::update(const ResourceInfo& r, const json& read, const json& changed,
                             WritePart part) {
  const std::string name = name_of(read);
  store_.mutate(r, namespace_of(read), name, part, [&](const json& current) {
    // A PUT of the object as read: 409 when it changed since.
    if (uid_of(current) != uid_of(read)) throw not_found(r, name);
    if (str(at(at(current, "metadata"), "resourceVersion")) !=
        str(at(at(read, "metadata"), "resourceVersion")))
      throw conflict(r, name);
    json next = track_update(current, changed, kKueueUpdateManager,
                             managed_fields_context(r, part == WritePart::kStatus ? "status" : ""));
    apply_schema(r, name, next);
    return next;
  });
}

}  // namespace commgate::sim
