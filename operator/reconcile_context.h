// Internal to the reconciler's own files (trainingjob_reconciler.cpp and reconcile_*.cpp):
// the state of one reconcile (TrainingJobReconciler::Context), the API paths it reads and
// writes, and the small API-call helpers its steps share. Other users include
// trainingjob_reconciler.h.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/comm_profile.h"
#include "kube/client.h"
#include "operator/conditions.h"
#include "operator/object_fields.h"
#include "operator/object_paths.h"
#include "operator/trainingjob_reconciler.h"
#include "operator/trainingjob_status.h"

namespace commgate::op {

struct TrainingJobReconciler::Context {
  std::string key, ns, name, path;
  nlohmann::json object;  // the TrainingJob as last read or written
  TrainingJob job;
  TrainingJobStatus status;  // the status to write; starts as the object's
  TimePoint now{};
  std::shared_ptr<const Snapshot> snapshot;
  // Who asked for the job, where a signed record for its current spec says so (a gate
  // written before the webhook could decide): decisions count their exemptions.
  Requester requester;
  Step step = Step::kRead;
  Logger log = Logger::discard();  // the settings' logger with this job's key
  // A decision newly put in status.decision: counted on its policy once the status is
  // written.
  std::optional<Decision> to_count;
  // The decision-relevant spec changed after the workload was created: the record is
  // followed as it is, and the decision shown stays the one the workload runs under.
  bool spec_change_not_applied = false;
  // Look again after this long although nothing may change (a workload pod that waits
  // for the scheduler, bounded by --workload-unschedulable-timeout).
  std::optional<kube::Clock::duration> recheck_in;

  // True when the condition changed (a new type, status, reason, message or generation).
  bool condition(const char* type, const char* status_value, const std::string& reason,
                 const std::string& message) {
    return status.conditions.set(
        Condition{type, status_value, reason, message, detail::generation_of(object)}, now);
  }
  void set_phase(const char* p) { status.phase = p; }
  std::string pool() const { return pool_name(job.spec.node_selector); }
};

// What the decide step settled: the decision the job runs under (a record that holds, or
// the one just made), a gate, or no policy to decide with.
struct TrainingJobReconciler::Verdict {
  enum class Kind {
    kFollow,    // the job's decision record holds (or its workload runs under it)
    kDecided,   // decided now: admitted, downsized, warned or denied
    kGated,     // decided now: held (for a measurement, the pool's size, the namespace)
    kNoPolicy,  // no valid policy governs the job (jd.policy_error says why)
  };
  Kind kind = Kind::kNoPolicy;
  std::optional<DecisionRecord> record;  // kFollow, kDecided
  // kDecided, kGated, kNoPolicy; with kFollow, the request decided again to show the
  // decision with its predictions (show_decision: the status shows none, or an older
  // spec's).
  JobDecision jd;
  bool show_decision = false;
};

}  // namespace commgate::op
