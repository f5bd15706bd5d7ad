// The Kueue stand-in's Workload status rules (sim/kueue_controller.h): conditions, the
// admission check entries, admission, eviction, deactivation and requeueing, and the
// configuration of Kueue's forced status applies. Pure functions over the Workload JSON.
//
// Modelled on kubernetes-sigs/kueue v0.19.2 (feature gates at their defaults):
// - pkg/controller/core/workload_controller.go: Reconcile's order (a DeactivationTarget
//   turns spec.active false with an Update; an inactive workload is evicted with reason
//   "DeactivatedDueTo<cause>"; requeueState.requeueAt from the Retry entries'
//   requeueAfterSeconds; the check entries synced with a plain status Update;
//   SyncAdmittedCondition; reconcileCheckBasedEviction: Rejected -> DeactivationTarget
//   reason AdmissionCheck, Retry -> evicted with reason AdmissionCheck; after the backoff
//   Requeued=True reason BackoffFinished; an active workload whose Requeued=False reason is
//   exactly "Deactivated" -> Requeued=True reason "Reactivated", "The workload was
//   reactivated", which queues it again), syncAdmissionCheckConditions,
//   buildAdmissionChecksMessage. That Requeued switch compares the reason whole: a
//   workload deactivated by Kueue (reason "DeactivatedDueTo<cause>", such as
//   DeactivatedDueToAdmissionCheck after a Rejected check) keeps Requeued=False when
//   reactivated and is never queued again (kubernetes-sigs/kueue#14870, fixed by #14874
//   after v0.19.2);
// - pkg/workload/admissionchecks.go: SyncAdmittedCondition, HasAllChecksReady,
//   GetMaxRetryTime, NeedsRequeueAtUpdate;
// - pkg/workload/workload.go: AdmissionChecksForWorkload (admissionChecksStrategy, with
//   onFlavors), SetQuotaReservation (resetting Evicted/Preempted), UnsetQuotaReservation-
//   WithCondition, SetRequeuedCondition, SetDeactivationTarget, SetRequeueState;
// - pkg/workload/evict/evict.go: prepareForEviction (Evicted condition,
//   resetChecksOnEviction: every entry not Pending reset to Pending with "Reset to Pending
//   after eviction. Previously: <state>", retryCount + 1 for a Retry entry,
//   requeueAfterSeconds kept);
// - pkg/workload/patching/patching.go: PatchAdmissionStatus's configuration (uid, name,
//   namespace, resourceVersion, labels, annotations; status.admission, requeueState,
//   the admission-managed conditions, every admission check entry whole), applied with
//   force as field manager "kueue-admission";
// - k8s.io/apimachinery meta.SetStatusCondition (lastTransitionTime moves only when the
//   status changes).
// - pkg/controller/jobframework/reconciler.go recordAdmissionCheckUpdate and
//   pkg/util/api/api.go TruncateEventMessage (the UpdatedAdmissionCheck Event's note; the
//   controller records the Events);
// - SyncAdmittedCondition's wait for delayed topology requests (sim/kueue_tas.h).
// Shortcuts (docs/testing.md): no metrics, no finalizers
// (kueue.x-k8s.io/resource-in-use), no PodsReady / waitForPodsReady, no
// maximumExecutionTime, no preemption gates, no MultiKueue cluster nomination, no
// requeuingStrategy backoff of its own (only the entries' requeueAfterSeconds).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "core/time_format.h"

namespace commgate::sim {

inline constexpr const char* kKueueAdmissionManager = "kueue-admission";
// The manager of Kueue's plain Updates: its User-Agent is "kueue/<version> (...)".
inline constexpr const char* kKueueUpdateManager = "kueue";

// apimeta.FindStatusCondition on status.conditions; null when absent.
const nlohmann::json& kueue_condition(const nlohmann::json& workload, const std::string& type);
// apimeta.SetStatusCondition: `condition` has type, status, reason, message; its
// lastTransitionTime is `now` when new or when the status changes, and observedGeneration
// the workload's generation. Returns whether anything changed.
bool kueue_set_condition(nlohmann::json& workload, nlohmann::json condition,
                         const std::string& now);
bool kueue_remove_condition(nlohmann::json& workload, const std::string& type);

bool kueue_has_quota_reservation(const nlohmann::json& workload);
bool kueue_is_admitted(const nlohmann::json& workload);
bool kueue_is_evicted(const nlohmann::json& workload);
bool kueue_is_active(const nlohmann::json& workload);  // spec.active absent or true
bool kueue_is_finished(const nlohmann::json& workload);

// The AdmissionChecks a ClusterQueue asks of a workload (AdmissionChecksForWorkload):
// spec.admissionChecksStrategy.admissionChecks[] whose onFlavors is empty or names a
// flavor of the workload's admission.
std::set<std::string> kueue_cluster_queue_checks(const nlohmann::json& cluster_queue,
                                                 const nlohmann::json& workload);

// syncAdmissionCheckConditions: the entries with a Pending one added for each missing
// check, those of checks no longer asked removed, sorted by name; nullopt when unchanged.
std::optional<nlohmann::json> kueue_synced_check_entries(const nlohmann::json& workload,
                                                         const std::set<std::string>& checks,
                                                         const std::string& now);

// buildAdmissionChecksMessage for the entries in `state`.
std::string kueue_checks_message(const nlohmann::json& workload, const std::string& state);

// jobframework/reconciler.go recordAdmissionCheckUpdate: "<check>: <message>" of each
// Pending entry with a message, in status order, joined with "; " ("" when none),
// truncated as api.TruncateEventMessage does (1024 bytes, " ..." at the end).
std::string kueue_pending_checks_note(const nlohmann::json& workload);
std::string kueue_truncate_event_message(const std::string& message);

// GetMaxRetryTime: the latest lastTransitionTime + requeueAfterSeconds of the Retry entries.
std::optional<TimePoint> kueue_max_retry_time(const nlohmann::json& workload);

// The status changes, each returning whether anything changed.
bool kueue_sync_admitted_condition(nlohmann::json& workload, const std::string& now);
bool kueue_set_quota_reservation(nlohmann::json& workload, const nlohmann::json& admission,
                                 const std::string& now);
bool kueue_unset_quota_reservation(nlohmann::json& workload, const std::string& reason,
                                   const std::string& message, const std::string& now);
void kueue_prepare_for_eviction(nlohmann::json& workload, const std::string& reason,
                                const std::string& message, const std::string& now);
bool kueue_set_requeue_at(nlohmann::json& workload, const std::string& requeue_at);

// What the workload controller does next to `workload` (one step per pass: each write
// brings the next pass, as a reconcile does after its own write).
enum class KueueWorkloadStep {
  kNone,
  kDeactivate,             // Update spec.active=false (DeactivationTarget was set)
  kEvictDeactivated,       // evict with reason DeactivatedDueTo<cause>
  kSetRequeueAt,           // requeueState.requeueAt from a Retry entry
  kSyncChecks,             // status Update of the check entries
  kSyncAdmitted,           // the Admitted condition
  kSetDeactivationTarget,  // a Rejected entry
  kEvictForRetry,          // a Retry entry
  kBackoffFinished,        // Requeued=True BackoffFinished after requeueAt
  kReactivate,             // Requeued=True Reactivated: active again after "Deactivated"
};

// `checks`: what the workload's ClusterQueue asks (nullopt: no such ClusterQueue).
KueueWorkloadStep kueue_next_workload_step(const nlohmann::json& workload,
                                           const std::optional<std::set<std::string>>& checks,
                                           TimePoint now);

// The configuration of PatchAdmissionStatus for `workload` as changed in memory.
nlohmann::json kueue_admission_status_apply(const nlohmann::json& workload);

}  // namespace commgate::sim
