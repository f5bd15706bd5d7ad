// The admission handlers: pure functions from a parsed request and a snapshot of the
// policies and measurements to a response. No I/O, no clock of their own, no state:
// the HTTP layer (webhook_server.h) owns everything else. docs/webhook.md describes
// each decision they make.
#pragma once

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

}  // namespace commgate::webhook
