// The reconcile's decide step (follow a decision record that holds, or decide once, and
// write a decision as ONE merge patch of the TrainingJob) and act step (what the verdict
// means for the job's status; a job that waits for its pool's measurement is told what the
// pool's probe does, reconcile_wait.cpp).
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

// ----- the decide step: follow a record that holds, or decide once ------------------------

TrainingJobReconciler::Verdict TrainingJobReconciler::decide(Context& ctx) {
  std::optional<DecisionRecord> record = decision_record_of(ctx.job);
  // Before the workload exists, a record commgate did not write is not followed: with a
  // key, one without a valid signature (written or copied past the webhook: a namespace
  // it does not see, or failurePolicy Ignore while it was down) is decided again. Once the
  // workload exists it was made under a record this operator trusted.
  if (record && !ctx.status.workload_created()) {
    if (const std::string why = record_distrust(*record, ctx.job, settings_.records.get());
        !why.empty()) {
      // Once: the decision that follows writes a signed record, which verifies.
      event(ctx, "Warning", op_reason::kRecordNotTrusted, "Decide",
            why + "; commgate decides the job again");
      record.reset();
    }
  }
  const auto verdict =
      record ? check_against_record(*record, ctx.job.spec) : RecordVerdict::kSpecChanged;
  ctx.requester = trusted_requester(record, verdict, settings_.records.get());
  // The decision-relevant spec changed after the training Job was created (the webhook
  // refuses that; without it, or with failurePolicy Ignore, it gets through): the Job's
  // pods and torchrun world size are fixed, so the change cannot be applied, and deciding
  // it again would show a decision (Gated, another count) the running Job does not follow.
  // Keep following the record, and say so.
  if (record && record->action != commgate::Action::kGate &&
      record->action != commgate::Action::kDeny &&
      (verdict == RecordVerdict::kSpecChanged ||
       verdict == RecordVerdict::kNodesDifferFromRecord) &&
      ctx.status.workload_created()) {
    // Only numNodes when the spec with the admitted count is the one recorded.
    std::vector<std::string> fields;
    if (decision_spec_hash(ctx.job.spec, record->admitted_nodes) == record->spec_hash)
      fields.push_back("spec.numNodes");
    const std::string message =
        spec_change_not_applied_message(record->admitted_nodes, ctx.status.phase, fields) +
        " (the change is not applied: the workload keeps the size commgate admitted)";
    if (ctx.condition(condition::kSpecApplied, kFalse, op_reason::kSpecChangeNotApplied, message))
      event(ctx, "Warning", op_reason::kSpecChangeNotApplied, "Decide", message);
    // Were the Job deleted by hand, it comes back at the admitted size.
    ctx.job.spec.num_nodes = record->admitted_nodes;
    ctx.spec_change_not_applied = true;
    return follow(ctx, *record);
  }
  ctx.status.conditions.remove(condition::kSpecApplied);
  if (record && record->action != commgate::Action::kGate &&
      (verdict == RecordVerdict::kHolds || verdict == RecordVerdict::kDenied))
    return follow(ctx, *record);
  return decide_once(
      ctx, record && record->action == commgate::Action::kGate && verdict == RecordVerdict::kHolds
               ? record->reason
               : std::string());
}

TrainingJobReconciler::Verdict TrainingJobReconciler::follow(Context& ctx,
                                                             const DecisionRecord& record) {
  Verdict v;
  v.kind = Verdict::Kind::kFollow;
  v.record = record;
  const bool status_of_older_spec = ctx.status.observed_generation != generation_of(ctx.object);
  // A spec change the running workload does not follow keeps the decision shown: the
  // workload runs under it, whatever a newer measurement would say of the spec now.
  v.show_decision = !ctx.status.decision || (status_of_older_spec && !ctx.spec_change_not_applied);
  if (v.show_decision) {
    // Decided before the operator saw the job, or this spec (by the webhook, again after
    // an edit, perhaps to the same action and count): the decision shown has its
    // predictions when deciding the request again agrees with the record.
    TrainingJob as_requested = ctx.job;
    as_requested.spec.num_nodes = record.requested_nodes;
    v.jd = decide_for_job(as_requested, *ctx.snapshot, ctx.requester, ctx.now);
  }
  return v;
}

TrainingJobReconciler::Verdict TrainingJobReconciler::decide_once(Context& ctx,
                                                                  const std::string& gate_reason) {
  enter(ctx, Step::kDecide);
  // A new spec (a new generation since the status was written) is not failed for good.
  if (ctx.status.observed_generation &&
      *ctx.status.observed_generation != generation_of(ctx.object))
    ctx.status.conditions.remove(condition::kFailed);
  Verdict v;
  v.jd = decide_now(ctx);
  const JobDecision& jd = v.jd;
  if (!jd.policy) {
    v.kind = Verdict::Kind::kNoPolicy;
    return v;
  }
  const Decision& d = jd.decision;
  if (d.action != commgate::Action::kGate) {
    v.kind = Verdict::Kind::kDecided;
    v.record = record_for(ctx, jd);
    patch_decision(ctx, jd, *v.record);
    const std::string note =
        decision_event_note(d, *jd.policy, jd.measurement ? &*jd.measurement : nullptr);
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
        break;
    }
    return v;
  }
  v.kind = Verdict::Kind::kGated;
  if (gate_reason != d.reason) {
    // No webhook gated it (or the spec changed without one), or it waits for something
    // else now (measured, but the pool is too small): the operator records its own gate,
    // so the reason annotation (kubectl's REASON column) and the Events follow.
    patch_decision(ctx, jd, record_for(ctx, jd));
    if (d.reason != reason::kNamespaceUnknown)
      event(ctx, "Normal", "Gated", "Decide", decision_event_note(d, *jd.policy, nullptr));
  }
  return v;
}

// ----- the act step: what the verdict means for the job ----------------------------------

TrainingJobReconciler::Outcome TrainingJobReconciler::act(Context& ctx, const Verdict& v) {
  const JobDecision& jd = v.jd;
  switch (v.kind) {
    case Verdict::Kind::kNoPolicy: {
      const char* why = jd.policy_invalid ? op_reason::kPolicyInvalid : op_reason::kPolicyNotFound;
      // The Event once per message: the status write brings the job back to this step.
      if (ctx.condition(condition::kAdmitted, kFalse, why, jd.policy_error) && jd.policy_invalid)
        event(ctx, "Warning", why, "Decide", jd.policy_error);
      return ReconcileError::terminal(jd.policy_error);
    }
    case Verdict::Kind::kFollow: {
      const DecisionRecord& record = *v.record;
      if (v.show_decision) {
        if (jd.policy && jd.decision.action == record.action &&
            jd.decision.admitted_nodes == record.admitted_nodes) {
          put_decision(ctx.status, jd.decision, jd.measurement ? &*jd.measurement : nullptr,
                       ctx.to_count);
        } else {
          put_decision(ctx.status, decision_of_record(record), nullptr, ctx.to_count);
        }
      }
      const std::string message = ctx.status.decision_message(record.message);
      return admitted_or_denied(ctx, record.action, record.reason, message);
    }
    case Verdict::Kind::kDecided: {
      const Decision& d = jd.decision;
      put_decision(ctx.status, d, jd.measurement ? &*jd.measurement : nullptr, ctx.to_count);
      settle_probed(ctx, jd);
      return admitted_or_denied(ctx, d.action, d.reason, d.message);
    }
    case Verdict::Kind::kGated:
      break;
  }
  const Decision& d = jd.decision;
  const bool measurement_gate = is_measurement_gate(d.reason);
  const bool namespace_unknown = d.reason == reason::kNamespaceUnknown;
  put_decision(ctx.status, d, jd.measurement && !namespace_unknown ? &*jd.measurement : nullptr,
               ctx.to_count);
  ctx.status.admitted_nodes.reset();
  if (measurement_gate && ctx.status.conditions.is(condition::kFailed, kTrue)) {
    // Failed for good: until the spec changes, with the Admitted condition fail_for_good
    // wrote (why no probe can measure the pool), not the gate's "no measurement yet".
    ctx.set_phase(phase::kFailed);
    return Action::await_change();
  }
  ctx.condition(condition::kAdmitted, kFalse, d.reason, d.message);
  if (namespace_unknown) {
    // Not a matter of measurement: nothing to probe. The namespace's arrival in the cache
    // brings the job back (it is a decision input); the requeue is for a cache that never
    // shows it.
    ctx.set_phase(phase::kGated);
    return Action::requeue_after(std::chrono::seconds(10));
  }
  if (!measurement_gate) {
    // Measured, and held for the pool's size: the probe the job waited on is done (the
    // trial of 2026-12-05 saw Probed stay ProbeRunning).
    if (d.reason == reason::kPoolTooSmall) settle_probed(ctx, jd);
    ctx.set_phase(phase::kGated);
    return Action::await_change();
  }
  if (auto why = beyond_probe_reach(ctx.job, jd)) return fail_for_good(ctx, d.reason, *why);
  return wait_for_measurement(ctx, jd);
}

TrainingJobReconciler::Outcome TrainingJobReconciler::admitted_or_denied(
    Context& ctx, commgate::Action action, const std::string& reason, const std::string& message) {
  if (action == commgate::Action::kDeny) {
    ctx.set_phase(phase::kRejected);
    ctx.status.admitted_nodes = 0;
    ctx.condition(condition::kAdmitted, kFalse, reason, message);
    return Action::await_change();
  }
  ctx.condition(condition::kAdmitted, kTrue, reason, message);
  return std::nullopt;  // the workload step runs it
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
  ctx.status.conditions.carry_generation(before, after);
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

}  // namespace commgate::op
