// One lock per pool: the reconcile's probe step (look for the pool's probe, then create,
// collect or delete it) runs for one pool at a time in this process.
//
// Why: two workers reconciling two jobs of one pool each found no probe and no
// measurement, and each went to create one. The first probe ran, was collected (its
// measurement recorded, the Job deleted) while the second worker's create was on its way,
// and that create then succeeded under the freed name: the pool probed twice (seen in
// OperatorFaults.DroppedWatchesMissNoJob, about 1 run in 10 on a loaded machine). Under
// the lock the second worker looks after the first has created, and finds its probe.
// Across replicas only the leader reconciles, so a lock in the process is enough.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace commgate::op {

class PoolLocks {
 public:
  // Held until the returned guard goes; pools are few, so their mutexes are kept.
  [[nodiscard]] std::unique_lock<std::mutex> lock(const std::string& pool);

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<std::mutex>> pools_;
};

}  // namespace commgate::op
