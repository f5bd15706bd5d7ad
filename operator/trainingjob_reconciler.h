// The reconcile of one TrainingJob (issue #10), level-based: it reads the job by its key
// and runs, top to bottom, the named steps that apply to what it finds, each counted in the
// metrics by name:
//
//   read      get the TrainingJob (gone: done), parse it (invalid: condition SpecValid
//             False, terminal error)
//   decide    follow the decision record when it holds for the spec; else core's
//             decide_for_job, once, and ONE merge patch of the spec (numNodes, suspend) and
//             the decision annotations (core/decision_record.h); Event Admitted /
//             Downsized / Warned / Denied / Gated with the numbers
//   wait      a job gated for a measurement waits for its pool's: the measurement
//             controller (operator/measurement_reconciler.h) probes the pool; this step
//             only reads the pool's CommProfile and probe and says so (condition Probed),
//             and fails the job for good when the pool's probe failed past its policy's
//             retries. The CommProfile's change brings the job back, decided from it.
//   workload  an admitted, unsuspended job: its Service + Job (operator/workload_job.h)
//   status    mirror it all into .status (phase, conditions with observedGeneration,
//             decision, measurement); written once, and only when it changed
//
// Decide once: a job whose decision record holds for its spec (core check_against_record)
// is not decided again; only a gated one is, once it is measured (docs/operator.md).
//
// The state between reconciles lives in the API server only (the job's status and
// annotations, the CommProfile), so a restarted operator or a new leader carries on where
// the last one stopped. Thread-safe: the runner may reconcile different keys at once.
//
// Where each part lives: read, the own writes and the metrics in trainingjob_reconciler.cpp;
// the steps in reconcile_decide.cpp, reconcile_wait.cpp, reconcile_workload.cpp and
// reconcile_status.cpp, sharing reconcile_context.h (internal). The pure parts have their
// own headers, included here: trainingjob_phases.h (phases, reasons), trainingjob_status.h
// (the typed status the steps change), decision_status.h (status.decision, the Event
// note), measurement_demand.h (who waits on a pool).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/decision_record.h"
#include "core/job_decision.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/snapshot.h"
#include "core/time_format.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/reconcile_result.h"
#include "operator/decision_status.h"
#include "operator/measurement_demand.h"
#include "operator/own_writes.h"
#include "operator/policy_counters.h"
#include "operator/probe_job.h"
#include "operator/probe_outcome.h"
#include "operator/trainingjob_phases.h"
#include "operator/workload_job.h"
#include "operator/workload_state.h"

namespace commgate::op {

struct ReconcilerSettings {
  // Where the probes run (their namespace), to show a waiting job its pool's probe.
  ProbeLaunchSettings probe;
  WorkloadSettings workload;
  // Requeue while the job waits for its pool's probe (the probe's Job and pods, and the
  // CommProfile, changing also wake the job).
  std::chrono::milliseconds probe_poll{2000};
  // Signs the decision records the operator writes and checks the records it finds before
  // a workload exists (`--decision-key-file`): one without a valid signature is decided
  // again. Null: records are trusted as they are (docs/security.md "Decision records").
  std::shared_ptr<const RecordAuthenticator> records;
  // Each reconcile logs with the job's key (field `trainingjob`): its Events (decisions,
  // workloads, failures) at info or warning, its status writes at debug.
  Logger log = Logger::discard();
  // Called after a decision was counted (pending in memory): schedules flush_counters().
  std::function<void()> counted;
};

class TrainingJobReconciler {
 public:
  // reader: in the operator a cache-backed Reader (informers), in tests the FakeClient.
  // snapshot: the current policies, profiles and namespace labels (core/snapshot.h).
  // events: Events on the TrainingJob (aggregated by the recorder).
  // All references must outlive the reconciler.
  TrainingJobReconciler(const kube::Reader& reader, const kube::Reader& live_reader,
                        kube::Writer& writer, kube::StatusWriter& status_writer,
                        std::function<std::shared_ptr<const Snapshot>()> snapshot,
                        kube::EventRecorder& events, std::function<TimePoint()> now,
                        ReconcilerSettings settings);

  // key: "namespace/name".
  kube::ReconcileResult reconcile(const std::string& key);

  // Writes the decisions counted since the last flush on their CommPolicies
  // (PolicyCounters::flush); throws as it does, after counting the failure as an error of
  // step "count".
  void flush_counters();

  // The reconciler's metrics in the Prometheus text format:
  //   commgate_operator_reconciles_total{step}        steps run (read, decide, wait,
  //                                                   workload, status)
  //   commgate_operator_reconcile_errors_total{step}  steps that ended in an error (and
  //                                                   step="count": a flush of the
  //                                                   CommPolicy counters that failed)
  //   commgate_operator_decisions_total{action}       decisions written (Admit, Downsize,
  //                                                   Deny, Warn, Gate)
  //   (the probes' metrics are the measurement controller's)
  //   commgate_operator_status_writes_total           status writes (skipped when equal)
  std::string metrics_text() const;

  enum class Step { kRead, kDecide, kWait, kWorkload, kStatus };
  static const char* to_string(Step step);

 private:
  struct Context;
  struct Verdict;
  using Outcome = std::optional<kube::ReconcileResult>;  // set: the reconcile ends with it

  // One reconcile as a list of steps (issue #21), none calling another: read, validate,
  // decide, act, workload, then the status written once. A step that settles the result
  // returns it; the steps after it do not run, the status write does.
  kube::ReconcileResult run(Context& ctx);
  // The job from the cache; a result when there is nothing to do (gone, being deleted, a
  // copy older than this process's own write). No status is written then.
  Outcome read(Context& ctx);
  // The spec and the workload's name; a result (the job failed for good) when invalid.
  Outcome validate(Context& ctx);
  // Follows the job's decision record where it holds, else decides (once) and records the
  // decision on the job (one merge patch, the decision's Event).
  Verdict decide(Context& ctx);
  Verdict follow(Context& ctx, const DecisionRecord& record);
  // `gate_reason`: the reason of the gate the job's record holds it to, when it holds one
  // for this spec ("" otherwise).
  Verdict decide_once(Context& ctx, const std::string& gate_reason);
  // What the verdict means for the job's status: denied, gated, waiting for its pool's
  // measurement, failed for good, or (no result) admitted: the workload step runs.
  Outcome act(Context& ctx, const Verdict& verdict);
  Outcome admitted_or_denied(Context& ctx, commgate::Action action, const std::string& reason,
                             const std::string& message);
  // A job gated for its pool's measurement: what the pool's probe does, in the Probed
  // condition; Failed for good when the pool's probe failed past this job's retries.
  kube::ReconcileResult wait_for_measurement(Context& ctx, const JobDecision& jd);
  // The admitted job's training Service and Job, held to the decision, and the job's
  // phase from the Job's state.
  kube::ReconcileResult run_workload(Context& ctx, const DecisionRecord& record);
  kube::ReconcileResult invalid_spec(Context& ctx, const std::string& message);
  // Phase Failed with condition Failed=True (reason `why`) until the spec changes.
  kube::ReconcileResult fail_for_good(Context& ctx, const std::string& why,
                                      const std::string& message,
                                      const std::string& action = "Probe");
  // Deletes the workload Job `workload` (its pods with it) whose pods the scheduler could
  // not place for --workload-unschedulable-timeout; phase Failed, reason
  // WorkloadUnschedulable.
  void stop_unschedulable_workload(Context& ctx, const nlohmann::json& workload,
                                   const WorkloadState& state);

  // The pods of batch/v1 Job `job` in `ns`, from the cache.
  std::vector<nlohmann::json> pods_of(const nlohmann::json& job, const std::string& ns) const;
  // A job decided from its pool's measurement whose Probed condition still says it waits
  // (its probe collected by another job, or by another replica): Probed=True.
  void settle_probed(Context& ctx, const JobDecision& jd);
  // False when the Job of that name belongs to an earlier TrainingJob of the same name.
  bool ensure_workload(Context& ctx, const DecisionRecord& record);
  // The record of a decision the operator writes, signed when it has a key.
  DecisionRecord record_for(const Context& ctx, const JobDecision& jd) const;
  void patch_decision(Context& ctx, const JobDecision& jd, const DecisionRecord& record);
  // The status step: writes ctx.status when it changed, and counts the decision written.
  void sync_status(Context& ctx);

  JobDecision decide_now(const Context& ctx) const;
  void enter(Context& ctx, Step step);
  void event(const Context& ctx, const std::string& type, const std::string& reason,
             const std::string& action, const std::string& note);
  void count_decision(Context& ctx, const Decision& d, const std::string& policy);

  const kube::Reader& reader_;
  // The API server itself: only to see a Job of the job's name that the cache (watching
  // commgate's own Jobs) does not hold, when creating the workload finds one.
  const kube::Reader& live_reader_;
  kube::Writer& writer_;
  kube::StatusWriter& status_writer_;
  std::function<std::shared_ptr<const Snapshot>()> snapshot_;
  kube::EventRecorder& events_;
  std::function<TimePoint()> now_;
  ReconcilerSettings settings_;
  PolicyCounters counters_;

  // This process's own writes of TrainingJobs (status, decision patch), until the cache
  // shows them (operator/own_writes.h says why): a reconcile reading an older copy waits
  // for the cache instead of acting on it.
  OwnWrites own_writes_;
  // After a write of the TrainingJob (ctx.object is what the API server answered).
  void remember_write(const Context& ctx);

  // The reconciler's metrics (core/metrics.h), families as metrics_text() lists them.
  Registry metrics_;
  Counter& status_writes_;
  void count(const char* family, const char* label, const std::string& value);
};

}  // namespace commgate::op
