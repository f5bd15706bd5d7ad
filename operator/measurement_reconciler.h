// The measurement controller (issue #21): one reconcile per pool (its key is the
// CommProfile's name) owns the pool's probe from start to end. Consumers (today the
// TrainingJob reconcile; tomorrow a Kueue admission check) only decide and act: they wait
// for the pool's measurement and read it from the CommProfile.
//
//   demand    the TrainingJobs that wait on the pool (operator/measurement_demand.h),
//             computed from the caches, never written by the jobs
//   profile   the pool's CommProfile, created when a job first waits on the pool
//   probe     at most one probe Job per pool (deterministic name, owned by the
//             CommProfile), sized for the largest node count that waits, timing the
//             oldest waiting job's model; within the pool's backoff and the operator's
//             probe slots
//   collect   a finished probe's result, or its failure (failedAttempts, nextProbeTime,
//             lastFailure), recorded in the CommProfile's status BEFORE the probe is
//             deleted: a write that fails (a 409 after its retries) leaves the probe, and the
//             next reconcile records it; the probe's uid in status.probe.lastProbeUID keeps a
//             copy a lagging cache still shows from being recorded twice
//
// The pool's state for people is the CommProfile's condition Probing (True while a probe
// runs; False with ProbeSucceeded, ProbeQueued, ProbeFailed, ... and a message the waiting
// jobs copy into their Probed condition).
//
// One reconcile per pool at a time (the work queue never hands one key to two workers), so
// no lock per pool; the reconciler reads its own writes of a profile back only once the
// cache has them (it waits for the cache otherwise), so a measurement it recorded is never
// missed and no second probe starts on the stale echo of its own state.
#pragma once

#include <array>
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
#include "core/log.h"
#include "core/metrics.h"
#include "core/snapshot.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/reconcile_result.h"
#include "operator/measurement_demand.h"
#include "operator/own_writes.h"
#include "operator/probe_history.h"
#include "operator/probe_job.h"
#include "operator/probe_outcome.h"

namespace commgate::op {

// The condition of a CommProfile's status that says what its probe does.
inline constexpr const char* kProbingCondition = "Probing";
// Probing=False: no job waits on the pool (after a success or failures, the history is
// kept; failedAttempts restarts).
inline constexpr const char* kReasonNoDemand = "NoJobWaiting";
// How long a pool of named hosts (CommProfile spec.hostnames: one Kueue Workload's
// topology assignment) is kept after its newest measurement once no job waits on it.
inline constexpr std::chrono::hours kHostnamePoolRetention{24};

struct MeasurementSettings {
  ProbeLaunchSettings probe;
  // Requeue while a probe runs (its Job's and pods' changes also wake the pool).
  std::chrono::milliseconds probe_poll{2000};
  // As the TrainingJob reconcile's: a record without a valid signature is not followed
  // when the demand is computed (measurement_demand).
  std::shared_ptr<const RecordAuthenticator> records;
  // The demand of a waiting key with kWorkloadDemandPrefix (a Kueue Workload:
  // operator/kueue_check_reconciler.h workload_measurement_demand) as `snapshot` decides it
  // at `now`, or nullopt. Unset: such keys are not asked (no Kueue check runs).
  std::function<std::optional<MeasurementDemand>(const std::string& key, const Snapshot& snapshot,
                                                 TimePoint now)>
      workload_demand;
  // Each reconcile logs with the pool's name (field `pool`): the probes it creates and the
  // outcomes it records, the profiles it creates and deletes.
  Logger log = Logger::discard();
};

class MeasurementReconciler {
 public:
  // reader: the caches (CommProfiles, the probe Jobs and pods, TrainingJobs).
  // live_reader: the API server, for the reads that must not lag: the probe Jobs of every
  // pool before one is created (the probe slots), a completed probe's pods that the cache
  // has not seen yet, and the profile before a status write (read-modify-write).
  // waiting: the keys ("namespace/name") of the TrainingJobs whose nodeSelector names the
  // pool (the process's index; a superset will do: each is asked measurement_demand), and
  // of the Kueue Workloads that may wait on it (kWorkloadDemandPrefix: each is asked
  // settings.workload_demand).
  // All references must outlive the reconciler.
  MeasurementReconciler(const kube::Reader& reader, const kube::Reader& live_reader,
                        kube::Writer& writer, kube::StatusWriter& status_writer,
                        std::function<std::shared_ptr<const Snapshot>()> snapshot,
                        kube::EventRecorder& events, std::function<TimePoint()> now,
                        std::function<std::vector<std::string>(const std::string&)> waiting,
                        MeasurementSettings settings);

  // pool: a CommProfile's name (pool_name of a nodeSelector).
  kube::ReconcileResult reconcile(const std::string& pool);

  // Prometheus text:
  //   commgate_operator_probes_created_total          probe Jobs created
  //   commgate_operator_probe_failures_total{reason}  probe attempts that failed
  //   commgate_operator_probe_duration_seconds        histogram: probe Job creation to
  //                                                   its outcome recorded
  //   commgate_operator_pool_busbw_gbps{pool}         gauges of each measured pool, from
  //   commgate_operator_pool_latency_seconds{pool}    the snapshot
  //   commgate_operator_pool_measurement_age_seconds{pool}
  // (the pool reconciles themselves: the runner's commgate_operator_measurement_*)
  std::string metrics_text() const;

 private:
  struct Pool;  // one reconcile's state

  kube::ReconcileResult collect(Pool& p, const nlohmann::json& probe);
  kube::ReconcileResult start_probe(Pool& p);
  // The profile's status with `history` and the Probing condition, written when it
  // changed (read-modify-write from the API server, retried on a conflict); the new
  // measurement `result`, when given, recorded too.
  void write_status(Pool& p, const ProbeHistory& history, const std::string& condition_status,
                    const std::string& reason, const std::string& message,
                    const ProbeResult* result = nullptr);
  ProbeOutcome outcome_of(const nlohmann::json& probe) const;
  void delete_probe(const nlohmann::json& probe);
  // An Event on each waiting job the probe serves (at most a few: the Events say the
  // same; the CommProfile's condition is the whole story).
  void tell_jobs(const std::vector<std::string>& jobs, const std::string& type,
                 const std::string& reason, const std::string& note);

  const kube::Reader& reader_;
  const kube::Reader& live_reader_;
  kube::Writer& writer_;
  kube::StatusWriter& status_writer_;
  std::function<std::shared_ptr<const Snapshot>()> snapshot_;
  kube::EventRecorder& events_;
  std::function<TimePoint()> now_;
  std::function<std::vector<std::string>(const std::string&)> waiting_;
  MeasurementSettings settings_;
  // The CommProfiles' status writes of this process, until the cache shows them.
  OwnWrites own_writes_;
  // When each pool's demand was first seen with no probe to serve it (the gather window,
  // ProbeLaunchSettings::gather); forgotten once its probe is created or nobody waits.
  std::mutex gathering_mu_;
  std::map<std::string, TimePoint> gathering_since_;
  // How long until the pool's gather window ends (zero: create the probe now).
  kube::Clock::duration gather_left(const std::string& pool, TimePoint now);
  void stop_gathering(const std::string& pool);

  // The controller's metrics (core/metrics.h); the pools' gauges are a collector of it.
  Registry metrics_;
  Counter& probes_created_;
  Histogram& probe_duration_;
  std::string pool_gauges() const;
  Counter& probe_failures(const std::string& reason);
};

}  // namespace commgate::op
