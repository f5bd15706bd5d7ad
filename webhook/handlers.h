// The admission handlers: pure functions from a parsed request and a snapshot of the
// policies and measurements to a response. No I/O, no clock of their own, no state:
// the HTTP layer (webhook_server.h) owns everything else. docs/webhook.md describes
// each decision they make.
#pragma once

#include <chrono>

#include "core/time_format.h"
#include "webhook/admission_review.h"
#include "webhook/policy_source.h"
#include "webhook/webhook_config.h"

namespace commgate::webhook {

// POST /mutate: defaults, the gate (spec.suspend: true while unmeasured) and the
// downsize (spec.numNodes lowered, the request kept in an annotation, a warning).
AdmissionResponse handle_mutate(const AdmissionRequest& request, const Snapshot& snapshot,
                                TimePoint now, const WebhookConfig& config = {});

// POST /validate: field validation, deny by policy, no bypass of the gate, the scale
// subresource, and CommPolicy validation.
AdmissionResponse handle_validate(const AdmissionRequest& request, const Snapshot& snapshot,
                                  TimePoint now, const WebhookConfig& config = {});

// What /mutate answers when handle_mutate did not finish within the per-request deadline
// (failurePolicy semantics, never a hang): a TrainingJob CREATE or UPDATE is gated
// (spec.suspend: true, reason DecisionTimeout, a decision record that /validate accepts)
// so nothing runs unchecked and the operator decides it; anything else passes unchanged.
AdmissionResponse gate_past_deadline(const AdmissionRequest& request, TimePoint now,
                                     std::chrono::milliseconds deadline,
                                     const RecordAuthenticator* records = nullptr);

// What /validate answers past the deadline: a denial (503) that says so.
AdmissionResponse deny_past_deadline(std::chrono::milliseconds deadline);

}  // namespace commgate::webhook
