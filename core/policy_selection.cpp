#include "core/policy_selection.h"

#include <algorithm>

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

// How strict an action is: deny refuses, downsize cuts the job, warn and dryrun admit it.
int action_rank(EnforcementAction a) {
  switch (a) {
    case EnforcementAction::kDeny:
      return 3;
    case EnforcementAction::kDownsize:
      return 2;
    case EnforcementAction::kWarn:
      return 1;
    case EnforcementAction::kDryRun:
      return 0;
  }
  return 0;
}

int missing_measurement_rank(MissingMeasurementAction a) {
  switch (a) {
    case MissingMeasurementAction::kDeny:
      return 2;
    case MissingMeasurementAction::kGate:
      return 1;
    case MissingMeasurementAction::kAdmit:
      return 0;
  }
  return 0;
}

bool subset(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return std::all_of(a.begin(), a.end(), [&](const std::string& x) {
    return std::find(b.begin(), b.end(), x) != b.end();
  });
}

}  // namespace

bool at_least_as_strict(const CommPolicy& a, const CommPolicy& b) {
  const CommPolicySpec& x = a.spec;
  const CommPolicySpec& y = b.spec;
  return x.max_comm_share <= y.max_comm_share &&
         x.min_scaling_efficiency.value_or(0) >= y.min_scaling_efficiency.value_or(0) &&
         action_rank(x.enforcement_action) >= action_rank(y.enforcement_action) &&
         missing_measurement_rank(x.on_missing_measurement) >=
             missing_measurement_rank(y.on_missing_measurement) &&
         x.measurement_ttl <= y.measurement_ttl && x.max_extrapolation <= y.max_extrapolation &&
         subset(x.exemptions.users, y.exemptions.users) &&
         subset(x.exemptions.groups, y.exemptions.groups) &&
         subset(x.exemptions.service_accounts, y.exemptions.service_accounts);
}

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
  CommPolicy governing = strictest_policy_for_namespace(namespace_labels, policies);
  if (job.spec.policy_ref.empty()) return governing;
  std::optional<CommPolicy> named;
  for (const auto& p : policies) {
    if (p.metadata.name != job.spec.policy_ref) continue;
    // A reference may only name a policy that applies to the namespace.
    if (!p.spec.namespace_selector.matches(namespace_labels)) {
      if (error) {
        *error = "spec.policyRef.name: CommPolicy \"" + p.metadata.name +
                 "\" does not apply to namespace \"" + job.metadata.namespace_ +
                 "\" (its namespaceSelector does not match)";
      }
      return std::nullopt;
    }
    named = p;
  }
  if (!named && job.spec.policy_ref == kDefaultPolicyName) named = default_comm_policy();
  if (!named) {
    if (error) *error = "spec.policyRef.name: CommPolicy \"" + job.spec.policy_ref + "\" not found";
    return std::nullopt;
  }
  // ... and may only tighten: otherwise a job could name the loosest policy admins wrote
  // (or the built-in default) and escape a stricter one that applies to its namespace.
  if (at_least_as_strict(*named, governing)) return named;
  return governing;
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
