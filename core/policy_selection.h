// Which CommPolicy governs a job: the policy selection rule, in one place for the
// webhook, the operator and `commgate evaluate` (docs/api.md "Which policy applies").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/comm_policy.h"
#include "core/snapshot.h"
#include "core/training_job.h"

namespace commgate {

// The name of the built-in default policy, and of the CommPolicy that replaces it.
inline constexpr const char* kDefaultPolicyName = "default";

// Chooses the policy for a job: the strictest of the policies that apply to the namespace
// (see strictest_policy_for_namespace), unless spec.policyRef names one that is at least
// as strict in every respect (at_least_as_strict): a policyRef may only tighten. A
// policyRef naming no policy, or one whose namespaceSelector does not match the
// namespace, is an error (nullopt and `error`); the name `default` without a CommPolicy of
// that name is the built-in default.
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

// The strictest of the policies that apply to a namespace: every CommPolicy whose
// namespaceSelector matches its labels, and the built-in default unless a CommPolicy named
// `default` applies there (it replaces the built-in one). Strictest: the lowest
// maxCommShare; on a tie the higher minScalingEfficiency, then an admin's CommPolicy
// before the built-in default, then the name. So adding a policy can tighten a
// namespace's limit, never loosen it.
CommPolicy strictest_policy_for_namespace(
    const std::map<std::string, std::string>& namespace_labels,
    const std::vector<CommPolicy>& policies);

}  // namespace commgate
