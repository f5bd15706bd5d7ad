#include "sim/admission_rules.h"

#include <algorithm>
#include <stdexcept>

namespace commgate::sim {
namespace {

using nlohmann::json;

// A list field of strings holds `value` or "*".
bool lists(const json& rule, const char* field, const std::string& value) {
  if (!rule.contains(field) || !rule[field].is_array()) return false;
  for (const auto& v : rule[field])
    if (v.is_string() && (v == "*" || v == value)) return true;
  return false;
}

bool is_namespace(const AdmissionAttributes& a) {
  return a.resource.group.empty() && a.resource.plural == "namespaces";
}

// "pods/status" -> ("pods", "status"); "*" -> ("*", ""); "*/*" -> ("*", "*").
bool resource_matches(const json& rule, const AdmissionAttributes& a) {
  if (!rule.contains("resources") || !rule["resources"].is_array()) return false;
  for (const auto& entry : rule["resources"]) {
    if (!entry.is_string()) continue;
    const std::string text = entry.get<std::string>();
    const auto slash = text.find('/');
    const std::string res = text.substr(0, slash);
    const std::string sub = slash == std::string::npos ? "" : text.substr(slash + 1);
    if ((res == "*" || res == a.resource.plural) && (sub == "*" || sub == a.subresource))
      return true;
  }
  return false;
}

bool scope_matches(const json& rule, const AdmissionAttributes& a) {
  const std::string scope = rule.value("scope", "*");
  // A Namespace is cluster-scoped although its requests carry its name as namespace.
  if (scope == "Namespaced") return !is_namespace(a) && !a.ns.empty();
  if (scope == "Cluster") return is_namespace(a) || a.ns.empty();
  return true;
}

bool expression_matches(const json& e, const json& labels) {
  const std::string key = e.value("key", "");
  const std::string op = e.value("operator", "");
  const bool has = labels.is_object() && labels.contains(key);
  std::vector<std::string> values;
  if (e.contains("values") && e["values"].is_array())
    for (const auto& v : e["values"])
      if (v.is_string()) values.push_back(v.get<std::string>());
  auto in_values = [&] {
    return has && labels[key].is_string() &&
           std::find(values.begin(), values.end(), labels[key].get<std::string>()) != values.end();
  };
  if (op == "In") return in_values();
  if (op == "NotIn") return !in_values();
  if (op == "Exists") return has;
  if (op == "DoesNotExist") return !has;
  throw std::invalid_argument("\"" + op + "\" is not a valid label selector operator");
}

}  // namespace

bool rules_match(const json& rules, const AdmissionAttributes& a) {
  if (!rules.is_array()) return false;
  for (const auto& rule : rules) {
    if (!rule.is_object()) continue;
    if (lists(rule, "operations", a.operation) && lists(rule, "apiGroups", a.resource.group) &&
        lists(rule, "apiVersions", a.resource.version) && resource_matches(rule, a) &&
        scope_matches(rule, a))
      return true;
  }
  return false;
}

bool label_selector_matches(const json& selector, const json& labels) {
  if (!selector.is_object()) return true;
  if (selector.contains("matchLabels") && selector["matchLabels"].is_object())
    for (const auto& [k, v] : selector["matchLabels"].items())
      if (!labels.is_object() || !labels.contains(k) || labels[k] != v) return false;
  if (selector.contains("matchExpressions") && selector["matchExpressions"].is_array())
    for (const auto& e : selector["matchExpressions"])
      if (!expression_matches(e, labels)) return false;
  return true;
}

bool object_selector_matches(const json& selector, const AdmissionAttributes& a) {
  const bool empty =
      !selector.is_object() ||
      ((!selector.contains("matchLabels") || selector["matchLabels"].empty()) &&
       (!selector.contains("matchExpressions") || selector["matchExpressions"].empty()));
  if (empty) return true;
  auto labels_of = [](const json& obj) {
    if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object())
      return json(nullptr);
    return obj["metadata"].value("labels", json::object());
  };
  const json now = labels_of(a.object), before = labels_of(a.old_object);
  return (!now.is_null() && label_selector_matches(selector, now)) ||
         (!before.is_null() && label_selector_matches(selector, before));
}

bool exempt_from_webhooks(const AdmissionAttributes& a) {
  return a.resource.group == "admissionregistration.k8s.io" &&
         (a.resource.plural == "validatingwebhookconfigurations" ||
          a.resource.plural == "mutatingwebhookconfigurations");
}

namespace {

const json& owner_refs(const json& object) {
  static const json kNone = json::array();
  if (!object.is_object()) return kNone;
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return kNone;
  const auto refs = meta->find("ownerReferences");
  return refs != meta->end() && refs->is_array() ? *refs : kNone;
}

bool blocking(const json& ref) {
  return ref.is_object() && ref.value("blockOwnerDeletion", json(false)) == json(true);
}

// isChangingOwnerReference: any ownerReference on a create; a difference on an update.
bool changes_owner_references(const AdmissionAttributes& a) {
  if (a.old_object.is_null()) return !owner_refs(a.object).empty();
  return owner_refs(a.object) != owner_refs(a.old_object);
}

// newBlockingOwnerDeletionRefs: blocking now, and new (by uid) or not blocking before.
std::vector<json> new_blocking_refs(const AdmissionAttributes& a) {
  std::vector<json> out;
  for (const auto& ref : owner_refs(a.object)) {
    if (!blocking(ref)) continue;
    const json* before = nullptr;
    for (const auto& old : owner_refs(a.old_object))
      if (old.is_object() && old.value("uid", "") == ref.value("uid", "")) before = &old;
    if (!before || !blocking(*before)) out.push_back(ref);
  }
  return out;
}

// admission.NewForbidden: apierrors.NewForbidden(the request's GroupResource, its name, err).
json forbidden(const AdmissionAttributes& a, const std::string& error) {
  std::string name = a.name;
  if (name.empty() && a.object.is_object() && a.object.contains("metadata") &&
      a.object["metadata"].is_object())
    name = a.object["metadata"].value("name", "");
  const std::string resource = a.resource.qualified_plural();
  const std::string message =
      (name.empty() ? resource : resource + " \"" + name + "\"") + " is forbidden: " + error;
  json details = {{"kind", a.resource.plural}};
  if (!name.empty()) details["name"] = name;
  if (!a.resource.group.empty()) details["group"] = a.resource.group;
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
          {"status", "Failure"}, {"message", message}, {"reason", "Forbidden"},
          {"details", details},  {"code", 403}};
}

// The `%v, %v` of the authorizer's reason and error (always <nil> here).
std::string reason_and_error(const Authorization& decision) {
  return decision.reason + ", <nil>";
}

}  // namespace

AdmissionPlugins parse_admission_plugins(const std::string& list) {
  AdmissionPlugins plugins;
  size_t at = 0;
  while (at <= list.size()) {
    size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(at, end - at);
    at = end + 1;
    if (name.empty()) continue;
    if (name == "OwnerReferencesPermissionEnforcement") {
      plugins.owner_references_permission_enforcement = true;
    } else {
      throw std::invalid_argument("admission plugin \"" + name +
                                  "\" is not modelled by the sim (it models "
                                  "OwnerReferencesPermissionEnforcement)");
    }
  }
  return plugins;
}

std::optional<json> owner_references_denial(const AdmissionAttributes& a,
                                            const Authorizer& authorize,
                                            const KindResources& resources_of_kind) {
  if (a.operation != "CREATE" && a.operation != "UPDATE") return std::nullopt;
  if (a.resource.group.empty() && a.resource.plural == "pods" && a.subresource == "status")
    return std::nullopt;  // upstream's whitelist: pod status strategies keep ownerRefs
  if (!changes_owner_references(a)) return std::nullopt;
  // Creating a thing you may create implies the power to own it; changing an existing
  // object's owners needs the power to delete it.
  if (a.operation != "CREATE") {
    RequestAttributes del;
    del.verb = "delete";
    del.ns = a.resource.namespaced ? a.ns : "";
    del.api_group = a.resource.group;
    del.api_version = a.resource.version;
    del.resource = a.resource.plural;
    del.subresource = a.subresource;
    del.name = a.name;
    const Authorization decision = authorize(a.user, del);
    if (!decision.allowed)
      return forbidden(a, "cannot set an ownerRef on a resource you can't delete: " +
                              reason_and_error(decision));
  }
  for (const json& ref : new_blocking_refs(a)) {
    const std::string api_version = ref.value("apiVersion", "");
    const std::string kind = ref.value("kind", "");
    const size_t slash = api_version.find('/');
    const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
    const std::string version =
        slash == std::string::npos ? api_version : api_version.substr(slash + 1);
    std::string mapping_error;
    std::vector<ResourceInfo> resources;
    if (api_version.empty() || std::count(api_version.begin(), api_version.end(), '/') > 1) {
      mapping_error = "unexpected GroupVersion string: " + api_version;
    } else {
      resources = resources_of_kind(group, version, kind);
      if (resources.empty())
        mapping_error = "no matches for kind \"" + kind + "\" in version \"" + api_version + "\"";
    }
    if (!mapping_error.empty())
      return forbidden(a,
                       "cannot set blockOwnerDeletion in this case because cannot find "
                       "RESTMapping for APIVersion " +
                           api_version + " Kind " + kind + ": " + mapping_error);
    for (const ResourceInfo& owner : resources) {
      RequestAttributes update;
      update.verb = "update";
      update.ns = owner.namespaced ? a.ns : "";
      update.api_group = owner.group;
      update.api_version = owner.version;
      update.resource = owner.plural;
      update.subresource = "finalizers";
      update.name = ref.value("name", "");
      const Authorization decision = authorize(a.user, update);
      if (!decision.allowed)
        return forbidden(a,
                         "cannot set blockOwnerDeletion if an ownerReference refers to a resource "
                         "you can't set finalizers on: " +
                             reason_and_error(decision));
    }
  }
  return std::nullopt;
}

}  // namespace commgate::sim
