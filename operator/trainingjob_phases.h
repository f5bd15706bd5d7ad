// The words a TrainingJob's status uses: its phases (status.phase,
// crds/trainingjobs.commgate.io.yaml) and the reasons of the reconciler's own conditions and Events
// (the probe's are in operator/probe_outcome.h, the decision's in core/decision.h).
#pragma once

namespace commgate::op {

// Phases of status.phase (crds/trainingjobs.commgate.io.yaml).
namespace phase {
inline constexpr const char* kGated = "Gated";
inline constexpr const char* kProbing = "Probing";
inline constexpr const char* kAdmitted = "Admitted";
inline constexpr const char* kDownsized = "Downsized";
inline constexpr const char* kRejected = "Rejected";
inline constexpr const char* kRunning = "Running";
inline constexpr const char* kSucceeded = "Succeeded";
inline constexpr const char* kFailed = "Failed";
}  // namespace phase

// Reasons of the reconciler's own (the probe's are in probe_outcome.h, the decision's in
// core/decision.h).
namespace op_reason {
inline constexpr const char* kInvalidSpec = "InvalidSpec";
inline constexpr const char* kPolicyNotFound = "PolicyNotFound";
// spec.policyRef names a CommPolicy that is stored but does not parse: Admitted=False and
// a Warning Event with its field errors, until an admin fixes it.
inline constexpr const char* kPolicyInvalid = "PolicyInvalid";
// Another job's probe of the same pool (for another model) runs; this one waits for it.
inline constexpr const char* kWaitingForPoolProbe = "WaitingForPoolProbe";
// A probe succeeded but its measurement still does not let the job be decided (e.g. it
// could not time the job's model): counted as a failed attempt.
inline constexpr const char* kMeasurementInsufficient = "MeasurementInsufficient";
// The probe failed past the policy's retryStrategy.backoffLimitCount: phase Failed.
inline constexpr const char* kProbeFailed = "ProbeFailed";
inline constexpr const char* kWorkloadCreated = "WorkloadCreated";
// The decision-relevant spec changed after the workload was created: not applied, the
// workload keeps the recorded decision's size (condition SpecApplied=False, a Warning).
inline constexpr const char* kSpecChangeNotApplied = "SpecChangeNotApplied";
// A decision record commgate did not write (no valid signature; docs/security.md).
inline constexpr const char* kRecordNotTrusted = "DecisionRecordNotTrusted";
// The TrainingJob's name cannot name its workload (operator/workload_job.h
// workload_name_problem): phase Failed, nothing is probed or created.
inline constexpr const char* kInvalidWorkloadName = "InvalidWorkloadName";
// The workload's name is taken by the Job of an earlier TrainingJob of the same name that
// the garbage collector has not deleted yet.
inline constexpr const char* kPreviousWorkloadExists = "PreviousWorkloadExists";
// A Job of the TrainingJob's name exists that commgate did not create for it (no controller
// reference to it): never adopted, it would run a template commgate did not shape.
inline constexpr const char* kWorkloadNameTaken = "WorkloadNameTaken";
// A Job named the TrainingJob its controller but was not the one commgate created (its uid
// is not status.workloadUID): deleted, and commgate's own created.
inline constexpr const char* kWorkloadReplaced = "WorkloadReplaced";
// Someone other than commgate changed the workload Job's parallelism or completions: the
// operator restores the admitted size (a Warning; docs/security.md).
inline constexpr const char* kWorkloadResized = "WorkloadResized";
// A pod of the workload cannot be scheduled (workload_state.h): Running=False, a Warning.
inline constexpr const char* kPodsUnschedulable = "PodsUnschedulable";
// A pod of the workload stayed unschedulable past --workload-unschedulable-timeout: the
// workload Job is deleted so the pods that did start free their nodes; phase Failed.
inline constexpr const char* kWorkloadUnschedulable = "WorkloadUnschedulable";
}  // namespace op_reason

}  // namespace commgate::op
