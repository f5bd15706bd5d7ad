// The reconcile's decide step: follow a decision record that holds, decide a gated job
// (once; a job that waits for its pool's measurement goes on to the wait step), and write
// a decision as ONE merge patch of the TrainingJob.
#include <utility>

#include "core/decision_record.h"
#include "kube/api_error.h"
#include "operator/reconcile_context.h"

namespace commgate::op {

using kube::Action;
using kube::ApiError;
using kube::ReconcileError;
using kube::ReconcileResult;
using nlohmann::json;
using namespace detail;

// ----- follow a decision that holds ------------------------------------------------------

ReconcileResult TrainingJobReconciler::follow_record(Context& ctx, const DecisionRecord& record) {
  const json& observed = ctx.status.value("observedGeneration", json());
  const bool status_of_older_spec =
      !observed.is_number_integer() || observed.get<int64_t>() != generation_of(ctx.object);
  // A spec change the running workload does not follow keeps the decision shown: the
  // workload runs under it, whatever a newer measurement would say of the spec now.
  if (!ctx.status.value("decision", json()).is_object() ||
      (status_of_older_spec && !ctx.spec_change_not_applied)) {
    // Decided before the operator saw the job, or this spec (by the webhook, again after
    // an edit, perhaps to the same action and count): show that decision, with its
    // predictions when deciding the request again agrees with the record.
    TrainingJob as_requested = ctx.job;
    as_requested.spec.num_nodes = record.requested_nodes;
    std::swap(ctx.job, as_requested);
    const JobDecision jd = decide_now(ctx);
    std::swap(ctx.job, as_requested);
    if (jd.policy && jd.decision.action == record.action &&
        jd.decision.admitted_nodes == record.admitted_nodes) {
      put_decision(ctx.status, jd.decision, jd.measurement ? &*jd.measurement : nullptr,
                   ctx.to_count);
    } else {
      put_decision(ctx.status, decision_of_record(record), nullptr, ctx.to_count);
    }
  }
  const std::string message = ctx.status["decision"].value("message", record.message);
  if (record.action == commgate::Action::kDeny) {
    ctx.set_phase(phase::kRejected);
    ctx.status["admittedNodes"] = 0;
    ctx.condition(condition::kAdmitted, kFalse, record.reason, message);
    sync_status(ctx);
    return Action::await_change();
  }
  ctx.condition(condition::kAdmitted, kTrue, record.reason, message);
  return launch_and_sync(ctx, record);
}

// ----- gated: decide once -----------------------------------------------------------------

ReconcileResult TrainingJobReconciler::decide_gated(Context& ctx, const std::string& gate_reason) {
  enter(ctx, Step::kDecide);
  // Written by operators before the measurement controller (issue #21): the pool's
  // CommProfile keeps the probe's attempts now.
  ctx.status.erase("probeAttempts");
  ctx.status.erase("nextProbeTime");
  // A new spec (a new generation since the status was written) is not failed for good.
  const json& observed = ctx.status.value("observedGeneration", json());
  if (observed.is_number_integer() && observed.get<int64_t>() != generation_of(ctx.object))
    remove_condition(ctx.status["conditions"], condition::kFailed);
  const JobDecision jd = decide_now(ctx);
  if (!jd.policy) {
    const char* why = jd.policy_invalid ? op_reason::kPolicyInvalid : op_reason::kPolicyNotFound;
    // The Event once per message: the status write brings the job back to this step.
    if (ctx.condition(condition::kAdmitted, kFalse, why, jd.policy_error) && jd.policy_invalid)
      event(ctx, "Warning", why, "Decide", jd.policy_error);
    sync_status(ctx);
    return ReconcileError::terminal(jd.policy_error);
  }
  if (jd.decision.action != commgate::Action::kGate) return apply_decision(ctx, jd);

  if (gate_reason != jd.decision.reason) {
    // No webhook gated it (or the spec changed without one), or it waits for something
    // else now (measured, but the pool is too small): the operator records its own gate,
    // so the reason annotation (kubectl's REASON column) and the Events follow.
    patch_decision(ctx, jd, record_for(ctx, jd));
    if (jd.decision.reason != reason::kNamespaceUnknown)
      event(ctx, "Normal", "Gated", "Decide",
            decision_event_note(jd.decision, *jd.policy, nullptr));
  }
  const bool measurement_gate = is_measurement_gate(jd.decision.reason);
  const bool namespace_unknown = jd.decision.reason == reason::kNamespaceUnknown;
  put_decision(ctx.status, jd.decision,
               jd.measurement && !namespace_unknown ? &*jd.measurement : nullptr, ctx.to_count);
  ctx.status.erase("admittedNodes");
  if (measurement_gate &&
      condition_is(ctx.status.value("conditions", json::array()), condition::kFailed, kTrue)) {
    // Failed for good: until the spec changes, with the Admitted condition fail_for_good
    // wrote (why no probe can measure the pool), not the gate's "no measurement yet".
    ctx.set_phase(phase::kFailed);
    sync_status(ctx);
    return Action::await_change();
  }
  ctx.condition(condition::kAdmitted, kFalse, jd.decision.reason, jd.decision.message);
  if (namespace_unknown) {
    // Not a matter of measurement: nothing to probe. The namespace's arrival in the cache
    // brings the job back (it is a decision input); the requeue is for a cache that never
    // shows it.
    ctx.set_phase(phase::kGated);
    sync_status(ctx);
    return Action::requeue_after(std::chrono::seconds(10));
  }
  if (!measurement_gate) {
    // Measured, and held for the pool's size: the probe the job waited on is done (the
    // trial of 2026-12-05 saw Probed stay ProbeRunning).
    if (jd.decision.reason == reason::kPoolTooSmall) settle_probed(ctx, jd);
    ctx.set_phase(phase::kGated);
    sync_status(ctx);
    return Action::await_change();
  }
  if (auto why = beyond_probe_reach(ctx.job, jd))
    return fail_for_good(ctx, jd.decision.reason, *why);
  return wait_for_measurement(ctx, jd);
}

// ----- decide ---------------------------------------------------------------------------

DecisionRecord TrainingJobReconciler::record_for(const Context& ctx, const JobDecision& jd) const {
  DecisionRecord record = record_of(jd, ctx.job, ctx.now);
  // A gate keeps who asked, for the decision that lifts it.
  if (record.action == commgate::Action::kGate && !ctx.requester.username.empty())
    record.requester = ctx.requester;
  if (settings_.records) settings_.records->sign(record, record_subject(ctx.job.metadata));
  return record;
}

void TrainingJobReconciler::patch_decision(Context& ctx, const JobDecision& jd,
                                           const DecisionRecord& record) {
  json annotations = json::object();
  for (const auto& [key, value] : decision_annotations(record)) annotations[key] = value;
  json spec = {{"suspend", !admits(record.action)}};
  if (record.action == commgate::Action::kDownsize) spec["numNodes"] = record.admitted_nodes;
  const json patch = {{"metadata",
                       {{"resourceVersion", meta_string(ctx.object, "resourceVersion")},
                        {"annotations", annotations}}},
                      {"spec", spec}};
  const int64_t before = generation_of(ctx.object);
  try {
    ctx.object = writer_.patch(ctx.path, kube::PatchType::kMerge, patch);
  } catch (const ApiError& e) {
    if (e.not_found()) throw JobGone{};
    throw;
  }
  remember_write(ctx);
  ctx.job = parse_training_job(ctx.object, ObjectSource::kStored);
  // Conditions computed for the spec before this patch hold for the patched one: the
  // patch is this decision's own.
  const int64_t after = generation_of(ctx.object);
  if (ctx.status.contains("conditions") && ctx.status["conditions"].is_array()) {
    for (json& c : ctx.status["conditions"]) {
      if (c.is_object() && c.value("observedGeneration", json()) == json(before))
        c["observedGeneration"] = after;
    }
  }
  count("commgate_operator_decisions_total", "action", commgate::to_string(jd.decision.action));
  const commgate::Decision& d = jd.decision;
  ctx.log.info(
      std::string("decided ") + commgate::to_string(d.action) + " (" + d.reason + "): " + d.message,
      {{"action", commgate::to_string(d.action)},
       {"reason", d.reason},
       {"requestedNodes", std::to_string(d.requested_nodes)},
       {"admittedNodes", std::to_string(d.admitted_nodes)},
       {"policy", d.policy_name}});
}

ReconcileResult TrainingJobReconciler::apply_decision(Context& ctx, const JobDecision& jd) {
  // Still the decide step (decide_gated entered it): counted once per reconcile.
  const Decision& d = jd.decision;
  const DecisionRecord record = record_for(ctx, jd);
  patch_decision(ctx, jd, record);
  const Measurement* m = jd.measurement ? &*jd.measurement : nullptr;
  const std::string note = decision_event_note(d, *jd.policy, m);
  switch (d.action) {
    case commgate::Action::kAdmit:
      event(ctx, "Normal", "Admitted", "Decide", note);
      break;
    case commgate::Action::kDownsize:
      event(ctx, "Normal", "Downsized", "Decide", note);
      break;
    case commgate::Action::kWarn:
      event(ctx, "Warning", "AdmittedOverPolicy", "Decide", note);
      break;
    case commgate::Action::kDeny:
      event(ctx, "Warning", "Denied", "Decide", note);
      break;
    case commgate::Action::kGate:
      event(ctx, "Normal", "Gated", "Decide", note);
      break;
  }
  put_decision(ctx.status, d, m, ctx.to_count);
  settle_probed(ctx, jd);
  ctx.status.erase("nextProbeTime");
  if (d.action == commgate::Action::kDeny) {
    ctx.set_phase(phase::kRejected);
    ctx.status["admittedNodes"] = 0;
    ctx.condition(condition::kAdmitted, kFalse, d.reason, d.message);
    sync_status(ctx);
    return Action::await_change();
  }
  ctx.condition(condition::kAdmitted, kTrue, d.reason, d.message);
  return launch_and_sync(ctx, record);
}

}  // namespace commgate::op
