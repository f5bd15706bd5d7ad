#include "sim/kueue_controller.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "sim/api_status.h"
#include "sim/crd_schema.h"
#include "sim/garbage_collection.h"
#include "sim/json_fields.h"
#include "sim/kueue_admission.h"
#include "sim/kueue_queue_status.h"
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

// The reporting controllers of Kueue's recorders (controller-runtime GetEventRecorder
// names): the scheduler's, the workload controller's, and each job integration's
// ("<group>/<kind>-kueue-controller", jobframework/setup.go).
constexpr const char* kKueueSchedulerRecorder = "kueue-admission";
constexpr const char* kKueueWorkloadRecorder = "kueue-workload-controller";
std::string kueue_job_recorder(const KueueJobKind& kind) {
  std::string lower = kind.kind;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return kind.group + "/" + lower + "-kueue-controller";
}

// metav1.MicroTime as it marshals: "2026-12-07T01:30:11.123456Z".
std::string kueue_micro_time(TimePoint t) {
  const std::string seconds = format_rfc3339(t);  // ends in "Z"
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count() % 1000000;
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>(micros));
  return seconds.substr(0, seconds.size() - 1) + frac + "Z";
}

// Seconds since an RFC 3339 time (0 when absent), as Go's %.0f prints them.
std::string kueue_seconds_since(const std::string& since, TimePoint now) {
  const auto t = parse_rfc3339(since);
  const double s = t ? std::chrono::duration<double>(now - *t).count() : 0.0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0fs", std::max(s, 0.0));
  return buf;
}

// The Admitted event's note once every check is Ready (workload_controller.go).
std::string kueue_admitted_note(const json& wl, TimePoint now) {
  return "Admitted by ClusterQueue " + str(at(at(at(wl, "status"), "admission"), "clusterQueue")) +
         ", wait time since reservation was " +
         kueue_seconds_since(str(at(kueue_condition(wl, "QuotaReserved"), "lastTransitionTime")),
                             now);
}

}  // namespace

KueueController::KueueController(ObjectStore& store)
    : store_(store),
      jobs_(*store.find_resource("batch", "v1", "jobs")),
      nodes_(*store.find_resource("", "v1", "nodes")),
      pods_(*store.find_resource("", "v1", "pods")),
      events_(*store.find_resource("events.k8s.io", "v1", "events")),
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
  try {
    if (sync_queue_status(*k, s, Clock::now())) {
      wrote = true;
      s = snapshot(*k);
    }
  } catch (const ApiError&) {
  }
  std::set<std::string> jobs_seen;
  for (const auto& kind : kueue_job_kinds()) {
    const auto jobs = store_.find_resource(kind.group, kind.version, kind.plural);
    if (!jobs) continue;
    for (const auto& job : store_.list(*jobs, "", {}).items) {
      if (str(at(at(at(job, "metadata"), "labels"), kKueueQueueNameLabel)).empty()) continue;
      jobs_seen.insert(uid_of(job));
      try {
        wrote = reconcile_job(*k, s, kind, *jobs, job) || wrote;
      } catch (const ApiError&) {
        // Changed meanwhile (a 409 on the version read): the next pass reads it again.
      }
    }
  }
  std::erase_if(job_reconciled_, [&](const auto& e) { return jobs_seen.count(e.first) == 0; });
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
    wrote = schedule_second_pass(*k, s, now) || schedule(*k, s, now) || wrote;
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
    // A TrainJob's pod sets come from its runtime; none yet: retried on a later pass.
    const auto source = kueue_pod_set_source(store_, kind, job);
    if (!source) return false;
    const json created = kueue_workload_for_job(kind, job, *source);
    if (create_workload(k.workloads, created))
      record_event(job, "Normal", "CreatedWorkload",
                   "Created Workload: " + namespace_of(created) + "/" + name_of(created),
                   kueue_job_recorder(kind));
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
    record_event(
        job, "Normal", "Started",
        "Admitted by clusterQueue " + str(at(at(at(wl, "status"), "admission"), "clusterQueue")),
        kueue_job_recorder(kind));
    return true;
  }
  if (!suspended) {
    update(jobs, job, kueue_stopped_job(kind, job, wl), WritePart::kMain);
    return true;
  }
  // reconciler.go step 7: a suspended job whose Workload holds quota but is not admitted
  // yet copies the Pending checks' messages into an Event on the job, on every
  // reconcile (here: once per change of the job or its Workload, what triggers one).
  const std::string versions = str(at(at(job, "metadata"), "resourceVersion")) + "/" +
                               str(at(at(wl, "metadata"), "resourceVersion"));
  std::string& seen = job_reconciled_[uid_of(job)];
  if (seen != versions) {
    seen = versions;
    if (kueue_has_quota_reservation(wl)) {
      const std::string note = kueue_pending_checks_note(wl);
      if (!note.empty())
        record_event(job, "Normal", "UpdatedAdmissionCheck", note, kueue_job_recorder(kind));
    }
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
      // evict.go reportEvictedWorkload: "EvictedDueTo" + reason (its cause included).
      record_event(wl, "Normal", "EvictedDueTo" + reason, kueue_truncate_event_message(message),
                   kKueueWorkloadRecorder);
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
    case KueueWorkloadStep::kReactivate:
      // workload_controller.go Reconcile: SetRequeuedCondition(Reactivated, true) through
      // PatchAdmissionStatus. Nothing else changes: the Evicted condition stays True until
      // the scheduler reserves quota again (SetQuotaReservation turns it False), and the
      // check entries stay as the deactivating eviction reset them (Pending), so every
      // check is asked again once quota is reserved.
      kueue_set_condition(next,
                          {{"type", "Requeued"},
                           {"status", "True"},
                           {"reason", "Reactivated"},
                           {"message", "The workload was reactivated"}},
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
      if (kueue_is_admitted(next) && !kueue_is_admitted(wl))
        record_event(wl, "Normal", "Admitted", kueue_admitted_note(wl, now),
                     kKueueWorkloadRecorder);
      return true;
    case KueueWorkloadStep::kSetDeactivationTarget:
      kueue_set_condition(next,
                          {{"type", "DeactivationTarget"},
                           {"status", "True"},
                           {"reason", "AdmissionCheck"},
                           {"message", kueue_checks_message(wl, "Rejected")}},
                          now_text);
      apply_admission_status(k.workloads, wl, next);
      record_event(wl, "Warning", "AdmissionCheckRejected",
                   kueue_truncate_event_message("Deactivated due to " +
                                                kueue_checks_message(wl, "Rejected")),
                   kKueueWorkloadRecorder);
      return true;
    case KueueWorkloadStep::kEvictForRetry: {
      const std::string message = "Evicted due to " + kueue_checks_message(wl, "Retry");
      kueue_prepare_for_eviction(next, "AdmissionCheck", message, now_text);
      apply_admission_status(k.workloads, wl, next);
      record_event(wl, "Normal", "EvictedDueToAdmissionCheck",
                   kueue_truncate_event_message(message), kKueueWorkloadRecorder);
      return true;
    }
  }
  return false;
}

KueueTasCluster KueueController::tas_cluster(const Snapshot& s, const json& flavors) const {
  KueueTasCluster c;
  c.flavors = &flavors;
  c.checks = &s.checks;
  c.workloads = s.workloads;
  bool any_tas = false;
  for (const auto& [name, flavor] : s.flavors)
    any_tas = any_tas || at(at(flavor, "spec"), "topologyName").is_string();
  if (!any_tas) return c;  // no TAS flavor: nothing reads nodes or pods
  c.nodes = store_.list(nodes_, "", {}).items;
  c.pods = store_.list(pods_, "", {}).items;
  return c;
}

bool KueueController::schedule(const Kinds& k, const Snapshot& s, TimePoint now) {
  json flavors = json::object();
  for (const auto& [name, flavor] : s.flavors) flavors[name] = flavor;
  std::optional<KueueTasCluster> tas;  // listed on first need
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
    if (cq == nullptr || !kueue_cluster_queue_condition(*cq, flavors, s.checks).active) continue;
    KueueQuotaDecision decision =
        kueue_reserve_quota(wl, *cq, flavors, kueue_cluster_queue_usage(s.workloads, name_of(*cq)));
    if (decision.admission.is_null()) continue;  // upstream: QuotaReserved=False Pending
    if (!tas) tas = tas_cluster(s, flavors);
    if (!kueue_tas_assign(decision.admission, wl, *cq, *tas, /*second_pass=*/false).empty())
      continue;  // the topology does not fit: it stays pending, as upstream's does
    json next = wl;
    const std::string now_text = format_rfc3339(now);
    kueue_set_quota_reservation(next, decision.admission, now_text);
    // scheduler.go: admitted at once when the entries of every required check are there.
    const auto required = kueue_cluster_queue_checks(*cq, next);
    if (!kueue_synced_check_entries(next, required, now_text))
      kueue_sync_admitted_condition(next, now_text);
    apply_admission_status(k.workloads, wl, next);
    // scheduler.go recordQuotaReservationMetrics / recordWorkloadAdmissionEvents;
    // QueuedWaitTime counts from the last Requeued transition, else the creation.
    const std::string requeued_at = str(at(requeued, "lastTransitionTime"));
    const std::string queued =
        requeued_at.empty() ? str(at(at(wl, "metadata"), "creationTimestamp")) : requeued_at;
    record_event(wl, "Normal", "QuotaReserved",
                 kueue_truncate_event_message("Quota reserved in ClusterQueue " + name_of(*cq) +
                                              ", wait time since queued was " +
                                              kueue_seconds_since(queued, now)),
                 kKueueSchedulerRecorder);
    if (kueue_is_admitted(next))
      record_event(
          wl, "Normal", "Admitted",
          "Admitted by ClusterQueue " + name_of(*cq) + ", wait time since reservation was 0s",
          kKueueSchedulerRecorder);
    return true;  // one admission per pass: the next sees its usage
  }
  return false;
}

bool KueueController::schedule_second_pass(const Kinds& k, const Snapshot& s, TimePoint now) {
  json flavors = json::object();
  std::optional<KueueTasCluster> tas;
  for (const auto& wl : s.workloads) {
    if (is_deleting(wl) || !kueue_tas_needs_second_pass(wl)) continue;
    const json* cq = cluster_queue_of(s, wl);
    if (cq == nullptr) continue;
    if (!tas) {
      for (const auto& [name, flavor] : s.flavors) flavors[name] = flavor;
      tas = tas_cluster(s, flavors);
    }
    const json& held = wl["status"]["admission"];
    json admission = held;
    if (!kueue_tas_assign(admission, wl, *cq, *tas, /*second_pass=*/true).empty()) continue;
    if (admission == held) continue;  // still delayed (MultiKueue assigns on the worker)
    json next = wl;
    next["status"]["admission"] = admission;
    kueue_sync_admitted_condition(next, format_rfc3339(now));
    apply_admission_status(k.workloads, wl, next);
    if (kueue_is_admitted(next))
      record_event(wl, "Normal", "Admitted", kueue_admitted_note(wl, now), kKueueSchedulerRecorder);
    return true;
  }
  return false;
}

bool KueueController::sync_queue_status(const Kinds& k, const Snapshot& s, TimePoint now) {
  json flavors = json::object();
  for (const auto& [name, flavor] : s.flavors) flavors[name] = flavor;
  const std::string now_text = format_rfc3339(now);
  bool wrote = false;
  std::map<std::string, json> current = s.cluster_queues;  // as written in this pass
  for (const auto& [name, cq] : s.cluster_queues) {
    json next = cq;
    if (!kueue_set_condition(next, kueue_cluster_queue_condition(cq, flavors, s.checks).to_json(),
                             now_text))
      continue;
    try {
      update(k.cluster_queues, cq, next, WritePart::kStatus);
      current[name] = next;
      wrote = true;
    } catch (const ApiError&) {
      // Changed meanwhile: the next pass reads it again.
    }
  }
  for (const auto& [key, lq] : s.local_queues) {
    const auto cq = current.find(str(at(at(lq, "spec"), "clusterQueue")));
    json next = lq;
    const KueueQueueCondition condition =
        kueue_local_queue_condition(lq, cq == current.end() ? nullptr : &cq->second);
    if (!kueue_set_condition(next, condition.to_json(), now_text)) continue;
    try {
      update(k.local_queues, lq, next, WritePart::kStatus);
      wrote = true;
    } catch (const ApiError&) {
    }
  }
  return wrote;
}

void KueueController::record_event(const json& regarding, const std::string& type,
                                   const std::string& reason, const std::string& note,
                                   const std::string& controller) {
  const TimePoint now = Clock::now();
  std::erase_if(event_series_,
                [&](const auto& e) { return now - e.second.last > kKueueEventSeriesWindow; });
  const json& meta = at(regarding, "metadata");
  const std::string ns = str(at(meta, "namespace")), name = str(at(meta, "name"));
  // client-go's getKey: type, action, reason, controller and the regarding reference,
  // its resourceVersion included; not the note, so a repeat with another note counts in
  // the first Event's series and its note stays the first one's.
  const std::string key = str(at(meta, "uid")) + '\n' + str(at(meta, "resourceVersion")) + '\n' +
                          type + '\n' + reason + '\n' + controller;
  const std::string observed = kueue_micro_time(now);
  const auto found = event_series_.find(key);
  if (found != event_series_.end()) {
    EventSeries& series = found->second;
    ++series.count;
    series.last = now;
    try {
      store_.mutate(events_, series.ns, series.name, WritePart::kMain, [&](const json& current) {
        json next = current;
        next["series"] = {{"count", series.count}, {"lastObservedTime", observed}};
        return next;
      });
      return;
    } catch (const ApiError&) {
      event_series_.erase(found);  // deleted meanwhile: a new Event
    }
  }
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%llx",
                static_cast<unsigned long long>(now.time_since_epoch().count()));
  json ref = {{"apiVersion", str(at(regarding, "apiVersion"))},
              {"kind", str(at(regarding, "kind"))},
              {"name", name},
              {"uid", str(at(meta, "uid"))},
              {"resourceVersion", str(at(meta, "resourceVersion"))}};
  if (!ns.empty()) ref["namespace"] = ns;
  const std::string event_ns = ns.empty() ? "default" : ns;
  json event = {{"apiVersion", "events.k8s.io/v1"},
                {"kind", "Event"},
                {"metadata", {{"name", name + suffix}, {"namespace", event_ns}}},
                {"eventTime", observed},
                {"reportingController", controller},
                {"reportingInstance", controller + "-commgate-sim"},
                {"action", reason},
                {"reason", reason},
                {"type", type},
                {"note", note},
                {"regarding", ref}};
  try {
    store_.create(events_, event_ns, std::move(event));
    event_series_[key] = {event_ns, name + suffix, 1, now};
  } catch (const ApiError&) {
    // The namespace is going away: nobody reads the Event (client-go drops it too).
  }
}

bool KueueController::create_workload(const ResourceInfo& r, json workload) {
  const std::string name = name_of(workload), ns = namespace_of(workload);
  apply_schema(r, name, workload);
  workload = track_update(nullptr, std::move(workload), kKueueUpdateManager,
                          managed_fields_context(r, ""));
  try {
    store_.create(r, ns, std::move(workload));
    return true;
  } catch (const ApiError& e) {
    if (e.code() != 409) throw;  // already there: the next pass finds it
  }
  return false;
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
