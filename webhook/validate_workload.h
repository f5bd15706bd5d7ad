// /validate for the workloads commgate did not create: Jobs, CronJobs, JobSets,
// PyTorchJobs and Pods (issue #19 items 3 and 4; docs/policy.md "Workloads commgate did
// not create"). Called by handle_validate (handlers.h) for those resources.
#pragma once

#include "core/snapshot.h"
#include "core/workload_shape.h"
#include "webhook/admission_review.h"
#include "webhook/webhook_config.h"

namespace commgate::webhook {

// - The training Job commgate's operator created for a TrainingJob (its controller is a
//   TrainingJob) keeps the size the TrainingJob was admitted at: a change of its
//   parallelism or completions by anyone but the operator is refused.
// - Where a CommPolicy with spec.unmanagedWorkloads: Deny applies to the namespace
//   (core/policy_selection.h unmanaged_workload_policy), a multi-node GPU workload
//   (core/workload_shape.h) is refused unless the operator created it, a controller
//   created it for an owner that was itself checked, or its requester is exempt in that
//   policy. An UPDATE is refused only when it makes the workload larger.
AdmissionResponse validate_workload(const AdmissionRequest& request, WorkloadKind kind,
                                    const Snapshot& snapshot, const WebhookConfig& config);

// The pytorchjobs/scale subresource (an autoscaling/v1 Scale): a scale-up past one replica
// is refused where the gate is on, since the Scale shows no GPUs; a scale-down passes.
AdmissionResponse validate_workload_scale(const AdmissionRequest& request, const Snapshot& snapshot,
                                          const WebhookConfig& config);

}  // namespace commgate::webhook
