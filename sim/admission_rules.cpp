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

}  // namespace commgate::sim
