#include "operator/policy_status.h"

#include <algorithm>
#include <exception>

#include "core/merge_patch.h"
#include "core/text_cut.h"
#include "kube/api_error.h"
#include "operator/conditions.h"
#include "operator/policy_counters.h"

namespace commgate::op {
namespace {

using json = nlohmann::json;

std::string namespaces_word(size_t n) {
  return std::to_string(n) + (n == 1 ? " namespace" : " namespaces");
}

// "nlp-a, nlp-b under CommPolicy default, with a lower maxCommShare (0.5 against 0.6)":
// the namespaces where `policy` is shadowed, grouped by the policy that governs them.
std::string shadowed_text(const CommPolicy* policy, const PolicyGovernance& g,
                          const Snapshot& snapshot) {
  std::map<std::string, std::vector<std::string>> by_winner;
  for (const auto& [ns, winner] : g.shadowed_in) by_winner[winner].push_back(ns);
  std::string out;
  for (const auto& entry : by_winner) {
    const std::string& winner = entry.first;  // a name a lambda can capture
    out += (out.empty() ? "" : "; ") + listed(entry.second) + " under " + policy_label(winner);
    const auto w = std::find_if(snapshot.policies.begin(), snapshot.policies.end(),
                                [&](const CommPolicy& p) { return p.metadata.name == winner; });
    if (policy && w != snapshot.policies.end()) out += ", with " + why_governs_over(*w, *policy);
  }
  return out;
}

Condition shadowed_condition(const std::string& name, const PolicyGovernance& g,
                             const Snapshot& snapshot, int64_t generation) {
  Condition c{policy_condition::kShadowed, kFalse, "", "", generation};
  const auto self = std::find_if(snapshot.policies.begin(), snapshot.policies.end(),
                                 [&](const CommPolicy& p) { return p.metadata.name == name; });
  if (self == snapshot.policies.end()) {
    // Not in the snapshot: it does not parse and no valid version of it is kept.
    c.reason = "NotValid";
    c.message = "governs no namespace: it does not parse (condition Valid)";
    return c;
  }
  const std::string shadowed = shadowed_text(&*self, g, snapshot);
  if (!g.governed.empty()) {
    c.reason = "Governs";
    c.message = "governs " + namespaces_word(g.governed.size()) + ": " + listed(g.governed);
    if (!shadowed.empty())
      c.message += "; of the " + namespaces_word(g.shadowed_in.size()) +
                   " it selects besides, a policy that wins there governs: " + shadowed;
  } else if (!shadowed.empty()) {
    c.status = kTrue;
    c.reason = "ShadowedEverywhere";
    c.message =
        "governs no namespace: another policy governs " +
        (g.shadowed_in.size() == 1 ? std::string("the namespace")
                                   : "each of the " + namespaces_word(g.shadowed_in.size())) +
        " it selects: " + shadowed;
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
  const Condition valid = valid_condition(name, snapshot, generation);
  bool changed = set_condition(conditions, shadowed_condition(name, g, snapshot, generation), now);
  changed |= set_condition(conditions, valid, now);
  changed |= status.value("governance", json()) != wanted_governance;
  json patch_status = {{"governance", wanted_governance}, {"conditions", conditions}};
  // A spec that parses is recorded once per generation: it governs in place of a later
  // spec that does not, also after a restart (kube/snapshot_cache.h, issue #19 item 6).
  const json& last_valid = status.value("lastValid", json::object());
  if (valid.status == kTrue && policy.contains("spec") &&
      (last_valid.value("generation", int64_t{-1}) != generation ||
       last_valid.value("spec", json()) != policy["spec"])) {
    // Patched to exactly this spec: a merge patch would keep fields the new spec dropped.
    patch_status["lastValid"] = {
        {"generation", generation},
        {"resourceVersion", meta.value("resourceVersion", "")},
        {"spec", merge_patch_from(last_valid.value("spec", json()), policy["spec"])}};
    changed = true;
  }
  if (!changed) return nullptr;
  return {{"status", patch_status}};
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
    } catch (const kube::ApiError& e) {
      // Deleted since the cache showed it: nothing to say on it.
      if (!e.not_found() && !first_error) first_error = std::current_exception();
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  return written;
}

}  // namespace commgate::op
