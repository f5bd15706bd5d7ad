// CommPolicy status.decisionCounts (crds/commpolicies.commgate.io.yaml): audit counters of
// the decisions made under a policy since countingSince, so an admin who runs a policy in
// `dryrun` sees what enforcement would have done before turning it on. The operator counts
// each decision it writes on a TrainingJob once (issue #10).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/decision.h"
#include "core/time_format.h"
#include "kube/client.h"
#include "operator/own_writes.h"

namespace commgate::op {

// The decisionCounts fields one decision increments: its action's (admitted, downsized,
// denied, warned, gated); also exempted for an exempt admission, and under dryrun
// dryRunWouldDownsize / dryRunWouldDeny for what enforcement would have done.
std::vector<std::string> counters_for(const Decision& decision);

// `status` (a CommPolicy's .status, null when none) with each of `counters` incremented by
// one; countingSince is set to `now` when absent. Other status fields are kept.
nlohmann::json with_counted(const nlohmann::json& status, const std::vector<std::string>& counters,
                            TimePoint now);

// Counts decisions on CommPolicy objects: read-modify-write of the status subresource with
// the resourceVersion as precondition, so concurrent counters never lose an increment; on
// 409 the policy is read again and the increment applied again (up to `attempts` times).
// Thread-safe: one counter object serialises its writes, and it starts each write from the
// object its previous write returned when that is newer than what `reader` (a cache that
// may lag) shows.
class PolicyCounters {
 public:
  PolicyCounters(const kube::Reader& reader, kube::StatusWriter& status_writer, int attempts = 5);

  enum class Outcome {
    kCounted,
    kNoPolicyObject,  // the built-in default policy (or one deleted since): nothing to count on
  };
  // Throws kube::ApiError when the write still conflicts after `attempts` tries, or for
  // any other API error.
  Outcome count(const std::string& policy_name, const Decision& decision, TimePoint now);

  static std::string policy_path(const std::string& name);

 private:
  // The policy from `reader_`, or this object's last write of it when the reader lags.
  nlohmann::json read(const std::string& path);

  const kube::Reader& reader_;
  kube::StatusWriter& status_writer_;
  int attempts_;
  std::mutex mu_;
  OwnWrites own_writes_;  // the policies' status as last written (operator/own_writes.h)
};

}  // namespace commgate::op
