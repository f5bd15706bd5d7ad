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

// `status` (a CommPolicy's .status, null when none) with each counter incremented by its
// amount; countingSince is set to `now` when absent. Other status fields are kept.
nlohmann::json with_increments(const nlohmann::json& status,
                               const std::map<std::string, int64_t>& increments, TimePoint now);

// Counts decisions on CommPolicy objects, in two steps: count() adds a decision's
// increments to what is pending, in memory; flush() writes everything pending, one write
// per policy: a read-modify-write of the status subresource with the resourceVersion as
// precondition, so concurrent writers never lose an increment; on 409 the policy is read
// again and the increments applied again (up to `attempts` times). The operator flushes
// a second after the first count (operator/operator_process.h), so a busy operator writes
// each policy about once a second instead of once per decision (10,000 decisions under one
// policy were 10,000 writes of one object, each a watch event to every replica and a
// tenth of the chart's client rate; issue #27). A write starts from the object the previous
// write returned when that is newer than what `reader` (a cache that may lag) shows. A
// policy whose write fails keeps its increments pending for the next flush; the others
// are written. Thread-safe; flushes are serial.
class PolicyCounters {
 public:
  PolicyCounters(const kube::Reader& reader, kube::StatusWriter& status_writer, int attempts = 5);

  enum class Outcome {
    kQueued,          // pending: the next flush() writes it
    kNoPolicyObject,  // the built-in default policy: nothing to count on
  };
  Outcome count(const std::string& policy_name, const Decision& decision, TimePoint now);

  // Writes what is pending; returns how many policies were written (a policy deleted since
  // counts as written: nothing is left to count on). Throws the first kube::ApiError after
  // trying every policy (a write that still conflicts after `attempts` tries, or any other
  // API error); what was not written stays pending.
  std::size_t flush();

  // Increments not yet written (by policy, then counter).
  std::map<std::string, std::map<std::string, int64_t>> pending() const;

  static std::string policy_path(const std::string& name);

 private:
  struct Pending {
    std::map<std::string, int64_t> increments;
    TimePoint first{};  // of the first decision counted: countingSince when absent
  };
  // Adds `more` to what is pending for `policy_name` (the earlier first time wins).
  // Requires mu_.
  void merge_locked(const std::string& policy_name, const Pending& more);
  // The policy from `reader_`, or this object's last write of it when the reader lags.
  nlohmann::json read(const std::string& path);
  // One policy's pending increments, written (read-modify-write, retried on conflict).
  void write(const std::string& policy_name, const Pending& pending);

  const kube::Reader& reader_;
  kube::StatusWriter& status_writer_;
  int attempts_;
  mutable std::mutex mu_;  // guards pending_
  std::map<std::string, Pending> pending_;
  std::mutex flush_mu_;   // one flush at a time
  OwnWrites own_writes_;  // the policies' status as last written; under flush_mu_
};

}  // namespace commgate::op
