#include "operator/kueue_check_state.h"

#include <algorithm>
#include <limits>

#include "core/quantity.h"
#include "core/text_cut.h"

namespace commgate::op::kueue {
namespace {

using Kind = CheckOutcome::Kind;

constexpr const char* kCheckNoModelMessage =
    "commgate did not check this job's communication share: it names no model. To have it "
    "checked, annotate the job with commgate.io/parameters (the gradient element count, "
    "e.g. 350M) and optionally commgate.io/gradient-dtype, commgate.io/batch-size and "
    "commgate.io/optimizer.";

std::string check_message(const CheckOutcome& outcome, bool held_back) {
  std::string message = outcome.message;
  if (outcome.kind == Kind::kNoModel && message.empty()) message = kCheckNoModelMessage;
  if (outcome.kind == Kind::kOverPolicy && message.find("largest") == std::string::npos) {
    const std::string largest = outcome.largest_passing_nodes > 0
                                    ? "The largest count that passes is " +
                                          format_nodes(outcome.largest_passing_nodes) + "."
                                    : "No node count passes.";
    message += (message.empty() ? "" : " ") + largest;
  }
  if (held_back)
    message += std::string(message.empty() ? "" : " ") +
               "(Not retried: the workload is admitted, and a Retry would evict it.)";
  return utf8_prefix(message, kMaxCheckMessageBytes - 3);
}

}  // namespace

CheckState check_state_for(CheckOutcome::Kind kind) {
  switch (kind) {
    case CheckOutcome::Kind::kProbePending:
    case CheckOutcome::Kind::kBadAnnotations:
      return CheckState::kPending;
    case CheckOutcome::Kind::kProbeFailed:
      return CheckState::kRetry;
    case CheckOutcome::Kind::kWithinPolicy:
    case CheckOutcome::Kind::kNoModel:
      return CheckState::kReady;
    case CheckOutcome::Kind::kOverPolicy:
    case CheckOutcome::Kind::kNoModelRejected:
    case CheckOutcome::Kind::kCannotCheck:
      return CheckState::kRejected;
  }
  return CheckState::kPending;
}

std::optional<TimePoint> pending_wait_since(const AdmissionCheckState& current,
                                            std::optional<TimePoint> quota_reserved_at) {
  if (current.state != CheckState::kPending || !current.last_transition_time) return std::nullopt;
  return std::max(*current.last_transition_time, quota_reserved_at.value_or(TimePoint{}));
}

BoundedOutcome bound_pending_wait(const CheckOutcome& outcome, std::optional<TimePoint> since,
                                  const PendingBound& bound, TimePoint now) {
  if (outcome.kind != Kind::kProbePending || outcome.pool.empty() || !since)
    return {.outcome = outcome};
  const auto waited = now - *since;
  if (waited < bound.max_pending)
    return {.outcome = outcome, .wait_left = bound.max_pending - waited};
  // Whole minutes (the bound is at least one): the message of a Retry held back on an
  // admitted Workload changes once a minute, not at each look.
  const auto minutes = std::chrono::floor<std::chrono::minutes>(waited);
  CheckOutcome out = outcome;
  out.kind = Kind::kProbeFailed;
  out.retry_after = bound.retry_after;
  out.message = "commgate waited " + format_duration(minutes) + " for the measurement of pool " +
                outcome.pool + ", longer than " + format_duration(bound.max_pending) + " (" +
                bound.set_by + "), and releases the workload's quota until it is queued again" +
                (outcome.message.empty() ? "." : ". Waiting for: " + outcome.message);
  return {.outcome = std::move(out)};
}

AdmissionCheckState next_check_state(const AdmissionCheckState& current,
                                     const CheckOutcome& outcome, bool admitted, TimePoint now) {
  AdmissionCheckState next = current;
  CheckState state = check_state_for(outcome.kind);
  const bool held_back = state == CheckState::kRetry && admitted;
  if (held_back) state = CheckState::kPending;
  next.state = state;
  next.message = check_message(outcome, held_back);
  if (state != current.state || !current.last_transition_time) next.last_transition_time = now;
  if (!current.pod_set_updates.is_null() && !current.pod_set_updates.empty())
    next.pod_set_updates = nlohmann::json::array();
  next.requeue_after_seconds = std::nullopt;
  if (state == CheckState::kRetry)
    next.requeue_after_seconds =
        std::clamp<int64_t>(outcome.retry_after.count(), 0, std::numeric_limits<int32_t>::max());
  return next;
}

bool check_state_changed(const AdmissionCheckState& current, const AdmissionCheckState& next) {
  const bool clears_requeue = !next.requeue_after_seconds && current.requeue_after_seconds &&
                              *current.requeue_after_seconds != 0;
  const bool clears_updates =
      !current.pod_set_updates.is_null() && !current.pod_set_updates.empty();
  return current.state != next.state || current.message != next.message ||
         current.last_transition_time != next.last_transition_time ||
         (next.requeue_after_seconds &&
          current.requeue_after_seconds != next.requeue_after_seconds) ||
         clears_requeue || clears_updates;
}

nlohmann::json check_state_apply(const Workload& wl, const AdmissionCheckState& current,
                                 const AdmissionCheckState& next) {
  nlohmann::json entry = {
      {"name", next.name},
      {"state", to_string(next.state)},
      {"message", next.message},
      {"lastTransitionTime", format_rfc3339(next.last_transition_time.value_or(TimePoint{}))},
  };
  if (next.requeue_after_seconds)
    entry["requeueAfterSeconds"] = *next.requeue_after_seconds;
  else if (current.requeue_after_seconds)
    entry["requeueAfterSeconds"] = 0;
  if (!current.pod_set_updates.is_null() && !current.pod_set_updates.empty())
    entry["podSetUpdates"] = nlohmann::json::array();
  return {
      {"apiVersion", kApiVersion},
      {"kind", kWorkloadKind},
      {"metadata",
       {{"name", wl.metadata.name},
        {"namespace", wl.metadata.namespace_},
        {"uid", wl.metadata.uid},
        {"resourceVersion", wl.metadata.resource_version}}},
      {"status", {{"admissionChecks", nlohmann::json::array({std::move(entry)})}}},
  };
}

std::optional<std::string> check_state_event(const AdmissionCheckState& current,
                                             const AdmissionCheckState& next) {
  if (current.state == next.state) return std::nullopt;
  std::string message = "Admission check " + next.name + " updated state from " +
                        to_string(current.state) + " to " + to_string(next.state);
  if (!next.message.empty()) message += " with message: " + next.message;
  return message;
}

}  // namespace commgate::op::kueue
