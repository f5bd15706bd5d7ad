#include "webhook/annotation_edit.h"

#include "core/annotations.h"
#include "core/decision.h"

namespace commgate::webhook {

std::optional<AdmissionResponse> refuse_annotation_edit(const TrainingJob& old_job,
                                                        const TrainingJob& job,
                                                        const Snapshot& snapshot,
                                                        const Requester& who, TimePoint now) {
  if (!commgate_annotations_changed(old_job, job)) return std::nullopt;
  const JobDecision jd = decide_for_job(job, snapshot, who, now);
  if (jd.policy && jd.decision.reason == reason::kExempt) return std::nullopt;
  AdmissionResponse r = denied(std::string("metadata.annotations: the ") + annotation::kPrefix +
                               "* annotations record commgate's decision and may be changed only "
                               "by commgate; change the spec instead (a new spec is decided "
                               "again)");
  r.decision = "Bypass";
  return r;
}

}  // namespace commgate::webhook
