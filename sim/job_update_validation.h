// What kube-apiserver refuses in an update of a batch/v1 Job, as upstream's
// pkg/apis/batch/validation/validation.go ValidateJobSpecUpdate does (Kubernetes 1.32,
// feature gate ElasticIndexedJob on, its default since 1.27): spec.selector,
// spec.completionMode and spec.template are immutable, and spec.completions too, except in
// an Indexed Job, where it may change together with spec.parallelism to the same value.
// spec.parallelism itself may change in any Job (upstream: always mutable).
// Skipped: the template's fields that a suspended Job that never started may change
// (upstream's AllowMutableSchedulingDirectives: node selector, tolerations, labels,
// annotations, scheduling gates): here a suspended Job's template may change at all, and
// podFailurePolicy / backoffLimitPerIndex are not checked (no test writes them).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "sim/api_status.h"

namespace commgate::sim {

// `old_job` as stored, `new_job` as the update would leave it. Empty when allowed.
std::vector<FieldError> job_update_errors(const nlohmann::json& old_job,
                                          const nlohmann::json& new_job);

}  // namespace commgate::sim
