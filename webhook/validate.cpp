// handle_validate: see handlers.h.

#include <algorithm>

#include "core/annotations.h"
#include "core/decision_record.h"
#include "core/field_errors.h"
#include "core/job_decision.h"
#include "core/label_selector.h"
#include "core/policy_selection.h"
#include "core/quantity.h"
#include "core/training_job.h"
#include "webhook/annotation_edit.h"
#include "webhook/handlers.h"
#include "webhook/validate_workload.h"

namespace commgate::webhook {
namespace {

using Json = nlohmann::json;

// The Scale names no policyRef: the job's policy is, as far as the webhook can tell, the
// one that applies to the namespace. Its exemptions count; those of policies that do not
// apply to the namespace never do.
bool exempt_in_namespace(const Requester& who, const std::string& ns, const Snapshot& snapshot) {
  const CommPolicy policy = governing_policy(snapshot.labels_of(ns), snapshot.policies);
  return is_exempt(who, policy.spec.exemptions);
}

// The apiserver sends only the Scale (name, spec.replicas, status.replicas) for
// trainingjobs/scale, not the TrainingJob: no model, no pool, so no decision can be made
// here. status.replicas is status.admittedNodes (the CRD's statusReplicasPath): once the
// operator admitted a count, the workload keeps it, so another count through the scale
// subresource would be stored and never applied (issue #20 defect 1: the job could then
// only be deleted); it is refused, and a scale back to the admitted count always passes.
// Before that, fewer nodes never raise the communication share, so scaling down passes
// (the operator decides the new generation); scaling up must go through spec.numNodes,
// where the webhook sees the job.
AdmissionResponse validate_scale(const AdmissionRequest& request, const Snapshot& snapshot,
                                 const WebhookConfig& config) {
  if (request.operation != "UPDATE") return allowed();
  std::string why;
  const auto wanted = scale_replicas(request.object, "spec", &why);
  if (!wanted) return invalid("spec.replicas", why);
  if (*wanted < 1 || *wanted > kMaxNodes) {
    return invalid("spec.replicas", "must be between 1 and " + std::to_string(kMaxNodes) +
                                        ", got " + std::to_string(*wanted));
  }
  const auto before = scale_replicas(request.old_object, "spec", &why).value_or(0);
  const auto admitted = scale_replicas(request.old_object, "status", &why).value_or(0);
  const Requester who = requester_of(request.user_info);
  const bool by_operator = who.username == config.operator_service_account;
  if (admitted > 0 && !by_operator) {
    if (*wanted == admitted) return with_decision(allowed(), "ScaleToAdmitted");
    return with_decision(
        invalid("spec.replicas",
                "TrainingJob " + request.name + " was admitted at " + format_nodes(admitted) +
                    " (status.admittedNodes) and its workload keeps that size, so " +
                    format_nodes(*wanted) +
                    " through the scale subresource would never be applied; scale back to " +
                    std::to_string(admitted) +
                    ", or delete the job and submit it again with spec.numNodes " +
                    std::to_string(*wanted)),
        "ScaleAfterAdmission");
  }
  if (*wanted <= before) return with_decision(allowed(), "ScaleDown");
  if (by_operator || exempt_in_namespace(who, request.namespace_, snapshot))
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

// The remedy for a selector that matches no namespace: the labels to add where it asks for
// some (matchLabels, In, Exists), else what to remove (it only excludes: NotIn and
// DoesNotExist match a namespace without those labels).
std::string how_a_namespace_comes_to_match(const LabelSelector& selector) {
  std::string labels;
  for (const auto& [key, value] : selector.match_labels) labels += " " + key + "=" + value;
  for (const auto& r : selector.match_expressions) {
    if (r.op == "In" && !r.values.empty()) labels += " " + r.key + "=" + r.values.front();
    if (r.op == "Exists") labels += " " + r.key + "=VALUE";
  }
  if (!labels.empty())
    return "it governs a namespace once one is labelled so (kubectl label namespace NAME" + labels +
           ")";
  return "it excludes every namespace by its labels (NotIn, DoesNotExist); it governs one "
         "once that namespace loses them (kubectl label namespace NAME KEY-)";
}

// A valid CommPolicy is admitted; one that another policy shadows wherever it could
// apply is admitted with a warning that names that policy, since it can never govern a
// namespace (issue #19: an admin's team policy that a stricter `default` silently
// overruled). Where it is shadowed in today's namespaces only, its status says so.
AdmissionResponse validate_comm_policy(const AdmissionRequest& request, const Snapshot& snapshot,
                                       const WebhookConfig& config) {
  if (request.operation != "CREATE" && request.operation != "UPDATE") return allowed();
  CommPolicy policy;
  try {
    policy = parse_comm_policy(request.object);
  } catch (const ValidationError& e) {
    return invalid(e);
  }
  AdmissionResponse r = allowed();
  // Issue #19 item 5: upstream's edit and admin roles may impersonate the namespace's
  // service accounts, so such an exemption is every editor's of that namespace.
  const auto& accounts = policy.spec.exemptions.service_accounts;
  for (size_t i = 0; i < accounts.size(); ++i) {
    const std::string ns = accounts[i].substr(0, accounts[i].find('/'));
    r.warnings.push_back("commgate: spec.exemptions.serviceAccounts[" + std::to_string(i) + "] " +
                         accounts[i] + ": whoever may impersonate service accounts in " +
                         "namespace " + ns + " (Kubernetes' edit and admin roles may) is " +
                         "exempt through it; prefer users or groups (docs/security.md)");
  }
  // An admin who sets the switch believes the gate is on: say when it cannot be.
  if (policy.spec.unmanaged_workloads != UnmanagedWorkloads::kAllow && !config.workload_gate)
    r.warnings.push_back(
        std::string("commgate: spec.unmanagedWorkloads: ") +
        to_string(policy.spec.unmanaged_workloads) +
        " has no effect: this commgate was installed without the workload gate (the chart's "
        "webhook.workloadGate.enabled), so Job, CronJob, Pod, JobSet and PyTorchJob writes "
        "never reach it (docs/install.md \"What commgate covers\")");
  if (policy.spec.probe.toleration_keys.empty())
    r.warnings.push_back(
        "commgate: spec.probe.tolerationKeys is empty: probes take none of the jobs' "
        "tolerations, so a pool whose nodes are tainted (GPU nodes often are, nvidia.com/gpu) "
        "cannot be probed");
  // #20: an admin's selector with a typo (team: nlpp) was admitted and governed nothing,
  // silently. Only where the webhook watches every Namespace (namespaces_listed): a file
  // of namespace labels may be partial.
  if (snapshot.namespaces_listed && !policy.spec.namespace_selector.empty() &&
      std::none_of(
          snapshot.namespace_labels.begin(), snapshot.namespace_labels.end(),
          [&](const auto& ns) { return policy.spec.namespace_selector.matches(ns.second); }))
    r.warnings.push_back("commgate: CommPolicy " + policy.metadata.name +
                         " selects no namespace today: no namespace's labels match "
                         "spec.namespaceSelector " +
                         label_selector_to_json(policy.spec.namespace_selector).dump() + "; " +
                         how_a_namespace_comes_to_match(policy.spec.namespace_selector));
  if (const auto shadow = never_governs_because(policy, snapshot.policies)) {
    const auto winner =
        std::find_if(snapshot.policies.begin(), snapshot.policies.end(),
                     [&](const CommPolicy& p) { return p.metadata.name == *shadow; });
    r.warnings.push_back("commgate: CommPolicy " + policy.metadata.name +
                         " can never govern a namespace: CommPolicy " + *shadow +
                         " applies to every namespace it selects and wins there with " +
                         why_governs_over(*winner, policy) +
                         " (docs/policy.md \"Which policy governs a namespace\")");
  }
  return r;
}

// The display annotations agree with the record (commgate writes them together), so a
// user cannot relabel a decision while the record stays as it was.
bool annotations_agree(const DecisionRecord& record, const TrainingJob& job) {
  const auto& a = job.metadata.annotations;
  auto value = [&](const char* key) {
    auto it = a.find(key);
    return it == a.end() ? std::string() : it->second;
  };
  return value(annotation::kDecision) == to_string(record.action) &&
         value(annotation::kReason) == record.reason &&
         value(annotation::kRequestedNodes) == std::to_string(record.requested_nodes);
}

// A policyRef that names no usable policy. core's select_policy words its error as
// "spec.policyRef.name: <why>"; the cause carries the field and <why> apart.
AdmissionResponse invalid_policy_ref(const std::string& error) {
  static constexpr std::string_view kField = "spec.policyRef.name";
  std::string_view why = error;
  if (why.starts_with(kField) && why.substr(kField.size()).starts_with(": "))
    why.remove_prefix(kField.size() + 2);
  return invalid(std::string(kField), std::string(why));
}

// What a gated job waits for, by the gate's reason: its pool's measurement, its pool's
// nodes (the trial of 2026-12-05: a PoolTooSmall refusal said "until commgate has
// measured this pool" of a pool measured long before), or its namespace.
std::string unsuspend_refusal(const std::string& reason, const std::string& why) {
  const char* until = reason == reason::kPoolTooSmall       ? "the pool has the nodes it needs"
                      : reason == reason::kNamespaceUnknown ? "commgate sees the job's namespace"
                                                            : "commgate has measured this pool";
  return std::string("spec.suspend: must stay true until ") + until + ": " + why;
}

// The object carries a record for its current spec: hold it to the record, without
// deciding again (another replica, or a measurement that expired since, would decide
// differently; the record is the decision).
AdmissionResponse hold_to_record(const DecisionRecord& record, const TrainingJob& job) {
  switch (check_against_record(record, job.spec)) {
    case RecordVerdict::kDenied:
      return with_decision(denied(record.message), "Deny");
    case RecordVerdict::kUnsuspendedWhileGated:
      return with_decision(denied(unsuspend_refusal(record.reason, record.message)), "Gate");
    case RecordVerdict::kNodesDifferFromRecord:
      return with_decision(
          denied("spec.numNodes: " + std::to_string(job.spec.num_nodes) + " is not the " +
                 format_nodes(record.admitted_nodes) + " commgate admitted for this spec"),
          "Bypass");
    case RecordVerdict::kHolds:
      if (!annotations_agree(record, job)) {
        return with_decision(
            denied(std::string("metadata.annotations: the ") + annotation::kPrefix +
                   "* annotations disagree with the decision record; only "
                   "commgate writes them"),
            "Bypass");
      }
      return with_decision(allowed(), decision_label(to_string(record.action), record.reason));
    case RecordVerdict::kSpecChanged:
      break;
  }
  return allowed();  // not reached: the caller decides when the spec changed
}

// A change of what the decision reads once the training Job exists: its pods and their
// torchrun world size were fixed when it was created, so the change could never be applied
// (and deciding it again would show a decision the running Job does not follow). Refused
// with each changed field and what to do; before the Job exists (Gated, suspended) a
// change is decided again. nullopt: not such a change.
std::optional<AdmissionResponse> refuse_change_of_started_job(const AdmissionRequest& request,
                                                              const TrainingJob& old_job,
                                                              const TrainingJob& job) {
  const Json* status = nullptr;
  if (request.old_object.is_object()) {
    if (auto s = request.old_object.find("status"); s != request.old_object.end()) status = &*s;
  }
  if (!status || !workload_created(*status)) return std::nullopt;
  const std::vector<std::string> fields = decision_fields_changed(old_job.spec, job.spec);
  if (fields.empty()) return std::nullopt;  // e.g. spec.suspend alone
  int nodes = old_job.spec.num_nodes;
  if (auto a = status->find("admittedNodes"); a != status->end() && a->is_number_integer())
    nodes = a->get<int>();
  // Back to the count the workload runs: always allowed (a scale or patch that could not
  // be applied is undone this way; issue #20 defect 1).
  if (fields == std::vector<std::string>{"spec.numNodes"} && job.spec.num_nodes == nodes)
    return std::nullopt;
  const std::string phase = status->value("phase", Json()).is_string()
                                ? status->value("phase", std::string())
                                : std::string();
  if (fields.size() == 1)
    return invalid(fields.front(), spec_change_not_applied_message(nodes, phase, fields));
  FieldErrors errors;
  for (const std::string& f : fields)
    errors.add(f, spec_change_not_applied_message(nodes, phase, {f}));
  return invalid(ValidationError(
      "the spec change of TrainingJob " + request.name + " cannot be applied to its workload",
      std::move(errors)));
}

// No record for this spec (the mutating webhook did not run): decide here.
AdmissionResponse decide_here(const TrainingJob& job, const Snapshot& snapshot,
                              const Requester& who, TimePoint now) {
  const JobDecision jd = decide_for_job(job, snapshot, who, now);
  if (!jd.policy) return invalid_policy_ref(jd.policy_error);
  const Decision& d = jd.decision;
  switch (d.action) {
    case Action::kDeny:
      return with_decision(denied(d.message), "Deny");
    case Action::kGate:
      if (!job.spec.suspend)
        return with_decision(denied(unsuspend_refusal(d.reason, d.message)), "Bypass");
      return with_decision(allowed(), "Gate");
    case Action::kDownsize:
      // The mutating webhook lowers spec.numNodes and records it, so an over-policy count
      // without a record means it did not run.
      return with_decision(denied("spec.numNodes: " + d.message), "Bypass");
    case Action::kAdmit:
    case Action::kWarn:
      return with_decision(allowed(), decision_label(to_string(d.action), d.reason));
  }
  return allowed();
}

AdmissionResponse validate_training_job(const AdmissionRequest& request, const Snapshot& snapshot,
                                        TimePoint now, const WebhookConfig& config) {
  TrainingJob job;
  try {
    job = job_under_admission(request);
  } catch (const ValidationError& e) {
    return invalid(e);
  }
  const Requester who = requester_of(request.user_info);
  if (who.username == config.operator_service_account) return allowed();

  if (request.operation == "UPDATE") {
    try {
      const TrainingJob old_job =
          parse_training_job(request.old_object, ObjectSource::kAdmission, Verbatim::kSkip);
      // Nothing the decision reads changed in this request (a label, the template, or
      // /mutate's own re-decision that came back to the stored spec): nothing to check.
      // /mutate refused any edit of commgate's annotations that came without a spec change.
      if (!needs_new_decision(old_job, job)) {
        const auto record = decision_record_of(job);
        // With a key, the annotations may change here only to a record commgate signed
        // (/mutate's re-decision of a spec that came back to the stored one); anything else
        // is a user's edit that /mutate did not see.
        if (config.records &&
            !(record && record_distrust(*record, job, config.records.get()).empty() &&
              annotations_agree(*record, job))) {
          if (auto refused = refuse_annotation_edit(old_job, job, snapshot, who, now))
            return *refused;
        }
        return with_decision(allowed(), record ? to_string(record->action) : "None");
      }
      if (auto refused = refuse_change_of_started_job(request, old_job, job)) return *refused;
    } catch (const ValidationError&) {
      // An old object that no longer parses: check the new one as if created.
    }
  }
  // A policyRef that names no usable policy is refused whatever the record says.
  if (!job.spec.policy_ref.empty()) {
    std::string error;
    if (!select_policy(job, snapshot, &error)) return invalid_policy_ref(error);
  }
  // A record is held to only when commgate wrote it: with a key, one whose signature does
  // not verify (written or copied by a user past /mutate) is decided here instead.
  if (const auto record = decision_record_of(job);
      record && check_against_record(*record, job.spec) != RecordVerdict::kSpecChanged &&
      record_distrust(*record, job, config.records.get()).empty())
    return hold_to_record(*record, job);
  return decide_here(job, snapshot, who, now);
}

}  // namespace

AdmissionResponse handle_validate(const AdmissionRequest& request, const Snapshot& snapshot,
                                  TimePoint now, const WebhookConfig& config) {
  // Deleting never spends GPUs; CONNECT does not apply to these resources.
  if (request.operation == "DELETE" || request.operation == "CONNECT") return allowed();
  if (request.resource.is_commgate("commpolicies"))
    return with_request_details(validate_comm_policy(request, snapshot, config), request);
  if (request.resource.group != "commgate.io") {
    // The scale subresource's object is a Scale: the resource names the workload.
    if (request.resource.group == "kubeflow.org" && request.resource.resource == "pytorchjobs" &&
        request.sub_resource == "scale")
      return with_request_details(validate_workload_scale(request, snapshot, config), request);
    if (const auto kind = workload_kind_of(request.resource.group, request.kind))
      return with_request_details(validate_workload(request, *kind, snapshot, config), request);
  }
  if (!request.resource.is_commgate("trainingjobs")) {
    const std::string group = request.resource.group.empty() ? "core" : request.resource.group;
    return denied("commgate does not handle resource \"" + request.resource.resource +
                      "\" of API group \"" + group + "\": check the webhook configuration's rules",
                  400);
  }
  if (request.sub_resource == "scale")
    return with_request_details(validate_scale(request, snapshot, config), request);
  if (!request.sub_resource.empty()) return allowed();  // status: the operator's
  return with_request_details(validate_training_job(request, snapshot, now, config), request);
}

AdmissionResponse deny_past_deadline(std::chrono::milliseconds deadline) {
  AdmissionResponse r =
      denied("commgate could not decide within its " + std::to_string(deadline.count()) +
                 " ms deadline; try again (the webhook may be overloaded)",
             503);
  r.decision = "Timeout";
  return r;
}

}  // namespace commgate::webhook
