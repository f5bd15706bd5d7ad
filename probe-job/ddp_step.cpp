#include "probe-job/ddp_step.h"

#include <ATen/ScalarOps.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>

#include "probe-job/allreduce_sweep.h"
#include "probe-job/stats.h"

namespace commgate::probe {

std::vector<std::vector<size_t>> assign_buckets(const std::vector<double>& param_bytes,
                                                double first_cap, double cap) {
  std::vector<std::vector<size_t>> buckets;
  std::vector<size_t> open;
  double open_bytes = 0;
  for (size_t k = param_bytes.size(); k-- > 0;) {
    open.push_back(k);
    open_bytes += param_bytes[k];
    const double limit = buckets.empty() ? first_cap : cap;
    if (open_bytes >= limit) {
      buckets.push_back(std::move(open));
      open.clear();
      open_bytes = 0;
    }
  }
  if (!open.empty()) buckets.push_back(std::move(open));
  return buckets;
}

struct BucketedReducer::State {
  struct Bucket {
    at::Tensor flat;
    at::Tensor wire;  // the compressed copy all-reduced, when compressing
    std::vector<size_t> params;
    size_t pending = 0;
    bool ready = false;
    std::unique_ptr<PendingAllReduce> work;
  };
  std::vector<at::Tensor> params;
  std::vector<size_t> bucket_of;
  std::vector<int64_t> offset_of;
  std::vector<Bucket> buckets;
  size_t next_launch = 0;
  std::mutex mu;  // hooks may run on autograd's device threads
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, uintptr_t>> hooks;
};

BucketedReducer::BucketedReducer(std::vector<at::Tensor> params, Communicator& comm,
                                 double first_bucket_bytes, double bucket_cap_bytes,
                                 std::optional<at::ScalarType> compress_to)
    : state_(std::make_unique<State>()), comm_(comm), compress_to_(compress_to) {
  auto& s = *state_;
  s.params = std::move(params);
  std::vector<double> bytes;
  for (const auto& p : s.params) bytes.push_back(static_cast<double>(p.numel() * p.element_size()));
  s.bucket_of.assign(s.params.size(), 0);
  s.offset_of.assign(s.params.size(), 0);
  for (auto& members : assign_buckets(bytes, first_bucket_bytes, bucket_cap_bytes)) {
    State::Bucket b;
    int64_t numel = 0;
    for (size_t i : members) {
      s.bucket_of[i] = s.buckets.size();
      s.offset_of[i] = numel;
      numel += s.params[i].numel();
    }
    b.flat = at::zeros({numel}, s.params[members.front()].options().requires_grad(false));
    b.params = std::move(members);
    s.buckets.push_back(std::move(b));
  }
  // The hook DDP's Reducer installs: a post-hook on each parameter's AccumulateGrad
  // node, which runs once the gradient has been accumulated into .grad. The accumulator
  // is held here, or autograd would make a fresh one (without the hook) every step.
  for (size_t i = 0; i < s.params.size(); ++i) {
    auto acc = torch::autograd::impl::grad_accumulator(s.params[i]);
    const uintptr_t key =
        acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [this, i](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list&) {
              on_gradient_ready(i);
              return outputs;
            }));
    s.hooks.emplace_back(std::move(acc), key);
  }
}

BucketedReducer::~BucketedReducer() {
  for (auto& [node, key] : state_->hooks) node->del_post_hook(key);
}

size_t BucketedReducer::bucket_count() const {
  return state_->buckets.size();
}

std::vector<double> BucketedReducer::bucket_bytes() const {
  std::vector<double> out;
  for (const auto& b : state_->buckets)
    out.push_back(static_cast<double>(b.flat.numel() * b.flat.element_size()));
  return out;
}

void BucketedReducer::prepare_for_backward() {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (auto& b : state_->buckets) {
    b.pending = b.params.size();
    b.ready = false;
    b.work.reset();
  }
  state_->next_launch = 0;
}

void BucketedReducer::on_gradient_ready(size_t i) {
  if (mode_ == Mode::kComputeOnly) return;
  auto& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  auto& b = s.buckets[s.bucket_of[i]];
  const at::Tensor& grad = s.params[i].grad();
  if (!grad.defined()) return;
  at::Tensor view = b.flat.narrow(0, s.offset_of[i], s.params[i].numel());
  if (compress_to_) {
    view.copy_(grad.reshape({-1}));  // the compression hook divides what it sends
  } else {
    // DDP's Reducer without a comm hook divides while copying (mark_variable_ready_dense:
    // at::mul_out by 1/world size), saving a pass over the bucket before it is sent.
    at::mul_out(view, grad.reshape({-1}),
                at::native::wrapped_scalar_tensor(1.0 / static_cast<double>(comm_.size())));
  }
  if (b.pending > 0 && --b.pending == 0) {
    b.ready = true;
    // Buckets launch in order, as DDP's Reducer does.
    while (s.next_launch < s.buckets.size() && s.buckets[s.next_launch].ready)
      launch(s.next_launch++);
  }
}

void BucketedReducer::launch(size_t bucket) {
  auto& b = state_->buckets[bucket];
  if (compress_to_) {
    // fp16_compress_hook: buffer.to(float16).div_(world_size), all-reduced.
    b.wire = b.flat.to(*compress_to_);
    b.wire.div_(comm_.size());
    b.work = comm_.allreduce_sum_async(b.wire);
  } else {
    b.work = comm_.allreduce_sum_async(b.flat);  // divided as it was copied in
  }
}

double BucketedReducer::time_buckets_alone() {
  // The buckets' own buffers, zeroed (between steps they hold nothing the parameters
  // need, and zeros cannot overflow): no second gradient-sized allocation on the device.
  std::vector<at::Tensor*> sent;
  for (auto& b : state_->buckets) {
    if (compress_to_) {
      b.wire = at::zeros({b.flat.numel()}, b.flat.options().dtype(*compress_to_));
      sent.push_back(&b.wire);
    } else {
      b.flat.zero_();
      sent.push_back(&b.flat);
    }
  }
  std::vector<std::unique_ptr<PendingAllReduce>> works;
  comm_.barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (at::Tensor* t : sent) works.push_back(comm_.allreduce_sum_async(*t));
  for (auto& w : works) w->wait();
  comm_.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BucketedReducer::finalize_backward() {
  if (mode_ == Mode::kComputeOnly) return;
  auto& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.next_launch != s.buckets.size()) {
    throw std::runtime_error("ddp-step: bucket " + std::to_string(s.next_launch) +
                             " never became ready (a parameter produced no gradient)");
  }
  for (auto& b : s.buckets) {
    if (b.work) b.work->wait();
    if (compress_to_) b.flat.copy_(b.wire);  // decompress, as the hook's then()
    for (size_t i : b.params) {
      at::Tensor& g = s.params[i].mutable_grad();
      g.copy_(b.flat.narrow(0, s.offset_of[i], s.params[i].numel()).view(g.sizes()));
    }
  }
}

DdpStepResult measure_ddp_step(TrainableModel& model, Trainer& trainer, Communicator& comm,
                               const DdpStepOptions& opts) {
  std::optional<at::ScalarType> compress_to;
  if (opts.gradient_dtype == "fp16") compress_to = at::kHalf;
  if (opts.gradient_dtype == "bf16")
    compress_to = comm.backend_name() == "nccl" ? at::kBFloat16 : at::kHalf;
  BucketedReducer reducer(model.parameters(), comm, opts.first_bucket_bytes, opts.bucket_cap_bytes,
                          compress_to);
  auto one_step = [&](BucketedReducer::Mode mode) {
    reducer.set_mode(mode);
    comm.barrier();
    reducer.prepare_for_backward();
    const auto t0 = std::chrono::steady_clock::now();
    // The host waits for the all-reduces through the communicator (NCCL: polled, with a
    // deadline), not inside the CUDA runtime where a dead peer would hold it.
    trainer.step([&] {
      reducer.finalize_backward();
      comm.synchronize();
    });
    comm.synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int i = 0; i < opts.warmup; ++i) {
    one_step(BucketedReducer::Mode::kComputeOnly);
    one_step(BucketedReducer::Mode::kAllReduce);
  }
  // Timed pairs: at least `iterations`, then on while any rank has timed less than
  // `min_timed_seconds` (at most 20x, as the sweep's sizes). Every rank votes after each
  // pair past the minimum, so all stop at the same pair (a rank that stopped alone would
  // leave the others in the barrier); a count fixed from one early pair was not: a pair
  // timed before a neighbour's load arrives made 20x as many slow ones.
  const int most = opts.min_timed_seconds > 0 ? 20 * opts.iterations : opts.iterations;
  std::vector<double> with_comm, compute_only;
  double timed_seconds = 0;
  while (static_cast<int>(with_comm.size()) < most) {
    compute_only.push_back(one_step(BucketedReducer::Mode::kComputeOnly));
    with_comm.push_back(one_step(BucketedReducer::Mode::kAllReduce));
    timed_seconds += compute_only.back() + with_comm.back();
    if (static_cast<int>(with_comm.size()) < opts.iterations) continue;
    const bool mine_done = timed_seconds >= opts.min_timed_seconds;
    if (opts.min_timed_seconds <= 0 || mean_over_ranks(comm, mine_done ? 0.0 : 1.0) == 0) break;
  }
  // The buckets alone, as often as the pairs' minimum: what the calibration takes the
  // link's bandwidth from, apart from what the step pays beyond its all-reduces.
  std::vector<double> alone;
  for (int i = 0; i < opts.iterations; ++i) alone.push_back(reducer.time_buckets_alone());
  DdpStepResult r;
  r.bucket_cap_bytes = opts.bucket_cap_bytes;
  r.first_bucket_bytes = opts.first_bucket_bytes;
  r.buckets = static_cast<int>(reducer.bucket_count());
  r.step_time_ms = mean_over_ranks(comm, median(with_comm)) * 1e3;
  r.compute_only_step_time_ms = mean_over_ranks(comm, median(compute_only)) * 1e3;
  r.allreduce_ms = mean_over_ranks(comm, median(alone)) * 1e3;
  r.exposed_comm_ms = std::max(0.0, r.step_time_ms - r.compute_only_step_time_ms);
  r.comm_share = r.step_time_ms > 0 ? r.exposed_comm_ms / r.step_time_ms : 0;
  return r;
}

}  // namespace commgate::probe
