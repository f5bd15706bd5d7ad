#include "operator/policy_status.h"

#include <algorithm>
#include <exception>

#include "operator/conditions.h"
#include "operator/policy_counters.h"

namespace commgate::op {
namespace {

using json = nlohmann::json;

// "a, b, c" of at most `limit` names, "and N more" past it.
std::string listed(const std::vector<std::string>& names, size_t limit = 5) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > limit) out += " and " + std::to_string(names.size() - limit) + " more";
  return out;
}

std::string namespaces_word(size_t n) {
  return std::to_string(n) + (n == 1 ? " namespace" : " namespaces");
}

Condition shadowed_condition(const PolicyGovernance& g, int64_t generation) {
  Condition c{policy_condition::kShadowed, kFalse, "", "", generation};
  std::vector<std::string> shadowed;
  for (const auto& [ns, winner] : g.shadowed_in)
    shadowed.push_back(ns + " (" + policy_label(winner) + ")");
  if (!g.governed.empty()) {
    c.reason = "Governs";
    c.message = "governs " + namespaces_word(g.governed.size()) + ": " + listed(g.governed);
    if (!shadowed.empty())
      c.message += "; in " + namespaces_word(shadowed.size()) +
                   " it selects, a policy that wins there governs: " + listed(shadowed);
  } else if (!shadowed.empty()) {
    c.status = kTrue;
    c.reason = "ShadowedEverywhere";
    c.message =
        "governs no namespace: a policy with a lower maxCommShare (or, on equal "
        "limits, a stricter action) governs " +
        (shadowed.size() == 1 ? std::string("the namespace")
                              : "each of the " + namespaces_word(shadowed.size())) +
        " it selects: " + listed(shadowed);
  } else {
    c.reason = "SelectsNoNamespace";
    c.message = "its namespaceSelector matches no namespace";
  }
  return c;
}

Condition valid_condition(const std::string& name, const Snapshot& snapshot, int64_t generation) {
  if (auto it = snapshot.stale_policies.find(name); it != snapshot.stale_policies.end())
    return {policy_condition::kValid, kFalse, "KeptLastValid",
            "does not parse, so its last valid version governs in its place: " + it->second,
            generation};
  if (auto it = snapshot.invalid_policies.find(name); it != snapshot.invalid_policies.end())
    return {policy_condition::kValid, kFalse, "Invalid",
            "does not parse, so it governs nothing: " + it->second, generation};
  return {policy_condition::kValid, kTrue, "Parsed", "the spec parses", generation};
}

}  // namespace

json policy_status_patch(const json& policy, const Snapshot& snapshot,
                         const std::map<std::string, PolicyGovernance>& governance, TimePoint now) {
  const json& meta = policy.value("metadata", json::object());
  const std::string name = meta.value("name", "");
  const int64_t generation = meta.value("generation", int64_t{0});
  const json status =
      policy.contains("status") && policy["status"].is_object() ? policy["status"] : json::object();

  static const PolicyGovernance kNone;
  const auto it = governance.find(name);
  const PolicyGovernance& g = it == governance.end() ? kNone : it->second;
  json governed = json::array();
  for (size_t i = 0; i < g.governed.size() && i < kGovernedNamespacesListed; ++i)
    governed.push_back(g.governed[i]);
  const json wanted_governance = {{"governedNamespaces", governed},
                                  {"governedNamespaceCount", g.governed.size()},
                                  {"shadowedNamespaceCount", g.shadowed_in.size()}};

  json conditions = status.value("conditions", json::array());
  bool changed = set_condition(conditions, shadowed_condition(g, generation), now);
  changed |= set_condition(conditions, valid_condition(name, snapshot, generation), now);
  changed |= status.value("governance", json()) != wanted_governance;
  if (!changed) return nullptr;
  return {{"status", {{"governance", wanted_governance}, {"conditions", conditions}}}};
}

size_t write_policy_statuses(const kube::Store::Objects& policies, const Snapshot& snapshot,
                             kube::StatusWriter& writer, TimePoint now) {
  const auto governance = governance_of(snapshot.policies, snapshot.namespace_labels);
  size_t written = 0;
  std::exception_ptr first_error;
  for (const auto& [name, object] : policies) {
    const json patch = policy_status_patch(*object, snapshot, governance, now);
    if (patch.is_null()) continue;
    try {
      writer.patch_status(PolicyCounters::policy_path(name), kube::PatchType::kMerge, patch);
      ++written;
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  return written;
}

}  // namespace commgate::op
