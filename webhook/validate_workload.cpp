#include "webhook/validate_workload.h"

#include <algorithm>

#include "core/decision.h"
#include "core/json_access.h"
#include "core/kueue_queues.h"
#include "core/policy_selection.h"
#include "core/quantity.h"

namespace commgate::webhook {
namespace {

using Json = nlohmann::json;

std::string group_of(const std::string& api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string::npos ? std::string() : api_version.substr(0, slash);
}

bool owned_by_training_job(const Json& object) {
  const Json* c = controller_reference(object);
  return c && json_string(*c, {"kind"}) == "TrainingJob" &&
         group_of(json_string(*c, {"apiVersion"})) == "commgate.io";
}

// A Kubernetes component or a controller the admin named (WebhookConfig
// workload_controllers): what creates the children of a checked parent (a Job's pods, a
// JobSet's Jobs), and what the garbage collector acts as. No namespace's editor can be one:
// kube-system's service accounts and `system:` users are not theirs to impersonate, and an
// admin lists only controllers' accounts. (Any other namespace's service account is not
// enough: someone with rights in two namespaces could write as one of them.)
bool is_trusted_controller(const std::string& username, const WebhookConfig& config) {
  static constexpr std::string_view kServiceAccount = "system:serviceaccount:";
  const std::string_view u = username;
  if (!u.starts_with("system:")) return false;
  if (!u.starts_with(kServiceAccount)) return true;  // system:kube-controller-manager, ...
  const std::string_view account = u.substr(kServiceAccount.size());  // ns:name
  if (account.starts_with("kube-system:")) return true;
  const auto colon = account.find(':');
  if (colon == std::string_view::npos) return false;
  const std::string listed =
      std::string(account.substr(0, colon)) + "/" + std::string(account.substr(colon + 1));
  return std::find(config.workload_controllers.begin(), config.workload_controllers.end(),
                   listed) != config.workload_controllers.end();
}

// Kinds whose children the gate leaves to the parent: the parent was checked when it was
// written (a TrainJob's JobSet is not such a child: TrainJob is not read, so its JobSet is).
bool parent_is_checked(const Json& controller) {
  const std::string group = group_of(json_string(controller, {"apiVersion"}));
  const std::string kind = json_string(controller, {"kind"});
  if (group == "commgate.io") return kind == "TrainingJob";
  const auto k = workload_kind_of(group, kind);
  return k && *k != WorkloadKind::kPod;
}

std::string accelerators_text(long long n) {
  return std::to_string(n) + (n == 1 ? " GPU" : " GPUs");
}

// The Job commgate created for a TrainingJob runs the admitted size; only the operator
// changes it (it restores a drift too, operator/reconcile_workload.cpp). What marks the
// Job as commgate's (its controller reference, its commgate.io/ labels) stays too: removed
// first, the Job would no longer be held in a second write.
std::optional<AdmissionResponse> hold_training_job_workload(const AdmissionRequest& request,
                                                            const WebhookConfig& config) {
  if (request.operation != "UPDATE" || !owned_by_training_job(request.old_object))
    return std::nullopt;
  const std::string& username = request.user_info.username;
  if (username == config.operator_service_account || is_trusted_controller(username, config))
    return allowed();
  const Json* old_controller = controller_reference(request.old_object);
  const std::string owner = json_string(*old_controller, {"name"});
  auto refuse = [&](const std::string& field, const std::string& what) {
    return with_decision(
        invalid(field, "Job " + request.name + " runs TrainingJob " + owner +
                           " at the size commgate admitted; only commgate " + "changes " + what +
                           ". Change the TrainingJob instead (a change after "
                           "its Job exists needs the job submitted again: "
                           "docs/researcher.md)"),
        "WorkloadResize");
  };
  const Json* new_controller = controller_reference(request.object);
  auto same = [&](const char* key) {
    return json_string(*new_controller, {key}) == json_string(*old_controller, {key});
  };
  if (!new_controller || !same("apiVersion") || !same("kind") || !same("name") || !same("uid"))
    return refuse("metadata.ownerReferences", "its controller reference");
  for (const char* key : {"commgate.io/role", "commgate.io/trainingjob"})
    if (json_at(request.object, {"metadata", "labels", key}) !=
        json_at(request.old_object, {"metadata", "labels", key}))
      return refuse(std::string("metadata.labels[") + key + "]", "its commgate.io/ labels");
  const Json* old_spec = json_member(request.old_object, "spec");
  const Json* new_spec = json_member(request.object, "spec");
  for (const char* field : {"parallelism", "completions"}) {
    const Json none;
    const Json* before = old_spec ? json_member(*old_spec, field) : nullptr;
    const Json* after = new_spec ? json_member(*new_spec, field) : nullptr;
    const Json& b = before ? *before : none;
    const Json& a = after ? *after : none;
    if (b == a) continue;
    return refuse(std::string("spec.") + field,
                  "its size (got " + a.dump() + ", was " + b.dump() + ")");
  }
  return allowed();
}

// Whether the gate is on in a namespace, and which policy switched it on there.
struct NamespaceGate {
  std::optional<CommPolicy> policy;
  // The namespace is not in the cache yet (created a moment ago), so its labels and
  // policies are unknown, while some policy denies: the gate fails closed there.
  bool unknown = false;
  bool on() const { return policy.has_value() || unknown; }
};

NamespaceGate gate_in(const std::string& ns, const Snapshot& snapshot) {
  NamespaceGate gate;
  if (snapshot.namespaces_listed && !snapshot.namespace_labels.contains(ns)) {
    gate.unknown =
        std::any_of(snapshot.policies.begin(), snapshot.policies.end(), [](const CommPolicy& p) {
          return p.spec.unmanaged_workloads == UnmanagedWorkloads::kDeny;
        });
  } else {
    gate.policy = unmanaged_workload_policy(snapshot.labels_of(ns), snapshot.policies);
  }
  return gate;
}

// Whether the workload is suspended (true), running (false), or of a kind the gate does
// not read a suspension of (nullopt: CronJobs' spec.suspend stops schedules, not jobs;
// Pods have none). What Kueue sets on a queued job and clears when it admits it.
std::optional<bool> suspended(WorkloadKind kind, const Json& object) {
  const Json* flag = nullptr;
  switch (kind) {
    case WorkloadKind::kJob:
    case WorkloadKind::kJobSet:
      flag = &json_at(object, {"spec", "suspend"});
      break;
    case WorkloadKind::kPyTorchJob:
      flag = &json_at(object, {"spec", "runPolicy", "suspend"});
      break;
    case WorkloadKind::kCronJob:
    case WorkloadKind::kPod:
      return std::nullopt;
  }
  return flag->is_boolean() && flag->get<bool>();
}

const char* suspend_field(WorkloadKind kind) {
  return kind == WorkloadKind::kPyTorchJob ? "spec.runPolicy.suspend" : "spec.suspend";
}

// Whether a job is on commgate's Kueue route: queued to a LocalQueue whose ClusterQueue
// runs commgate's admission check (core/kueue_queues.h), naming its model, so that Kueue
// starts it only once commgate decided its Workload Ready. Whether it is suspended is the
// caller's question.
struct KueueRoute {
  bool on = false;
  std::string why_not;  // for a refusal; "" when on, or when it names no queue at all
};

KueueRoute kueue_route(const Json& object, const std::string& ns, const Snapshot& snapshot,
                       bool by_controller) {
  const std::string queue = json_string(object, {"metadata", "labels", kKueueQueueNameLabel});
  std::string prebuilt =
      json_string(object, {"metadata", "annotations", kKueuePrebuiltWorkloadLabel});
  if (prebuilt.empty())
    prebuilt = json_string(object, {"metadata", "labels", kKueuePrebuiltWorkloadLabel});
  // The queue of a prebuilt Workload is that Workload's spec.queueName, which this webhook
  // does not see: the job's label could name a checked queue while the Workload names
  // another. Only Kueue's own controllers (MultiKueue's identity on a worker cluster,
  // --workload-controller) create such jobs here; they built the Workload too.
  if (!prebuilt.empty() && !by_controller)
    return {false, "it names a prebuilt Kueue Workload " + ns + "/" + prebuilt + " (label " +
                       std::string(kKueuePrebuiltWorkloadLabel) +
                       " or annotation), whose queue commgate cannot see from the job; only "
                       "Kueue's controllers "
                       "(--workload-controller) may create or change such a job here. Remove it, "
                       "so that Kueue builds the job's Workload from its " +
                       std::string(kKueueQueueNameLabel) + " label"};
  if (queue.empty()) return {};
  const std::string local_queue = "it is queued to LocalQueue " + ns + "/" + queue;
  if (!snapshot.kueue_queues)
    return {false, local_queue +
                       ", but this webhook does not watch Kueue's queues (commgate webhook "
                       "--kueue, the chart's kueue.enabled), or has not listed them yet"};
  const KueueQueue* q = snapshot.kueue_queues->find(ns, queue);
  if (!q) return {false, local_queue + ", which does not exist"};
  if (!q->checked) return {false, local_queue + ", but " + q->why_not};
  // Without its model commgate's check measures nothing (withoutModel: Ready admits it
  // unchecked): the gate asks for what the check needs.
  // The Namespace's annotation is the job's default (operator/kueue_model_annotations.h).
  if (json_string(object, {"metadata", "annotations", kKueueParametersAnnotation}).empty() &&
      !snapshot.commgate_annotations_of(ns).contains(kKueueParametersAnnotation))
    return {false, local_queue + ", but names no model (annotation " +
                       std::string(kKueueParametersAnnotation) +
                       " on the job or, as a default, on Namespace " + ns +
                       ", with commgate.io/gradient-dtype, commgate.io/batch-size and "
                       "commgate.io/optimizer: docs/kueue.md), so commgate's check could not "
                       "measure it"};
  return {true, ""};
}

// The queue label and the commgate.io/ annotations (the model the check reads): what an
// update may not change on a suspended job to take it off the route.
Json route_fields(const Json& object) {
  Json fields = {{"queue", json_at(object, {"metadata", "labels", kKueueQueueNameLabel})},
                 {"prebuilt", json_at(object, {"metadata", "labels", kKueuePrebuiltWorkloadLabel})},
                 {"prebuilt-annotation",
                  json_at(object, {"metadata", "annotations", kKueuePrebuiltWorkloadLabel})},
                 {"annotations", Json::object()}};
  const Json& annotations = json_at(object, {"metadata", "annotations"});
  if (annotations.is_object())
    for (auto it = annotations.begin(); it != annotations.end(); ++it)
      if (it.key().rfind("commgate.io/", 0) == 0) fields["annotations"][it.key()] = it.value();
  return fields;
}

// A refusal by `policy`, or under its warn the admission with the same words as a warning.
AdmissionResponse refuse_or_warn(const CommPolicy& policy, const std::string& message) {
  if (policy.spec.unmanaged_workloads == UnmanagedWorkloads::kWarn)
    return with_decision(with_warnings(allowed(), {"commgate: would be refused: " + message}),
                         "WouldRefuse");
  return with_decision(denied(message), "Unmanaged");
}

}  // namespace

// pytorchjobs/scale (`kubectl scale pytorchjob`, a HorizontalPodAutoscaler): the API
// server sends only the Scale, not the PyTorchJob, so its pods' GPUs are unknown here. A
// scale-up to more than one replica is refused where the gate is on (under warn: admitted
// with the warning); the same change through spec.pytorchReplicaSpecs is read as any other.
// A controller's write counts as the user's here: the HPA controller (kube-system) scales
// what a user's HorizontalPodAutoscaler tells it to.
AdmissionResponse validate_workload_scale(const AdmissionRequest& request, const Snapshot& snapshot,
                                          const WebhookConfig& config) {
  if (request.operation != "UPDATE") return allowed();
  std::string why;
  const auto wanted = scale_replicas(request.object, "spec", &why);
  if (!wanted) return invalid("spec.replicas", why);
  const int64_t before = scale_replicas(request.old_object, "spec", &why).value_or(0);
  if (*wanted <= before || *wanted <= 1) return with_decision(allowed(), "ScaleDown");
  if (request.user_info.username == config.operator_service_account)
    return with_decision(allowed(), "Managed");
  const NamespaceGate gate = gate_in(request.namespace_, snapshot);
  if (!gate.on()) return with_decision(allowed(), "Allow");
  if (gate.policy && is_exempt(requester_of(request.user_info), gate.policy->spec.exemptions))
    return with_decision(allowed(), "Exempt");
  const std::string scaled = "PyTorchJob " + request.name + " scaled from " +
                             std::to_string(before) + " to " + std::to_string(*wanted) +
                             " replicas through the scale subresource, which does not show "
                             "commgate its pods' GPUs, and ";
  const std::string instead =
      "; change spec.pytorchReplicaSpecs instead, where commgate reads the whole job";
  if (!gate.policy)
    return with_decision(denied(scaled + "the labels of namespace " + request.namespace_ +
                                    " are not known to commgate yet" + instead,
                                503),
                         "NamespaceUnknown");
  return refuse_or_warn(
      *gate.policy,
      scaled + policy_label(gate.policy->metadata.name) +
          " (spec.unmanagedWorkloads: " + to_string(gate.policy->spec.unmanaged_workloads) +
          ") gates multi-node GPU training in namespace " + request.namespace_ + instead);
}

AdmissionResponse validate_workload(const AdmissionRequest& request, WorkloadKind kind,
                                    const Snapshot& snapshot, const WebhookConfig& config) {
  if (request.operation != "CREATE" && request.operation != "UPDATE") return allowed();
  // status (pytorchjobs/scale comes as a Scale: validate_workload_scale)
  if (!request.sub_resource.empty()) return allowed();
  if (kind == WorkloadKind::kJob)
    if (auto held = hold_training_job_workload(request, config)) return *held;

  const std::string& username = request.user_info.username;
  if (username == config.operator_service_account) return with_decision(allowed(), "Managed");

  const NamespaceGate gate = gate_in(request.namespace_, snapshot);
  if (!gate.on()) return with_decision(allowed(), "Allow");

  // A child its controller created for a parent the gate checked (a JobSet's Jobs, a Job's
  // or a PyTorchJob's pods): only a trusted controller's write counts as one, so a forged
  // ownerReference helps no one else.
  const bool by_controller = is_trusted_controller(username, config);
  const Json* controller = controller_reference(request.object);
  const bool checked_parent = controller && parent_is_checked(*controller);
  if (checked_parent && by_controller) return with_decision(allowed(), "Child");

  const WorkloadShape shape = workload_shape(kind, request.object);
  if (!shape.multi_node()) return with_decision(allowed(), "SingleNode");
  // Anyone else's write that names such a controller itself, creating the workload or
  // changing that reference, is forging a child: the controller would start it later as
  // its own, unchecked (the attacker review of 2026-12-06: a queued Job naming a running
  // JobSet as its controller, which Kueue left to the JobSet and the JobSet controller
  // resumed).
  const Json* old_controller =
      request.operation == "UPDATE" ? controller_reference(request.old_object) : nullptr;
  const bool forged_child = checked_parent && !(old_controller && *old_controller == *controller);
  // Kueue (--kueue): a suspended job on commgate's route waits for commgate's check.
  const KueueRoute route = kueue_route(request.object, request.namespace_, snapshot, by_controller);
  const bool now_suspended = suspended(kind, request.object) == true;
  if (route.on && now_suspended && !forged_child) return with_decision(allowed(), "KueueChecked");
  std::string kueue_why = route.why_not;
  if (route.on && request.operation == "CREATE")
    kueue_why = "it is queued to LocalQueue " + request.namespace_ + "/" +
                json_string(request.object, {"metadata", "labels", kKueueQueueNameLabel}) +
                ", but is not suspended (" + suspend_field(kind) +
                "): Kueue's webhook suspends a queued job when it is created, and only Kueue "
                "starts it";
  // A suspended job started: only Kueue does that to a queued job, once it admits it (a
  // trusted controller, --workload-controller), and only one still on the route: by
  // anyone else, or off the route, it would start a job the gate let through suspended,
  // or one created before the switch, undecided.
  const bool resumed = request.operation == "UPDATE" &&
                       suspended(kind, request.old_object) == true && !now_suspended;
  if (resumed && by_controller && route.on) return with_decision(allowed(), "ResumedByController");
  // A suspended job taken off the route by an update (another queue, a queue without the
  // check, its model annotations changed or gone) would be admitted by Kueue undecided.
  const bool left_route = request.operation == "UPDATE" && now_suspended &&
                          route_fields(request.old_object) != route_fields(request.object);
  if (request.operation == "UPDATE" && !resumed && !left_route && !forged_child) {
    // Only growth is refused: a workload created before the switch (or by an exempt user)
    // keeps its size through label, finalizer and other updates.
    const WorkloadShape before = workload_shape(kind, request.old_object);
    if (before.multi_node() && shape.accelerated_pods <= before.accelerated_pods &&
        shape.accelerators_per_pod <= before.accelerators_per_pod)
      return with_decision(allowed(), "NotGrown");
  }
  std::string what = std::string(to_string(kind)) + " " + request.name + " asks for " +
                     format_nodes(shape.accelerated_pods) + " with " +
                     accelerators_text(shape.accelerators_per_pod) + " each at once (" +
                     shape.count_from + ")";
  if (resumed && !by_controller)
    what += " and is started (" + std::string(suspend_field(kind)) + " false) by " + username +
            ", while only Kueue's controller starts a suspended job here";
  if (resumed && by_controller)
    what += " and is started (" + std::string(suspend_field(kind)) + " false) by " + username +
            (kueue_why.empty() ? ", but it is not queued to a Kueue LocalQueue whose ClusterQueue "
                                 "runs commgate's admission check"
                               : "");
  if (forged_child)
    what += " and names " + json_string(*controller, {"kind"}) + " " +
            json_string(*controller, {"name"}) +
            " as its controller (metadata.ownerReferences), which only that kind's controller "
            "(--workload-controller) may write: that controller would start it as its own "
            "child, unchecked";
  if (left_route)
    what += " and is changed while suspended (its " + std::string(kKueueQueueNameLabel) + " or " +
            std::string(kKueuePrebuiltWorkloadLabel) + " label, or its commgate.io/ annotations)";
  if (!kueue_why.empty()) what += "; " + kueue_why;
  if (!gate.policy)
    return with_decision(
        denied(what + ", and the labels of namespace " + request.namespace_ +
                   " are not known to commgate yet, so whether a CommPolicy with "
                   "spec.unmanagedWorkloads: deny applies there is unknown; try again in a "
                   "few seconds",
               503),
        "NamespaceUnknown");
  const CommPolicy& policy = *gate.policy;
  if (is_exempt(requester_of(request.user_info), policy.spec.exemptions))
    return with_decision(allowed(), "Exempt");
  return refuse_or_warn(
      policy, what + ": " + policy_label(policy.metadata.name) +
                  " (spec.unmanagedWorkloads: " + to_string(policy.spec.unmanaged_workloads) +
                  ") admits multi-node GPU training in namespace " + request.namespace_ +
                  (snapshot.kueue_queues
                       ? " only as a TrainingJob, or queued (suspended) to a Kueue LocalQueue "
                         "whose ClusterQueue runs commgate's admission check, so that its "
                         "communication share is measured and decided first; submit it as a "
                         "TrainingJob (docs/researcher.md), queue it there (docs/kueue.md), or "
                         "run it on one node"
                       : " only as a TrainingJob, so that its communication share is measured and "
                         "decided first; submit it as a TrainingJob (docs/researcher.md), or run "
                         "it on one node"));
}

}  // namespace commgate::webhook
