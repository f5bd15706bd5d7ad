// Which admission webhooks a request goes to, by kube-apiserver's rules
// (k8s.io/apiserver pkg/admission/plugin/webhook: rules.Matcher, namespace and object
// matchers): operations, apiGroups, apiVersions, resources with subresources ("*",
// "*/*", "pods/status", "trainingjobs/scale"), scope, namespaceSelector, objectSelector.
// Pure functions over the request's attributes and a webhook's JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/authentication.h"
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

}  // namespace commgate::sim
