// What a decision reads besides the job: the CommPolicies, the CommProfiles and the
// namespaces' labels, as one immutable value. The webhook's policy sources and the
// operator's caches build it; decide_for_job (core/job_decision.h) reads it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/comm_policy.h"
#include "core/comm_profile.h"
#include "core/kueue_queues.h"
#include "core/pool_nodes.h"
#include "core/time_format.h"

namespace commgate {

struct Snapshot {
  std::vector<CommPolicy> policies;
  // Stored CommPolicies that do not parse (created without the webhook or the CRD's
  // validation, or written for another version of commgate), by metadata.name: why, as
  // their field errors joined by "; ". Not in `policies`; a spec.policyRef naming one is
  // told it exists but is invalid, not that it is missing.
  std::map<std::string, std::string> invalid_policies;
  // Stored CommPolicies that do not parse but govern as their last valid version
  // (kube/snapshot_cache.h LastValidPolicies), which is in `policies`: why, by name.
  std::map<std::string, std::string> stale_policies;
  std::map<std::string, CommProfile> profiles;  // by metadata.name (pool_name())
  // Labels by namespace name, for policies' namespaceSelector. A namespace not listed
  // reads as having no labels.
  std::map<std::string, std::map<std::string, std::string>> namespace_labels;
  // True when namespace_labels holds every Namespace of the cluster (a watch of them, not
  // files): a namespace missing from it is one the cache has not seen yet, whose labels,
  // and so whose policy, are unknown (decide_for_job gates such a job).
  bool namespaces_listed = false;
  // The commgate.io/ annotations of each Namespace that has any (only those: a Namespace's
  // other annotations are not commgate's to hold in memory): the defaults of the model
  // annotations of the jobs Kueue queues there (operator/kueue_model_annotations.h).
  std::map<std::string, std::map<std::string, std::string>> namespace_commgate_annotations;
  // The cluster's Nodes, summarised (core/pool_nodes.h), where the decider watches them;
  // null where it does not (`commgate evaluate`, the file-backed policy source): no pool
  // check then. Shared between snapshots: rebuilt only when a summary changes.
  std::shared_ptr<const std::vector<PoolNode>> nodes;
  // Changes whenever `nodes` does: what a consumer compares instead of the nodes.
  uint64_t nodes_generation = 0;
  // Kueue's LocalQueues and whether each runs commgate's admission check, where the
  // webhook watches them (`commgate webhook --kueue`); null where it does not, or until
  // LocalQueues, ClusterQueues and AdmissionChecks have all been listed.
  std::shared_ptr<const KueueQueues> kueue_queues;
  TimePoint loaded_at{};  // when this snapshot was built (for the snapshot-age metric)

  // Parses a stored CommPolicy into `policies`, or records it in `invalid_policies` under
  // its metadata.name (`fallback_name` when it has none). Returns "" or why it is invalid.
  std::string add_policy(const nlohmann::json& object, const std::string& fallback_name = "");

  const CommProfile* profile(const std::string& name) const;
  const std::map<std::string, std::string>& labels_of(const std::string& ns) const;
  const std::map<std::string, std::string>& commgate_annotations_of(const std::string& ns) const;
};

// The commgate.io/ annotations of `object` (a Namespace), string values only.
std::map<std::string, std::string> commgate_annotations_of_object(const nlohmann::json& object);

}  // namespace commgate
