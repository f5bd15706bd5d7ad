#include "core/comm_model.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace commgate {
namespace {

// Shares, speedup and efficiency from the compute and the overlapped step.
void finish(StepPrediction& p) {
  p.exposed_comm_s = std::max(0.0, p.step_s - p.compute_s);
  p.comm_share = p.step_s > 0 ? p.exposed_comm_s / p.step_s : 0;
  // Data parallelism at a fixed per-GPU batch: n nodes do n times the work per step.
  p.speedup = p.step_s > 0 ? p.nodes * p.compute_s / p.step_s : 0;
  p.scaling_efficiency = p.nodes > 0 ? p.speedup / p.nodes : 0;
}

// The schedule hid allreduce_s - (step_s - compute_s) behind backward; with an overlap
// below 1 only that share of it hides, the rest adds to the step.
void expose_unhidden(StepPrediction& p, double overlap) {
  const double exposed = std::max(0.0, p.step_s - p.compute_s);
  const double hidden = std::max(0.0, p.allreduce_s - exposed);
  p.step_s += (1 - std::clamp(overlap, 0.0, 1.0)) * hidden;
}

// The per-step overhead is paid wherever the step all-reduces between nodes.
void pay_step_overhead(StepPrediction& p, const ModelInputs& in) {
  if (p.allreduce_s > 0) p.step_s += std::max(0.0, in.step_overhead_s);
}

StepPrediction start(const ModelInputs& in, int nodes) {
  StepPrediction p;
  p.nodes = nodes;
  p.ranks = nodes * std::max(1, in.procs_per_node);
  p.compute_s = in.compute.total_s();
  return p;
}

}  // namespace

LinkModel LinkModel::from_fit(const LinkFit& fit, int nodes_probed) {
  LinkModel m;
  m.busbw_bytes_per_s = fit.busbw_bytes_per_s;
  m.hop_latency_s = nodes_probed > 1 ? fit.latency_s / (2.0 * (nodes_probed - 1)) : 0;
  return m;
}

double LinkModel::allreduce_seconds(double bytes, int nodes, int procs_per_node) const {
  if (nodes <= 1 || bytes <= 0) return 0;
  const int ranks = nodes * std::max(1, procs_per_node);
  const double alpha = 2.0 * (nodes - 1) * hop_latency_s;
  const double transfer =
      busbw_bytes_per_s > 0 ? bytes * allreduce_bus_factor(ranks) / busbw_bytes_per_s : 0;
  // The ring pipelines each step's data in segments (Gloo keeps two in flight, NCCL
  // several chunks): a step's latency passes while another segment's bytes move, so it
  // is paid only where a step moves less than the latency lasts. Adding the two instead
  // charged a 25 MiB bucket every hop's latency and grew it 3x from 2 to 4 nodes where
  // real DDP's buckets grow by the bus factor alone (docs/model.md).
  return std::max(alpha, transfer);
}

ComputeProfile ComputeProfile::from_step_time(double step_s) {
  ComputeProfile c;
  c.optimizer_s = 0.1 * step_s;
  c.forward_s = 0.3 * step_s;
  c.backward_s = 0.6 * step_s;
  return c;
}

BucketSchedule ddp_buckets(double gradient_bytes, const DdpConfig& ddp) {
  assert(ddp.bucket_cap_bytes > 0 && ddp.first_bucket_bytes > 0);
  BucketSchedule s;
  if (!(gradient_bytes > 0)) return s;
  s.first = std::min(gradient_bytes, ddp.first_bucket_bytes);
  s.full = ddp.bucket_cap_bytes;
  const double rest = gradient_bytes - s.first;
  if (rest <= 0) return s;
  double k = std::floor(rest / s.full);
  double last = rest - k * s.full;
  // Division can round across a bucket boundary; the remainder says which side.
  if (last < 0) {
    k -= 1;
    last += s.full;
  } else if (last >= s.full) {
    k += 1;
    last -= s.full;
  }
  s.full_count = static_cast<int64_t>(k);
  s.last = last;
  return s;
}

std::vector<double> ddp_bucket_sizes(double gradient_bytes, const DdpConfig& ddp) {
  assert(ddp.bucket_cap_bytes > 0 && ddp.first_bucket_bytes > 0);
  std::vector<double> sizes;
  double left = gradient_bytes;
  if (left <= 0) return sizes;
  double first = std::min(left, ddp.first_bucket_bytes);
  sizes.push_back(first);
  left -= first;
  while (left > 0) {
    double b = std::min(left, ddp.bucket_cap_bytes);
    sizes.push_back(b);
    left -= b;
  }
  return sizes;
}

// Bucket j is ready at r_j (once backward has produced its bytes) and costs c_j; the
// all-reduces run one at a time, so the last one ends at max_j (r_j + c_j + ... + c_last)
// (the queue's max-plus form of end_j = max(r_j, end_{j-1}) + c_j). Within the run of
// full buckets r_j grows by one bucket's production time and the suffix sum falls by
// one bucket's cost per step: linear in j, so its maximum is at one end of the run.
// Four candidates therefore give the same end as the replay of every bucket.
StepPrediction predict_step(const ModelInputs& in, int nodes) {
  StepPrediction p = start(in, nodes);
  const double backward_start = in.compute.forward_s;
  const double backward_end = in.compute.forward_s + in.compute.backward_s;
  const double g = in.gradient_bytes;
  const BucketSchedule b = ddp_buckets(g, in.ddp);
  auto ready = [&](double produced) {
    return backward_start + in.compute.backward_s * (produced / g);
  };
  auto cost = [&](double bytes) {
    return in.link.allreduce_seconds(bytes, nodes, in.procs_per_node);
  };
  double comm_end = 0;
  if (b.count() > 0) {
    const double first = cost(b.first);
    const double full = b.full_count > 0 ? cost(b.full) : 0;
    const double last = b.last > 0 ? cost(b.last) : 0;
    const double k = static_cast<double>(b.full_count);
    p.allreduce_s = first + k * full + last;
    comm_end = ready(b.first) + p.allreduce_s;
    if (b.full_count > 0) {
      comm_end = std::max(comm_end, ready(b.first + b.full) + k * full + last);
      comm_end = std::max(comm_end, ready(b.first + k * b.full) + full + last);
    }
    if (b.last > 0) comm_end = std::max(comm_end, ready(g) + last);
  }
  // The optimizer step waits for the last gradient to be reduced.
  p.step_s = std::max(backward_end, comm_end) + in.compute.optimizer_s;
  expose_unhidden(p, in.overlap);
  pay_step_overhead(p, in);
  finish(p);
  return p;
}

StepPrediction replay_step(const ModelInputs& in, int nodes) {
  StepPrediction p = start(in, nodes);
  const double backward_start = in.compute.forward_s;
  const double backward_end = in.compute.forward_s + in.compute.backward_s;
  double produced = 0;
  double comm_free_at = 0;
  for (double bucket : ddp_bucket_sizes(in.gradient_bytes, in.ddp)) {
    produced += bucket;
    const double ready = backward_start + in.compute.backward_s * (produced / in.gradient_bytes);
    const double cost = in.link.allreduce_seconds(bucket, nodes, in.procs_per_node);
    p.allreduce_s += cost;
    comm_free_at = std::max(comm_free_at, ready) + cost;
  }
  p.step_s = std::max(backward_end, comm_free_at) + in.compute.optimizer_s;
  expose_unhidden(p, in.overlap);
  pay_step_overhead(p, in);
  finish(p);
  return p;
}

std::vector<StepPrediction> predict_table(const ModelInputs& in, int max_nodes) {
  std::vector<StepPrediction> out;
  for (int n = 1; n <= max_nodes; ++n) out.push_back(predict_step(in, n));
  return out;
}

StepPrediction measured_step(const ModelInputs& in, int nodes, double compute_s, double step_s) {
  StepPrediction p = start(in, nodes);
  p.allreduce_s = predict_step(in, nodes).allreduce_s;
  p.compute_s = compute_s;
  p.step_s = std::max(step_s, compute_s);
  p.measured = true;
  finish(p);
  return p;
}

namespace {

// The factor in [lo, hi] (log scale) at which `falling(factor)` is `target`, for a
// function that falls as the factor (the bandwidth) grows.
template <typename Falling>
double factor_where(double lo, double hi, double target, Falling falling) {
  lo = std::log(lo);
  hi = std::log(hi);
  for (int i = 0; i < 64; ++i) {
    const double mid = 0.5 * (lo + hi);
    (falling(std::exp(mid)) > target ? lo : hi) = mid;
  }
  return std::exp(0.5 * (lo + hi));
}

ModelInputs calibrated_inputs(const ModelInputs& in, double factor, double overlap) {
  ModelInputs s = in;
  s.link.busbw_bytes_per_s *= factor;
  s.overlap = overlap;
  return s;
}

StepCalibration calibrate_by_step_alone(const ModelInputs& in, int nodes,
                                        double measured_exposed_s) {
  auto exposed = [&](double factor, double overlap) {
    return predict_step(calibrated_inputs(in, factor, overlap), nodes).exposed_comm_s;
  };
  auto bisect = [&](double lo, double hi, double overlap) {
    return factor_where(lo, hi, measured_exposed_s,
                        [&](double factor) { return exposed(factor, overlap); });
  };
  const double scheduled = exposed(1, 1);  // everything the schedule hides, hidden
  const double unhidden = exposed(1, 0);   // the whole all-reduce
  if (measured_exposed_s > unhidden) {
    // Slower than no overlap at all explains: the DDP step's all-reduces ran slower than
    // the sweep's. A step slower than the floor explains gets the floor (the strict side).
    if (measured_exposed_s >= exposed(kMinBusbwCorrection, 0))
      return {kMinBusbwCorrection, 0, false};
    return {bisect(kMinBusbwCorrection, 1, 0), 0, true};
  }
  if (measured_exposed_s >= scheduled) {
    const double hidden = unhidden - scheduled;
    return {1, hidden > 0 ? (unhidden - measured_exposed_s) / hidden : 1, true};
  }
  // Faster than the schedule hides at the swept busbw. One faster than the ceiling
  // explains (less exposed than latency and backward alone give, or noise) is not
  // corrected at all: the model would otherwise call every count cheap.
  if (measured_exposed_s <= exposed(kMaxBusbwCorrection, 1)) return {1, 1, false};
  return {bisect(1, kMaxBusbwCorrection, 1), 1, true};
}

}  // namespace

StepCalibration calibrate_to_ddp_step(const ModelInputs& in, int nodes, double measured_exposed_s,
                                      double measured_allreduce_s) {
  if (!(in.link.busbw_bytes_per_s > 0) || nodes < 2) return {1, 1, false};
  ModelInputs base = in;
  base.step_overhead_s = 0;  // what is calibrated here
  if (!(measured_allreduce_s > 0)) return calibrate_by_step_alone(base, nodes, measured_exposed_s);
  auto allreduce = [&](double factor) {
    return predict_step(calibrated_inputs(base, factor, 1), nodes).allreduce_s;
  };
  auto by_step_alone = [&](StepCalibration::BucketsUnused why) {
    StepCalibration c = calibrate_by_step_alone(base, nodes, measured_exposed_s);
    c.buckets_unused = why;
    return c;
  };
  // The buckets' bandwidth: where the model's whole all-reduce takes what theirs took. A
  // time outside what the factor's range gives (latency-bound buckets, or a stall) says
  // nothing about the bandwidth.
  if (measured_allreduce_s >= allreduce(kMinBusbwCorrection) ||
      measured_allreduce_s <= allreduce(kMaxBusbwCorrection))
    return by_step_alone(StepCalibration::BucketsUnused::kNoBandwidthGivesIt);
  const double factor =
      factor_where(kMinBusbwCorrection, kMaxBusbwCorrection, measured_allreduce_s, allreduce);
  const double scheduled = predict_step(calibrated_inputs(base, factor, 1), nodes).exposed_comm_s;
  const double unhidden = predict_step(calibrated_inputs(base, factor, 0), nodes).exposed_comm_s;
  // (The factor is found to 64 halvings: a step exactly at the schedule may compare a
  // rounding below it.)
  if (measured_exposed_s < scheduled * (1 - 1e-9))
    return by_step_alone(StepCalibration::BucketsUnused::kStepExposedLess);
  StepCalibration c{factor, 0, true, 0, true};
  if (measured_exposed_s > unhidden) {
    c.step_overhead_s = measured_exposed_s - unhidden;
  } else {
    const double hidden = unhidden - scheduled;
    c.overlap = hidden > 0 ? std::clamp((unhidden - measured_exposed_s) / hidden, 0.0, 1.0) : 1;
  }
  return c;
}

}  // namespace commgate
