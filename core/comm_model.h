// The communication model: what one data-parallel training step costs on n nodes,
// given the measured link (ring all-reduce fit) and the measured compute step.
//
// DDP all-reduces gradients in buckets while backward still runs, so only the part of
// the all-reduce that outlasts backward is exposed. The model computes that schedule
// (buckets become ready in backward order, the first capped at 1 MiB so communication
// starts early, then 25 MiB each, PyTorch's defaults; they all-reduce one after another)
// in closed form: its cost does not grow with the gradient size, so a 1e15-parameter job
// costs what a small one does (issue #12). `replay_step` is the bucket-by-bucket replay
// the closed form is tested against.
#pragma once

#include <cstdint>
#include <vector>

#include "core/link_fit.h"

namespace commgate {

struct LinkModel {
  // Latency of one ring step between nodes; a ring all-reduce over n nodes takes
  // 2(n-1) steps, so alpha(n) = 2(n-1) * hop_latency_s. The ring pipelines its steps'
  // segments, so an all-reduce costs max(alpha(n), its transfer), not their sum.
  double hop_latency_s = 0;
  double busbw_bytes_per_s = 0;

  static LinkModel from_fit(const LinkFit& fit, int nodes_probed);
  // One all-reduce of `bytes` per rank. Ranks on the same node are taken to share a
  // fast local fabric, so 1 node costs nothing; across nodes the bus factor uses all
  // ranks (as nccl-tests does) and the latency the node count.
  double allreduce_seconds(double bytes, int nodes, int procs_per_node) const;
};

struct ComputeProfile {
  double forward_s = 0;
  double backward_s = 0;
  double optimizer_s = 0;

  double total_s() const { return forward_s + backward_s + optimizer_s; }
  // When only the whole step is known (a hint): backward takes about twice the forward
  // pass, and the optimizer step a tenth of the step.
  static ComputeProfile from_step_time(double step_s);
};

struct DdpConfig {
  double bucket_cap_bytes = 25.0 * 1024 * 1024;
  double first_bucket_bytes = 1.0 * 1024 * 1024;
};

// DDP's buckets in launch order, without listing them: the first (capped at
// first_bucket_bytes), `full_count` buckets of exactly bucket_cap_bytes, then a partial
// `last` bucket when the gradient does not divide evenly (0 when it does).
struct BucketSchedule {
  double first = 0;
  int64_t full_count = 0;
  double full = 0;
  double last = 0;

  int64_t count() const { return (first > 0 ? 1 : 0) + full_count + (last > 0 ? 1 : 0); }
};
BucketSchedule ddp_buckets(double gradient_bytes, const DdpConfig& ddp);
// The same buckets listed one by one (O(buckets): for tests and small gradients only).
std::vector<double> ddp_bucket_sizes(double gradient_bytes, const DdpConfig& ddp);

struct StepPrediction {
  int nodes = 0;
  int ranks = 0;
  double compute_s = 0;           // forward + backward + optimizer, no communication
  double allreduce_s = 0;         // all bucket all-reduces back to back
  double step_s = 0;              // the overlapped step
  double exposed_comm_s = 0;      // step_s - compute_s
  double comm_share = 0;          // exposed_comm_s / step_s
  double speedup = 0;             // throughput vs 1 node at the same per-GPU batch
  double scaling_efficiency = 0;  // speedup / nodes
  // True when this row is the probe's own DDP step at this count (not the model).
  bool measured = false;
};

struct ModelInputs {
  ComputeProfile compute;
  LinkModel link;
  double gradient_bytes = 0;
  int procs_per_node = 1;
  DdpConfig ddp;
  // The share of what the bucket schedule hides behind backward that really hides, in
  // [0, 1]: 1 where communication costs the compute nothing (NCCL on its own stream), 0
  // where it takes the compute's own resources (Gloo's threads on a node's few cores).
  // The exposed communication is the schedule's plus (1 - overlap) of what it hides.
  double overlap = 1;
  // What every step pays for communication besides its all-reduces, once, at any count
  // of 2 nodes or more: what the probe's DDP step exposed beyond its buckets all-reduced
  // alone (copying gradients into and out of the buckets, scaling them, each
  // collective's setup on a node's few cores). It does not grow with the ring's bytes,
  // so it is not read as a slower link, which the ring's bus factor would grow.
  double step_overhead_s = 0;
};

// O(1) in the gradient size and the node count.
StepPrediction predict_step(const ModelInputs& in, int nodes);
// The reference: replays every bucket (O(buckets)). predict_step equals it (tested).
StepPrediction replay_step(const ModelInputs& in, int nodes);
// One prediction per node count 1..max_nodes.
std::vector<StepPrediction> predict_table(const ModelInputs& in, int max_nodes);

// The prediction built from a directly measured step: compute and step as measured,
// the all-reduce total as the model gives it (the probe does not time it alone).
StepPrediction measured_step(const ModelInputs& in, int nodes, double compute_s, double step_s);

// Calibration by the probe's own DDP step: the overlap and the bus bandwidth with which
// the model reproduces `measured_exposed_s` of exposed communication at `nodes`
// (docs/model.md says why in this order). Between what the schedule exposes with the
// swept busbw and the whole all-reduce, the overlap explains it (the bandwidth is the
// swept one). Beyond the whole all-reduce (slower than no overlap at all), the overlap is
// 0 and the bandwidth lower, within [kMinBusbwCorrection, 1]; below what the schedule
// exposes (faster than full overlap), the overlap is 1 and the bandwidth higher, within
// [1, kMaxBusbwCorrection]. When nothing in those ranges reproduces the step, `exact` is
// false and the model takes the floor (a step slower than it explains) or is left as it
// is (a faster one: never corrected towards "cheap").
struct StepCalibration {
  double factor = 1;   // effective busbw / swept busbw
  double overlap = 1;  // ModelInputs::overlap
  bool exact = true;
  double step_overhead_s = 0;  // ModelInputs::step_overhead_s
  // The bandwidth came from the step's buckets all-reduced alone (the probe timed them).
  bool from_buckets_alone = false;
  // Why a time of the buckets alone was left out (the step alone calibrated): no factor in
  // range gives it, or at the bandwidth it gives the step would have exposed more than
  // it did.
  enum class BucketsUnused { kNo, kNoBandwidthGivesIt, kStepExposedLess };
  BucketsUnused buckets_unused = BucketsUnused::kNo;
};
inline constexpr double kMinBusbwCorrection = 0.05;
inline constexpr double kMaxBusbwCorrection = 4;
//
// When the probe also timed the step's buckets all-reduced alone (`measured_allreduce_s`,
// 0: not timed), the bandwidth is the one at which the model's whole all-reduce takes
// that long, and the overlap explains the step as above with it; what the step exposed
// beyond the whole all-reduce is the per-step overhead (ModelInputs::step_overhead_s),
// not a slower link. A step that exposed less than the schedule with that bandwidth, or a
// time no factor in range gives, is calibrated by the step alone, as without it.
StepCalibration calibrate_to_ddp_step(const ModelInputs& in, int nodes, double measured_exposed_s,
                                      double measured_allreduce_s = 0);

}  // namespace commgate
