// handle_mutate: see handlers.h.
#include <cstdio>

#include "core/field_errors.h"
#include "core/quantity.h"
#include "core/annotations.h"
#include "webhook/handlers.h"
#include "core/job_decision.h"

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
// exposed communication, over CommPolicy default's 30.0% (measured busbw 0.118 GB/s);
// at 2 nodes 24.9%."
std::string downsize_warning(const Decision& d, const Measurement& m) {
  const StepPrediction* asked = d.prediction_for(d.requested_nodes);
  const StepPrediction* given = d.prediction_for(d.admitted_nodes);
  std::string w = "commgate: spec.numNodes lowered from " + std::to_string(d.requested_nodes) +
                  " to " + std::to_string(d.admitted_nodes);
  if (asked && given) {
    w += ": at " + format_nodes(d.requested_nodes) + " " + format_percent(asked->comm_share) +
         " of each step would be exposed communication, over CommPolicy " + d.policy_name +
         "'s limit (measured all-reduce busbw " + format_gbps(m.link.busbw_bytes_per_s) + "); at " +
         format_nodes(d.admitted_nodes) + " " + format_percent(given->comm_share);
  }
  return w;
}

}  // namespace

AdmissionResponse handle_mutate(const AdmissionRequest& request, const Snapshot& snapshot,
                                TimePoint now, const WebhookConfig& config) {
  if (request.resource.resource != "trainingjobs" || !request.sub_resource.empty())
    return allowed();
  if (request.operation != "CREATE" && request.operation != "UPDATE") return allowed();
  // The operator applies decisions it made itself with the same decide().
  if (request.user_info.username == config.operator_service_account) return allowed();

  TrainingJob job;
  try {
    job = parse_training_job(request.object, ObjectSource::kAdmission);
  } catch (const ValidationError&) {
    return allowed();  // the validating endpoint denies it with every field path
  }
  if (request.operation == "UPDATE") {
    try {
      const TrainingJob old_job = parse_training_job(request.old_object, ObjectSource::kAdmission);
      if (!needs_new_decision(old_job, job)) return allowed();
    } catch (const ValidationError&) {
      // An old object that no longer parses (an older schema): decide the new one afresh.
    }
  }

  const JobDecision jd = decide_for_job(job, snapshot, requester_of(request.user_info), now);
  if (!jd.policy) return allowed();  // validate denies the missing policyRef
  const Decision& d = jd.decision;

  PatchBuilder patch(request.object);
  // Defaults the CRD schema also sets; repeated here for a CRD installed without them.
  patch.default_spec("minNodes", 1);
  patch.default_spec("numProcPerNode", 1);
  patch.default_model("gradientDtype", "fp32");
  std::vector<std::string> warnings;
  switch (d.action) {
    case Action::kDeny:
      return allowed();  // the validating endpoint refuses it with the message
    case Action::kGate:
      patch.set_spec("suspend", true);
      warnings.push_back("commgate: suspended until measured: " + d.message);
      break;
    case Action::kDownsize:
      patch.set_spec("numNodes", d.admitted_nodes);
      patch.annotate(annotation::kRequestedNodes, std::to_string(d.requested_nodes));
      warnings.push_back(downsize_warning(d, *jd.measurement));
      break;
    case Action::kWarn:
      warnings.push_back("commgate: " + d.message);
      break;
    case Action::kAdmit:
      patch.default_spec("suspend", false);
      if (d.reason == reason::kDryRun) warnings.push_back("commgate (dry run): " + d.message);
      break;
  }
  // A request recorded by an earlier downsize no longer describes this spec.
  if (d.action != Action::kDownsize) patch.unannotate(annotation::kRequestedNodes);
  patch.annotate(annotation::kDecision, to_string(d.action));
  patch.annotate(annotation::kReason, d.reason);
  AdmissionResponse response = with_warnings(patched(patch.take()), std::move(warnings));
  response.decision = to_string(d.action);
  response.audit_annotations["decision"] = to_string(d.action);
  response.audit_annotations["reason"] = d.reason;
  return response;
}

}  // namespace commgate::webhook
