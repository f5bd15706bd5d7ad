// The reconcile's probe and collect steps: launch the pool's probe (create-if-absent, one
// per pool), read its outcome, collect a result, and retry a failure with the policy's
// backoff until the job fails for good.
#include <algorithm>
#include <utility>

#include "core/quantity.h"
#include "kube/api_error.h"
#include "operator/reconcile_context.h"

namespace commgate::op {
namespace {

// "pool P measured on 2 nodes: all-reduce busbw 1.3 GB/s (gloo, loopback)": the Probed
// condition's words for a measurement, whether this job collected it or read it.
std::string pool_measured(const std::string& pool, int nodes, double busbw_bytes_per_s,
                          const std::string& backend, const std::string& transport) {
  return "pool " + pool + " measured on " + format_nodes(nodes) + ": all-reduce busbw " +
         format_gbps(busbw_bytes_per_s) + " (" + backend +
         (transport.empty() ? "" : ", " + transport) + ")";
}

// "; not given to the probe, of the job's tolerations: node-role.kubernetes.io/control-
// plane:NoSchedule (CommPolicy team's probe.tolerationKeys: nvidia.com/gpu)", or "".
std::string dropped_tolerations_note(const std::vector<std::string>& dropped,
                                     const CommPolicy& policy) {
  if (dropped.empty()) return "";
  std::string what, keys;
  for (const auto& d : dropped) what += (what.empty() ? "" : ", ") + d;
  for (const auto& k : policy.spec.probe.toleration_keys) keys += (keys.empty() ? "" : ", ") + k;
  return "; not given to the probe, of the job's tolerations: " + what + " (" +
         policy_label(policy.metadata.name) +
         "'s probe.tolerationKeys: " + (keys.empty() ? "none" : keys) + ")";
}

}  // namespace

using kube::Action;
using kube::ApiError;
using kube::ReconcileError;
using kube::ReconcileResult;
using nlohmann::json;
using namespace detail;

ReconcileResult TrainingJobReconciler::probe_or_collect(Context& ctx, const JobDecision& jd,
                                                        const json& profile) {
  enter(ctx, Step::kProbe);
  const std::string& pool = jd.profile_name;
  const std::string name = probe_job_name(pool);
  const std::string& ns = settings_.probe.ns;
  // Another worker (or replica) may have collected the pool's probe since this
  // reconcile read the profile: recorded its measurement, then deleted the Job. Decided
  // from that measurement, when there is one, instead of probing the pool again.
  auto decided_by_newer_measurement = [&]() -> std::optional<ReconcileResult> {
    std::optional<CommProfile> newer = profile_newer_than(ctx, pool, profile);
    if (!newer) return std::nullopt;
    ctx.overlay = std::move(newer);
    enter(ctx, Step::kDecide);
    const JobDecision now_measured = decide_now(ctx);
    if (now_measured.policy && now_measured.decision.action != commgate::Action::kGate)
      return apply_decision(ctx, now_measured);
    enter(ctx, Step::kProbe);
    return std::nullopt;
  };
  // One pool's probe step at a time in this process (operator/pool_locks.h): a worker
  // looks for the probe after another has created (or collected) it, never between.
  const std::unique_lock pool_lock = pool_locks_.lock(pool);
  const std::string path = jobs_collection(ns) + "/" + name;
  std::optional<json> probe = get_or_null(reader_, path);
  // The cache may lag behind what another worker did under this lock: a probe it created
  // not yet seen (absent here), or one it collected and deleted (still finished here).
  // Ask the API server then; a probe gone from there left its measurement before it went.
  if (!probe || probe_finished(*probe)) probe = get_or_null(live_reader_, path);
  if (!probe) {
    if (auto decided = decided_by_newer_measurement()) return std::move(*decided);
    return start_probe(ctx, jd, profile);
  }

  enter(ctx, Step::kCollect);
  const ProbeOutcome outcome = outcome_of(*probe);
  if (annotation_of(*probe, kProbeModelAnnotation) != probe_model_annotation(ctx.job.spec.model)) {
    if (outcome.state == ProbeState::kSucceeded && outcome.result) {
      // Another model's probe finished: its result goes into the profile (where the job
      // that asked for it finds it), and the pool is free for this job's probe.
      record_in_profile(ctx, pool, *outcome.result);
      delete_probe(*probe);
      enter(ctx, Step::kDecide);
      const JobDecision now_measured = decide_now(ctx);
      if (now_measured.policy && now_measured.decision.action != commgate::Action::kGate)
        return apply_decision(ctx, now_measured);
      enter(ctx, Step::kProbe);
      return start_probe(ctx, jd, profile);
    }
    // One probe per pool: another model's probe runs (or failed, and the job that asked
    // for it counts that); this job's model is probed next.
    ctx.set_phase(phase::kGated);
    ctx.condition(condition::kProbed, kFalse, op_reason::kWaitingForPoolProbe,
                  "waiting for probe " + ns + "/" + name + " of pool " + pool + " (for " +
                      annotation_of(*probe, kProbeForAnnotation) +
                      ", another model) to finish; this job's model is probed next");
    sync_status(ctx);
    return Action::requeue_after(settings_.probe_poll);
  }

  switch (outcome.state) {
    case ProbeState::kRunning:
      ctx.set_phase(phase::kProbing);
      ctx.condition(condition::kProbed, kFalse, kReasonProbeRunning,
                    "probe " + ns + "/" + name + " measures pool " + pool + " on " +
                        annotation_of(*probe, kProbeNodesAnnotation) + " node(s)" +
                        (outcome.message.empty() ? "" : ": " + outcome.message));
      sync_status(ctx);
      return Action::requeue_after(settings_.probe_poll);
    case ProbeState::kSucceeded:
      if (outcome.result) return collect(ctx, jd, *probe, *outcome.result);
      break;
    case ProbeState::kFailed:
    case ProbeState::kUnschedulable:
    case ProbeState::kInvalidResult:
      break;
  }
  // A cache behind the collection shows the Job ended and its pods gone ("rank 0's pod is
  // gone"): not a failure when the measurement it left is there (seen with watches
  // dropping: the failure counted, and the pool probed again).
  if (auto decided = decided_by_newer_measurement()) return std::move(*decided);
  // The failure is recorded (status: probeAttempts, nextProbeTime) before the probe is
  // deleted: a status write that fails throws with the probe still there, and the next
  // reconcile counts it. Deleted first, a lost write lost the attempt, and the next
  // reconcile probed again at once, past the backoff (issue #19 item 10).
  ReconcileResult result = probe_failed(
      ctx, jd, outcome.reason.empty() ? kReasonProbeFailed : outcome.reason, outcome.message);
  delete_probe(*probe);
  return result;
}

ProbeOutcome TrainingJobReconciler::outcome_of(const json& probe) const {
  const ProbeOutcome cached = read_probe_outcome(probe, pods_of(probe, settings_.probe.ns));
  if (!cached.rank0_pod_missing) return cached;
  // The Job's Complete came through its watch before its pods through theirs (a probe of
  // milliseconds; seen on the sim): the API server has them. One list, only here.
  return read_probe_outcome(probe, pods_of(probe, settings_.probe.ns, live_reader_));
}

ReconcileResult TrainingJobReconciler::start_probe(Context& ctx, const JobDecision& jd,
                                                   const json& profile) {
  const std::string& pool = jd.profile_name;
  const json& next = ctx.status.value("nextProbeTime", json());
  if (next.is_string()) {
    if (auto at = parse_rfc3339(next.get<std::string>()); at && ctx.now < *at) {
      ctx.set_phase(phase::kGated);
      sync_status(ctx);
      return Action::requeue_after(
          std::chrono::duration_cast<kube::Clock::duration>(*at - ctx.now));
    }
  }
  {
    kube::ListOptions probes;
    probes.label_selector = std::string(kRoleLabel) + "=probe";
    // From the API server, not the cache: a probe created a moment ago by another job's
    // reconcile must count (the trial saw a cache 200 ms behind let a second one start).
    const std::string why =
        probe_slot_refusal(live_reader_.list(jobs_collection(settings_.probe.ns), probes).items,
                           pool, ctx.job.metadata.namespace_, settings_.probe);
    if (!why.empty()) {
      // Polled: a slot frees when another pool's probe finishes, which does not wake
      // this job (it waits on its own pool).
      ctx.set_phase(phase::kGated);
      ctx.condition(condition::kProbed, kFalse, kReasonProbeQueued, why);
      sync_status(ctx);
      return Action::requeue_after(std::chrono::seconds(15));
    }
  }
  const CommPolicy& policy = *jd.policy;
  ProbeRequest request;
  request.pool = pool;
  request.profile_uid = meta_string(profile, "uid");
  request.node_selector = ctx.job.spec.node_selector;
  const ProbeTolerations tolerations =
      probe_tolerations(ctx.job.spec.tolerations, policy.spec.probe.toleration_keys);
  request.tolerations = tolerations.kept;
  request.nodes = probe_node_count(ctx.job.spec.num_nodes, policy.spec.probe);
  request.procs_per_node = ctx.job.spec.num_proc_per_node;
  request.model = ctx.job.spec.model;
  request.policy_probe = policy.spec.probe;
  request.for_job = ctx.key;
  const ProbeObjects objects = build_probe(request, settings_.probe);
  const std::string& ns = settings_.probe.ns;
  create_if_absent(writer_, services_collection(ns), objects.service);
  const bool created = create_if_absent(writer_, jobs_collection(ns), objects.job);
  const int attempt = int_field(ctx.status, "probeAttempts") + 1;
  const int attempts = policy.spec.retry_strategy.backoff_limit_count + 1;
  const std::string what = "probe " + ns + "/" + probe_job_name(pool) + " measures pool " + pool +
                           " on " + format_nodes(request.nodes) + " (attempt " +
                           std::to_string(attempt) + " of " + std::to_string(attempts) + ")" +
                           dropped_tolerations_note(tolerations.dropped, policy);
  if (created) {
    {
      std::lock_guard lock(metrics_mu_);
      ++metrics_.probes_created;
    }
    event(ctx, "Normal", "ProbeCreated", "Probe", what);
  }
  ctx.status.erase("nextProbeTime");
  ctx.set_phase(phase::kProbing);
  ctx.condition(condition::kProbed, kFalse, kReasonProbeRunning, what);
  sync_status(ctx);
  return Action::requeue_after(settings_.probe_poll);
}

void TrainingJobReconciler::delete_probe(const json& probe) {
  const std::string& ns = settings_.probe.ns;
  const std::string name = meta_string(probe, "name");
  kube::DeleteOptions options;
  options.propagation_policy = "Background";
  // This probe, not one created under its name since it was read (a cache behind the
  // deletion showed the old one, a newer probe of the pool runs now): that one stays.
  options.precondition_uid = meta_string(probe, "uid");
  try {
    remove_if_present(writer_, jobs_collection(ns) + "/" + name, options);
  } catch (const ApiError& e) {
    if (e.conflict()) return;  // another probe's, its Service with it
    throw;
  }
  remove_if_present(writer_, services_collection(ns) + "/" + name);
}

ReconcileResult TrainingJobReconciler::collect(Context& ctx, const JobDecision& jd,
                                               const json& probe, const ProbeResult& result) {
  const std::string& pool = jd.profile_name;
  record_in_profile(ctx, pool, result);
  delete_probe(probe);
  if (auto created = parse_rfc3339(meta_string(probe, "creationTimestamp"))) {
    std::lock_guard lock(metrics_mu_);
    ++metrics_.probe_durations;
    metrics_.probe_seconds += std::chrono::duration<double>(ctx.now - *created).count();
  }
  ctx.status.erase("probeAttempts");
  ctx.status.erase("nextProbeTime");
  const std::string what = pool_measured(pool, result.nodes, result.fit.busbw_bytes_per_s,
                                         result.backend, result.transport);
  ctx.condition(condition::kProbed, kTrue, kReasonProbeSucceeded, what);
  event(ctx, "Normal", kReasonProbeSucceeded, "Probe", what);

  enter(ctx, Step::kDecide);
  const JobDecision measured = decide_now(ctx);
  if (!measured.policy) return ReconcileError::retryable(measured.policy_error);
  if (measured.decision.action == commgate::Action::kGate) {
    if (auto why = beyond_probe_reach(ctx, measured))
      return fail_for_good(ctx, measured.decision.reason, *why);
    return probe_failed(
        ctx, measured, op_reason::kMeasurementInsufficient,
        "the probe succeeded but the job still cannot be decided: " + measured.decision.message);
  }
  return apply_decision(ctx, measured);
}

void TrainingJobReconciler::settle_probed(Context& ctx, const JobDecision& jd) {
  if (!jd.measurement || !ctx.status.contains("conditions")) return;
  const json* probed = find_condition(ctx.status["conditions"], condition::kProbed);
  if (probed == nullptr || probed->value("status", "") != kFalse) return;
  const Measurement& m = *jd.measurement;
  ctx.condition(condition::kProbed, kTrue, kReasonProbeSucceeded,
                pool_measured(jd.profile_name, m.nodes_probed, m.link.busbw_bytes_per_s, m.backend,
                              m.transport) +
                    ", read from CommProfile " + jd.profile_name);
}

ReconcileResult TrainingJobReconciler::probe_failed(Context& ctx, const JobDecision& jd,
                                                    const std::string& why,
                                                    const std::string& message) {
  const RetryStrategy& retry = jd.policy->spec.retry_strategy;
  const int failed = int_field(ctx.status, "probeAttempts") + 1;
  const int attempts = retry.backoff_limit_count + 1;
  ctx.status["probeAttempts"] = failed;
  {
    std::lock_guard lock(metrics_mu_);
    ++metrics_.probe_failures[why];
  }
  const std::string pool = jd.profile_name;
  const std::string what = "probe of pool " + pool + " failed (attempt " + std::to_string(failed) +
                           " of " + std::to_string(attempts) +
                           "): " + (message.empty() ? why : message);
  ctx.condition(condition::kProbed, kFalse, why, what);
  // The scheduler's message ends its sentence ("... node selector."): one stop, not ".;".
  const std::string clause = what.ends_with('.') ? what.substr(0, what.size() - 1) : what;
  if (failed >= attempts) {
    ctx.status.erase("nextProbeTime");
    return fail_for_good(
        ctx, op_reason::kProbeFailed,
        clause +
            "; commgate cannot decide this job without a measurement of its pool, so it does "
            "not run. Check that " +
            format_nodes(probe_node_count(ctx.job.spec.num_nodes, jd.policy->spec.probe)) +
            " of nodeSelector " + format_node_selector(ctx.job.spec.node_selector) +
            " are schedulable, then change the spec (or delete and resubmit the job) to probe "
            "again");
  }
  const auto delay = probe_retry_delay(retry, failed);
  ctx.status["nextProbeTime"] = format_rfc3339(ctx.now + delay);
  ctx.set_phase(phase::kGated);
  event(ctx, "Warning", why, "Probe",
        clause + "; retrying in " + std::to_string(delay.count()) + " s");
  sync_status(ctx);
  return Action::requeue_after(delay);
}

std::optional<std::string> TrainingJobReconciler::beyond_probe_reach(const Context& ctx,
                                                                     const JobDecision& jd) const {
  if (jd.decision.reason != reason::kExtrapolationTooFar || !jd.measurement) return std::nullopt;
  const ProbeSettings& probe = jd.policy->spec.probe;
  const int reach = probe_node_count(ctx.job.spec.num_nodes, probe);
  if (jd.measurement->nodes_probed < reach) return std::nullopt;  // a larger probe helps
  const int k = std::max(1, jd.policy->spec.max_extrapolation);
  return jd.decision.message + " The pool was probed on " +
         format_nodes(jd.measurement->nodes_probed) + ", as many as " +
         policy_label(jd.policy->metadata.name) + " lets a probe take (probe.maxNodes " +
         std::to_string(probe.max_nodes) + "), so no probe can decide " +
         format_nodes(ctx.job.spec.num_nodes) + ": ask for at most " +
         std::to_string(static_cast<int64_t>(k) * jd.measurement->nodes_probed) +
         " nodes, or have an admin raise probe.maxNodes or maxExtrapolation";
}

}  // namespace commgate::op
