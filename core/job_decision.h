// The part of a decision that every decider (the webhook's mutate and validate, the
// operator) shares for a TrainingJob: which policy
// applies, which measurement, and the decision of core's decide() for it.
#pragma once

#include <optional>
#include <string>

#include "core/decision.h"
#include "core/snapshot.h"

namespace commgate {

struct JobDecision {
  std::optional<CommPolicy> policy;  // nullopt: spec.policyRef names no policy (see error)
  std::string policy_error;
  std::optional<Measurement> measurement;  // from the CommProfile of the job's pool
  Decision decision;                       // valid when policy is set
};

// Selects the policy (core's select_policy with the namespace's labels), reads the
// measurement from the CommProfile named pool_name(spec.nodeSelector) and decides.
JobDecision decide_for_job(const TrainingJob& job, const Snapshot& snapshot,
                           const Requester& requester, TimePoint now);

// True when an UPDATE changes what the decision depends on (node counts, pool, model,
// policyRef), or clears spec.suspend. Other edits (labels, the pod template, suspending)
// are not decided again.
bool needs_new_decision(const TrainingJob& old_job, const TrainingJob& new_job);

// True when the commgate.io/ annotations differ between the two objects.
bool commgate_annotations_changed(const TrainingJob& old_job, const TrainingJob& new_job);

}  // namespace commgate
