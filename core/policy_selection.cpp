#include "core/policy_selection.h"

namespace commgate {

std::optional<CommPolicy> select_policy(const TrainingJob& job,
                                        const std::map<std::string, std::string>& namespace_labels,
                                        const std::vector<CommPolicy>& policies,
                                        std::string* error) {
  if (!job.spec.policy_ref.empty()) {
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
    if (error) *error = "spec.policyRef.name: CommPolicy \"" + job.spec.policy_ref + "\" not found";
    return std::nullopt;
  }
  const CommPolicy* best = nullptr;
  for (const auto& p : policies) {
    if (!p.spec.namespace_selector.matches(namespace_labels)) continue;
    if (!best || p.spec.max_comm_share < best->spec.max_comm_share ||
        (p.spec.max_comm_share == best->spec.max_comm_share &&
         p.metadata.name < best->metadata.name)) {
      best = &p;
    }
  }
  if (best) return *best;
  return default_comm_policy();
}

}  // namespace commgate
