// The part of a decision that every decider (the webhook's mutate and validate, the
// operator) shares for a TrainingJob: which policy applies, which measurement, the
// decision of core's decide() for it, and the decision record that holds later checks to
// it (core/decision_record.h).
#pragma once

#include <optional>
#include <string>

#include "core/decision.h"
#include "core/decision_record.h"
#include "core/snapshot.h"

namespace commgate {

// Reason codes of decisions made around decide() rather than by it.
namespace reason {
// The decision did not finish within the webhook's per-request deadline: the job is
// gated (admitted suspended) and the operator decides it.
inline constexpr const char* kDecisionTimeout = "DecisionTimeout";
// The job's namespace is not in the decider's cache of Namespaces yet (it was created a
// moment ago): its labels, and so the policy that governs it, are unknown. The job is
// gated until a decider sees the namespace (issue #19 item 6: a namespace read as
// unlabelled could fall to a milder policy than its own).
inline constexpr const char* kNamespaceUnknown = "NamespaceUnknown";
// The job's pool has fewer usable nodes (core/pool_nodes.h) than the job would run: gated
// or denied as the policy's onInsufficientNodes says (issue #20 defect 2: such a job
// used to be admitted and hang, its first pods holding their nodes), or downsized to the
// pool when spec.minNodes allows and the policy downsizes.
inline constexpr const char* kPoolTooSmall = "PoolTooSmall";
}  // namespace reason

struct JobDecision {
  std::optional<CommPolicy> policy;  // nullopt: spec.policyRef names no usable policy (see error)
  std::string policy_error;
  bool policy_invalid = false;       // spec.policyRef names a stored CommPolicy that does not parse
  std::string profile_name;          // the CommProfile looked for: pool_name(nodeSelector)
  std::optional<ObjectRef> profile;  // the CommProfile found, if any
  std::optional<Measurement> measurement;  // from that CommProfile
  Decision decision;                       // valid when policy is set
  // The job's pool counted against what it asks of each node, where the snapshot holds
  // the cluster's Nodes and the policy checks them (onInsufficientNodes not ignore).
  std::optional<PoolCount> pool;
};

// Selects the policy (core's select_policy with the namespace's labels), reads the
// measurement from the CommProfile named pool_name(spec.nodeSelector) and decides. A
// Gate's message names the CommProfile it looked for and the nodeSelector it stands for.
// Where the snapshot holds the cluster's Nodes and the policy's onInsufficientNodes is
// not ignore, a job that would run more nodes than its pool has usable (or, gated for a
// measurement, whose minNodes is more) is gated or denied with reason PoolTooSmall, the
// message saying how many nodes the pool has and why the others do not count; but under
// enforcementAction downsize a job the policy admits whose minNodes the pool holds is
// downsized to the pool's usable nodes (decided again at that count; reason
// PoolTooSmall, action Downsize). An exempt requester is not checked.
JobDecision decide_for_job(const TrainingJob& job, const Snapshot& snapshot,
                           const Requester& requester, TimePoint now);

// The record of a decision (valid policy) for `job`, the object as the decider stores it:
// a downsize's lower spec.numNodes is part of the spec hash.
DecisionRecord record_of(const JobDecision& jd, const TrainingJob& job, TimePoint now);

// True when an UPDATE changes what the decision depends on (the fields of
// decision_spec_hash), or clears spec.suspend. Other edits (labels, the pod template,
// suspending) are not decided again.
bool needs_new_decision(const TrainingJob& old_job, const TrainingJob& new_job);

// True when the commgate.io/ annotations differ between the two objects.
bool commgate_annotations_changed(const TrainingJob& old_job, const TrainingJob& new_job);

// What `job` asks of each node of its pool: its nodeSelector and tolerations, and the
// accelerators one pod asks for: its template's, else numProcPerNode nvidia.com/gpu where
// the pool has GPUs (the operator adds that limit to the workload's pods then).
PoolDemand pool_demand_of(const TrainingJob& job, const std::vector<PoolNode>& nodes);

// "{commgate.io/pool=cpu-1gbe}", "{} (every node)": a nodeSelector for messages.
std::string format_node_selector(const std::map<std::string, std::string>& selector);

// A request's pool for messages: "nodeSelector {commgate.io/pool=a100}", and with
// hostnames "nodeSelector {commgate.io/pool=a100} on nodes gpu-1, gpu-2" (the first five
// named, then "and 3 more").
std::string format_pool(const std::map<std::string, std::string>& node_selector,
                        const std::vector<std::string>& hostnames);

}  // namespace commgate
