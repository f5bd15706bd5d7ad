#include "operator/measurement_demand.h"

#include <algorithm>

#include "core/comm_profile.h"
#include "core/field_errors.h"
#include "core/probe_result.h"
#include "core/quantity.h"
#include "operator/conditions.h"
#include "operator/decision_status.h"
#include "operator/object_fields.h"
#include "operator/probe_job.h"

namespace commgate::op {

using nlohmann::json;

Requester trusted_requester(const std::optional<DecisionRecord>& record, RecordVerdict verdict,
                            const RecordAuthenticator* records) {
  if (record && record->requester && records != nullptr && verdict != RecordVerdict::kSpecChanged)
    return *record->requester;
  return {};
}

std::optional<std::string> beyond_probe_reach(const TrainingJob& job, const JobDecision& jd) {
  if (!jd.policy || jd.decision.reason != reason::kExtrapolationTooFar || !jd.measurement)
    return std::nullopt;
  const ProbeSettings& probe = jd.policy->spec.probe;
  const int by_policy = probe_node_count(job.spec.num_nodes, probe);
  // A probe takes no more nodes than the pool has usable (fit_probe_to_pool).
  const bool pool_bound = jd.pool && jd.pool->usable < by_policy;
  const int reach = pool_bound ? std::max(1, jd.pool->usable) : by_policy;
  if (jd.measurement->nodes_probed < reach) return std::nullopt;  // a larger probe helps
  const int k = std::max(1, jd.policy->spec.max_extrapolation);
  const int64_t decidable = static_cast<int64_t>(k) * jd.measurement->nodes_probed;
  if (pool_bound)
    return jd.decision.message + " The pool was probed on " +
           format_nodes(jd.measurement->nodes_probed) + ", all the usable nodes it has, so no " +
           "probe can decide " + format_nodes(job.spec.num_nodes) + ": ask for at most " +
           std::to_string(std::min<int64_t>(decidable, jd.pool->usable)) +
           " nodes, or have an admin add nodes to the pool";
  return jd.decision.message + " The pool was probed on " +
         format_nodes(jd.measurement->nodes_probed) + ", as many as " +
         policy_label(jd.policy->metadata.name) + " lets a probe take (probe.maxNodes " +
         std::to_string(probe.max_nodes) + "), so no probe can decide " +
         format_nodes(job.spec.num_nodes) + ": ask for at most " + std::to_string(decidable) +
         " nodes, or have an admin raise probe.maxNodes or maxExtrapolation";
}

bool is_workload_demand(const std::string& key) {
  return key.rfind(kWorkloadDemandPrefix, 0) == 0;
}

std::string workload_demand_key(const std::string& workload_key) {
  return kWorkloadDemandPrefix + workload_key;
}

std::string workload_key_of_demand(const std::string& demand_key) {
  return demand_key.substr(std::string(kWorkloadDemandPrefix).size());
}

namespace {

// The demand of `job` (a TrainingJob, or the request a Workload stands for) decided as
// `jd`, under the consumer key `key`; nullopt unless gated for a measurement a probe gives.
std::optional<MeasurementDemand> gated_demand_of(const std::string& key, const TrainingJob& job,
                                                 const JobDecision& jd) {
  if (!jd.policy || jd.decision.action != commgate::Action::kGate ||
      !is_measurement_gate(jd.decision.reason) || beyond_probe_reach(job, jd))
    return std::nullopt;
  MeasurementDemand d;
  d.job = key;
  d.ns = job.metadata.namespace_;
  d.created = job.metadata.creation_timestamp.value_or(TimePoint{});
  d.pool = jd.profile_name;
  d.probe_nodes = probe_node_count(job.spec.num_nodes, jd.policy->spec.probe);
  d.procs_per_node = job.spec.num_proc_per_node;
  d.model = job.spec.model;
  d.node_selector = job.spec.node_selector;
  d.hostnames = job.spec.hostnames;
  d.tolerations = job.spec.tolerations;
  d.policy = *jd.policy;
  d.gate_message = jd.decision.message;
  return d;
}

}  // namespace

std::optional<MeasurementDemand> measurement_demand(const json& object, const Snapshot& snapshot,
                                                    const RecordAuthenticator* records,
                                                    TimePoint now) {
  if (!object.is_object() || !detail::meta_string(object, "deletionTimestamp").empty())
    return std::nullopt;
  TrainingJob job;
  try {
    job = parse_training_job(object, ObjectSource::kStored);
  } catch (const ValidationError&) {
    return std::nullopt;
  }
  if (!job.spec.suspend) return std::nullopt;
  const TrainingJobStatus status =
      TrainingJobStatus::from_json(object.value("status", json::object()));
  const StoredCondition* failed = status.conditions.find(condition::kFailed);
  if (failed != nullptr && failed->status == kTrue &&
      failed->observed_generation == detail::generation_of(object))
    return std::nullopt;  // failed for good until the spec changes
  std::optional<DecisionRecord> record = decision_record_of(job);
  if (record && !status.workload_created() && !record_distrust(*record, job, records).empty())
    record.reset();
  const RecordVerdict verdict =
      record ? check_against_record(*record, job.spec) : RecordVerdict::kSpecChanged;
  if (record && record->action != commgate::Action::kGate &&
      (verdict == RecordVerdict::kHolds || verdict == RecordVerdict::kDenied))
    return std::nullopt;
  const JobDecision jd =
      decide_for_job(job, snapshot, trusted_requester(record, verdict, records), now);
  return gated_demand_of(job.metadata.namespace_ + "/" + job.metadata.name, job, jd);
}

std::optional<MeasurementDemand> request_measurement_demand(const std::string& key,
                                                            const TrainingJob& request,
                                                            const Snapshot& snapshot,
                                                            TimePoint now) {
  return gated_demand_of(key, request, decide_for_job(request, snapshot, Requester{}, now));
}

ProbePlan plan_probe(const std::vector<MeasurementDemand>& demands) {
  std::vector<const MeasurementDemand*> by_age;
  for (const MeasurementDemand& d : demands) by_age.push_back(&d);
  std::sort(by_age.begin(), by_age.end(),
            [](const MeasurementDemand* a, const MeasurementDemand* b) {
              return a->created != b->created ? a->created < b->created : a->job < b->job;
            });
  ProbePlan plan;
  plan.lead = *by_age.front();
  std::vector<std::string> signatures = {probe_model_annotation(plan.lead.model)};
  for (const MeasurementDemand* d : by_age) {
    plan.nodes = std::max(plan.nodes, d->probe_nodes);
    plan.attempts_allowed =
        std::max(plan.attempts_allowed, d->policy.spec.retry_strategy.backoff_limit_count + 1);
    if (d->procs_per_node != plan.lead.procs_per_node) continue;
    const std::string signature = probe_model_annotation(d->model);
    if (std::find(signatures.begin(), signatures.end(), signature) == signatures.end()) {
      if (signatures.size() >= static_cast<size_t>(kMaxModelsPerProbe)) continue;
      signatures.push_back(signature);
      plan.also_models.push_back(d->model);
    }
    plan.jobs.push_back(d->job);
  }
  std::sort(plan.jobs.begin(), plan.jobs.end());
  return plan;
}

std::vector<std::string> jobs_served(const std::vector<MeasurementDemand>& demands,
                                     const std::string& annotation) {
  std::vector<std::string> served;
  for (const MeasurementDemand& d : demands)
    if (probe_times_model(annotation, d.model)) served.push_back(d.job);
  std::sort(served.begin(), served.end());
  return served;
}

}  // namespace commgate::op
