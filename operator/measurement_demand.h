// What a pool's measurement is asked for by (pure): the TrainingJobs that wait on it, and
// the one probe that serves them (issue #21). The measurement controller computes the
// demand from the jobs as its cache shows them, not from anything the jobs' reconcile
// writes, and the TrainingJob reconcile asks the same questions of one job (so the two
// agree on who waits).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/comm_policy.h"
#include "core/decision_record.h"
#include "core/job_decision.h"
#include "core/snapshot.h"
#include "core/training_job.h"

namespace commgate::op {

// The keys of the consumers that wait on a pool: a TrainingJob's is "namespace/name"; a
// Kueue Workload's (operator/kueue_check_reconciler.h) carries this prefix,
// "kueue-workload:namespace/name", so one list holds both kinds and a probe serves both.
inline constexpr const char* kWorkloadDemandPrefix = "kueue-workload:";
bool is_workload_demand(const std::string& key);
// A Workload's demand key from its store key ("namespace/name"), and back (the key must be
// a workload demand's).
std::string workload_demand_key(const std::string& workload_key);
std::string workload_key_of_demand(const std::string& demand_key);

// One job's wait for its pool's measurement.
struct MeasurementDemand {
  std::string job;  // the consumer's key: "namespace/name", or kWorkloadDemandPrefix + it
  std::string ns;
  TimePoint created{};  // metadata.creationTimestamp: the oldest waiting job leads
  std::string pool;
  int probe_nodes = 0;  // probe_node_count(numNodes, the policy's probe)
  int procs_per_node = 1;
  ModelSpec model;
  std::map<std::string, std::string> node_selector;
  // The pool's hostnames (TrainingJobSpec::hostnames): a Workload's hosts under
  // topology-aware scheduling; empty: every node of the selector.
  std::vector<std::string> hostnames;
  nlohmann::json tolerations = nlohmann::json::array();  // the job's spec.tolerations
  CommPolicy policy;         // the policy that gates it: probe settings, retries, toleration keys
  std::string gate_message;  // the decision's: why it waits
};

// The requester a TrainingJob's decision may count (exemptions): the one a signed record
// for its current spec names, else none. Only a signed record names a requester the
// operator may believe (without a key anyone could write an exempt user there).
Requester trusted_requester(const std::optional<DecisionRecord>& record, RecordVerdict verdict,
                            const RecordAuthenticator* records);

// Why no probe the policy allows can decide the job (ExtrapolationTooFar after a probe as
// large as probe.maxNodes lets it be), or nullopt: the job fails for good with it.
std::optional<std::string> beyond_probe_reach(const TrainingJob& job, const JobDecision& jd);

// The measurement the stored TrainingJob `object` waits for, or nullopt: it is being
// deleted, does not parse, is not suspended, failed for good at its generation, follows a
// decision record that holds (admitted or denied), or is decided (or gated for another
// reason, or beyond any probe's reach) by `snapshot` at `now`.
std::optional<MeasurementDemand> measurement_demand(const nlohmann::json& object,
                                                    const Snapshot& snapshot,
                                                    const RecordAuthenticator* records,
                                                    TimePoint now);

// The measurement that `request` waits for, under the consumer key `key`: the request a
// consumer other than a TrainingJob stands for (a Kueue Workload: its training's node
// count and processes, its pool's nodeSelector, its job's model, spec.policyRef the
// AdmissionCheck's CommPolicy), decided by `snapshot` at `now` as a TrainingJob is.
// nullopt unless it is gated for a measurement a probe can give.
std::optional<MeasurementDemand> request_measurement_demand(const std::string& key,
                                                            const TrainingJob& request,
                                                            const Snapshot& snapshot,
                                                            TimePoint now);

// The one probe a pool's demand gets (probe at most once per pool at a time).
struct ProbePlan {
  // The oldest demand (then by key): its model is timed, its policy's probe settings and
  // toleration keys are the probe's, its namespace takes the probe slot.
  MeasurementDemand lead;
  // The largest probe any demand asks for (each already within its own policy's
  // probe.maxNodes): one link measurement for every count that waits.
  int nodes = 0;
  // The other models that wait (distinct signatures, oldest demand first, each demanded
  // with the lead's processes per node), up to kMaxModelsPerProbe in all: the probe
  // times them after the lead's (issue #21: one probe for the models of a pool's jobs).
  std::vector<ModelSpec> also_models;
  // The jobs this probe serves: those of its models. The others (more models than one
  // probe times, other processes per node) wait for the next probe of the pool.
  std::vector<std::string> jobs;
  // Attempts before the pool stops probing for this demand: the largest
  // retryStrategy.backoffLimitCount + 1 among the demands (each job fails at its own).
  int attempts_allowed = 1;
};

// `demands` must not be empty.
ProbePlan plan_probe(const std::vector<MeasurementDemand>& demands);

// The jobs among `demands` whose model a probe with commgate.io/probe-model `annotation`
// times, sorted.
std::vector<std::string> jobs_served(const std::vector<MeasurementDemand>& demands,
                                     const std::string& annotation);

}  // namespace commgate::op
