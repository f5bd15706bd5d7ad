// The runner: N worker threads that take keys from a WorkQueue, call the reconcile
// function with each, and turn its result into queue operations with the requeue rules
// (STYLE.md "The shape of a controller"; controller-runtime's Controller with
// MaxConcurrentReconciles). The queue's dedup means one key is never reconciled by two
// workers at once.
//
// Lifecycle: start() once; stop() shuts the queue down (no new key is handed out),
// waits for the reconciles in flight to return, then returns. The destructor stops.
//
// Metrics (Prometheus text from metrics_text(), names under the caller's prefix):
//   <prefix>_reconciles_total, <prefix>_reconcile_errors_total,
//   <prefix>_reconcile_duration_seconds (summary: _sum, _count; on the runner's clock),
//   <prefix>_reconciles_in_flight, <prefix>_work_queue_depth, <prefix>_work_queue_delayed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/clock.h"
#include "kube/reconcile_result.h"
#include "kube/work_queue.h"

namespace commgate::kube {

// Reconciles the object named by `key` ("namespace/name"), reading its current state.
// Thrown exceptions count as retryable errors.
using ReconcileFn = std::function<ReconcileResult(const std::string& key)>;

// The requeue rules, the only place that maps a result to queue operations:
//   retryable error      -> add_rate_limited (per-key backoff, overall token bucket)
//   terminal error       -> forget (no retry; the next change of the object queues it)
//   requeue_after(d)     -> forget, then add_after(d)
//   await_change         -> forget
// The caller still calls queue.done(key) afterwards.
void apply_requeue_rules(WorkQueue& queue, const std::string& key, const ReconcileResult& result);

struct RunnerOptions {
  // Worker threads: at most this many reconciles at once (`--concurrency`). At least 1.
  int concurrency = 1;
  // Prefix of every metric name, e.g. "commgate_trainingjob"; must be a valid
  // Prometheus name.
  std::string metrics_prefix = "commgate_controller";
};

struct RunnerCounters {
  uint64_t reconciles = 0;  // finished, errors included
  uint64_t errors = 0;      // retryable and terminal
  uint64_t in_flight = 0;
  double duration_seconds_sum = 0;
  size_t queue_depth = 0;
  size_t queue_delayed = 0;
};

class Runner {
 public:
  Runner(std::shared_ptr<WorkQueue> queue, std::shared_ptr<Clock> clock, ReconcileFn reconcile,
         RunnerOptions options = {});
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  void start();
  // Idempotent. Returns once every worker has finished its reconcile in flight.
  void stop();

  RunnerCounters counters() const;
  std::string metrics_text() const;

 private:
  void work();
  ReconcileResult call(const std::string& key);

  std::shared_ptr<WorkQueue> queue_;
  std::shared_ptr<Clock> clock_;
  ReconcileFn reconcile_;
  RunnerOptions options_;
  std::vector<std::thread> workers_;
  mutable std::mutex mu_;  // guards counters_ and workers_ (start/stop)
  RunnerCounters counters_;
};

}  // namespace commgate::kube
