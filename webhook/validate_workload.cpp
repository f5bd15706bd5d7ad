#include "webhook/validate_workload.h"

#include <algorithm>

#include "core/decision.h"
#include "core/json_access.h"
#include "core/policy_selection.h"
#include "core/quantity.h"

namespace commgate::webhook {
namespace {

using Json = nlohmann::json;

// The object's controller ownerReference ({apiVersion, kind, name, uid, ...}), or null.
const Json* controller_of(const Json& object) {
  const Json* meta = json_member(object, "metadata");
  const Json* refs = meta ? json_member(*meta, "ownerReferences") : nullptr;
  if (!refs || !refs->is_array()) return nullptr;
  for (const Json& r : *refs)
    if (r.is_object() && r.value("controller", false)) return &r;
  return nullptr;
}

std::string group_of(const std::string& api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string::npos ? std::string() : api_version.substr(0, slash);
}

bool owned_by_training_job(const Json& object) {
  const Json* c = controller_of(object);
  return c && c->value("kind", "") == "TrainingJob" &&
         group_of(c->value("apiVersion", "")) == "commgate.io";
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
  const std::string group = group_of(controller.value("apiVersion", ""));
  const std::string kind = controller.value("kind", "");
  if (group == "commgate.io") return kind == "TrainingJob";
  const auto k = workload_kind_of(group, kind);
  return k && *k != WorkloadKind::kPod;
}

std::string accelerators_text(long long n) {
  return std::to_string(n) + (n == 1 ? " GPU" : " GPUs");
}

const Json& label_of(const Json& object, const char* key) {
  static const Json kNone;
  const Json* meta = json_member(object, "metadata");
  const Json* labels = meta ? json_member(*meta, "labels") : nullptr;
  const Json* value = labels ? json_member(*labels, key) : nullptr;
  return value ? *value : kNone;
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
  const std::string owner = controller_of(request.old_object)->value("name", "");
  auto refuse = [&](const std::string& field, const std::string& what) {
    return with_decision(
        invalid(field, "Job " + request.name + " runs TrainingJob " + owner +
                           " at the size commgate admitted; only commgate " + "changes " + what +
                           ". Change the TrainingJob instead (a change after "
                           "its Job exists needs the job submitted again: "
                           "docs/researcher.md)"),
        "WorkloadResize");
  };
  const Json* old_controller = controller_of(request.old_object);
  const Json* new_controller = controller_of(request.object);
  auto same = [&](const char* key) {
    return new_controller->value(key, "") == old_controller->value(key, "");
  };
  if (!new_controller || !same("apiVersion") || !same("kind") || !same("name") || !same("uid"))
    return refuse("metadata.ownerReferences", "its controller reference");
  for (const char* key : {"commgate.io/role", "commgate.io/trainingjob"})
    if (label_of(request.object, key) != label_of(request.old_object, key))
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

// spec.replicas of an autoscaling/v1 Scale (0 when absent: omitempty).
long long scale_replicas(const Json& scale) {
  const Json& r = json_at(scale, {"spec", "replicas"});
  return r.is_number_integer() ? r.get<long long>() : 0;
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
  const long long wanted = scale_replicas(request.object);
  const long long before = scale_replicas(request.old_object);
  if (wanted <= before || wanted <= 1) return with_decision(allowed(), "ScaleDown");
  if (request.user_info.username == config.operator_service_account)
    return with_decision(allowed(), "Managed");
  const bool unknown =
      snapshot.namespaces_listed && !snapshot.namespace_labels.contains(request.namespace_);
  const auto policy = unmanaged_workload_policy(
      unknown ? std::map<std::string, std::string>{} : snapshot.labels_of(request.namespace_),
      snapshot.policies);
  if (!policy && !unknown) return with_decision(allowed(), "Allow");
  if (policy && is_exempt(requester_of(request.user_info), policy->spec.exemptions))
    return with_decision(allowed(), "Exempt");
  const std::string message =
      "PyTorchJob " + request.name + " scaled from " + std::to_string(before) + " to " +
      std::to_string(wanted) +
      " replicas through the scale subresource, which does not show commgate its pods' "
      "GPUs, " +
      (policy ? "and " + policy_label(policy->metadata.name) +
                    " (spec.unmanagedWorkloads: " + to_string(policy->spec.unmanaged_workloads) +
                    ") gates multi-node GPU training in namespace " + request.namespace_
              : "and the labels of namespace " + request.namespace_ +
                    " are not known to commgate yet") +
      "; change spec.pytorchReplicaSpecs instead, where commgate reads the whole job";
  if (policy && policy->spec.unmanaged_workloads == UnmanagedWorkloads::kWarn)
    return with_decision(with_warnings(allowed(), {"commgate: would be refused: " + message}),
                         "WouldRefuse");
  return with_decision(denied(message, unknown && !policy ? 503 : 403), "Unmanaged");
}

AdmissionResponse validate_workload(const AdmissionRequest& request, WorkloadKind kind,
                                    const Snapshot& snapshot, const WebhookConfig& config) {
  if (request.operation != "CREATE" && request.operation != "UPDATE") return allowed();
  if (kind == WorkloadKind::kPyTorchJob && request.sub_resource == "scale")
    return validate_workload_scale(request, snapshot, config);
  if (!request.sub_resource.empty()) return allowed();  // status
  if (kind == WorkloadKind::kJob)
    if (auto held = hold_training_job_workload(request, config)) return *held;

  const std::string& username = request.user_info.username;
  if (username == config.operator_service_account) return with_decision(allowed(), "Managed");

  std::optional<CommPolicy> policy;
  if (snapshot.namespaces_listed && !snapshot.namespace_labels.contains(request.namespace_)) {
    // Its labels, and so its policies, are not known yet (a namespace created a moment
    // ago): the gate fails closed where any policy could switch it on there.
    const bool any_deny =
        std::any_of(snapshot.policies.begin(), snapshot.policies.end(), [](const CommPolicy& p) {
          return p.spec.unmanaged_workloads == UnmanagedWorkloads::kDeny;
        });
    if (!any_deny) return with_decision(allowed(), "Allow");
  } else {
    policy = unmanaged_workload_policy(snapshot.labels_of(request.namespace_), snapshot.policies);
    if (!policy) return with_decision(allowed(), "Allow");
  }

  // A child its controller created for a parent the gate checked (a JobSet's Jobs, a Job's
  // or a PyTorchJob's pods): only a trusted controller's write counts as one, so a forged
  // ownerReference helps no one else.
  if (const Json* controller = controller_of(request.object);
      controller && parent_is_checked(*controller) && is_trusted_controller(username, config))
    return with_decision(allowed(), "Child");

  const WorkloadShape shape = workload_shape(kind, request.object);
  if (!shape.multi_node()) return with_decision(allowed(), "SingleNode");
  if (request.operation == "UPDATE") {
    // Only growth is refused: a workload created before the switch (or by an exempt user)
    // keeps its size through label, finalizer and other updates.
    const WorkloadShape before = workload_shape(kind, request.old_object);
    if (before.multi_node() && shape.accelerated_pods <= before.accelerated_pods &&
        shape.accelerators_per_pod <= before.accelerators_per_pod)
      return with_decision(allowed(), "NotGrown");
  }
  const std::string what = std::string(to_string(kind)) + " " + request.name + " asks for " +
                           format_nodes(shape.accelerated_pods) + " with " +
                           accelerators_text(shape.accelerators_per_pod) + " each at once (" +
                           shape.count_from + ")";
  if (!policy)
    return with_decision(
        denied(what + ", and the labels of namespace " + request.namespace_ +
                   " are not known to commgate yet, so whether a CommPolicy with "
                   "spec.unmanagedWorkloads: deny applies there is unknown; try again in a "
                   "few seconds",
               503),
        "NamespaceUnknown");
  if (is_exempt(requester_of(request.user_info), policy->spec.exemptions))
    return with_decision(allowed(), "Exempt");
  const bool warn_only = policy->spec.unmanaged_workloads == UnmanagedWorkloads::kWarn;
  const std::string message =
      what + ": " + policy_label(policy->metadata.name) +
      " (spec.unmanagedWorkloads: " + to_string(policy->spec.unmanaged_workloads) +
      ") admits multi-node GPU training in namespace " + request.namespace_ +
      " only as a TrainingJob, so that its communication share is measured and decided "
      "first; submit it as a TrainingJob (docs/researcher.md), or run it on one node";
  if (warn_only)
    return with_decision(with_warnings(allowed(), {"commgate: would be refused: " + message}),
                         "WouldRefuse");
  return with_decision(denied(message), "Unmanaged");
}

}  // namespace commgate::webhook
