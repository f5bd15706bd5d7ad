#include "webhook/validate_workload.h"

#include <algorithm>

#include "core/decision.h"
#include "core/policy_selection.h"
#include "core/quantity.h"

namespace commgate::webhook {
namespace {

using Json = nlohmann::json;

// The object's controller ownerReference ({apiVersion, kind, name, ...}), or null.
const Json* controller_of(const Json& object) {
  if (!object.is_object()) return nullptr;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return nullptr;
  auto refs = meta->find("ownerReferences");
  if (refs == meta->end() || !refs->is_array()) return nullptr;
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

// A user no namespace's editor can be or act as: a Kubernetes component (system:...) or a
// service account of another namespace (the built-in edit role may impersonate only its
// own namespace's service accounts). Controllers (the Job, CronJob, JobSet and Kubeflow
// controllers) create their children as such users.
bool is_controller_identity(const std::string& username, const std::string& ns) {
  static constexpr std::string_view kServiceAccount = "system:serviceaccount:";
  std::string_view u = username;
  if (!u.starts_with("system:")) return false;
  if (!u.starts_with(kServiceAccount)) return true;
  u.remove_prefix(kServiceAccount.size());
  return u.substr(0, u.find(':')) != ns;
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

// The Job commgate created for a TrainingJob runs the admitted size; only the operator
// changes it (it restores a drift too, operator/reconcile_workload.cpp).
std::optional<AdmissionResponse> hold_training_job_workload(const AdmissionRequest& request,
                                                            const WebhookConfig& config) {
  if (request.operation != "UPDATE" || !owned_by_training_job(request.old_object))
    return std::nullopt;
  if (request.user_info.username == config.operator_service_account) return allowed();
  const Json* old_spec =
      request.old_object.contains("spec") ? &request.old_object["spec"] : nullptr;
  const Json* new_spec = request.object.is_object() && request.object.contains("spec")
                             ? &request.object["spec"]
                             : nullptr;
  for (const char* field : {"parallelism", "completions"}) {
    const Json none;
    const Json& before = old_spec && old_spec->contains(field) ? (*old_spec)[field] : none;
    const Json& after = new_spec && new_spec->contains(field) ? (*new_spec)[field] : none;
    if (before == after) continue;
    const std::string owner = controller_of(request.old_object)->value("name", "");
    return with_decision(
        invalid(std::string("spec.") + field,
                "Job " + request.name + " runs TrainingJob " + owner +
                    " at the size commgate admitted; only commgate changes it (got " +
                    after.dump() + ", was " + before.dump() + "). Change the TrainingJob's " +
                    "spec.numNodes instead (a change after the Job exists needs the job " +
                    "submitted again: docs/researcher.md)"),
        "WorkloadResize");
  }
  return allowed();
}

}  // namespace

AdmissionResponse validate_workload(const AdmissionRequest& request, WorkloadKind kind,
                                    const Snapshot& snapshot, const WebhookConfig& config) {
  if (request.operation != "CREATE" && request.operation != "UPDATE") return allowed();
  if (!request.sub_resource.empty()) return allowed();  // status, and a Job has no scale
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

  // A child its controller created for a parent the gate checked (a JobSet's Jobs, a
  // Job's or a PyTorchJob's pods). A user cannot pass as a controller (see
  // is_controller_identity); a bare pod with a forged ownerReference is one node.
  if (const Json* controller = controller_of(request.object);
      controller && parent_is_checked(*controller) &&
      (kind == WorkloadKind::kPod || is_controller_identity(username, request.namespace_)))
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
                   "spec.unmanagedWorkloads: Deny applies there is unknown; try again in a "
                   "few seconds",
               503),
        "NamespaceUnknown");
  if (is_exempt(requester_of(request.user_info), policy->spec.exemptions))
    return with_decision(allowed(), "Exempt");
  return with_decision(
      denied(what + ": " + policy_label(policy->metadata.name) +
             " (spec.unmanagedWorkloads: Deny) admits multi-node GPU training in namespace " +
             request.namespace_ +
             " only as a TrainingJob, so that its communication share is measured and "
             "decided first; submit it as a TrainingJob (docs/researcher.md), or run it on "
             "one node"),
      "Unmanaged");
}

}  // namespace commgate::webhook
