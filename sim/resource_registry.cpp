#include "sim/resource_registry.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "sim/version_priority.h"

namespace commgate::sim {
namespace {

const std::vector<std::string> kAllVerbs = {"create", "delete", "deletecollection", "get",
                                            "list",   "patch",  "update",           "watch"};

ResourceInfo builtin(std::string group, std::string version, std::string plural,
                     std::string singular, std::string kind, bool namespaced,
                     std::vector<std::string> short_names = {},
                     std::vector<std::string> categories = {}, bool status = false) {
  ResourceInfo r;
  r.group = std::move(group);
  r.version = std::move(version);
  r.plural = std::move(plural);
  r.singular = std::move(singular);
  r.kind = std::move(kind);
  r.namespaced = namespaced;
  r.short_names = std::move(short_names);
  r.categories = std::move(categories);
  r.verbs = kAllVerbs;
  r.status_subresource = status;
  return r;
}

std::vector<std::string> strings_at(const nlohmann::json& obj, const char* key) {
  std::vector<std::string> out;
  if (obj.contains(key) && obj[key].is_array())
    for (const auto& v : obj[key])
      if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

std::string required_string(const nlohmann::json& obj, const char* key, const char* field) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string() ||
      obj[key].get<std::string>().empty())
    throw std::invalid_argument(std::string(field) + ": Required value");
  return obj[key].get<std::string>();
}

}  // namespace

ResourceRegistry::ResourceRegistry() {
  add(builtin("", "v1", "namespaces", "namespace", "Namespace", false, {"ns"}, {}, true));
  resources_.back().returns_deleted_object = true;
  resources_.back().printer_columns = {
      {{"name", "Status"}, {"type", "string"}, {"jsonPath", ".status.phase"}}};
  add(builtin("", "v1", "nodes", "node", "Node", false, {"no"}, {}, true));
  add(builtin("", "v1", "pods", "pod", "Pod", true, {"po"}, {"all"}, true));
  resources_.back().returns_deleted_object = true;
  // Upstream's pod columns (sim/pod_columns.h computes READY, STATUS and RESTARTS), Age
  // before the wide ones: the pod's address (each has its own on a node with a podCIDR)
  // and node.
  resources_.back().printer_columns = {
      {{"name", "Ready"}, {"type", "string"}, {"compute", "podReady"}},
      {{"name", "Status"}, {"type", "string"}, {"compute", "podStatus"}},
      {{"name", "Restarts"}, {"type", "string"}, {"compute", "podRestarts"}},
      {{"name", "Age"}, {"type", "date"}, {"jsonPath", ".metadata.creationTimestamp"}},
      {{"name", "IP"}, {"type", "string"}, {"priority", 1}, {"jsonPath", ".status.podIP"}},
      {{"name", "Node"}, {"type", "string"}, {"priority", 1}, {"jsonPath", ".spec.nodeName"}}};
  add(builtin("", "v1", "services", "service", "Service", true, {"svc"}, {"all"}, true));
  resources_.back().returns_deleted_object = true;
  add(builtin("", "v1", "configmaps", "configmap", "ConfigMap", true, {"cm"}));
  add(builtin("", "v1", "secrets", "secret", "Secret", true));
  add(builtin("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true, {"sa"}));
  resources_.back().returns_deleted_object = true;
  add(builtin("", "v1", "events", "event", "Event", true, {"ev"}));
  add(builtin("batch", "v1", "jobs", "job", "Job", true, {}, {"all"}, true));
  resources_.back().generation = true;
  // Stored, never run (no CronJob controller): the workload gate reads them (issue #19).
  add(builtin("batch", "v1", "cronjobs", "cronjob", "CronJob", true, {"cj"}, {"all"}, true));
  resources_.back().generation = true;
  add(builtin("coordination.k8s.io", "v1", "leases", "lease", "Lease", true));
  add(builtin("events.k8s.io", "v1", "events", "event", "Event", true, {"ev"}));
  add(builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
              "CustomResourceDefinition", false, {"crd", "crds"}, {}, true));
  resources_.back().returns_deleted_object = true;
  resources_.back().generation = true;
  add(builtin("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
              "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", false));
  resources_.back().generation = true;
  add(builtin("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
              "mutatingwebhookconfiguration", "MutatingWebhookConfiguration", false));
  resources_.back().generation = true;
  // Deployments and their ReplicaSets, run by sim/deployment_controller.* when the sim has
  // nodes; the columns are upstream's but for READY (a "ready/desired" pair upstream
  // computes, not a JSONPath).
  add(builtin("apps", "v1", "deployments", "deployment", "Deployment", true, {"deploy"}, {"all"},
              true));
  resources_.back().generation = true;
  // `kubectl scale deploy` (issue #20 defect 5): the autoscaling/v1 Scale of spec.replicas.
  resources_.back().scale = ScaleSubresource{".spec.replicas", ".status.replicas"};
  resources_.back().printer_columns = {
      {{"name", "Up-to-date"}, {"type", "integer"}, {"jsonPath", ".status.updatedReplicas"}},
      {{"name", "Available"}, {"type", "integer"}, {"jsonPath", ".status.availableReplicas"}}};
  add(builtin("apps", "v1", "replicasets", "replicaset", "ReplicaSet", true, {"rs"}, {"all"},
              true));
  resources_.back().generation = true;
  resources_.back().printer_columns = {
      {{"name", "Desired"}, {"type", "integer"}, {"jsonPath", ".spec.replicas"}},
      {{"name", "Current"}, {"type", "integer"}, {"jsonPath", ".status.replicas"}},
      {{"name", "Ready"}, {"type", "integer"}, {"jsonPath", ".status.readyReplicas"}}};
  // What else the Helm chart installs (tests/chart/chart_sim_test.cpp): stored and served
  // as given.
  add(builtin("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget",
              true, {"pdb"}, {}, true));
  add(builtin("networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy", true,
              {"netpol"}));
  for (const auto& [plural, singular, kind, namespaced] :
       {std::tuple{"clusterroles", "clusterrole", "ClusterRole", false},
        std::tuple{"clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false},
        std::tuple{"roles", "role", "Role", true},
        std::tuple{"rolebindings", "rolebinding", "RoleBinding", true}})
    add(builtin("rbac.authorization.k8s.io", "v1", plural, singular, kind, namespaced));
}

void ResourceRegistry::add(ResourceInfo info) {
  resources_.push_back(std::move(info));
}

std::optional<ResourceInfo> ResourceRegistry::find(const std::string& group,
                                                   const std::string& version,
                                                   const std::string& plural) const {
  for (const auto& r : resources_)
    if (r.group == group && r.version == version && r.plural == plural) return r;
  for (const auto& [name, list] : crds_)
    for (const auto& r : list)
      if (r.group == group && r.version == version && r.plural == plural) return r;
  return std::nullopt;
}

std::optional<ResourceInfo> ResourceRegistry::find_any_version(const std::string& group,
                                                               const std::string& plural) const {
  for (const auto& r : resources_)
    if (r.group == group && r.plural == plural) return r;
  for (const auto& [name, list] : crds_)
    for (const auto& r : list)
      if (r.group == group && r.plural == plural) return r;
  return std::nullopt;
}

std::vector<ResourceInfo> ResourceRegistry::in_group_version(const std::string& group,
                                                             const std::string& version) const {
  std::vector<ResourceInfo> out;
  for (const auto& r : resources_)
    if (r.group == group && r.version == version) out.push_back(r);
  for (const auto& [name, list] : crds_)
    for (const auto& r : list)
      if (r.group == group && r.version == version) out.push_back(r);
  return out;
}

std::vector<std::pair<std::string, std::vector<std::string>>> ResourceRegistry::groups() const {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  auto note = [&out](const ResourceInfo& r) {
    if (r.group.empty()) return;
    auto it =
        std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.first == r.group; });
    if (it == out.end()) {
      out.push_back({r.group, {r.version}});
    } else if (std::find(it->second.begin(), it->second.end(), r.version) == it->second.end()) {
      it->second.push_back(r.version);
    }
  };
  for (const auto& r : resources_) note(r);
  for (const auto& [name, list] : crds_)
    for (const auto& r : list) note(r);
  for (auto& [group, versions] : out) sort_by_version_priority(versions);
  return out;
}

void ResourceRegistry::set_crd(const std::string& crd_name,
                               const std::vector<ResourceInfo>& resources) {
  crds_[crd_name] = resources;
}

void ResourceRegistry::remove_crd(const std::string& crd_name) {
  crds_.erase(crd_name);
}

std::vector<ResourceInfo> resources_from_crd(const nlohmann::json& crd) {
  if (!crd.contains("spec") || !crd["spec"].is_object())
    throw std::invalid_argument("spec: Required value");
  const auto& spec = crd["spec"];
  const std::string group = required_string(spec, "group", "spec.group");
  if (!spec.contains("names") || !spec["names"].is_object())
    throw std::invalid_argument("spec.names: Required value");
  const auto& names = spec["names"];
  const std::string plural = required_string(names, "plural", "spec.names.plural");
  const std::string kind = required_string(names, "kind", "spec.names.kind");
  std::string singular = names.value("singular", "");
  if (singular.empty()) {
    singular = kind;
    std::transform(singular.begin(), singular.end(), singular.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  const std::string scope = spec.value("scope", "Namespaced");
  if (scope != "Namespaced" && scope != "Cluster")
    throw std::invalid_argument("spec.scope: Unsupported value: \"" + scope + "\"");
  if (!spec.contains("versions") || !spec["versions"].is_array() || spec["versions"].empty())
    throw std::invalid_argument("spec.versions: Required value");

  std::vector<ResourceInfo> out;
  for (const auto& v : spec["versions"]) {
    if (!v.is_object() || !v.value("served", false)) continue;
    ResourceInfo r;
    r.group = group;
    r.version = required_string(v, "name", "spec.versions[].name");
    r.plural = plural;
    r.singular = singular;
    r.kind = kind;
    r.namespaced = scope == "Namespaced";
    r.short_names = strings_at(names, "shortNames");
    r.categories = strings_at(names, "categories");
    r.verbs = kAllVerbs;
    r.custom = true;
    r.generation = true;
    if (v.contains("subresources") && v["subresources"].is_object()) {
      const auto& sub = v["subresources"];
      r.status_subresource = sub.contains("status");
      if (sub.contains("scale") && sub["scale"].is_object())
        r.scale = ScaleSubresource{sub["scale"].value("specReplicasPath", ""),
                                   sub["scale"].value("statusReplicasPath", "")};
    }
    if (v.contains("schema") && v["schema"].is_object() &&
        v["schema"].contains("openAPIV3Schema") && v["schema"]["openAPIV3Schema"].is_object())
      r.schema = std::make_shared<const nlohmann::json>(v["schema"]["openAPIV3Schema"]);
    if (v.contains("additionalPrinterColumns") && v["additionalPrinterColumns"].is_array())
      r.printer_columns = v["additionalPrinterColumns"];
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace commgate::sim
