// The state of a TrainingJob's workload, read from its batch/v1 Job's status (issue #10,
// step "status"): what the reconciler mirrors into the TrainingJob's phase and
// conditions. Pure: no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/time_format.h"

namespace commgate::op {

enum class WorkloadPhase { kPending, kRunning, kSucceeded, kFailed };

struct WorkloadState {
  WorkloadPhase phase = WorkloadPhase::kPending;
  // From the Job's terminal condition (BackoffLimitExceeded, DeadlineExceeded,
  // CompletionsReached, ...) or its FailureTarget/SuccessCriteriaMet while pods still end;
  // else our own: WorkloadPending, PodsStarting, Suspended, WorkloadRunning
  // (docs/operator.md "The training workload").
  std::string reason, message;
  int active = 0, succeeded = 0, failed = 0;
  // PodsUnschedulable: since when the longest-waiting of those pods has waited
  // (unschedulable_since), when it reads.
  std::optional<TimePoint> unschedulable_since;
};

// `job`: a batch/v1 Job as read (status may be absent: a Job just created).
// Succeeded: condition Complete=True. Failed: condition Failed=True (wins over Complete);
// its message adds the pod that failed first and its log's error line (pod_failure.h).
// Running: a pod is ready (status.ready > 0; status.active > 0 where kube has no
// `ready`) or has finished. Pending otherwise: no pod yet, pods active but none ready
// (scheduling, image pull, an unschedulable pod), or Suspended.
// `pods`: the Job's pods (any order; may be empty or stale). One the scheduler cannot
// place makes an unfinished Job Pending with reason PodsUnschedulable and the scheduler's
// message, even while other pods run: torchrun's rendezvous waits for every node, so a
// job with a node missing trains nothing (a 4-node job on a 2-node pool read Running).
WorkloadState workload_state(const nlohmann::json& job,
                             const std::vector<nlohmann::json>& pods = {});

// "Pending", "Running", "Succeeded", "Failed".
const char* to_string(WorkloadPhase phase);

}  // namespace commgate::op
