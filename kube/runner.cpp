#include "kube/runner.h"

#include <algorithm>
#include <exception>

#include "core/prometheus_text.h"

namespace commgate::kube {

void apply_requeue_rules(WorkQueue& queue, const std::string& key, const ReconcileResult& result) {
  if (!result.ok()) {
    if (result.error().is_terminal) {
      queue.forget(key);
    } else {
      queue.add_rate_limited(key);
    }
    return;
  }
  queue.forget(key);
  if (const auto delay = result.action().requeue_delay()) queue.add_after(key, *delay);
}

Runner::Runner(std::shared_ptr<WorkQueue> queue, std::shared_ptr<Clock> clock,
               ReconcileFn reconcile, RunnerOptions options)
    : queue_(std::move(queue)),
      clock_(std::move(clock)),
      reconcile_(std::move(reconcile)),
      options_(std::move(options)) {}

Runner::~Runner() {
  stop();
}

void Runner::start() {
  std::lock_guard lock(mu_);
  if (!workers_.empty()) return;
  const int n = std::max(1, options_.concurrency);
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { work(); });
}

void Runner::stop() {
  queue_->shutdown();
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    workers.swap(workers_);
  }
  for (auto& worker : workers) worker.join();
}

ReconcileResult Runner::call(const std::string& key) {
  try {
    return reconcile_(key);
  } catch (const std::exception& e) {
    return ReconcileError::retryable(std::string("reconcile threw: ") + e.what());
  } catch (...) {
    return ReconcileError::retryable("reconcile threw a non-standard exception");
  }
}

void Runner::work() {
  while (const auto key = queue_->get()) {
    {
      std::lock_guard lock(mu_);
      ++counters_.in_flight;
    }
    const auto started = clock_->now();
    const ReconcileResult result = call(*key);
    const double seconds = std::chrono::duration<double>(clock_->now() - started).count();
    apply_requeue_rules(*queue_, *key, result);
    queue_->done(*key);
    std::lock_guard lock(mu_);
    --counters_.in_flight;
    ++counters_.reconciles;
    if (!result.ok()) ++counters_.errors;
    counters_.duration_seconds_sum += seconds;
  }
}

RunnerCounters Runner::counters() const {
  RunnerCounters out;
  {
    std::lock_guard lock(mu_);
    out = counters_;
  }
  out.queue_depth = queue_->length();
  out.queue_delayed = queue_->delayed();
  return out;
}

std::string Runner::metrics_text() const {
  const RunnerCounters c = counters();
  const std::string& p = options_.metrics_prefix;
  std::string out;
  const auto sample = [&](const std::string& name, const char* type, const char* help,
                          double value) {
    append_prometheus_sample(out, p + name, type, help, value);
  };
  sample("_reconciles_total", "counter", "Reconciles finished, errors included.",
         static_cast<double>(c.reconciles));
  sample("_reconcile_errors_total", "counter", "Reconciles that returned an error.",
         static_cast<double>(c.errors));
  out += "# HELP " + p + "_reconcile_duration_seconds Time spent in reconcile.\n# TYPE " + p +
         "_reconcile_duration_seconds summary\n" + p + "_reconcile_duration_seconds_sum " +
         prometheus_number(c.duration_seconds_sum) + "\n" + p +
         "_reconcile_duration_seconds_count " +
         prometheus_number(static_cast<double>(c.reconciles)) + "\n";
  sample("_reconciles_in_flight", "gauge", "Reconciles running now.",
         static_cast<double>(c.in_flight));
  sample("_work_queue_depth", "gauge", "Keys ready and waiting for a worker.",
         static_cast<double>(c.queue_depth));
  sample("_work_queue_delayed", "gauge", "Keys waiting for a delay or a backoff to pass.",
         static_cast<double>(c.queue_delayed));
  return out;
}

}  // namespace commgate::kube
