// The reconcile of one TrainingJob (issue #10), level-based: it reads the job by its key
// and runs the named steps that apply to what it finds, each small and each counted in
// the metrics by name:
//
//   read      get the TrainingJob (gone: done), parse it (invalid: condition SpecValid
//             False, terminal error)
//   profile   gated jobs: find or create the pool's CommProfile (pool_name(nodeSelector))
//   probe     no fresh measurement: create the pool's probe Service + Job, create-if-absent
//             under deterministic names (one per pool, across restarts and replicas)
//   collect   read the probe's outcome; record a result in the CommProfile status; on a
//             failure retry with the policy's backoff, then fail the job (never stuck)
//   decide    core's decide_for_job; ONE merge patch of the spec (numNodes, suspend) and
//             the decision annotations (core/decision_record.h decision_annotations);
//             Event Admitted / Downsized / Warned / Denied with the numbers
//   workload  an admitted, unsuspended job: its Service + Job (operator/workload_job.h)
//   status    mirror it all into .status (phase, conditions with observedGeneration,
//             decision, measurement); written only when it changed
//
// Decide once: a job whose decision record holds for its spec (core check_against_record)
// is not decided again; only a gated one is, once it is measured (docs/operator.md).
//
// The state between reconciles lives in the API server only (the job's status and
// annotations, the CommProfile, the probe Job), so a restarted operator or a new leader
// carries on where the last one stopped. Thread-safe: the runner may reconcile different
// keys at once.
//
// Where each part lives: read, the own writes and the metrics in trainingjob_reconciler.cpp;
// the steps in reconcile_profile.cpp, reconcile_probe.cpp (probe and collect),
// reconcile_decide.cpp, reconcile_workload.cpp and reconcile_status.cpp, sharing
// reconcile_context.h (internal). The pure parts have their own headers, included here:
// trainingjob_phases.h (phases, reasons), decision_status.h (status.decision, the Event
// note), probe_retry.h (retry delays), pool_waiters.h (whom a probe wakes).
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
#include "core/snapshot.h"
#include "core/time_format.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/reconcile_result.h"
#include "operator/decision_status.h"
#include "operator/own_writes.h"
#include "operator/policy_counters.h"
#include "operator/pool_locks.h"
#include "operator/pool_waiters.h"
#include "operator/probe_job.h"
#include "operator/probe_outcome.h"
#include "operator/probe_retry.h"
#include "operator/trainingjob_phases.h"
#include "operator/workload_job.h"
#include "operator/workload_state.h"

namespace commgate::op {

struct ReconcilerSettings {
  ProbeLaunchSettings probe;
  WorkloadSettings workload;
  // Requeue while a probe runs (the probe's Job and pods changing also wake the job:
  // trainingjobs_waiting_on_pool).
  std::chrono::milliseconds probe_poll{2000};
  // Signs the decision records the operator writes and checks the records it finds before
  // a workload exists (`--decision-key-file`): one without a valid signature is decided
  // again. Null: records are trusted as they are (docs/security.md "Decision records").
  std::shared_ptr<const RecordAuthenticator> records;
};

class TrainingJobReconciler {
 public:
  // reader: in the operator a cache-backed Reader (informers), in tests the FakeClient.
  // live_reader: the API server itself, for the one read that must not lag: the pool's
  // CommProfile just before a probe is created (exactly one probe per pool).
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

  // The reconciler's metrics in the Prometheus text format:
  //   commgate_operator_reconciles_total{step}        steps run (read, profile, probe,
  //                                                   collect, decide, workload, status)
  //   commgate_operator_reconcile_errors_total{step}  steps that ended in an error (and
  //                                                   step="count": a CommPolicy counter
  //                                                   write that failed, not retried)
  //   commgate_operator_decisions_total{action}       decisions written (Admit, Downsize,
  //                                                   Deny, Warn, Gate)
  //   commgate_operator_probes_created_total          probe Jobs created
  //   commgate_operator_probe_failures_total{reason}  probe attempts that failed
  //   commgate_operator_probe_duration_seconds        summary (_sum, _count): probe Job
  //                                                   creation to its result recorded
  //   commgate_operator_status_writes_total           status writes (skipped when equal)
  std::string metrics_text() const;

  enum class Step { kRead, kProfile, kProbe, kCollect, kDecide, kWorkload, kStatus };
  static const char* to_string(Step step);

 private:
  struct Context;
  struct Metrics {
    std::map<std::string, uint64_t> reconciles, errors, decisions, probe_failures;
    uint64_t probes_created = 0, status_writes = 0, probe_durations = 0;
    double probe_seconds = 0;
  };

  kube::ReconcileResult run(Context& ctx);
  kube::ReconcileResult invalid_spec(Context& ctx, const std::string& message);
  kube::ReconcileResult follow_record(Context& ctx, const DecisionRecord& record);
  kube::ReconcileResult decide_gated(Context& ctx, bool gate_recorded);
  kube::ReconcileResult probe_or_collect(Context& ctx, const JobDecision& jd,
                                         const nlohmann::json& profile);
  kube::ReconcileResult start_probe(Context& ctx, const JobDecision& jd,
                                    const nlohmann::json& profile);
  kube::ReconcileResult collect(Context& ctx, const JobDecision& jd, const nlohmann::json& probe,
                                const ProbeResult& result);
  kube::ReconcileResult probe_failed(Context& ctx, const JobDecision& jd, const std::string& reason,
                                     const std::string& message);
  kube::ReconcileResult apply_decision(Context& ctx, const JobDecision& jd);
  // Phase Failed with condition Failed=True (reason `why`) until the spec changes.
  kube::ReconcileResult fail_for_good(Context& ctx, const std::string& why,
                                      const std::string& message,
                                      const std::string& action = "Probe");
  // Why no probe the policy allows can decide the job (ExtrapolationTooFar after a probe
  // as large as probe.maxNodes lets it be), or nullopt.
  std::optional<std::string> beyond_probe_reach(const Context& ctx, const JobDecision& jd) const;
  kube::ReconcileResult launch_and_sync(Context& ctx, const DecisionRecord& record);
  // Deletes the workload Job `workload` (its pods with it) whose pods the scheduler could
  // not place for --workload-unschedulable-timeout; phase Failed, reason
  // WorkloadUnschedulable.
  void stop_unschedulable_workload(Context& ctx, const nlohmann::json& workload,
                                   const WorkloadState& state);

  ProbeOutcome outcome_of(const nlohmann::json& probe) const;
  // The pods of batch/v1 Job `job` in `ns` (by job-name label, this Job's controller-uid),
  // from the cache or from `reader`.
  std::vector<nlohmann::json> pods_of(const nlohmann::json& job, const std::string& ns) const;
  std::vector<nlohmann::json> pods_of(const nlohmann::json& job, const std::string& ns,
                                      const kube::Reader& reader) const;
  nlohmann::json ensure_profile(Context& ctx, const std::string& pool);
  // The pool's profile when it changed after `seen` was read: this process's last record of
  // it (own_writes_), else the API server's; nullopt when neither is newer.
  std::optional<CommProfile> profile_newer_than(Context& ctx, const std::string& pool,
                                                const nlohmann::json& seen);
  void record_in_profile(Context& ctx, const std::string& pool, const ProbeResult& result);
  // Deletes the probe Job `probe` as read (by its UID: never a newer one of the same
  // name) and, when it was that one, the probe's Service.
  void delete_probe(const nlohmann::json& probe);
  // A job decided from its pool's measurement whose Probed condition still says it waits
  // (its probe collected by another job, or by another replica): Probed=True.
  void settle_probed(Context& ctx, const JobDecision& jd);
  // False when the Job of that name belongs to an earlier TrainingJob of the same name.
  bool ensure_workload(Context& ctx, const DecisionRecord& record);
  // The record of a decision the operator writes, signed when it has a key.
  DecisionRecord record_for(const Context& ctx, const JobDecision& jd) const;
  void patch_decision(Context& ctx, const JobDecision& jd, const DecisionRecord& record);
  void sync_status(Context& ctx);

  JobDecision decide_now(const Context& ctx) const;
  void enter(Context& ctx, Step step);
  void event(const Context& ctx, const std::string& type, const std::string& reason,
             const std::string& action, const std::string& note);
  void count_decision(Context& ctx, const Decision& d, const std::string& policy);

  const kube::Reader& reader_;
  const kube::Reader& live_reader_;
  kube::Writer& writer_;
  kube::StatusWriter& status_writer_;
  std::function<std::shared_ptr<const Snapshot>()> snapshot_;
  kube::EventRecorder& events_;
  std::function<TimePoint()> now_;
  ReconcilerSettings settings_;
  PolicyCounters counters_;

  // This process's own writes, until the cache shows them (operator/own_writes.h says
  // why): the TrainingJobs' (status, decision patch) by resourceVersion, so that a
  // reconcile reading an older copy waits for the cache instead of acting on it; the
  // CommProfiles' (a probe's result recorded) with the object, which is decided from and
  // written on while the cache lags.
  OwnWrites own_writes_;
  // After a write of the TrainingJob (ctx.object is what the API server answered).
  void remember_write(const Context& ctx);

  // The probe step, one pool at a time (operator/pool_locks.h says why).
  PoolLocks pool_locks_;

  mutable std::mutex metrics_mu_;
  Metrics metrics_;
};

}  // namespace commgate::op
