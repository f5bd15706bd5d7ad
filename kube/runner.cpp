#include "kube/runner.h"

#include <algorithm>
#include <exception>
#include <iomanip>
#include <sstream>

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
  std::ostringstream out;
  out << std::setprecision(9);
  const auto sample = [&](const std::string& name, const char* type, const char* help,
                          uint64_t value) {
    out << "# HELP " << p << name << ' ' << help << "\n# TYPE " << p << name << ' ' << type << '\n'
        << p << name << ' ' << value << '\n';
  };
  sample("_reconciles_total", "counter", "Reconciles finished, errors included.", c.reconciles);
  sample("_reconcile_errors_total", "counter", "Reconciles that returned an error.", c.errors);
  out << "# HELP " << p << "_reconcile_duration_seconds Time spent in reconcile.\n# TYPE " << p
      << "_reconcile_duration_seconds summary\n"
      << p << "_reconcile_duration_seconds_sum " << c.duration_seconds_sum << '\n'
      << p << "_reconcile_duration_seconds_count " << c.reconciles << '\n';
  sample("_reconciles_in_flight", "gauge", "Reconciles running now.", c.in_flight);
  sample("_work_queue_depth", "gauge", "Keys ready and waiting for a worker.", c.queue_depth);
  sample("_work_queue_delayed", "gauge", "Keys waiting for a delay or a backoff to pass.",
         c.queue_delayed);
  return out.str();
}

}  // namespace commgate::kube
