// Which CommPolicy governs a job: the policy selection rule, in one place for the
// webhook, the operator and `commgate evaluate` (docs/api.md "Which policy applies").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/comm_policy.h"
#include "core/snapshot.h"
#include "core/training_job.h"

namespace commgate {

// The name a policyRef may use for the built-in default policy when no CommPolicy is
// named `default`.
inline constexpr const char* kDefaultPolicyName = "default";

// True when a job's spec.policyRef.name names `policy`: its own name, or `default` for the
// built-in default (which no CommPolicy can be called).
bool policy_ref_names(const std::string& policy_ref, const CommPolicy& policy);

// Chooses the policy for a job: the one that governs its namespace (see
// governing_policy), unless spec.policyRef names one that is at least as strict in every
// respect (at_least_as_strict): a policyRef may only tighten. A policyRef naming no
// policy, or one whose namespaceSelector does not match the namespace, is an error
// (nullopt and `error`); the name `default` without a CommPolicy of that name is the
// built-in default.
std::optional<CommPolicy> select_policy(const TrainingJob& job,
                                        const std::map<std::string, std::string>& namespace_labels,
                                        const std::vector<CommPolicy>& policies,
                                        std::string* error);

// The same with a snapshot's policies and namespace labels; a policyRef naming one of its
// invalid_policies is told the policy exists but is invalid, and why (`invalid` set).
std::optional<CommPolicy> select_policy(const TrainingJob& job, const Snapshot& snapshot,
                                        std::string* error, bool* invalid = nullptr);

// True when `a` is at least as strict as `b` in everything that decides or admits a job:
// maxCommShare no higher, minScalingEfficiency no lower, enforcementAction and
// onMissingMeasurement no milder (deny > downsize > warn > dryrun; deny > gate > admit),
// measurementTTL and maxExtrapolation no longer, and no exemption `b` lacks.
bool at_least_as_strict(const CommPolicy& a, const CommPolicy& b);

// The rule, in three lines (docs/policy.md "Which policy governs a namespace"):
// - the CommPolicies whose namespaceSelector matches the namespace's labels apply to it;
//   the built-in default applies only where none does;
// - of those, the strictest governs: one that enforces (deny, downsize) before one that
//   only reports (warn, dryrun); then the lowest maxCommShare; on equal limits the higher
//   minScalingEfficiency, then the stricter enforcementAction (deny > downsize, warn >
//   dryrun), then the stricter onMissingMeasurement (deny > gate > admit), then the lower
//   maxExtrapolation, then the shorter measurementTTL, then fewer exemptions; the name
//   only between policies equal in all of these;
// - a job's policyRef may only name an applicable policy at least as strict.
CommPolicy governing_policy(const std::map<std::string, std::string>& namespace_labels,
                            const std::vector<CommPolicy>& policies);

// The policy that gates unmanaged workloads in a namespace: of the CommPolicies that
// apply to it and set spec.unmanagedWorkloads (deny before warn), the one that would win
// over the others (the order above; its exemptions count). Any applicable policy may
// switch the gate on, as a policy may only tighten: a stricter-limit policy that leaves
// the switch at allow does not switch it off. nullopt: none applies that sets it.
std::optional<CommPolicy> unmanaged_workload_policy(
    const std::map<std::string, std::string>& namespace_labels,
    const std::vector<CommPolicy>& policies);

// True when `a` wins over `b` where both apply (the order above).
bool governs_over(const CommPolicy& a, const CommPolicy& b);

// Why `winner` wins over `loser`, in words: the first field of the order above in which
// they differ ("a lower maxCommShare (0.3 against 0.5)", "it enforces (deny) where the
// other only reports (dryrun)"), or "its name, all else being equal".
std::string why_governs_over(const CommPolicy& winner, const CommPolicy& loser);

// Which namespaces each policy governs, for CommPolicy status: `namespaces` maps each
// namespace to its labels. A policy that applies to some namespaces and governs none is
// shadowed there: `shadowed_in` names, for each, the policy that governs it.
struct PolicyGovernance {
  std::vector<std::string> governed;                             // sorted
  std::vector<std::pair<std::string, std::string>> shadowed_in;  // namespace, governing policy
};
std::map<std::string, PolicyGovernance> governance_of(
    const std::vector<CommPolicy>& policies,
    const std::map<std::string, std::map<std::string, std::string>>& namespaces);

// The name of another policy that applies to every namespace `policy` can apply to (its
// selector's requirements are a subset of `policy`'s) and wins over it there: then
// `policy` can never govern any namespace. nullopt when there is none (it may still be
// shadowed in the namespaces that exist today: see governance_of).
std::optional<std::string> never_governs_because(const CommPolicy& policy,
                                                 const std::vector<CommPolicy>& others);

}  // namespace commgate
