#include "probe-job/compute.h"

#include <ATen/autocast_mode.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/cuda.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>
#include <torch/script.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include "core/compute_spread.h"
#include "probe-job/stats.h"

namespace commgate::probe {
namespace {

using SteadyClock = std::chrono::steady_clock;

void sync_device(at::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// bf16 autocast for the forward pass on a GPU, as torch.autocast("cuda", torch.bfloat16).
class AutocastScope {
 public:
  explicit AutocastScope(bool enabled) : enabled_(enabled) {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
  }
  ~AutocastScope() {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool enabled_;
};

class SyntheticMlp final : public TrainableModel {
 public:
  SyntheticMlp(const MlpShape& shape, int batch_size, at::Device device, bool autocast)
      : batch_size_(batch_size), autocast_(autocast) {
    const auto opts = at::TensorOptions().dtype(at::kFloat).device(device);
    auto add_layer = [&](int64_t in, int64_t out) {
      // Kaiming-normal weights keep activations from vanishing through the stack.
      auto w = (at::randn({out, in}, opts) * std::sqrt(2.0 / static_cast<double>(in)))
                   .set_requires_grad(true);
      auto b = at::zeros({out}, opts).set_requires_grad(true);
      weights_.push_back(w);
      biases_.push_back(b);
    };
    for (int i = 0; i < shape.layers; ++i) add_layer(shape.width, shape.width);
    add_layer(shape.width, shape.last_out);
    input_ = at::randn({batch_size, shape.width}, opts);
  }

  at::Tensor forward_loss() override {
    AutocastScope scope(autocast_);
    at::Tensor x = input_;
    for (size_t i = 0; i < weights_.size(); ++i) {
      x = at::linear(x, weights_[i], biases_[i]);
      if (i + 1 < weights_.size()) x = at::relu(x);
    }
    return x.to(at::kFloat).pow(2).mean();
  }

  std::vector<at::Tensor> parameters() override {
    std::vector<at::Tensor> out;
    for (size_t i = 0; i < weights_.size(); ++i) {
      out.push_back(weights_[i]);
      out.push_back(biases_[i]);
    }
    return out;
  }
  std::string description() const override { return "synthetic-mlp"; }
  int batch_size() const override { return batch_size_; }

 private:
  std::vector<at::Tensor> weights_;
  std::vector<at::Tensor> biases_;
  at::Tensor input_;
  int batch_size_;
  bool autocast_;
};

class TorchScriptModel final : public TrainableModel {
 public:
  TorchScriptModel(const std::string& path, const std::vector<int64_t>& shape, at::Device device,
                   bool autocast)
      : path_(path), batch_size_(static_cast<int>(shape.at(0))), autocast_(autocast) {
    try {
      module_ = torch::jit::load(path, device);
    } catch (const std::exception& e) {
      throw std::runtime_error("cannot load TorchScript module " + path + ": " + e.what());
    }
    module_.train();
    for (const auto& p : module_.parameters()) {
      if (p.requires_grad()) params_.push_back(p);
    }
    if (params_.empty()) {
      throw std::runtime_error("TorchScript module " + path +
                               " has no trainable parameters (none requires grad: export it "
                               "from the model in training form, not a frozen one)");
    }
    input_ = at::randn(shape, at::TensorOptions().dtype(at::kFloat).device(device));
  }

  at::Tensor forward_loss() override {
    AutocastScope scope(autocast_);
    // Run the module's ops as eager training runs them. The graph executor's optimized
    // mode differentiates the graph itself (autodiff subgraphs, fusion), a backward that
    // eager training never runs: with it, an MLP's backward took 1.5x eager PyTorch's on one
    // CPU thread (docs/model.md, "What the compute measurement depends on").
    torch::jit::GraphOptimizerEnabledGuard eager_like(false);
    auto out = module_.forward({input_});
    at::Tensor y;
    if (out.isTensor()) {
      y = out.toTensor();
    } else if (out.isTuple() && !out.toTupleRef().elements().empty() &&
               out.toTupleRef().elements()[0].isTensor()) {
      y = out.toTupleRef().elements()[0].toTensor();
    } else {
      throw std::runtime_error("TorchScript module " + path_ +
                               " must return a tensor (or a tuple starting with one)");
    }
    return y.to(at::kFloat).pow(2).mean();
  }
  std::vector<at::Tensor> parameters() override { return params_; }
  std::string description() const override { return "torchscript:" + path_; }
  int batch_size() const override { return batch_size_; }

 private:
  std::string path_;
  torch::jit::Module module_;
  std::vector<at::Tensor> params_;
  at::Tensor input_;
  int batch_size_;
  bool autocast_;
};

}  // namespace

std::unique_ptr<TrainableModel> make_synthetic_mlp(const MlpShape& shape, int batch_size,
                                                   at::Device device, bool bf16_autocast) {
  return std::make_unique<SyntheticMlp>(shape, batch_size, device, bf16_autocast);
}

std::unique_ptr<TrainableModel> load_torchscript_model(const std::string& path,
                                                       const std::vector<int64_t>& input_shape,
                                                       at::Device device, bool bf16_autocast) {
  return std::make_unique<TorchScriptModel>(path, input_shape, device, bf16_autocast);
}

double parameter_count(const std::vector<at::Tensor>& params) {
  double n = 0;
  for (const auto& p : params) n += static_cast<double>(p.numel());
  return n;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name,
                                                        const std::vector<at::Tensor>& params) {
  namespace optim = torch::optim;
  if (name == "sgd") return std::make_unique<optim::SGD>(params, optim::SGDOptions(1e-2));
  if (name == "sgd-momentum") {
    return std::make_unique<optim::SGD>(params, optim::SGDOptions(1e-2).momentum(0.9));
  }
  if (name == "adam") return std::make_unique<optim::Adam>(params, optim::AdamOptions(1e-4));
  if (name == "adamw") return std::make_unique<optim::AdamW>(params, optim::AdamWOptions(1e-4));
  if (name == "adagrad") {
    return std::make_unique<optim::Adagrad>(params, optim::AdagradOptions(1e-2));
  }
  if (name == "rmsprop") {
    return std::make_unique<optim::RMSprop>(params, optim::RMSpropOptions(1e-2));
  }
  throw std::invalid_argument("unknown optimizer \"" + name +
                              "\" (one of sgd, sgd-momentum, adam, adamw, adagrad, rmsprop)");
}

struct Trainer::Impl {
  TrainableModel& model;
  at::Device device;
  std::vector<at::Tensor> params;
  std::string optimizer_name;
  std::unique_ptr<torch::optim::Optimizer> optimizer;

  Impl(TrainableModel& m, at::Device d, const std::string& opt)
      : model(m),
        device(d),
        params(m.parameters()),
        optimizer_name(opt),
        optimizer(make_optimizer(opt, params)) {}
};

Trainer::Trainer(TrainableModel& model, at::Device device, const std::string& optimizer)
    : impl_(std::make_unique<Impl>(model, device, optimizer)) {}
Trainer::~Trainer() = default;

const std::string& Trainer::optimizer_name() const {
  return impl_->optimizer_name;
}

torch::optim::Optimizer& Trainer::optimizer() {
  return *impl_->optimizer;
}

StepTiming Trainer::step(const std::function<void()>& after_backward) {
  StepTiming t;
  for (auto& p : impl_->params) p.mutable_grad().reset();  // set_to_none, as PyTorch 2 does
  sync_device(impl_->device);
  auto t0 = SteadyClock::now();
  at::Tensor loss = impl_->model.forward_loss();
  sync_device(impl_->device);
  t.forward_s = seconds_since(t0);

  t0 = SteadyClock::now();
  loss.backward();
  if (after_backward) after_backward();
  sync_device(impl_->device);
  t.backward_s = seconds_since(t0);

  t0 = SteadyClock::now();
  impl_->optimizer->step();
  sync_device(impl_->device);
  t.optimizer_s = seconds_since(t0);
  return t;
}

ComputeResult measure_compute(TrainableModel& model, Trainer& trainer, int warmup, int iterations,
                              const std::string& precision, const RepeatRound& repeat) {
  for (int i = 0; i < warmup; ++i) trainer.step();
  std::vector<double> fwd, bwd, opt, total;
  int rounds = 0;
  for (;;) {
    fwd.clear();
    bwd.clear();
    opt.clear();
    total.clear();
    const auto round_start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      const StepTiming t = trainer.step();
      fwd.push_back(t.forward_s);
      bwd.push_back(t.backward_s);
      opt.push_back(t.optimizer_s);
      total.push_back(t.total_s());
    }
    ++rounds;
    if (rounds >= kMaxComputeRounds) break;
    const bool unsteady = !steady(quantile(total, 0.1), quantile(total, 0.9), median(total));
    const double round_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - round_start).count();
    if (!(repeat ? repeat(unsteady, round_s) : unsteady)) break;
  }
  ComputeResult r;
  r.rounds = rounds;
  r.parameters = parameter_count(model.parameters());
  r.gradient_dtype = "fp32";  // gradients are fp32 (autocast keeps fp32 master weights)
  r.model = model.description();
  r.precision = precision;
  r.batch_size = model.batch_size();
  r.optimizer = trainer.optimizer_name();
  r.iterations = iterations;
  r.step_time_ms = median(total) * 1e3;
  r.forward_ms = median(fwd) * 1e3;
  r.backward_ms = median(bwd) * 1e3;
  r.optimizer_ms = median(opt) * 1e3;
  r.p10_ms = quantile(total, 0.1) * 1e3;
  r.p90_ms = quantile(total, 0.9) * 1e3;
  return r;
}

}  // namespace commgate::probe
