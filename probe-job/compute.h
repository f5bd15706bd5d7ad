// The compute step of the job's model: forward + backward + the job's optimizer (AdamW
// unless told otherwise), timed per phase. The model is either a synthetic MLP with the requested
// parameter count or a TorchScript module. fp32 on the CPU, bf16 autocast on a GPU.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/probe_memory.h"
#include "core/probe_result.h"

namespace torch::optim {
class Optimizer;
}

namespace commgate::probe {

class TrainableModel {
 public:
  virtual ~TrainableModel() = default;
  // The forward pass on the model's fixed batch, reduced to a scalar loss.
  virtual at::Tensor forward_loss() = 0;
  // In registration order (DDP buckets them in reverse).
  virtual std::vector<at::Tensor> parameters() = 0;
  virtual std::string description() const = 0;  // "synthetic-mlp" | "torchscript:<path>"
  virtual int batch_size() const = 0;
};

// The synthetic model's shape (MlpShape, synthetic_mlp_shape) is core's
// (core/probe_memory.h), so its memory is known before it is built.
std::unique_ptr<TrainableModel> make_synthetic_mlp(const MlpShape& shape, int batch_size,
                                                   at::Device device, bool bf16_autocast);
// Throws std::runtime_error naming the path when the module cannot be loaded or run.
std::unique_ptr<TrainableModel> load_torchscript_model(const std::string& path,
                                                       const std::vector<int64_t>& input_shape,
                                                       at::Device device, bool bf16_autocast);

double parameter_count(const std::vector<at::Tensor>& params);

struct StepTiming {
  double forward_s = 0;
  double backward_s = 0;
  double optimizer_s = 0;
  double total_s() const { return forward_s + backward_s + optimizer_s; }
};

// LibTorch's optimizer for a name of kOptimizers (core/model_names.h), with PyTorch's
// defaults and a typical learning rate: sgd (lr 0.01), sgd-momentum (lr 0.01, momentum
// 0.9), adam and adamw (lr 1e-4; AdamW's weight decay 0.01), adagrad and rmsprop
// (lr 0.01). Throws std::invalid_argument naming the choices for any other name.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name,
                                                        const std::vector<at::Tensor>& params);

// Runs training steps of a model with the named optimizer, timing each phase.
class Trainer {
 public:
  Trainer(TrainableModel& model, at::Device device, const std::string& optimizer = "adamw");
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // One step. `after_backward` runs between backward and the optimizer (DDP waits for
  // its all-reduces there) and is counted in backward_s.
  StepTiming step(const std::function<void()>& after_backward = {});

  const std::string& optimizer_name() const;
  torch::optim::Optimizer& optimizer();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether to time another round: given whether this rank's round was unsteady
// (core/compute_spread.h) and how long the round took; every rank must get the same answer
// (the runner asks all of them), so that they keep computing at once, as in training.
using RepeatRound = std::function<bool(bool unsteady, double round_s)>;

// Warm-up steps (untimed), then rounds of `iterations` timed steps, another while
// `repeat` says so (at most kMaxComputeRounds; without `repeat`, while this rank's round
// is unsteady): the last round's medians per phase and p10/p90 of the whole step;
// `optimizer` is the trainer's.
ComputeResult measure_compute(TrainableModel& model, Trainer& trainer, int warmup, int iterations,
                              const std::string& precision, const RepeatRound& repeat = {});

}  // namespace commgate::probe
