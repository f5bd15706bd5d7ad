#include "core/comm_model.h"

#include <algorithm>
#include <cassert>

namespace commgate {

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
  return alpha + transfer;
}

ComputeProfile ComputeProfile::from_step_time(double step_s) {
  ComputeProfile c;
  c.optimizer_s = 0.1 * step_s;
  c.forward_s = 0.3 * step_s;
  c.backward_s = 0.6 * step_s;
  return c;
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

StepPrediction predict_step(const ModelInputs& in, int nodes) {
  StepPrediction p;
  p.nodes = nodes;
  p.ranks = nodes * std::max(1, in.procs_per_node);
  p.compute_s = in.compute.total_s();
  const double backward_start = in.compute.forward_s;
  const double backward_end = in.compute.forward_s + in.compute.backward_s;

  // Replay the bucket schedule: bucket i is ready once backward has produced its bytes
  // (gradients arrive at an even rate), and the all-reduces run one at a time.
  double produced = 0;
  double comm_free_at = 0;
  for (double bucket : ddp_bucket_sizes(in.gradient_bytes, in.ddp)) {
    produced += bucket;
    const double ready = backward_start + in.compute.backward_s * (produced / in.gradient_bytes);
    const double cost = in.link.allreduce_seconds(bucket, nodes, in.procs_per_node);
    p.allreduce_s += cost;
    comm_free_at = std::max(comm_free_at, ready) + cost;
  }
  // The optimizer step waits for the last gradient to be reduced.
  p.step_s = std::max(backward_end, comm_free_at) + in.compute.optimizer_s;
  p.exposed_comm_s = std::max(0.0, p.step_s - p.compute_s);
  p.comm_share = p.step_s > 0 ? p.exposed_comm_s / p.step_s : 0;
  // Data parallelism at a fixed per-GPU batch: n nodes do n times the work per step.
  p.speedup = p.step_s > 0 ? nodes * p.compute_s / p.step_s : 0;
  p.scaling_efficiency = nodes > 0 ? p.speedup / nodes : 0;
  return p;
}

std::vector<StepPrediction> predict_table(const ModelInputs& in, int max_nodes) {
  std::vector<StepPrediction> out;
  for (int n = 1; n <= max_nodes; ++n) out.push_back(predict_step(in, n));
  return out;
}

}  // namespace commgate
