#include "probe-job/allreduce_sweep.h"

#include <algorithm>
#include <cmath>

#include "core/quantity.h"

namespace commgate::probe {

const std::vector<CollectiveSpec>& collectives() {
  static const std::vector<CollectiveSpec> table = {
      {"allreduce",
       [](int64_t count, int element_size, int) {
         return static_cast<double>(count) * element_size;
       },
       [](int ranks) { return allreduce_bus_factor(ranks); }},
  };
  return table;
}

const CollectiveSpec& allreduce_collective() {
  return collectives().front();
}

std::vector<double> sweep_sizes(double min_bytes, double max_bytes, double factor,
                                int element_size) {
  auto align = [&](double b) {
    return std::max<double>(element_size, std::floor(b / element_size) * element_size);
  };
  std::vector<double> sizes;
  const double top = align(max_bytes);
  for (double s = align(min_bytes); s < top; s = align(s * factor)) {
    if (!sizes.empty() && s <= sizes.back()) break;
    sizes.push_back(s);
  }
  if (sizes.empty() || sizes.back() != top) sizes.push_back(top);
  return sizes;
}

AllReduceResult make_result(const CollectiveSpec& spec, double bytes, double seconds, int ranks,
                            bool data_ok) {
  AllReduceResult r;
  r.bytes = bytes;
  r.time_us = seconds * 1e6;
  r.algbw_gbps = seconds > 0 ? to_gbps(bytes / seconds) : 0;
  r.busbw_gbps = r.algbw_gbps * spec.bus_factor(ranks);
  r.data_check_ok = data_ok;
  return r;
}

LinkFit fit_results(const std::vector<AllReduceResult>& rows, int ranks) {
  std::vector<AllReduceSample> samples;
  samples.reserve(rows.size());
  for (const auto& r : rows) samples.push_back({r.bytes, r.time_us * 1e-6});
  return fit_ring_allreduce(samples, ranks);
}

int iterations_for(double warmup_seconds, int iterations, double budget_s) {
  if (!(warmup_seconds > 0)) return iterations;
  const double wanted = std::ceil(budget_s / warmup_seconds);
  return static_cast<int>(std::clamp(wanted, static_cast<double>(iterations), 20.0 * iterations));
}

double mean_over_ranks(Communicator& comm, double value) {
  auto t = at::full({1}, value, at::TensorOptions().dtype(at::kDouble).device(comm.device()));
  comm.allreduce_sum(t);
  return t.cpu().item<double>() / comm.size();
}

std::vector<double> values_of_ranks(Communicator& comm, double value) {
  // Each rank fills its own slot; the sum holds them all.
  auto t = at::zeros({comm.size()}, at::TensorOptions().dtype(at::kDouble).device(comm.device()));
  t[comm.rank()] = value;
  comm.allreduce_sum(t);
  auto cpu = t.cpu();
  const double* v = cpu.data_ptr<double>();
  return std::vector<double>(v, v + comm.size());
}

bool check_allreduce_sum(Communicator& comm, int64_t count) {
  const auto opts = at::TensorOptions().device(comm.device());
  auto base = (at::arange(count, opts.dtype(at::kInt)).remainder(7) + 1).to(at::kFloat);
  auto t = base * static_cast<float>(comm.rank() + 1);
  comm.allreduce_sum(t);
  const int n = comm.size();
  auto expected = base * static_cast<float>(n * (n + 1) / 2);
  const bool ok = t.sub(expected).abs().max().cpu().item<float>() == 0.0f;
  // Every rank reports the same verdict: the number of ranks that saw a wrong sum.
  return mean_over_ranks(comm, ok ? 0.0 : 1.0) == 0.0;
}

SweepReport run_allreduce_sweep(Communicator& comm, const SweepOptions& opts,
                                const std::function<void(const std::string&)>& on_stage) {
  const auto& spec = allreduce_collective();
  SweepReport report;
  const auto topts = at::TensorOptions().dtype(at::kFloat).device(comm.device());
  for (double bytes : sweep_sizes(opts.min_bytes, opts.max_bytes, opts.factor, 4)) {
    on_stage("allreduce " + format_bytes(bytes));
    const auto count = static_cast<int64_t>(bytes / 4);
    auto t = at::zeros({count}, topts);
    comm.barrier();
    double warm = comm.time_allreduce(t, std::max(1, opts.warmup));
    // All ranks must run the same number of iterations: decide from the mean warm-up.
    warm = mean_over_ranks(comm, warm);
    const int iters = iterations_for(warm, opts.iterations, opts.size_time_budget_s);
    comm.barrier();
    const double seconds = mean_over_ranks(comm, comm.time_allreduce(t, iters));
    const bool ok = check_allreduce_sum(comm, count);
    report.data_ok = report.data_ok && ok;
    report.results.push_back(
        make_result(spec, spec.bytes(count, 4, comm.size()), seconds, comm.size(), ok));
  }
  report.fit = fit_results(report.results, comm.size());
  return report;
}

}  // namespace commgate::probe
