#include "core/policy_selection.h"

namespace commgate {
namespace {

// True when `a` is stricter than `b` (see strictest_policy_for_namespace).
bool stricter(const CommPolicy& a, bool a_builtin, const CommPolicy& b, bool b_builtin) {
  if (a.spec.max_comm_share != b.spec.max_comm_share)
    return a.spec.max_comm_share < b.spec.max_comm_share;
  const double ea = a.spec.min_scaling_efficiency.value_or(0);
  const double eb = b.spec.min_scaling_efficiency.value_or(0);
  if (ea != eb) return ea > eb;
  if (a_builtin != b_builtin) return b_builtin;
  return a.metadata.name < b.metadata.name;
}

}  // namespace

CommPolicy strictest_policy_for_namespace(
    const std::map<std::string, std::string>& namespace_labels,
    const std::vector<CommPolicy>& policies) {
  const CommPolicy* best = nullptr;
  bool default_replaced = false;
  for (const auto& p : policies) {
    if (!p.spec.namespace_selector.matches(namespace_labels)) continue;
    if (p.metadata.name == kDefaultPolicyName) default_replaced = true;
    if (!best || stricter(p, false, *best, false)) best = &p;
  }
  if (default_replaced) return *best;
  const CommPolicy builtin = default_comm_policy();
  if (!best || stricter(builtin, true, *best, false)) return builtin;
  return *best;
}

std::optional<CommPolicy> select_policy(const TrainingJob& job,
                                        const std::map<std::string, std::string>& namespace_labels,
                                        const std::vector<CommPolicy>& policies,
                                        std::string* error) {
  if (job.spec.policy_ref.empty())
    return strictest_policy_for_namespace(namespace_labels, policies);
  for (const auto& p : policies) {
    if (p.metadata.name != job.spec.policy_ref) continue;
    // A reference may only choose among the policies that apply to the namespace;
    // otherwise any job could name the loosest policy and bypass its own.
    if (!p.spec.namespace_selector.matches(namespace_labels)) {
      if (error) {
        *error = "spec.policyRef.name: CommPolicy \"" + p.metadata.name +
                 "\" does not apply to namespace \"" + job.metadata.namespace_ +
                 "\" (its namespaceSelector does not match)";
      }
      return std::nullopt;
    }
    return p;
  }
  // The built-in default applies everywhere, so naming it chooses nothing forbidden.
  if (job.spec.policy_ref == kDefaultPolicyName) return default_comm_policy();
  if (error) *error = "spec.policyRef.name: CommPolicy \"" + job.spec.policy_ref + "\" not found";
  return std::nullopt;
}

std::optional<CommPolicy> select_policy(const TrainingJob& job, const Snapshot& snapshot,
                                        std::string* error, bool* invalid) {
  if (invalid) *invalid = false;
  auto policy =
      select_policy(job, snapshot.labels_of(job.metadata.namespace_), snapshot.policies, error);
  if (policy || job.spec.policy_ref.empty()) return policy;
  const auto bad = snapshot.invalid_policies.find(job.spec.policy_ref);
  if (bad == snapshot.invalid_policies.end()) return policy;
  if (invalid) *invalid = true;
  if (error) {
    *error = "spec.policyRef.name: CommPolicy \"" + bad->first +
             "\" exists but is invalid, so it cannot decide this job (an admin must fix it): " +
             bad->second;
  }
  return std::nullopt;
}

}  // namespace commgate
