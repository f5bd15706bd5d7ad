#include "core/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace commgate {

namespace {

bool valid_name(std::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    const bool digit = c >= '0' && c <= '9';
    if (!(alpha || (digit && i > 0))) return false;
  }
  return true;
}

std::string render_labels(const Labels& labels) {
  if (labels.empty()) return {};
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!valid_name(k, false)) throw std::invalid_argument("bad label name: " + k);
    if (!first) out += ',';
    first = false;
    out += k;
    out += "=\"";
    out += prometheus_escape_label(v);
    out += '"';
  }
  out += '}';
  return out;
}

// `{a="b"}` plus le="x" → `{a="b",le="x"}`.
std::string with_le(const std::string& labels, const std::string& le) {
  if (labels.empty()) return "{le=\"" + le + "\"}";
  return labels.substr(0, labels.size() - 1) + ",le=\"" + le + "\"}";
}

const char* type_name(int t) {
  switch (t) {
    case 0:
      return "counter";
    case 1:
      return "gauge";
    default:
      return "histogram";
  }
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  if (!std::is_sorted(bounds_.begin(), bounds_.end()) ||
      std::adjacent_find(bounds_.begin(), bounds_.end()) != bounds_.end()) {
    throw std::invalid_argument("histogram bounds must be strictly ascending");
  }
  counts_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
}

void Histogram::observe(double v) {
  const size_t i =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.upper_bounds = bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    s.cumulative_counts.push_back(running);
  }
  s.sum = sum_.load(std::memory_order_relaxed);
  // The +Inf bucket is the count, so that the two always agree in one scrape.
  s.count = running;
  return s;
}

std::vector<double> default_latency_buckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

Registry::Series& Registry::series(std::string_view name, std::string_view help, Type type,
                                   const Labels& labels) {
  if (!valid_name(name, true)) throw std::invalid_argument("bad metric name: " + std::string(name));
  std::string rendered = render_labels(labels);
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{type, std::string(help), {}}).first;
  } else if (it->second.type != type || it->second.help != help) {
    throw std::invalid_argument("metric registered twice with another type or help: " +
                                std::string(name));
  }
  Series& s = it->second.series[rendered];
  s.labels = std::move(rendered);
  return s;
}

Counter& Registry::counter(std::string_view name, std::string_view help, const Labels& labels) {
  std::lock_guard lock(mu_);
  Series& s = series(name, help, Type::kCounter, labels);
  if (!s.counter) s.counter = std::make_unique<Counter>();
  return *s.counter;
}

Gauge& Registry::gauge(std::string_view name, std::string_view help, const Labels& labels) {
  std::lock_guard lock(mu_);
  Series& s = series(name, help, Type::kGauge, labels);
  if (!s.gauge) s.gauge = std::make_unique<Gauge>();
  return *s.gauge;
}

Histogram& Registry::histogram(std::string_view name, std::string_view help,
                               std::vector<double> upper_bounds, const Labels& labels) {
  std::lock_guard lock(mu_);
  Series& s = series(name, help, Type::kHistogram, labels);
  if (!s.histogram) s.histogram = std::make_unique<Histogram>(std::move(upper_bounds));
  return *s.histogram;
}

void Registry::add_collector(std::function<std::string()> collector) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collector));
}

std::string Registry::render() const {
  std::string out;
  std::vector<std::function<std::string()>> collectors;
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, family] : families_) {
      out += "# HELP " + name + ' ' + prometheus_escape_help(family.help) + '\n';
      out += "# TYPE " + name + ' ' + type_name(static_cast<int>(family.type)) + '\n';
      for (const auto& [labels, s] : family.series) {
        if (s.counter) {
          out += name + labels + ' ' + prometheus_number(s.counter->value()) + '\n';
        } else if (s.gauge) {
          out += name + labels + ' ' + prometheus_number(s.gauge->value()) + '\n';
        } else if (s.histogram) {
          const Histogram::Snapshot snap = s.histogram->snapshot();
          for (size_t i = 0; i < snap.upper_bounds.size(); ++i) {
            out += name + "_bucket" + with_le(labels, prometheus_number(snap.upper_bounds[i])) +
                   ' ' + std::to_string(snap.cumulative_counts[i]) + '\n';
          }
          out +=
              name + "_bucket" + with_le(labels, "+Inf") + ' ' + std::to_string(snap.count) + '\n';
          out += name + "_sum" + labels + ' ' + prometheus_number(snap.sum) + '\n';
          out += name + "_count" + labels + ' ' + std::to_string(snap.count) + '\n';
        }
      }
    }
    collectors = collectors_;
  }
  for (const auto& c : collectors) out += c();
  return out;
}

}  // namespace commgate
