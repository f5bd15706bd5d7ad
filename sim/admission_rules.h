// Which admission webhooks a request goes to, by kube-apiserver's rules
// (k8s.io/apiserver pkg/admission/plugin/webhook: rules.Matcher, namespace and object
// matchers): operations, apiGroups, apiVersions, resources with subresources ("*",
// "*/*", "pods/status", "trainingjobs/scale"), scope, namespaceSelector, objectSelector.
// Pure functions over the request's attributes and a webhook's JSON. Also the one
// built-in admission plugin the sim runs besides the namespace check:
// OwnerReferencesPermissionEnforcement.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/authentication.h"
#include "sim/rbac_authorizer.h"
#include "sim/resource.h"

namespace commgate::sim {

// What admission knows about one write (admission.Attributes).
struct AdmissionAttributes {
  std::string operation;    // "CREATE", "UPDATE", "DELETE"
  ResourceInfo resource;    // the resource the request named (group, version, plural, scope)
  std::string subresource;  // "", "status", "scale"
  std::string name;         // "" for a create with generateName
  std::string ns;           // the request's namespace; for a Namespace object, its own name
  // The object as sent (the Scale for trainingjobs/scale) and as stored before; null
  // where there is none (oldObject on CREATE, object on DELETE).
  nlohmann::json object;
  nlohmann::json old_object;
  // The kind of `object`: {"group","version","kind"} (autoscaling/v1 Scale for scale).
  nlohmann::json kind;
  bool dry_run = false;
  nlohmann::json options;  // CreateOptions / UpdateOptions / DeleteOptions
  UserInfo user;
};

// Whether one of `rules` (RuleWithOperations[]) names this request.
bool rules_match(const nlohmann::json& rules, const AdmissionAttributes& a);

// metav1.LabelSelector (matchLabels, matchExpressions with In, NotIn, Exists,
// DoesNotExist) against a label map; an empty or absent selector matches everything.
// Throws std::invalid_argument on an unknown operator.
bool label_selector_matches(const nlohmann::json& selector, const nlohmann::json& labels);

// objectSelector: matches when the object or the old object carries matching labels.
bool object_selector_matches(const nlohmann::json& selector, const AdmissionAttributes& a);

// Webhooks never see writes to webhook configurations (so a broken webhook cannot lock
// itself in), as kube-apiserver excludes them.
bool exempt_from_webhooks(const AdmissionAttributes& a);

// ---- Built-in admission plugins (kube-apiserver --enable-admission-plugins) ----

// The plugins a sim runs beyond its defaults; each off unless enabled, as upstream.
struct AdmissionPlugins {
  // OwnerReferencesPermissionEnforcement (plugin/pkg/admission/gc; on in OpenShift).
  bool owner_references_permission_enforcement = false;
};
// `--enable-admission-plugins` as upstream spells it: a comma-separated list of names.
// Throws std::invalid_argument naming a plugin the sim does not model.
AdmissionPlugins parse_admission_plugins(const std::string& list);

// Who may do what (authorize() over the RBAC objects now; always allowed without RBAC).
using Authorizer = std::function<Authorization(const UserInfo&, const RequestAttributes&)>;
// The RESTMapper: the resources serving `kind` in group/version (several or none).
using KindResources = std::function<std::vector<ResourceInfo>(
    const std::string& group, const std::string& version, const std::string& kind)>;

// OwnerReferencesPermissionEnforcement's Validate, as upstream (gc_admission.go): on CREATE
// and UPDATE (pods/status exempt) that change metadata.ownerReferences, an UPDATE needs
// `delete` on the object itself (the request's resource and subresource: "cannot set an
// ownerRef on a resource you can't delete"); then every ownerReference that newly sets
// blockOwnerDeletion: true (a new blocking reference, or false/absent before, matched by
// uid) needs `update` on the owner's `<resource>/finalizers` by name, in the request's
// namespace when the owner is namespaced ("cannot set blockOwnerDeletion if an
// ownerReference refers to a resource you can't set finalizers on: <reason>, <nil>"), on
// every resource its kind maps to. A kind nothing serves is refused too ("cannot find
// RESTMapping"). nullopt: allowed; else the 403 Forbidden Status (admission.NewForbidden:
// `jobs.batch "bert" is forbidden: ...`). `a.object` is the object as it would be stored.
std::optional<nlohmann::json> owner_references_denial(const AdmissionAttributes& a,
                                                      const Authorizer& authorize,
                                                      const KindResources& resources_of_kind);

}  // namespace commgate::sim
