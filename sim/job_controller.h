// The Job controller stand-in for batch/v1 Jobs: creates pods from spec.template (Indexed
// or NonIndexed), counts their outcomes and writes the Job's status and conditions.
//
// Modelled: completionMode Indexed (pods `<job>-<index>-<random>`, label and annotation
// batch.kubernetes.io/job-completion-index, env JOB_COMPLETION_INDEX from that
// annotation, hostname `<job>-<index>`, subdomain from the template), NonIndexed,
// parallelism, completions, backoffLimit (failed pods, plus container restarts under
// OnFailure; exceeded -> FailureTarget then Failed, reason BackoffLimitExceeded, active
// pods deleted), activeDeadlineSeconds (DeadlineExceeded), suspend (active pods deleted,
// Suspended condition), ttlSecondsAfterFinished (Job deleted, Background), ownerReferences
// (controller, blockOwnerDeletion), status active/ready/succeeded/failed/startTime/
// completionTime/completedIndexes, SuccessCriteriaMet then Complete as kube 1.31+.
// At most kMaxPodCreatePerSync pods are created per pass, as upstream.
// Shortcuts (docs/testing.md): no pod-failure back-off delay; finished pods are counted
// by uid in memory (kube uses the batch.kubernetes.io/job-tracking finalizer); no
// spec.selector defaulting (pods are found by their controller ownerReference).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/change_loop.h"
#include "sim/object_store.h"

namespace commgate::sim {

inline constexpr const char* kJobCompletionIndex = "batch.kubernetes.io/job-completion-index";
// Upstream's MaxPodCreateDeletePerSync: one sync of a Job creates at most this many pods;
// the creations' own events bring the next sync. A 10,000-pod Job so fills in over
// several passes, each short, instead of one pass that holds the store for all of them.
inline constexpr std::size_t kMaxPodCreatePerSync = 500;

// --- Pure helpers (unit-tested) ---

// status.completedIndexes: "0-2,4,6-7".
std::string format_completed_indexes(const std::set<int>& indexes);
std::set<int> parse_completed_indexes(const std::string& text);
// The indexes to start now: the lowest ones neither succeeded nor active, up to
// `parallelism` active in all.
std::vector<int> indexes_to_create(int completions, int parallelism, const std::set<int>& succeeded,
                                   const std::set<int>& active);
// The pod the controller creates for `job` (index < 0: NonIndexed).
nlohmann::json pod_for_job(const nlohmann::json& job, int index);
// Whether the Job has a Complete or Failed condition with status True.
bool job_finished(const nlohmann::json& job);

class JobController {
 public:
  explicit JobController(ObjectStore& store);
  ~JobController();  // stop()
  JobController(const JobController&) = delete;
  JobController& operator=(const JobController&) = delete;

  void start();
  void stop();
  // One pass over every Job; returns when the next time-based check is due (deadline or
  // TTL), or nullopt.
  std::optional<TimePoint> sync_once();

 private:
  std::optional<TimePoint> reconcile(const nlohmann::json& job,
                                     const std::vector<nlohmann::json>& pods);

  ObjectStore& store_;
  ResourceInfo jobs_, pods_;
  std::map<std::string, std::set<std::string>> counted_;  // job uid -> finished pod uids
  ChangeLoop loop_;                                       // last: its thread uses the members above
};

}  // namespace commgate::sim
