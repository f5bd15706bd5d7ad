// What commgate's admission check writes on a Workload: the next state of its own entry
// in status.admissionChecks[] from what the check found, and the server-side-apply body
// that writes it. Pure.
//
// What each state makes Kueue do (the reason for each mapping below):
//   Pending   Kueue waits, holding the quota (the probe runs on it); a Pending entry's
//             message becomes an Event on the job. Kueue has no timeout on Pending: the
//             wait for a probe is bounded (bound_pending_wait below, CommPolicy
//             spec.admissionCheck.maxPendingSeconds) and ends in kProbeFailed, hence Retry.
//   Retry     Kueue evicts the Workload, releases its quota, resets every check to Pending
//             and increments retryCount; requeueAfterSeconds delays the requeue (counted
//             from lastTransitionTime). On an admitted Workload that evicts a running job:
//             never written there.
//   Ready     with every other check Ready and the quota reserved, Kueue admits (the job
//             is unsuspended).
//   Rejected  Kueue evicts and deactivates the Workload (spec.active false).
//
// The write. Server-side apply on workloads/status with field manager kFieldManager and
// force: the body holds only our own entry, with the four fields the CRD requires (name,
// state, message, lastTransitionTime), and metadata.uid and metadata.resourceVersion as
// preconditions (a 409 when the Workload changed or was re-created since it was read).
// Never retryCount: Kueue owns it. Kueue's own forced applies as kueue-admission write
// every entry, ours included, so it co-owns our fields: leaving a field out of our apply
// does not remove it, and an explicit null is the same as leaving it out (apply cannot
// unset a field; KEP-5051). A field to clear is therefore applied with its empty value:
// requeueAfterSeconds 0 (Kueue reads it only on a Retry entry) and podSetUpdates [].
//
// Models (kubernetes-sigs/kueue v0.19.2):
//   apis/kueue/v1beta2/workload_types.go  AdmissionCheckState (field names, message at
//     most 32768 bytes, requeueAfterSeconds >= 0, retryCount);
//   apis/kueue/v1beta2/admissioncheck_types.go  CheckState and what each state means;
//   pkg/workload/patching/patching.go  SetAdmissionCheckState (lastTransitionTime kept
//     while the state is unchanged), PatchStatus (apply with ForceOwnership, uid and
//     resourceVersion in the applied object);
//   pkg/workload/evict/evict.go  resetChecksOnEviction (Retry -> Pending, retryCount + 1,
//     requeueAfterSeconds kept);
//   pkg/workload/admissionchecks.go  GetMaxRetryTime (requeueAfterSeconds read on Retry
//     entries only);
//   pkg/controller/admissionchecks/provisioning/controller.go  syncCheckStates (never Retry
//     on an admitted workload for an expired booking; the "updated state from X to Y"
//     Event), updateCheckMessage (an empty message is applied too);
//   pkg/controller/jobframework/reconciler.go  a Pending entry's message as a job Event.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/time_format.h"
#include "operator/kueue_workload.h"

namespace commgate::op::kueue {

// The spec.controllerName of commgate's AdmissionChecks, and the field manager of its
// writes to Workloads.
inline constexpr const char* kControllerName = "commgate.io/comm-check";
inline constexpr const char* kFieldManager = "commgate.io/comm-check";
// The most bytes of a check message the CRD accepts (AdmissionCheckState.message).
inline constexpr size_t kMaxCheckMessageBytes = 32768;

// What the check found for the Workload, in words the caller composed (the decision's
// numbers, the probe's progress, the annotation at fault).
struct CheckOutcome {
  enum class Kind {
    kProbePending,     // the pool's probe is needed or running          -> Pending
    kProbeFailed,      // it failed, or the wait for it is over          -> Retry
    kWithinPolicy,     // the predicted share meets the policy           -> Ready
    kOverPolicy,       // it does not at the requested count             -> Rejected
    kBadAnnotations,   // the model annotations do not parse             -> Pending
    kNoModel,          // the job names no model, and the policy admits  -> Ready
    kNoModelRejected,  // the job names no model, and the policy asks for one -> Rejected
    kCannotCheck,      // the job cannot be checked as it is (pods on mixed pools) -> Rejected
  };
  Kind kind = Kind::kProbePending;
  std::string message;
  // kProbeFailed: the least wait before Kueue requeues (requeueAfterSeconds).
  std::chrono::seconds retry_after{0};
  // kOverPolicy: the largest node count that passes (0: none does). Said in the message
  // when the caller's message does not already say it.
  int64_t largest_passing_nodes = 0;
  // kProbePending: the pool whose probe the Workload waits for; "" when it waits for
  // something else (a policy to apply, the pool's nodes), which bound_pending_wait leaves.
  std::string pool{};
};

// The state an outcome of `kind` writes (the arrows above).
CheckState check_state_for(CheckOutcome::Kind kind);

// The bound on a Pending wait for a probe: CommPolicy spec.admissionCheck.maxPendingSeconds.
struct PendingBound {
  std::chrono::seconds max_pending{0};
  std::chrono::seconds retry_after{0};  // the Retry's requeueAfterSeconds
  // The field that set it, for the message: "spec.admissionCheck.maxPendingSeconds of
  // CommPolicy team".
  std::string set_by;
};

// When our entry's wait began: the later of its lastTransitionTime (kept while it stays
// Pending) and `quota_reserved_at` (the Workload's QuotaReserved condition): Kueue's reset
// to Pending after an eviction, and the entry it adds to a new Workload, date from before
// the Workload queued for its quota, and only the time it holds quota counts. nullopt when
// the entry is not Pending or has no time.
std::optional<TimePoint> pending_wait_since(const AdmissionCheckState& current,
                                            std::optional<TimePoint> quota_reserved_at);

struct BoundedOutcome {
  CheckOutcome outcome;
  // How long the wait may still last (> 0); nullopt when it is not bounded or is over.
  std::optional<std::chrono::nanoseconds> wait_left = std::nullopt;
};

// `outcome` with the wait bounded: a kProbePending for a pool (outcome.pool set) whose wait
// began at `since` at least bound.max_pending before `now` becomes kProbeFailed (Retry after
// bound.retry_after), its message saying how long it waited (whole minutes), for which
// pool, the probe's progress (the Pending message) and the field that set the bound; one
// still within the bound is returned with the time left. Anything else as it is. On an
// admitted Workload next_check_state still holds the Retry back.
BoundedOutcome bound_pending_wait(const CheckOutcome& outcome, std::optional<TimePoint> since,
                                  const PendingBound& bound, TimePoint now);

// Our entry after `outcome`, from `current` (our entry as read; a Workload may have been
// given it by Kueue without a time). The state as the table above; on an `admitted`
// Workload a kProbeFailed stays Pending (Retry would evict the running job) and says so.
// lastTransitionTime is kept while the state is unchanged and is `now` otherwise;
// requeueAfterSeconds is set on Retry only; podSetUpdates become [] when `current` has any
// (commgate suggests none); retryCount is Kueue's (copied from `current`, never applied).
// The message is cut to kMaxCheckMessageBytes.
AdmissionCheckState next_check_state(const AdmissionCheckState& current,
                                     const CheckOutcome& outcome, bool admitted, TimePoint now);

// True when applying `next` over `current` changes anything we write.
bool check_state_changed(const AdmissionCheckState& current, const AdmissionCheckState& next);

// The server-side-apply body (application/apply-patch+yaml, sent as JSON) for
// workloads/status, as the header says: `workload`'s name, namespace, uid and
// resourceVersion, and `next` alone in status.admissionChecks; requeueAfterSeconds when
// `next` has one, else 0 when `current` has one; podSetUpdates [] when `current` has any.
nlohmann::json check_state_apply(const Workload& workload, const AdmissionCheckState& current,
                                 const AdmissionCheckState& next);

// The Event message for the Workload when the state changes, as Kueue's own check
// controllers word it ("Admission check comm updated state from Pending to Ready with
// message: ..."); nullopt when it does not change.
std::optional<std::string> check_state_event(const AdmissionCheckState& current,
                                             const AdmissionCheckState& next);

}  // namespace commgate::op::kueue
