// Which TrainingJobs (or, in an index of their own, Kueue Workloads) wait on which pool (issue
// #21): the index from consumer to pool that the measurement controller reads its demand through
// and that maps a probe's changes back to the jobs that wait on it. Kept by the operator process
// from the TrainingJobs' watch; only suspended jobs are in it (gated, probing, waiting for a retry;
// denied ones too, which the demand leaves out), so a cluster of admitted jobs costs it nothing.
// Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace commgate::op {

// The pool a stored TrainingJob waits on: pool_name(spec.nodeSelector) when spec.suspend
// is true, else nullopt.
std::optional<std::string> waiting_pool_of(const nlohmann::json& trainingjob);

class PoolIndex {
 public:
  // After a change of TrainingJob `key` ("namespace/name"): `object` as the cache has it
  // now, nullptr when it is gone. Returns the pools to look at again: the one it waits on
  // now and the one it waited on before, if either.
  std::vector<std::string> update(const std::string& key, const nlohmann::json* object);
  // The same for a consumer whose pool the caller computes (a Kueue Workload's key,
  // operator/kueue_check_reconciler.h workload_waiting_pool): `pool` nullopt when it
  // waits on none.
  std::vector<std::string> update_pool(const std::string& key,
                                       const std::optional<std::string>& pool);

  // The keys of the jobs waiting on `pool`, sorted.
  std::vector<std::string> waiting_on(const std::string& pool) const;

  // Every pool some job waits on.
  std::vector<std::string> pools() const;

  // The keys of every suspended job, sorted: those to decide again when the decision's
  // inputs change (without a pass over every cached TrainingJob, issue #27).
  std::vector<std::string> waiting() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> pool_of_;            // job key -> pool
  std::map<std::string, std::set<std::string>> jobs_of_;  // pool -> job keys
};

}  // namespace commgate::op
