// A real DDP-style step, built the way PyTorch DDP's Reducer works: parameters are
// assigned to buckets in reverse registration order (the first bucket closes at 1 MiB,
// the rest at 25 MiB), a post-hook on each parameter's gradient accumulator copies the
// gradient into its bucket divided by the world size, and when a bucket is complete (and
// every earlier bucket has been launched) it is all-reduced asynchronously, while
// backward goes on. Before the optimizer, all buckets are waited for and copied back.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/probe_result.h"
#include "probe-job/communicator.h"
#include "probe-job/compute.h"

namespace commgate::probe {

// DDP's compute_bucket_assignment_by_size for dense tensors of one dtype: walk the
// parameters in reverse, add each to the open bucket, close the bucket once it holds at
// least its cap (first_cap for the first bucket, cap after). Indices are into
// `param_bytes`; buckets are listed in launch order.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<double>& param_bytes,
                                                double first_cap, double cap);

class BucketedReducer {
 public:
  enum class Mode {
    kAllReduce,  // the real step
    // The step as DDP's no_sync() runs it: the hooks do nothing, the gradients stay local.
    // The bucket copies and the scaling belong to communication: real DDP's step pays
    // them only when it all-reduces, so timing them here would hide them from the
    // exposed communication (docs/probe.md).
    kComputeOnly,
  };

  // `compress_to`: the dtype each bucket is all-reduced as, cast from and back to the
  // gradients' (DDP's compression hooks); none: as the gradients are.
  BucketedReducer(std::vector<at::Tensor> params, Communicator& comm, double first_bucket_bytes,
                  double bucket_cap_bytes,
                  std::optional<at::ScalarType> compress_to = std::nullopt);
  ~BucketedReducer();
  BucketedReducer(const BucketedReducer&) = delete;
  BucketedReducer& operator=(const BucketedReducer&) = delete;

  void set_mode(Mode mode) { mode_ = mode; }
  // Before backward: every bucket waits for all its gradients again.
  void prepare_for_backward();
  // After backward: waits for every bucket's all-reduce and writes the averaged gradients
  // back to the parameters' .grad. Throws when a parameter produced no gradient.
  void finalize_backward();

  // Every bucket all-reduced back to back, launched at once as backward's hooks would,
  // with no compute: the communication the step has to hide, in seconds. Collective;
  // between steps only (it zeroes the buckets; the parameters' gradients are left as they
  // are), compressed as the step's are.
  double time_buckets_alone();

  size_t bucket_count() const;
  std::vector<double> bucket_bytes() const;

 private:
  struct State;
  void on_gradient_ready(size_t param_index);
  void launch(size_t bucket);

  std::unique_ptr<State> state_;
  Communicator& comm_;
  std::optional<at::ScalarType> compress_to_;
  Mode mode_ = Mode::kAllReduce;
};

struct DdpStepOptions {
  // What each bucket is all-reduced as: "fp32", or "fp16"/"bf16" as DDP's
  // fp16_compress_hook/bf16_compress_hook do (cast the fp32 bucket, divide, all-reduce,
  // cast back). Gloo in LibTorch 1.13 has no bf16 all-reduce: there bf16 goes as fp16,
  // the same bytes.
  std::string gradient_dtype = "fp32";
  double first_bucket_bytes = 1.0 * 1024 * 1024;
  double bucket_cap_bytes = 25.0 * 1024 * 1024;
  int warmup = 1;
  int iterations = 5;
  // More timed pairs while a pair is short, until every rank has timed this long (at most 20x
  // iterations, as the sweep's sizes): 5 pairs of a 70 ms step last under 0.7 s, where one
  // stall of a CPU-capped node moves the median by points. 0: exactly `iterations`.
  double min_timed_seconds = 3;
};

// Interleaves compute-only and all-reduce steps (after a barrier each, so all ranks are
// busy at once), and reports medians averaged over ranks. Collective.
DdpStepResult measure_ddp_step(TrainableModel& model, Trainer& trainer, Communicator& comm,
                               const DdpStepOptions& opts);

}  // namespace commgate::probe
