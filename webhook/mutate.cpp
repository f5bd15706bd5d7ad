// handle_mutate: see handlers.h.
#include <cstdio>

#include "core/annotations.h"
#include "core/decision_record.h"
#include "core/field_errors.h"
#include "core/job_decision.h"
#include "core/policy_selection.h"
#include "core/quantity.h"
#include "webhook/annotation_edit.h"
#include "webhook/handlers.h"

namespace commgate::webhook {
namespace {

using Json = nlohmann::json;

// Builds the JSON patch for one object: creates spec members and the annotations map
// only when missing, so every op applies to the object the apiserver holds.
class PatchBuilder {
 public:
  explicit PatchBuilder(const Json& object) : object_(object) {}

  void set_spec(const std::string& key, Json value) {
    const Json& spec = object_.at("spec");
    ops_.push_back({spec.contains(key) ? "replace" : "add", "/spec/" + key, std::move(value)});
  }
  void default_spec(const std::string& key, Json value) {
    if (!object_.at("spec").contains(key))
      ops_.push_back({"add", "/spec/" + key, std::move(value)});
  }
  void default_model(const std::string& key, Json value) {
    if (!object_.at("spec").at("model").contains(key))
      ops_.push_back({"add", "/spec/model/" + key, std::move(value)});
  }
  void annotate(const std::string& key, std::string value) {
    static const Json::json_pointer kAnnotations("/metadata/annotations");
    const bool have_map = object_.contains(kAnnotations) && object_.at(kAnnotations).is_object();
    if (!have_map && !annotations_created_) {
      ops_.push_back({"add", "/metadata/annotations", Json::object()});
      annotations_created_ = true;
    }
    if (have_map && object_.at(kAnnotations).value(key, Json()) == value) return;
    ops_.push_back({"add", "/metadata/annotations/" + json_pointer_token(key), std::move(value)});
  }
  void unannotate(const std::string& key) {
    static const Json::json_pointer kAnnotations("/metadata/annotations");
    if (object_.contains(kAnnotations) && object_.at(kAnnotations).is_object() &&
        object_.at(kAnnotations).contains(key)) {
      ops_.push_back({"remove", "/metadata/annotations/" + json_pointer_token(key), nullptr});
    }
  }
  std::vector<JsonPatchOp> take() { return std::move(ops_); }

 private:
  const Json& object_;
  std::vector<JsonPatchOp> ops_;
  bool annotations_created_ = false;
};

// "commgate: spec.numNodes lowered from 8 to 2: at 8 nodes 71.2% of each step would be
// exposed communication, over the built-in default policy's limit (measured busbw 0.118 GB/s);
// at 2 nodes 24.9%."
// A downsize to the pool's size (reason PoolTooSmall) may have no measurement (a policy
// that admits unmeasured jobs): `m` is null then.
std::string downsize_warning(const Decision& d, const Measurement* m) {
  const StepPrediction* asked = d.prediction_for(d.requested_nodes);
  const StepPrediction* given = d.prediction_for(d.admitted_nodes);
  std::string w = "commgate: spec.numNodes lowered from " + std::to_string(d.requested_nodes) +
                  " to " + std::to_string(d.admitted_nodes);
  if (asked && given && m && d.reason != reason::kPoolTooSmall) {
    w += ": at " + format_nodes(d.requested_nodes) + " " + format_percent(asked->comm_share) +
         " of each step would be exposed communication, over " + policy_label(d.policy_name) +
         "'s limit (measured all-reduce busbw " + format_gbps(m->link.busbw_bytes_per_s) +
         "); at " + format_nodes(d.admitted_nodes) + " " + format_percent(given->comm_share);
  } else {
    // No prediction at the requested count (beyond what any allowed probe can decide, or
    // more nodes than the pool has): the decision's message says why and what it kept.
    w += ": " + d.message;
  }
  return w;
}

// Issue #20: an exempt submission over the limit said nothing of it. What the policy would
// have done to the job without the exemption (a downsize, a denial, a warning), said as a
// warning; the exemption's verdict stands. nullopt when the job is within the policy, or
// waits for a measurement either way.
std::optional<std::string> exempt_over_policy_warning(const Decision& d, const TrainingJob& job,
                                                      const Snapshot& snapshot, TimePoint now) {
  const JobDecision without = decide_for_job(job, snapshot, Requester{}, now);
  if (!without.policy) return std::nullopt;
  const Decision& w = without.decision;
  const bool over = w.action == Action::kDownsize || w.action == Action::kDeny ||
                    w.action == Action::kWarn || w.reason == reason::kDryRun;
  if (!over) return std::nullopt;
  const std::string would = w.action == Action::kDownsize
                                ? "downsized to " + format_nodes(w.admitted_nodes)
                            : w.action == Action::kDeny ? "denied"
                                                        : "admitted over the policy";
  return "commgate: " + d.message + "; without the exemption it would be " + would + ": " +
         w.message;
}

// The annotations every decision writes: the decision and reason (printer columns and
// quick reading), the request, and the decision record later checks hold the object to.
void annotate_decision(PatchBuilder& patch, const DecisionRecord& record) {
  for (auto& [key, value] : decision_annotations(record)) patch.annotate(key, std::move(value));
}

// Issue #24: a server-side dry run (`kubectl commgate evaluate`) sees the patched object,
// whose record keeps a message only for Gate and Deny, or, for a Deny, no object at all.
// This warning gives it the whole decision, in the one form cli/kubectl_plugin.cpp
// (dry_run_decision_of) reads back: "commgate: dry run: <Action> (<reason>), <n> nodes
// requested, <m> admitted, CommPolicy \"<name>\": <message>" (<m> 0 for a Gate or a Deny,
// which admit nothing now). Only for dry runs: a real
// submission has its decision in the record, the status and the other warnings.
std::string dry_run_decision_warning(const Decision& d, const std::string& policy_name) {
  return std::string("commgate: dry run: ") + to_string(d.action) + " (" + d.reason + "), " +
         std::to_string(d.requested_nodes) + " nodes requested, " +
         std::to_string(d.action == Action::kDeny || d.action == Action::kGate ? 0
                                                                               : d.admitted_nodes) +
         " admitted, CommPolicy \"" + policy_name + "\": " + d.message;
}

AdmissionResponse with_decision(AdmissionResponse response, const DecisionRecord& record) {
  response.decision = decision_label(to_string(record.action), record.reason);
  response.audit_annotations["decision"] = to_string(record.action);
  response.audit_annotations["reason"] = record.reason;
  return response;
}

}  // namespace

AdmissionResponse handle_mutate(const AdmissionRequest& request, const Snapshot& snapshot,
                                TimePoint now, const WebhookConfig& config) {
  if (!request.resource.is_commgate("trainingjobs") || !request.sub_resource.empty())
    return allowed();
  if (request.operation != "CREATE" && request.operation != "UPDATE") return allowed();
  // The operator applies decisions it made itself with the same decide().
  if (request.user_info.username == config.operator_service_account) return allowed();

  TrainingJob job;
  try {
    job = job_under_admission(request);
  } catch (const ValidationError&) {
    return allowed();  // the validating endpoint denies it with every field path
  }
  const Requester who = requester_of(request.user_info);
  std::optional<TrainingJob> old_job;
  if (request.operation == "UPDATE") {
    try {
      old_job = parse_training_job(request.old_object, ObjectSource::kAdmission, Verbatim::kSkip);
    } catch (const ValidationError&) {
      // An old object that no longer parses (an older schema): decide the new one afresh.
    }
    if (old_job && !needs_new_decision(*old_job, job)) {
      if (auto refused = refuse_annotation_edit(*old_job, job, snapshot, who, now)) return *refused;
      return allowed();
    }
    // The training Job exists: a change of what the decision reads cannot be applied to it,
    // and /validate refuses it with the fields; deciding it here would only rewrite the
    // record (a downsize could even bring numNodes back to the stored count, which
    // /validate would then take for no change).
    if (old_job && request.old_object.is_object() &&
        workload_created(request.old_object.value("status", nlohmann::json())) &&
        !decision_fields_changed(old_job->spec, job.spec).empty())
      return allowed();
  }

  const JobDecision jd = decide_for_job(job, snapshot, who, now);
  if (!jd.policy) return allowed();  // validate denies the missing policyRef
  const Decision& d = jd.decision;
  // The user cleared spec.suspend of a suspended job: if it must still wait, /validate
  // refuses the request with what it waits for, rather than this patch silently
  // suspending it again (a script would take the held job for a running one).
  const bool user_unsuspends = old_job && old_job->spec.suspend && !job.spec.suspend;
  // The job was suspended by commgate's own gate (its record says Gate, or Deny: a stored
  // job is denied only by the operator, after the gate held it for a probe) and the change
  // makes it admissible (numNodes lowered to what the pool has or to the largest count
  // that passes, say): the gate is lifted, as the operator lifts it when it admits a gated
  // job (the trials of 2026-12-05 and -06: a job fixed as its PoolTooSmall or denial
  // message said stayed suspended, Admitted, for ever).
  const std::optional<DecisionRecord> old_record =
      old_job ? decision_record_of(*old_job) : std::nullopt;
  const bool lifts_own_gate =
      old_job && old_job->spec.suspend && job.spec.suspend && old_record &&
      (old_record->action == Action::kGate || old_record->action == Action::kDeny);

  // A change the decision takes back (numNodes raised, then downsized to the stored count
  // again): nothing the decision reads changes, so the generation does not either, and the
  // record and the status the operator wrote for it stand. A new record here would
  // describe a decision the status never shows (the trial of 2026-12-06: annotations said
  // PoolTooSmall for 4 nodes while status.decision kept WithinPolicy for 2).
  if (old_record && d.action == Action::kDownsize) {
    TrainingJobSpec after = job.spec;
    after.num_nodes = d.admitted_nodes;
    if (decision_fields_changed(old_job->spec, after).empty()) {
      PatchBuilder back(request.object);
      back.set_spec("numNodes", d.admitted_nodes);
      return with_warnings(patched(back.take()),
                           {downsize_warning(d, jd.measurement ? &*jd.measurement : nullptr) +
                            "; spec.numNodes stays " + std::to_string(d.admitted_nodes) +
                            " and the job's decision is unchanged"});
    }
  }

  PatchBuilder patch(request.object);
  // Defaults the CRD schema also sets; repeated here for a CRD installed without them.
  patch.default_spec("minNodes", 1);
  patch.default_spec("numProcPerNode", 1);
  patch.default_model("gradientDtype", "fp32");
  std::vector<std::string> warnings;
  // The job named a policy not at least as strict as the one that governs: say which
  // decides instead.
  // (the trial of 2026-12-06: `default`, the built-in default's name here, was warned
  // about as "not at least as strict as" the built-in default itself).
  if (!job.spec.policy_ref.empty() && !policy_ref_names(job.spec.policy_ref, *jd.policy)) {
    warnings.push_back("commgate: spec.policyRef.name: CommPolicy \"" + job.spec.policy_ref +
                       "\" is not at least as strict as \"" + jd.policy->metadata.name +
                       "\" in every field that decides, and \"" + jd.policy->metadata.name +
                       "\" governs namespace \"" + job.metadata.namespace_ +
                       "\"; a policyRef may only tighten, so \"" + jd.policy->metadata.name +
                       "\" decides this job");
  }
  switch (d.action) {
    case Action::kDeny:
      break;  // the validating endpoint refuses it with the record's message
    case Action::kGate:
      if (user_unsuspends) break;
      patch.set_spec("suspend", true);
      warnings.push_back(std::string(d.reason == reason::kNamespaceUnknown
                                         ? "commgate: suspended until commgate sees the namespace: "
                                     : d.reason == reason::kPoolTooSmall
                                         ? "commgate: suspended until the pool has the nodes: "
                                         : "commgate: suspended until measured: ") +
                         d.message);
      break;
    case Action::kDownsize:
      patch.set_spec("numNodes", d.admitted_nodes);
      if (lifts_own_gate) patch.set_spec("suspend", false);
      warnings.push_back(downsize_warning(d, jd.measurement ? &*jd.measurement : nullptr));
      break;
    case Action::kWarn:
      if (lifts_own_gate) patch.set_spec("suspend", false);
      warnings.push_back("commgate: " + d.message);
      break;
    case Action::kAdmit:
      if (lifts_own_gate) patch.set_spec("suspend", false);
      patch.default_spec("suspend", false);
      if (d.reason == reason::kDryRun) warnings.push_back("commgate (dry run): " + d.message);
      if (d.reason == reason::kExempt)
        if (auto w = exempt_over_policy_warning(d, job, snapshot, now)) warnings.push_back(*w);
      break;
  }
  // What would make the requested count pass (issue #24), after the verdict's own line.
  for (const Advice& a : d.advice)
    warnings.push_back("commgate: to run " + std::to_string(d.requested_nodes) +
                       " nodes: " + a.text);
  // First: kube-apiserver keeps at most 4 KiB of warnings (warning.go's recorder drops the
  // ones past it, last first), and the plugin needs this one whole.
  if (request.dry_run)
    warnings.insert(warnings.begin(), dry_run_decision_warning(d, jd.policy->metadata.name));
  DecisionRecord record = record_of(jd, job, now);
  // The operator decides this one later, without the request: it needs the requester's
  // exemptions (issue #19: an exempt user's job gated NamespaceUnknown lost them).
  if (d.reason == reason::kNamespaceUnknown) record.requester = who;
  if (config.records) config.records->sign(record, record_subject(job.metadata));
  annotate_decision(patch, record);
  return with_decision(with_warnings(patched(patch.take()), std::move(warnings)), record);
}

AdmissionResponse gate_past_deadline(const AdmissionRequest& request, TimePoint now,
                                     std::chrono::milliseconds deadline,
                                     const RecordAuthenticator* records) {
  if (!request.resource.is_commgate("trainingjobs") || !request.sub_resource.empty() ||
      (request.operation != "CREATE" && request.operation != "UPDATE"))
    return allowed();
  TrainingJob job;
  try {
    job = job_under_admission(request);
  } catch (const ValidationError&) {
    return allowed();  // the validating endpoint denies it with every field path
  }
  DecisionRecord record;
  record.action = Action::kGate;
  record.reason = reason::kDecisionTimeout;
  record.requested_nodes = record.admitted_nodes = job.spec.num_nodes;
  record.policy = {"", ""};
  record.decided_at = now;
  record.spec_hash = decision_spec_hash(job.spec);
  record.message = "commgate could not decide within its " + std::to_string(deadline.count()) +
                   " ms deadline; the job is suspended until the operator decides it";
  record.requester = requester_of(request.user_info);
  if (records) records->sign(record, record_subject(job.metadata));
  PatchBuilder patch(request.object);
  patch.set_spec("suspend", true);
  annotate_decision(patch, record);
  return with_decision(
      with_warnings(patched(patch.take()), {"commgate: suspended: " + record.message}), record);
}

}  // namespace commgate::webhook
