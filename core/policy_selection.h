// Which CommPolicy governs a job: the policy selection rule, in one place for the
// webhook, the operator and `commgate evaluate`.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/comm_policy.h"
#include "core/training_job.h"

namespace commgate {

// Chooses the policy for a job: spec.policyRef by name when set (nullopt and `error`
// when no such policy, or when its namespaceSelector does not match the namespace), else the
// strictest (lowest maxCommShare, then name) of those whose namespaceSelector matches the job's
// namespace labels, else the default policy.
std::optional<CommPolicy> select_policy(const TrainingJob& job,
                                        const std::map<std::string, std::string>& namespace_labels,
                                        const std::vector<CommPolicy>& policies,
                                        std::string* error);

}  // namespace commgate
