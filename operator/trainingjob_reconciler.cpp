// The reconcile's entry, its list of steps (run) and the first two (read, validate), and
// the parts every step shares: the own-writes bookkeeping, metrics. The other steps are in
// reconcile_decide.cpp (decide: follow a record or decide once, and act on the verdict),
// reconcile_wait.cpp (a job waiting for its pool's measurement), reconcile_workload.cpp
// (the training's Job and its state) and reconcile_status.cpp (the status write).
#include "operator/trainingjob_reconciler.h"

#include <utility>

#include "core/field_errors.h"
#include "core/prometheus_text.h"
#include "kube/api_error.h"
#include "operator/reconcile_context.h"

namespace commgate::op {

using kube::Action;
using kube::ApiError;
using kube::ReconcileError;
using kube::ReconcileResult;
using nlohmann::json;
using namespace detail;

const char* TrainingJobReconciler::to_string(Step step) {
  switch (step) {
    case Step::kRead:
      return "read";
    case Step::kDecide:
      return "decide";
    case Step::kWait:
      return "wait";
    case Step::kWorkload:
      return "workload";
    case Step::kStatus:
      return "status";
  }
  return "unknown";
}

// ---------------------------------------------------------------------------------------
// The reconciler

namespace {
const char* help_of(std::string_view family) {
  if (family == "commgate_operator_reconciles_total") return "Reconcile steps run, by step.";
  if (family == "commgate_operator_reconcile_errors_total")
    return "Reconciles that ended in an error, by the step that failed.";
  return "Decisions written on TrainingJobs, by action.";
}
}  // namespace

TrainingJobReconciler::TrainingJobReconciler(
    const kube::Reader& reader, const kube::Reader& live_reader, kube::Writer& writer,
    kube::StatusWriter& status_writer, std::function<std::shared_ptr<const Snapshot>()> snapshot,
    kube::EventRecorder& events, std::function<TimePoint()> now, ReconcilerSettings settings)
    : reader_(reader),
      live_reader_(live_reader),
      writer_(writer),
      status_writer_(status_writer),
      snapshot_(std::move(snapshot)),
      events_(events),
      now_(std::move(now)),
      settings_(std::move(settings)),
      counters_(reader, status_writer),
      status_writes_(metrics_.counter(
          "commgate_operator_status_writes_total",
          "TrainingJob status writes (a status that did not change is not written).")) {
  // Every series at 0 from the start: a dashboard (and rate()) sees each from the first
  // scrape, not from the first time it counts.
  for (const Step step :
       {Step::kRead, Step::kDecide, Step::kWait, Step::kWorkload, Step::kStatus}) {
    metrics_.counter("commgate_operator_reconciles_total",
                     help_of("commgate_operator_reconciles_total"), {{"step", to_string(step)}});
    metrics_.counter("commgate_operator_reconcile_errors_total",
                     help_of("commgate_operator_reconcile_errors_total"),
                     {{"step", to_string(step)}});
  }
  for (const commgate::Action a :
       {commgate::Action::kAdmit, commgate::Action::kDownsize, commgate::Action::kWarn,
        commgate::Action::kDeny, commgate::Action::kGate})
    metrics_.counter("commgate_operator_decisions_total",
                     help_of("commgate_operator_decisions_total"),
                     {{"action", commgate::to_string(a)}});
}

void TrainingJobReconciler::count(const char* family, const char* label, const std::string& value) {
  metrics_.counter(family, help_of(family), {{label, value}}).inc();
}

void TrainingJobReconciler::enter(Context& ctx, Step step) {
  ctx.step = step;
  count("commgate_operator_reconciles_total", "step", to_string(step));
}

void TrainingJobReconciler::event(const Context& ctx, const std::string& type,
                                  const std::string& reason, const std::string& action,
                                  const std::string& note) {
  const kube::ObjectRef ref{kApiVersion, "TrainingJob", ctx.ns, ctx.name,
                            meta_string(ctx.object, "uid")};
  events_.record(ref, type, reason, action, note);
  // What the Event says, in the log too: the reconciler's decisions and writes are told
  // there with the job's key, not only its failures (by the runner).
  ctx.log.log(type == "Warning" ? LogLevel::kWarning : LogLevel::kInfo, reason + ": " + note,
              {{"reason", reason}, {"action", action}});
}

ReconcileResult TrainingJobReconciler::reconcile(const std::string& key) {
  Context ctx;
  ctx.key = key;
  const auto parsed = parse_key(key);
  if (!parsed) return ReconcileError::terminal("not a namespace/name key: \"" + key + "\"");
  ctx.ns = parsed->ns;
  ctx.name = parsed->name;
  ctx.path = trainingjob_path(ctx.ns, ctx.name);
  ctx.now = now_();
  ctx.log = settings_.log.with({{"trainingjob", key}});
  ctx.snapshot = snapshot_();
  if (!ctx.snapshot) return ReconcileError::retryable("no snapshot of policies and profiles yet");
  auto failed = [&](const std::string& message) {
    count("commgate_operator_reconcile_errors_total", "step", to_string(ctx.step));
    return std::string(to_string(ctx.step)) + ": " + message;
  };
  try {
    return run(ctx);
  } catch (const JobGone&) {
    return Action::await_change();  // deleted mid-reconcile: nothing left to do
  } catch (const ApiError& e) {
    if (e.conflict())
      return ReconcileError::retryable(
          failed(std::string("conflict, read again on the next try: ") + e.what()));
    return ReconcileError::retryable(failed(e.what()));
  } catch (const std::exception& e) {
    return ReconcileError::retryable(failed(e.what()));
  }
}

ReconcileResult TrainingJobReconciler::run(Context& ctx) {
  if (Outcome nothing_to_do = read(ctx)) return *nothing_to_do;
  Outcome result = validate(ctx);
  if (!result) {
    const Verdict verdict = decide(ctx);
    result = act(ctx, verdict);
    if (!result) result = run_workload(ctx, *verdict.record);
  }
  sync_status(ctx);
  return *result;
}

TrainingJobReconciler::Outcome TrainingJobReconciler::read(Context& ctx) {
  enter(ctx, Step::kRead);
  auto object = get_or_null(reader_, ctx.path);
  if (!object) {
    own_writes_.forget(ctx.path);
    return Action::await_change();
  }
  // Older than this process's last write of it: the stale echo of its own state (it would
  // start again a probe that the write scheduled for later, and count one failure twice).
  if (own_writes_.newer_than(ctx.path, *object).has_value())
    return Action::requeue_after(std::chrono::milliseconds(100));  // its watch event is near
  ctx.object = std::move(*object);
  // Being deleted: the garbage collector removes what it owns; nothing to start now.
  if (!meta_string(ctx.object, "deletionTimestamp").empty()) return Action::await_change();
  ctx.status = TrainingJobStatus::from_json(ctx.object.value("status", json::object()));
  return std::nullopt;
}

TrainingJobReconciler::Outcome TrainingJobReconciler::validate(Context& ctx) {
  try {
    ctx.job = parse_training_job(ctx.object, ObjectSource::kStored);
  } catch (const ValidationError& e) {
    return invalid_spec(ctx, e.what());
  }
  ctx.status.conditions.remove(condition::kSpecValid);
  // A name the workload cannot take would be refused (422) whatever is decided: say so
  // before anything is probed, and stop.
  if (const std::string problem = workload_name_problem(ctx.job); !problem.empty())
    return fail_for_good(ctx, op_reason::kInvalidWorkloadName, problem, "Validate");
  return std::nullopt;
}

void TrainingJobReconciler::remember_write(const Context& ctx) {
  own_writes_.remember(ctx.path, ctx.object, OwnWrites::Keep::kVersion);
}

ReconcileResult TrainingJobReconciler::invalid_spec(Context& ctx, const std::string& message) {
  // One Event per message: the status write below brings the job back here, and an edit
  // that leaves the same mistake reads the same; recorded again, each was the Event again
  // (a series, "x2" in kubectl describe). The condition written says what was told.
  const StoredCondition* was = ctx.status.conditions.find(condition::kSpecValid);
  const bool told = was && was->status == kFalse && was->reason == op_reason::kInvalidSpec &&
                    was->message == message;
  ctx.condition(condition::kSpecValid, kFalse, op_reason::kInvalidSpec, message);
  if (!told) event(ctx, "Warning", op_reason::kInvalidSpec, "Validate", message);
  return ReconcileError::terminal("invalid TrainingJob " + ctx.key + ": " + message);
}

JobDecision TrainingJobReconciler::decide_now(const Context& ctx) const {
  return decide_for_job(ctx.job, *ctx.snapshot, ctx.requester, ctx.now);
}

std::vector<json> TrainingJobReconciler::pods_of(const json& job, const std::string& ns) const {
  return pods_of_job(reader_, job, ns);
}

// ----- metrics --------------------------------------------------------------------------

std::string TrainingJobReconciler::metrics_text() const {
  return metrics_.render();
}

}  // namespace commgate::op
