// handle_validate: see handlers.h.

#include "core/field_errors.h"
#include "core/quantity.h"
#include "core/training_job.h"
#include "core/annotations.h"
#include "webhook/handlers.h"
#include "core/job_decision.h"

namespace commgate::webhook {
namespace {

using Json = nlohmann::json;

AdmissionResponse with_decision(AdmissionResponse r, std::string decision) {
  r.decision = std::move(decision);
  return r;
}

bool exempt_under_any_policy(const Requester& who, const Snapshot& snapshot) {
  for (const auto& p : snapshot.policies) {
    if (is_exempt(who, p.spec.exemptions)) return true;
  }
  return false;
}

// spec.replicas of an autoscaling/v1 Scale, or nullopt (the message says why).
std::optional<int64_t> scale_replicas(const Json& scale, std::string* why) {
  const Json* replicas = nullptr;
  if (scale.is_object()) {
    if (auto s = scale.find("spec"); s != scale.end() && s->is_object()) {
      if (auto r = s->find("replicas"); r != s->end()) replicas = &*r;
    }
  }
  if (!replicas) {
    // The apiserver omits replicas: 0 (omitempty).
    return 0;
  }
  if (!replicas->is_number_integer()) {
    *why = "spec.replicas: must be an integer, got " + replicas->dump();
    return std::nullopt;
  }
  return replicas->get<int64_t>();
}

// The apiserver sends only the Scale (name, spec.replicas) for trainingjobs/scale, not the
// TrainingJob: no model, no pool, so no decision can be made here. Fewer nodes never
// raise the communication share, so scaling down passes (the operator decides the new
// generation); scaling up must go through spec.numNodes, where the webhook sees the job.
AdmissionResponse validate_scale(const AdmissionRequest& request, const Snapshot& snapshot,
                                 const WebhookConfig& config) {
  if (request.operation != "UPDATE") return allowed();
  std::string why;
  const auto wanted = scale_replicas(request.object, &why);
  if (!wanted) return invalid(why);
  if (*wanted < 1 || *wanted > kMaxNodes) {
    return invalid("spec.replicas: must be between 1 and " + std::to_string(kMaxNodes) + ", got " +
                   std::to_string(*wanted));
  }
  const auto before = scale_replicas(request.old_object, &why).value_or(0);
  if (*wanted <= before) return with_decision(allowed(), "ScaleDown");
  const Requester who = requester_of(request.user_info);
  if (who.username == config.operator_service_account || exempt_under_any_policy(who, snapshot))
    return with_decision(allowed(), "Exempt");
  return with_decision(
      denied("commgate cannot decide a scale-up of TrainingJob " + request.name + " from " +
             std::to_string(before) + " to " + format_nodes(*wanted) +
             " through the scale subresource (it carries no model); change spec.numNodes "
             "instead, e.g. kubectl patch trainingjob " +
             request.name + " --type=merge -p '{\"spec\":{\"numNodes\":" + std::to_string(*wanted) +
             "}}'"),
      "Bypass");
}

AdmissionResponse validate_comm_policy(const AdmissionRequest& request) {
  if (request.operation != "CREATE" && request.operation != "UPDATE") return allowed();
  try {
    parse_comm_policy(request.object);
  } catch (const ValidationError& e) {
    return invalid(e.what());
  }
  return allowed();
}

AdmissionResponse validate_training_job(const AdmissionRequest& request, const Snapshot& snapshot,
                                        TimePoint now, const WebhookConfig& config) {
  TrainingJob job;
  try {
    job = parse_training_job(request.object, ObjectSource::kAdmission);
  } catch (const ValidationError& e) {
    return invalid(e.what());
  }
  const Requester who = requester_of(request.user_info);
  if (who.username == config.operator_service_account) return allowed();

  if (request.operation == "UPDATE") {
    std::optional<TrainingJob> old_job;
    try {
      old_job = parse_training_job(request.old_object, ObjectSource::kAdmission);
    } catch (const ValidationError&) {
      // An old object that no longer parses: decide the new one as if created.
    }
    if (old_job && !needs_new_decision(*old_job, job)) {
      // Nothing the decision depends on changed, so the mutating webhook wrote nothing:
      // a change to commgate's annotations came from the user.
      if (commgate_annotations_changed(*old_job, job)) {
        const JobDecision jd = decide_for_job(job, snapshot, who, now);
        if (jd.policy && jd.decision.reason == reason::kExempt) return allowed();
        return with_decision(
            denied(std::string("metadata.annotations: the ") + annotation::kPrefix +
                   "* annotations record commgate's decision and may be changed only by its "
                   "operator"),
            "Bypass");
      }
      return allowed();
    }
  }

  const JobDecision jd = decide_for_job(job, snapshot, who, now);
  if (!jd.policy) return invalid(jd.policy_error);
  const Decision& d = jd.decision;
  switch (d.action) {
    case Action::kDeny:
      return with_decision(denied(d.message), "Deny");
    case Action::kGate:
      if (!job.spec.suspend) {
        // Only reachable when the mutating webhook did not run (or was bypassed).
        return with_decision(
            denied("spec.suspend: must stay true until commgate has measured this pool: " +
                   d.message),
            "Bypass");
      }
      return with_decision(allowed(), "Gate");
    case Action::kDownsize:
      // The mutating webhook lowers spec.numNodes before this runs, so an over-policy
      // count here means it did not run.
      return with_decision(denied("spec.numNodes: " + d.message), "Bypass");
    case Action::kAdmit:
    case Action::kWarn:
      return with_decision(allowed(), to_string(d.action));
  }
  return allowed();
}

}  // namespace

AdmissionResponse handle_validate(const AdmissionRequest& request, const Snapshot& snapshot,
                                  TimePoint now, const WebhookConfig& config) {
  // Deleting never spends GPUs; CONNECT does not apply to these resources.
  if (request.operation == "DELETE" || request.operation == "CONNECT") return allowed();
  if (request.resource.resource == "commpolicies") return validate_comm_policy(request);
  if (request.resource.resource != "trainingjobs") {
    return denied("commgate does not handle resource \"" + request.resource.resource +
                      "\": check the webhook configuration's rules",
                  400);
  }
  if (request.sub_resource == "scale") return validate_scale(request, snapshot, config);
  if (!request.sub_resource.empty()) return allowed();  // status: the operator's
  return validate_training_job(request, snapshot, now, config);
}

}  // namespace commgate::webhook
