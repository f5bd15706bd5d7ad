// The reconcile's wait step: a job gated for its pool's measurement. The measurement
// controller (operator/measurement_reconciler.h) probes the pool; this step reads what it
// does (the CommProfile's Probing condition and status.probe, the probe Job) and tells the
// job's owner in its Probed condition, and fails the job for good once the pool's probe
// has failed past the job's policy's retries.
#include "core/probe_result.h"
#include "core/quantity.h"
#include "operator/measurement_reconciler.h"
#include "operator/probe_history.h"
#include "operator/reconcile_context.h"

namespace commgate::op {

using kube::Action;
using kube::ReconcileResult;
using nlohmann::json;
using namespace detail;

// Probed=False while the pool's probe has not measured what the job needs.
inline constexpr const char* kReasonWaitingForMeasurement = "WaitingForMeasurement";

namespace {

// Why the pool's running probe (commgate.io/probe-model `models`) does not time this
// job's model (measurement_demand.h plan_probe, probe_job.h probe_models).
std::string why_not_in_probe(const json& object, const TrainingJob& job, const json& probe,
                             const std::string& models) {
  const json list = json::parse(models, nullptr, false);
  const size_t count = list.is_array() ? list.size() : 1;
  std::string what = "it times " + std::to_string(count) + (count == 1 ? " model" : " models") +
                     " for the jobs that waited first (" +
                     annotation_of(probe, kProbeForAnnotation) + " the oldest), not this job's";
  const auto created = parse_rfc3339(detail::meta_string(object, "creationTimestamp"));
  const auto started = parse_rfc3339(detail::meta_string(probe, "creationTimestamp"));
  if (created && started && *created > *started)
    return what + ": this job was submitted after the probe started";
  if (!job.spec.model.torch_script.empty())
    return what + ": a TorchScript model is timed by a probe of its own";
  if (count >= static_cast<size_t>(kMaxModelsPerProbe))
    return what + ": one probe times at most " + std::to_string(kMaxModelsPerProbe) + " models";
  return what +
         " (a probe times only the models of jobs with the same spec.numProcPerNode as "
         "the oldest, and no model too large for a CPU probe pod beside another)";
}

}  // namespace

ReconcileResult TrainingJobReconciler::wait_for_measurement(Context& ctx, const JobDecision& jd) {
  enter(ctx, Step::kWait);
  const std::string& pool = jd.profile_name;
  const std::string& ns = settings_.probe.ns;
  const std::string name = probe_job_name(pool);
  const std::optional<json> profile = get_or_null(reader_, profile_path(pool));
  const std::optional<json> probe = get_or_null(reader_, jobs_collection(ns) + "/" + name);
  const ProbeHistory history = profile ? probe_history_of(*profile) : ProbeHistory{};
  const int attempts = jd.policy->spec.retry_strategy.backoff_limit_count + 1;
  if (!probe && history.failed_attempts >= attempts) {
    const std::string what =
        "probe of pool " + pool + " failed " + std::to_string(history.failed_attempts) + " time" +
        (history.failed_attempts == 1 ? "" : "s") + ", " + std::to_string(attempts) +
        " allowed by " + policy_label(jd.policy->metadata.name) + ": " +
        history.last_failure_message;
    const std::string clause = without_final_stop(what);
    ctx.condition(
        condition::kProbed, kFalse,
        history.last_failure_reason.empty() ? kReasonProbeFailed : history.last_failure_reason,
        what);
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
  // What the pool's probe does, as the measurement controller said it last.
  const json conditions =
      profile ? profile->value("status", json::object()).value("conditions", json::array())
              : json::array();
  const json* probing = find_condition(conditions, kProbingCondition);
  const std::string probing_reason = probing ? probing->value("reason", "") : "";
  const std::string probing_message = probing ? probing->value("message", "") : "";
  if (probe) {
    if (const std::string models = annotation_of(*probe, kProbeModelAnnotation);
        !probe_times_model(models, ctx.job.spec.model)) {
      ctx.set_phase(phase::kGated);
      ctx.condition(condition::kProbed, kFalse, op_reason::kWaitingForPoolProbe,
                    "waiting for probe " + ns + "/" + name + " of pool " + pool +
                        " to finish: " + why_not_in_probe(ctx.object, ctx.job, *probe, models) +
                        "; the pool's next probe times the models still waiting, the oldest "
                        "jobs' first");
    } else {
      ctx.set_phase(phase::kProbing);
      ctx.condition(condition::kProbed, kFalse, kReasonProbeRunning,
                    probing_reason == kReasonProbeRunning
                        ? probing_message
                        : "probe " + ns + "/" + name + " measures pool " + pool + " on " +
                              probe_nodes_text(*probe));
    }
  } else {
    ctx.set_phase(phase::kGated);
    // A failure with its retry time, a probe slot awaited: the controller's words. Else
    // (no word yet, or a success that did not cover this job) the job says it waits.
    const bool told = probing != nullptr && probing_reason != kReasonProbeRunning &&
                      probing_reason != kReasonProbeSucceeded && probing_reason != kReasonNoDemand;
    ctx.condition(condition::kProbed, kFalse, told ? probing_reason : kReasonWaitingForMeasurement,
                  told ? probing_message
                       : "waiting for the measurement of pool " + pool + " (CommProfile " + pool +
                             "): " + jd.decision.message);
  }
  return Action::requeue_after(settings_.probe_poll);
}

void TrainingJobReconciler::settle_probed(Context& ctx, const JobDecision& jd) {
  if (!jd.measurement || !ctx.status.conditions.is(condition::kProbed, kFalse)) return;
  const Measurement& m = *jd.measurement;
  ctx.condition(condition::kProbed, kTrue, kReasonProbeSucceeded,
                pool_measured(jd.profile_name, m.nodes_probed, m.link.busbw_bytes_per_s, m.backend,
                              m.transport) +
                    ", read from CommProfile " + jd.profile_name);
}

}  // namespace commgate::op
