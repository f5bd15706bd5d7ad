#include "core/job_decision.h"

#include "core/annotations.h"
#include "core/measurement.h"
#include "core/policy_selection.h"

namespace commgate {
namespace {

std::map<std::string, std::string> commgate_annotations(const TrainingJob& job) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : job.metadata.annotations) {
    if (k.rfind(annotation::kPrefix, 0) == 0) out.emplace(k, v);
  }
  return out;
}

bool same_model(const ModelSpec& a, const ModelSpec& b) {
  return a.parameters == b.parameters && a.gradient_dtype == b.gradient_dtype &&
         a.torch_script == b.torch_script && a.input_shape == b.input_shape &&
         a.batch_size == b.batch_size && a.step_time_hint_ms == b.step_time_hint_ms;
}

}  // namespace

JobDecision decide_for_job(const TrainingJob& job, const Snapshot& snapshot,
                           const Requester& requester, TimePoint now) {
  JobDecision out;
  out.policy = select_policy(job, snapshot.labels_of(job.metadata.namespace_), snapshot.policies,
                             &out.policy_error);
  if (!out.policy) return out;
  if (const CommProfile* profile = snapshot.profile(pool_name(job.spec.node_selector)))
    out.measurement = measurement_from_profile(*profile, job.spec.model);
  DecisionInput in;
  in.job = &job;
  in.policy = &*out.policy;
  in.measurement = out.measurement ? &*out.measurement : nullptr;
  in.requester = requester;
  in.now = now;
  out.decision = decide(in);
  return out;
}

bool needs_new_decision(const TrainingJob& old_job, const TrainingJob& new_job) {
  const TrainingJobSpec& a = old_job.spec;
  const TrainingJobSpec& b = new_job.spec;
  const bool unsuspended = a.suspend && !b.suspend;
  return unsuspended || a.num_nodes != b.num_nodes || a.min_nodes != b.min_nodes ||
         a.num_proc_per_node != b.num_proc_per_node || a.node_selector != b.node_selector ||
         a.policy_ref != b.policy_ref || !same_model(a.model, b.model);
}

bool commgate_annotations_changed(const TrainingJob& old_job, const TrainingJob& new_job) {
  return commgate_annotations(old_job) != commgate_annotations(new_job);
}

}  // namespace commgate
