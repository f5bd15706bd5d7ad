// A tiny, thread-safe Prometheus text-format (0.0.4) registry: counters, gauges and
// histograms with fixed buckets, plus collectors that append text at render time (the
// HTTPS server's counters come in that way: see server_stats_prometheus in
// server/server.h). In core so that every part can count with it: the webhook, the
// operator's reconcilers (issue #21).
// Updates are lock-free; registration and rendering take a lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/prometheus_text.h"

namespace commgate {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void inc(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void inc(double v = 1.0) { value_.fetch_add(v, std::memory_order_relaxed); }
  void dec(double v = 1.0) { value_.fetch_sub(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // `upper_bounds`: ascending bucket bounds, without +Inf (added implicitly).
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);

  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative_counts;  // one per bound, then +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket (not cumulative), +Inf last
  std::atomic<double> sum_{0.0};
  std::atomic<uint64_t> count_{0};
};

// Latency buckets in seconds, 0.5 ms to 10 s.
std::vector<double> default_latency_buckets();

class Registry {
 public:
  // Returns the series for (name, labels), creating it (and its family) on first use; the
  // reference stays valid as long as the registry. Throws std::invalid_argument for a
  // bad metric or label name, or a name already registered with another type or help.
  Counter& counter(std::string_view name, std::string_view help, const Labels& labels = {});
  Gauge& gauge(std::string_view name, std::string_view help, const Labels& labels = {});
  Histogram& histogram(std::string_view name, std::string_view help,
                       std::vector<double> upper_bounds, const Labels& labels = {});
  // Appends already-formatted text at render time (e.g. server_stats_prometheus).
  void add_collector(std::function<std::string()> collector);

  std::string render() const;  // Content-Type: text/plain; version=0.0.4

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Series {
    std::string labels;  // rendered `{a="b",c="d"}` or ""
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  struct Family {
    Type type;
    std::string help;
    std::map<std::string, Series> series;  // by rendered labels
  };
  Series& series(std::string_view name, std::string_view help, Type type, const Labels& labels);

  mutable std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;
  std::vector<std::function<std::string()>> collectors_;
};

}  // namespace commgate
