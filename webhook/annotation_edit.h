// A user's edit of commgate's own annotations (the decision and its record) in an UPDATE
// that changes nothing the decision reads: /mutate refuses it, and with a decision key so
// does /validate, so that a write /mutate did not see (failurePolicy Ignore while it was
// down) cannot leave a hand-written decision on the object (issue #19 item 2).
#pragma once

#include <optional>

#include "core/job_decision.h"
#include "core/time_format.h"
#include "core/training_job.h"
#include "webhook/admission_review.h"

namespace commgate::webhook {

// A 403 (decision "Bypass") when commgate's annotations differ between `old_job` and
// `job`, unless the requester is exempt under the job's policy; nullopt otherwise.
std::optional<AdmissionResponse> refuse_annotation_edit(const TrainingJob& old_job,
                                                        const TrainingJob& job,
                                                        const Snapshot& snapshot,
                                                        const Requester& who, TimePoint now);

}  // namespace commgate::webhook
