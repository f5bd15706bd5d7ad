// The Active condition on each AdmissionCheck commgate serves (issue #23), as Kueue's own
// check controllers keep theirs (provisioning/admissioncheck_reconciler.go): Kueue keeps
// a ClusterQueue that lists a check inactive until the check says Active=True, so an
// admin sees here, not in a stuck queue, that the check's parameters name no CommPolicy.
//
// Written by the leader after every change of an AdmissionCheck and every rebuild of the
// snapshot (a CommPolicy created or deleted): a server-side apply on admissionchecks/status
// that holds only the Active entry (status.conditions is a map keyed by type: another
// controller's conditions stay), field manager kFieldManager, forced, with the check's uid
// as a precondition, and only when the stored entry differs. The condition itself is
// admission_check_active (operator/kueue_admission_check.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/time_format.h"
#include "kube/client.h"

namespace commgate::op::kueue {

// The apply that brings `doc` (an AdmissionCheck as stored) to its Active condition,
// given the names of the CommPolicies that exist; nullopt when the check is not ours,
// does not parse, or its entry already says so.
std::optional<nlohmann::json> admission_check_status_apply(const nlohmann::json& doc,
                                                           const std::set<std::string>& policies,
                                                           TimePoint now);

// Writes each of `checks` that needs it (a failed write throws kube::ApiError: the caller
// retries the pass); returns how many were written.
size_t write_admission_check_statuses(const std::vector<nlohmann::json>& checks,
                                      const std::set<std::string>& policies,
                                      kube::StatusWriter& writer, TimePoint now);

}  // namespace commgate::op::kueue
