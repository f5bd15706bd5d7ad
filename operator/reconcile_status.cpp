// The reconcile's status step: the TrainingJob's status, written only when it changed, and
// the decision counted on its policy once written.
#include <utility>

#include "kube/api_error.h"
#include "operator/reconcile_context.h"

namespace commgate::op {

using kube::Action;
using kube::ApiError;
using kube::ReconcileError;
using kube::ReconcileResult;
using nlohmann::json;
using namespace detail;

ReconcileResult TrainingJobReconciler::fail_for_good(Context& ctx, const std::string& why,
                                                     const std::string& message,
                                                     const std::string& action) {
  ctx.set_phase(phase::kFailed);
  ctx.condition(condition::kFailed, kTrue, why, message);
  ctx.condition(condition::kAdmitted, kFalse, why, message);
  event(ctx, "Warning", why, action, message);
  return Action::await_change();
}

void TrainingJobReconciler::sync_status(Context& ctx) {
  enter(ctx, Step::kStatus);
  ctx.status.observed_generation = generation_of(ctx.object);
  json next = ctx.status.to_json();
  const json& current = ctx.object.value("status", json::object());
  if (next == current) return;  // nothing changed: no write
  json object = ctx.object;
  object["status"] = std::move(next);
  try {
    ctx.object = status_writer_.update_status(ctx.path, object);
  } catch (const ApiError& e) {
    if (e.not_found()) throw JobGone{};
    throw;  // 409: the runner retries, and the next reconcile reads the job again
  }
  remember_write(ctx);
  status_writes_.inc();
  ctx.log.debug("status written",
                {{"phase", ctx.status.phase},
                 {"resourceVersion", meta_string(ctx.object, "resourceVersion")}});
  if (ctx.to_count) {
    const Decision d = *std::exchange(ctx.to_count, std::nullopt);
    count_decision(ctx, d, d.policy_name);
  }
}

void TrainingJobReconciler::count_decision(Context& ctx, const Decision& d,
                                           const std::string& policy) {
  // The built-in default policy has no object to count on; a CommPolicy named "default"
  // does, and is counted.
  if (counters_.count(policy, d, ctx.now) == PolicyCounters::Outcome::kQueued && settings_.counted)
    settings_.counted();
}

void TrainingJobReconciler::flush_counters() {
  try {
    counters_.flush();
  } catch (const std::exception&) {
    // An audit counter is not worth failing a job's reconcile for: the increments stay
    // pending for the next flush, and the failure is counted as an error of the step.
    count("commgate_operator_reconcile_errors_total", "step", "count");
    throw;
  }
}

}  // namespace commgate::op
