// CommPolicy status.governance and its conditions (crds/commpolicies.commgate.io.yaml):
// which namespaces a policy governs, whether it is shadowed (it applies somewhere but a
// stricter policy governs there), and whether it parses. An admin who writes a team policy
// sees at once whether it does anything (issue #19 "a policy model an admin can
// predict": a team policy overruled by a stricter `default` changed nothing, silently).
//
// Written by the leader from the snapshot (kube/snapshot_cache.h) after each rebuild: a
// merge patch of status.governance and status.conditions only (status.decisionCounts is
// the counters' own, operator/policy_counters.h), and only when they would change.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/policy_selection.h"
#include "core/snapshot.h"
#include "core/time_format.h"
#include "kube/client.h"
#include "kube/store.h"

namespace commgate::op {

// The condition types a CommPolicy's status carries (docs/policy.md "Status").
namespace policy_condition {
// True (reason ShadowedEverywhere) when the policy applies to namespaces and governs none
// of them; False (Governs, or SelectsNoNamespace) otherwise.
inline constexpr const char* kShadowed = "Shadowed";
// False when the stored policy does not parse: reason KeptLastValid (its last valid
// version governs) or Invalid (it governs nothing).
inline constexpr const char* kValid = "Valid";
}  // namespace policy_condition

// At most this many namespace names in status.governance.governedNamespaces (the counts
// are always whole): a policy for every namespace of a large cluster stays a small object.
inline constexpr size_t kGovernedNamespacesListed = 50;

// The merge patch ({"status": {...}}) that brings `policy` (a stored CommPolicy object) to
// what `snapshot` and `governance` (governance_of the snapshot's policies and namespaces)
// say of it, or null when its status already says so.
nlohmann::json policy_status_patch(const nlohmann::json& policy, const Snapshot& snapshot,
                                   const std::map<std::string, PolicyGovernance>& governance,
                                   TimePoint now);

// Writes the patch of every CommPolicy in `policies` (the CommPolicy informer's objects)
// that needs one. Returns the number written; an API error on one policy is rethrown
// after the others were tried (the caller retries the whole pass).
size_t write_policy_statuses(const kube::Store::Objects& policies, const Snapshot& snapshot,
                             kube::StatusWriter& writer, TimePoint now);

}  // namespace commgate::op
