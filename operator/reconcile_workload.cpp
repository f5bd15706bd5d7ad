// The reconcile's workload step: the training's Service and Job for an admitted job, and
// the job's phase from the Job's state (operator/workload_state.h).
#include <map>

#include "core/quantity.h"
#include "operator/reconcile_context.h"
#include "operator/workload_state.h"

namespace commgate::op {

using kube::Action;
using kube::ApiError;
using kube::ReconcileError;
using kube::ReconcileResult;
using nlohmann::json;
using namespace detail;

ReconcileResult TrainingJobReconciler::run_workload(Context& ctx, const DecisionRecord& record) {
  ctx.status.admitted_nodes = record.admitted_nodes;
  const char* decided = decision_phase(record.action);
  if (ctx.job.spec.suspend) {
    ctx.set_phase(decided);
    ctx.condition(condition::kRunning, kFalse, "Suspended",
                  "spec.suspend is true: the training workload is not started");
    return Action::await_change();
  }
  const bool ours = ensure_workload(ctx, record);
  if (!ours) return Action::requeue_after(settings_.probe_poll);
  if (ctx.recheck_in) return Action::requeue_after(*ctx.recheck_in);
  return Action::await_change();
}

bool TrainingJobReconciler::ensure_workload(Context& ctx, const DecisionRecord& record) {
  enter(ctx, Step::kWorkload);
  const std::string path = jobs_collection(ctx.ns) + "/" + ctx.name;
  std::optional<json> workload = get_or_null(reader_, path);
  const std::string phase_now = ctx.status.phase;
  if (!workload && (phase_now == phase::kSucceeded || phase_now == phase::kFailed)) {
    // The training ran to its end and its Job is gone (ttlSecondsAfterFinished, or deleted
    // by hand): the job is over, it is not started again.
    return true;
  }
  if (!workload) {
    std::map<std::string, std::string> nccl;
    PoolDevice device = PoolDevice::kNotMeasured;
    const CommProfile* profile = ctx.snapshot->profile(ctx.pool());
    if (profile) {
      nccl = nccl_env_of(profile->status);
      device = pool_device_of(profile->status);
    }
    const WorkloadObjects objects =
        build_workload(ctx.job, meta_string(ctx.object, "uid"), nccl, settings_.workload, device);
    if (const auto replaced = replaced_template_env(ctx.job); !replaced.empty()) {
      std::string names;
      for (const std::string& r : replaced) names += (names.empty() ? "" : ", ") + r;
      event(ctx, "Warning", "TemplateEnvReplaced", "Launch",
            "the pod template sets " + names +
                ", which commgate sets for torchrun from the admitted node count; the "
                "template's values are replaced");
    }
    create_if_absent(writer_, services_collection(ctx.ns), objects.service);
    if (std::optional<json> created =
            create_if_absent(writer_, jobs_collection(ctx.ns), objects.job)) {
      event(ctx, "Normal", op_reason::kWorkloadCreated, "Launch",
            "created Job " + ctx.ns + "/" + ctx.name + " with " +
                format_nodes(ctx.job.spec.num_nodes) + " x " +
                std::to_string(ctx.job.spec.num_proc_per_node) +
                (ctx.job.spec.num_proc_per_node == 1 ? " process" : " processes"));
      // The one Job this TrainingJob runs: only the Job of this uid is ever held to it.
      ctx.status.workload_uid = meta_string(*created, "uid");
      workload = std::move(created);  // its status arrives with the next change
    } else {
      // A Job of this name exists that the cache does not hold: ours, created a moment
      // ago (the cache lags), or one commgate did not create (without commgate's label it
      // is outside the watch). The API server says which.
      workload = get_or_null(live_reader_, path);
      if (!workload) return false;  // deleted since: created at the next reconcile
    }
  }
  if (const std::string owner = controller_uid_of(*workload);
      owner != meta_string(ctx.object, "uid")) {
    ctx.set_phase(decision_phase(record.action));
    if (!owner.empty()) {
      // The Job of an earlier TrainingJob of the same name, not yet garbage-collected.
      ctx.condition(condition::kRunning, kFalse, op_reason::kPreviousWorkloadExists,
                    "Job " + ctx.ns + "/" + ctx.name +
                        " belongs to an earlier TrainingJob of this name; waiting for it to be "
                        "deleted");
      return false;
    }
    // Never adopted (issue #19 review): the Job's pods would run a template commgate did
    // not shape (its GPUs, no pool nodeSelector, no spreading), and holding it to the
    // admitted size would grow it.
    const std::string message =
        "Job " + ctx.ns + "/" + ctx.name +
        " exists and was not created by commgate for this TrainingJob (it has no controller "
        "reference to it); commgate does not adopt it. Delete or rename that Job, or submit "
        "the TrainingJob under another name";
    ctx.condition(condition::kRunning, kFalse, op_reason::kWorkloadNameTaken, message);
    event(ctx, "Warning", op_reason::kWorkloadNameTaken, "Launch", message);
    return false;
  }
  // A controller reference proves nothing: an `edit` user may write one (the attacker review
  // of 2026-12-06 made a 1-pod Job of 8 GPUs that named the waiting TrainingJob its
  // controller; the operator took it for its workload and grew it to the admitted count).
  // The workload is the Job whose uid the operator recorded when it created it, in the
  // status no `edit` user can write.
  const std::string recorded = ctx.status.workload_uid;
  const std::string uid = meta_string(*workload, "uid");
  if (recorded.empty() && ctx.status.workload_created()) {
    // Created by an operator from before uids were recorded, which reported it running.
    ctx.status.workload_uid = uid;
  } else if (uid != recorded) {
    // Not the Job commgate created: a Job that names this TrainingJob its controller, made
    // by someone else (or commgate's own from a reconcile that ended before it recorded
    // the uid: then it started a moment ago). Deleted with its pods, by this uid only;
    // commgate creates its own at the next reconcile.
    kube::DeleteOptions only_this;
    only_this.propagation_policy = "Background";
    only_this.precondition_uid = uid;
    remove_if_present(writer_, path, only_this);
    ctx.set_phase(decision_phase(record.action));
    const std::string message =
        "Job " + ctx.ns + "/" + ctx.name + " (uid " + uid +
        ") names this TrainingJob its controller but is not the Job commgate created for it" +
        (recorded.empty() ? "" : " (uid " + recorded + ")") +
        "; deleted, and commgate creates its own";
    ctx.condition(condition::kRunning, kFalse, op_reason::kWorkloadReplaced, message);
    event(ctx, "Warning", op_reason::kWorkloadReplaced, "Launch", message);
    return false;
  }
  // The Job is held to the decision: an `edit` user may patch its parallelism (and an
  // Indexed Job's completions with it), which would run more pods than commgate admitted.
  // Restored at once; the Job controller then deletes the extra pods.
  if (const std::string drift = workload_size_drift(*workload, record.admitted_nodes);
      !drift.empty()) {
    workload =
        writer_.patch(path, kube::PatchType::kMerge, workload_size_restore(record.admitted_nodes));
    event(ctx, "Warning", op_reason::kWorkloadResized, "Hold",
          drift + " (changed by someone other than commgate); restored to " +
              format_nodes(record.admitted_nodes));
  }
  const WorkloadState state = workload_state(*workload, pods_of(*workload, ctx.ns));
  if (state.reason == op_reason::kPodsUnschedulable) {
    // Once per episode: when the Running condition does not say it yet.
    const StoredCondition* running = ctx.status.conditions.find(condition::kRunning);
    if (!running || running->reason != op_reason::kPodsUnschedulable)
      event(ctx, "Warning", op_reason::kPodsUnschedulable, "Launch", state.message);
    const auto timeout = settings_.workload.unschedulable_timeout;
    if (timeout.count() > 0 && state.unschedulable_since) {
      const auto waited = ctx.now - *state.unschedulable_since;
      if (waited >= timeout) {
        stop_unschedulable_workload(ctx, *workload, state);
        return true;
      }
      ctx.recheck_in = std::chrono::duration_cast<kube::Clock::duration>(timeout - waited);
    }
  }
  const std::string detail =
      "Job " + ctx.ns + "/" + ctx.name + ": " + std::to_string(state.active) + " active, " +
      std::to_string(state.succeeded) + " succeeded, " + std::to_string(state.failed) + " failed" +
      (state.message.empty() ? "" : ": " + state.message);
  auto reason_or = [&](const char* fallback) {
    return state.reason.empty() ? std::string(fallback) : state.reason;
  };
  switch (state.phase) {
    case WorkloadPhase::kPending:
      ctx.set_phase(decision_phase(record.action));
      ctx.condition(condition::kRunning, kFalse, reason_or("Pending"), detail);
      break;
    case WorkloadPhase::kRunning:
      ctx.set_phase(phase::kRunning);
      ctx.condition(condition::kRunning, kTrue, reason_or("Running"), detail);
      break;
    case WorkloadPhase::kSucceeded:
      ctx.set_phase(phase::kSucceeded);
      ctx.condition(condition::kRunning, kFalse, reason_or("Completed"), detail);
      ctx.condition(condition::kComplete, kTrue, reason_or("Completed"), detail);
      break;
    case WorkloadPhase::kFailed:
      ctx.set_phase(phase::kFailed);
      ctx.condition(condition::kRunning, kFalse, reason_or("Failed"), detail);
      ctx.condition(condition::kFailed, kTrue, reason_or("Failed"), detail);
      break;
  }
  return true;
}

void TrainingJobReconciler::stop_unschedulable_workload(Context& ctx, const json& workload,
                                                        const WorkloadState& state) {
  kube::DeleteOptions options;
  options.propagation_policy = "Background";  // its pods with it: they hold nodes
  options.precondition_uid = meta_string(workload, "uid");
  remove_if_present(writer_, jobs_collection(ctx.ns) + "/" + ctx.name, options);
  const std::string message =
      "stopped after " + format_duration(settings_.workload.unschedulable_timeout) + ": " +
      state.message + ". The pool " + format_node_selector(ctx.job.spec.node_selector) +
      " has fewer free nodes than spec.numNodes (" + std::to_string(ctx.job.spec.num_nodes) +
      ") asks, so the pods that started held their nodes for nothing; submit it again with " +
      "fewer nodes, or when the pool has room";
  ctx.set_phase(phase::kFailed);
  ctx.condition(condition::kRunning, kFalse, op_reason::kWorkloadUnschedulable, message);
  ctx.condition(condition::kFailed, kTrue, op_reason::kWorkloadUnschedulable, message);
  event(ctx, "Warning", op_reason::kWorkloadUnschedulable, "Stop", message);
}

}  // namespace commgate::op
