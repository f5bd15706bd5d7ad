// Unit tests of the probe's pieces: flags, the collective table and harness math, the
// fit through the harness, the report's JSON round trip and termination-message bound,
// NCCL log parsing, DDP bucket assignment and the bucketed reducer (with a fake
// communicator), rendezvous over an in-memory store.
#include <gtest/gtest.h>
#include <torch/optim.h>
#include <torch/script.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "core/comm_model.h"
#include "core/link_fit.h"
#include "core/probe_result.h"
#include "probe-job/allreduce_sweep.h"
#include "probe-job/compute.h"
#include "probe-job/ddp_step.h"
#include "probe-job/gpu_diagnostics.h"
#include "probe-job/local_ranks.h"
#include "probe-job/nccl_communicator.h"
#include "probe-job/nccl_log.h"
#include "probe-job/net_interface.h"
#include "probe-job/probe_config.h"
#include "probe-job/rendezvous.h"
#include "probe-job/report.h"
#include "probe-job/stats.h"
#include "tests/probe/subprocess.h"
#include "tests/support/scratch_dir.h"

namespace commgate::probe {
namespace COMMGATE_TEST_UNIT {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// ---- flags and environment ----

TEST(ProbeConfig, reads_the_torchrun_environment_and_flags_override_it) {
  auto got =
      parse_probe_config({"--rank", "1", "--params", "350M"}, env_of({{"MASTER_ADDR", "198.18.0.1"},
                                                                      {"MASTER_PORT", "29400"},
                                                                      {"RANK", "0"},
                                                                      {"WORLD_SIZE", "4"}}));
  ASSERT_TRUE(got.config) << got.error;
  EXPECT_EQ(got.config->master_addr, "198.18.0.1");
  EXPECT_EQ(got.config->master_port, 29400);
  EXPECT_EQ(got.config->rank, 1);
  EXPECT_EQ(got.config->world_size, 4);
  EXPECT_DOUBLE_EQ(got.config->parameters, 350e6);
}

TEST(ProbeConfig, accepts_quantities_durations_and_equals_forms) {
  auto got = parse_probe_config(
      {"--max-bytes=16Mi", "--timeout", "2m", "--backend=gloo", "--termination-log", ""},
      env_of({}));
  ASSERT_TRUE(got.config) << got.error;
  EXPECT_DOUBLE_EQ(got.config->max_bytes, 16.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(got.config->timeout_s, 120);
  EXPECT_DOUBLE_EQ(got.config->ddp_min_timed_seconds, 3);  // the default
  EXPECT_EQ(got.config->backend, BackendChoice::kGloo);
  ASSERT_TRUE(got.config->termination_log);
  EXPECT_EQ(*got.config->termination_log, "");
}

TEST(ProbeConfig, the_ddp_steps_minimum_time_takes_seconds_a_duration_or_zero) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, double>>{
           {"0", 0}, {"0.0", 0}, {"1.5", 1.5}, {"10s", 10}}) {
    auto got = parse_probe_config({"--ddp-min-seconds", text}, env_of({}));
    ASSERT_TRUE(got.config) << text << ": " << got.error;
    EXPECT_DOUBLE_EQ(got.config->ddp_min_timed_seconds, want) << text;
  }
}

TEST(ProbeConfig, rejects_bad_input_naming_the_flag_or_variable) {
  struct Case {
    std::string name;
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string want_in_error;
  };
  const std::vector<Case> cases = {
      {"unknown_flag", {"--frobnicate"}, {}, "unknown flag \"--frobnicate\""},
      {"missing_value", {"--params"}, {}, "--params: needs a value"},
      {"params_not_a_quantity", {"--params", "lots"}, {}, "--params"},
      {"bad_backend", {"--backend", "mpi"}, {}, "--backend: must be one of auto, gloo, nccl"},
      {"port_out_of_range", {"--master-port", "70000"}, {}, "--master-port: must be in [1, 65535]"},
      {"rank_not_below_world",
       {},
       {{"RANK", "2"}, {"WORLD_SIZE", "2"}},
       "RANK: must be < world size 2"},
      {"env_not_a_number", {}, {{"WORLD_SIZE", "two"}}, "WORLD_SIZE: must be an integer"},
      {"torchscript_without_shape", {"--torchscript", "m.pt"}, {}, "--input-shape: required"},
      {"bad_shape",
       {"--torchscript", "m.pt", "--input-shape", "32,x"},
       {},
       "--input-shape dimension"},
      {"negative_timeout", {"--timeout", "-3"}, {}, "--timeout"},
      {"negative_ddp_min_seconds",
       {"--ddp-min-seconds", "-1"},
       {},
       "--ddp-min-seconds: must be 0 (exactly --ddp-iters) or a positive number of seconds"},
      {"flag_takes_no_value", {"--quiet=yes"}, {}, "--quiet: takes no value"},
      {"bad_gradient_dtype", {"--gradient-dtype", "fp8"}, {}, "--gradient-dtype: must be one of"},
      {"also_model_without_params", {"--also-model", "batch=4"}, {}, "--also-model: params=Q"},
      {"also_model_not_key_value", {"--also-model", "5M"}, {}, "\"5M\" is not key=value"},
      {"also_model_unknown_key", {"--also-model", "params=5M,lr=3"}, {}, "unknown key \"lr\""},
      {"also_model_bad_optimizer",
       {"--also-model", "params=5M,optimizer=lamb"},
       {},
       "--also-model optimizer: must be one of"},
      {"also_model_bad_dtype",
       {"--also-model", "params=5M,dtype=int8"},
       {},
       "--also-model dtype: must be one of fp32, fp16, bf16"},
      {"too_many_models",
       {"--also-model", "params=1M", "--also-model", "params=2M", "--also-model", "params=3M"},
       {},
       "--also-model: at most 2"},
      {"also_model_twice_the_same_key",
       {"--also-model", "params=200k,params=300k"},
       {},
       "--also-model: params given twice"},
      {"also_model_the_first_again",
       {"--params", "100k", "--also-model", "params=100k"},
       {},
       "is timed already"},
      {"also_model_without_compute",
       {"--no-compute", "--also-model", "params=1M"},
       {},
       "--also-model: not with --no-compute"},
  };
  for (const auto& c : cases) {
    auto got = parse_probe_config(c.args, env_of(c.env));
    EXPECT_FALSE(got.config) << c.name;
    EXPECT_NE(got.error.find(c.want_in_error), std::string::npos)
        << c.name << ": error was \"" << got.error << "\", want it to contain \"" << c.want_in_error
        << "\"";
  }
}

TEST(ProbeConfig, the_optimizer_defaults_to_adamw_and_takes_each_name_libtorch_provides) {
  auto plain = parse_probe_config({}, env_of({}));
  ASSERT_TRUE(plain.config) << plain.error;
  EXPECT_EQ(plain.config->optimizer, "adamw");
  for (const char* name : kOptimizers) {
    auto got = parse_probe_config({"--optimizer", name}, env_of({}));
    ASSERT_TRUE(got.config) << name << ": " << got.error;
    EXPECT_EQ(got.config->optimizer, name);
  }
  auto bad = parse_probe_config({"--optimizer=lamb"}, env_of({}));
  EXPECT_FALSE(bad.config);
  EXPECT_EQ(bad.error,
            "--optimizer: must be one of sgd, sgd-momentum, adam, adamw, adagrad, rmsprop, got "
            "\"lamb\"");
}

TEST(ProbeConfig, other_models_to_time_and_the_gradient_dtype) {
  auto got = parse_probe_config(
      {"--gradient-dtype", "bf16", "--also-model", "params=5M,batch=64,optimizer=sgd,dtype=fp16",
       "--also-model=params=1.5G"},
      env_of({}));
  ASSERT_TRUE(got.config) << got.error;
  EXPECT_EQ(got.config->gradient_dtype, "bf16");
  ASSERT_EQ(got.config->also_models.size(), 2u);
  const SyntheticModel& first = got.config->also_models[0];
  EXPECT_EQ(first.parameters, 5e6);
  EXPECT_EQ(first.batch_size, 64);
  EXPECT_EQ(first.optimizer, "sgd");
  EXPECT_EQ(first.gradient_dtype, "fp16");
  const SyntheticModel& second = got.config->also_models[1];
  EXPECT_EQ(second.parameters, 1.5e9);
  EXPECT_EQ(second.batch_size, 32) << "--batch-size's default";
  EXPECT_EQ(second.optimizer, "adamw") << "--optimizer's default";
  EXPECT_EQ(second.gradient_dtype, "fp32");
}

TEST(LocalRanks, spawned_ranks_drop_the_world_flags_and_get_threads) {
  auto got = local_rank_args(
      {"--local-ranks", "2", "--params", "5M", "--rank=3", "--master-port", "1"}, 1);
  EXPECT_EQ(got, (std::vector<std::string>{"--params", "5M", "--threads", "1"}));
  auto kept = local_rank_args({"--threads=4", "--local-ranks=2"}, 1);
  EXPECT_EQ(kept, (std::vector<std::string>{"--threads=4"}));
}

// ---- the collective table and the harness math ----

TEST(CollectiveTable, allreduce_bus_factor_is_two_n_minus_one_over_n) {
  const auto& ar = allreduce_collective();
  EXPECT_EQ(ar.name, "allreduce");
  const std::vector<std::pair<int, double>> want = {
      {1, 0.0}, {2, 1.0}, {3, 4.0 / 3}, {4, 1.5}, {8, 1.75}};
  for (auto [n, factor] : want) {
    EXPECT_DOUBLE_EQ(ar.bus_factor(n), factor) << n << " ranks";
    EXPECT_DOUBLE_EQ(ar.bus_factor(n), allreduce_bus_factor(n)) << "core agrees for " << n;
  }
  EXPECT_DOUBLE_EQ(ar.bytes(1024, 4, 4), 4096);
}

TEST(CollectiveTable, rows_report_algbw_and_busbw_as_nccl_tests) {
  // 64 MiB in 0.5 s over 4 ranks: algbw = 0.134 GB/s, busbw = 1.5x that.
  auto r = make_result(allreduce_collective(), 64.0 * 1024 * 1024, 0.5, 4, true);
  EXPECT_DOUBLE_EQ(r.time_us, 5e5);
  EXPECT_NEAR(r.algbw_gbps, 0.134217728, 1e-12);
  EXPECT_NEAR(r.busbw_gbps, 0.134217728 * 1.5, 1e-12);
  EXPECT_TRUE(r.data_check_ok);
}

TEST(Sweep, sizes_grow_by_the_factor_and_end_at_the_gradient_size) {
  EXPECT_EQ(sweep_sizes(4096, 65536, 4), (std::vector<double>{4096, 16384, 65536}));
  // 5M parameters: 20e6 bytes is the last size, aligned to 4 bytes.
  auto s = sweep_sizes(4096, 20e6, 4);
  EXPECT_EQ(s.front(), 4096);
  EXPECT_EQ(s.back(), 20e6);
  EXPECT_EQ(s[s.size() - 2], 16.0 * 1024 * 1024);
  EXPECT_EQ(sweep_sizes(4096, 4096, 4), (std::vector<double>{4096}));
  EXPECT_EQ(sweep_sizes(10, 10, 2), (std::vector<double>{8}));
}

TEST(Sweep, short_messages_get_more_iterations_within_bounds) {
  EXPECT_EQ(iterations_for(0.5, 5, 0.1), 5);     // long: the minimum
  EXPECT_EQ(iterations_for(0.01, 5, 0.1), 10);   // 0.1 s / 10 ms
  EXPECT_EQ(iterations_for(1e-6, 5, 0.1), 100);  // capped at 20x
  EXPECT_EQ(iterations_for(0, 5, 0.1), 5);
}

TEST(Sweep, the_fit_through_the_harness_recovers_latency_and_bandwidth) {
  // Synthetic rows from T = 50 us + S * 2(n-1)/n / 0.125 GB/s at 2 and 4 ranks.
  for (int n : {2, 4}) {
    std::vector<AllReduceResult> rows;
    for (double bytes : sweep_sizes(4096, 64.0 * 1024 * 1024, 4)) {
      const double t = 50e-6 + bytes * allreduce_bus_factor(n) / 0.125e9;
      rows.push_back(make_result(allreduce_collective(), bytes, t, n, true));
    }
    LinkFit fit = fit_results(rows, n);
    EXPECT_FALSE(fit.poor) << fit.note;
    EXPECT_NEAR(fit.latency_s, 50e-6, 1e-9) << n;
    EXPECT_NEAR(fit.busbw_bytes_per_s, 0.125e9, 1e3) << n;
    EXPECT_NEAR(rows.back().busbw_gbps, 0.125, 0.001)
        << "the largest size approaches the link rate";
  }
}

TEST(Stats, quantiles_interpolate_between_closest_ranks) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.1), 2);
  EXPECT_DOUBLE_EQ(quantile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.9), 10);
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0);
}

// ---- the synthetic model ----

TEST(SyntheticMlp, shape_matches_the_requested_parameter_count) {
  for (double want : {1e5, 5e6, 25e6, 100e6, 350e6}) {
    MlpShape s = synthetic_mlp_shape(want);
    EXPECT_NEAR(s.parameters, want, 0.01 * want) << want;
    EXPECT_EQ(s.width % 64, 0);
    EXPECT_GE(s.layers, 1) << want;
  }
  auto model = make_synthetic_mlp(synthetic_mlp_shape(2e5), 4, at::Device(at::kCPU), false);
  EXPECT_DOUBLE_EQ(parameter_count(model->parameters()), synthetic_mlp_shape(2e5).parameters);
}

TEST(Compute, times_forward_backward_and_optimizer_separately) {
  auto model = make_synthetic_mlp(synthetic_mlp_shape(2e5), 4, at::Device(at::kCPU), false);
  Trainer trainer(*model, at::Device(at::kCPU));
  ComputeResult c = measure_compute(*model, trainer, 1, 5, "fp32");
  EXPECT_EQ(c.model, "synthetic-mlp");
  EXPECT_EQ(c.iterations, 5);
  EXPECT_GT(c.forward_ms, 0);
  EXPECT_GT(c.backward_ms, 0);
  EXPECT_GT(c.optimizer_ms, 0);
  EXPECT_LE(c.p10_ms, c.step_time_ms);
  EXPECT_GE(c.p90_ms, c.step_time_ms);
}

// An unsteady round is timed again while the runner says so, up to kMaxComputeRounds; the
// report is the last round's. Without a `repeat` (one rank alone) a steady round ends it.
TEST(Compute, repeats_a_round_while_told_and_reports_the_last_one) {
  auto model = make_synthetic_mlp(synthetic_mlp_shape(2e4), 4, at::Device(at::kCPU), false);
  Trainer trainer(*model, at::Device(at::kCPU));
  int asked = 0;
  ComputeResult c = measure_compute(*model, trainer, 0, 3, "fp32", [&](bool, double round_s) {
    ++asked;
    EXPECT_GT(round_s, 0);
    return true;
  });
  EXPECT_EQ(c.rounds, kMaxComputeRounds);
  EXPECT_EQ(asked, kMaxComputeRounds - 1);  // the last round asks nothing
  EXPECT_EQ(c.iterations, 3);               // per round
  c = measure_compute(*model, trainer, 0, 3, "fp32", [](bool, double) { return false; });
  EXPECT_EQ(c.rounds, 1);
  c = measure_compute(*model, trainer, 0, 3, "fp32");
  EXPECT_GE(c.rounds, 1);
  EXPECT_LE(c.rounds, kMaxComputeRounds);
}

// Which LibTorch optimizer a name makes, and with which setting that tells it apart.
std::string optimizer_kind(torch::optim::Optimizer& o) {
  if (auto* sgd = dynamic_cast<torch::optim::SGD*>(&o)) {
    const auto& opts = static_cast<const torch::optim::SGDOptions&>(sgd->defaults());
    return opts.momentum() > 0 ? "sgd-momentum" : "sgd";
  }
  if (dynamic_cast<torch::optim::AdamW*>(&o)) return "adamw";
  if (dynamic_cast<torch::optim::Adam*>(&o)) return "adam";
  if (dynamic_cast<torch::optim::Adagrad*>(&o)) return "adagrad";
  if (dynamic_cast<torch::optim::RMSprop*>(&o)) return "rmsprop";
  return "other";
}

TEST(Compute, the_optimizer_chosen_is_the_one_that_steps_and_the_one_reported) {
  for (const char* name : kOptimizers) {
    auto model = make_synthetic_mlp(synthetic_mlp_shape(2e4), 4, at::Device(at::kCPU), false);
    Trainer trainer(*model, at::Device(at::kCPU), name);
    EXPECT_EQ(optimizer_kind(trainer.optimizer()), name);
    const at::Tensor before = model->parameters()[0].clone();
    ComputeResult c = measure_compute(*model, trainer, 0, 2, "fp32");
    EXPECT_EQ(c.optimizer, name);
    EXPECT_FALSE(at::equal(before, model->parameters()[0])) << name << " did not step";
  }
  auto model = make_synthetic_mlp(synthetic_mlp_shape(2e4), 4, at::Device(at::kCPU), false);
  EXPECT_THROW(Trainer(*model, at::Device(at::kCPU), "lamb"), std::invalid_argument);
}

// Why SGD's step is cheaper than Adam's, without timing anything (a wall-clock comparison
// is a benchmark, not a unit test: docs/benchmarks.md "Probe" has the optimizer phases):
// after one step Adam keeps two moment buffers per parameter tensor (exp_avg, exp_avg_sq)
// that each step reads and writes, SGD without momentum keeps none.
TEST(Compute, adam_keeps_two_moments_per_parameter_and_sgd_none) {
  auto state_tensors = [](const char* name) {
    auto model = make_synthetic_mlp(synthetic_mlp_shape(2e4), 2, at::Device(at::kCPU), false);
    Trainer trainer(*model, at::Device(at::kCPU), name);
    measure_compute(*model, trainer, 0, 1, "fp32");
    size_t params = model->parameters().size(), tensors = 0;
    for (const auto& [key, state] : trainer.optimizer().state()) {
      if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(state.get()))
        tensors += adam->exp_avg().defined() + adam->exp_avg_sq().defined();
    }
    return std::make_pair(params, tensors);
  };
  const auto [adam_params, adam_tensors] = state_tensors("adam");
  ASSERT_GT(adam_params, 0u);
  EXPECT_EQ(adam_tensors, 2 * adam_params);
  const auto [sgd_params, sgd_tensors] = state_tensors("sgd");
  EXPECT_EQ(sgd_tensors, 0u);
}

// A real TorchScript module, defined and saved with LibTorch's own API (no Python here):
// two matmuls with a ReLU, 16x32 + 32x4 = 640 parameters.
std::string save_tiny_torchscript(const std::string& path, bool with_parameters = true) {
  torch::jit::Module m("TinyNet");
  if (with_parameters) {
    // As a module scripted from Python carries them: trainable (requires_grad).
    m.register_parameter("w1", torch::randn({16, 32}).requires_grad_(true), false);
    m.register_parameter("w2", torch::randn({32, 4}).requires_grad_(true), false);
    m.define(R"(
def forward(self, x):
    return torch.relu(x.mm(self.w1)).mm(self.w2)
)");
  } else {
    m.define(R"(
def forward(self, x):
    return x * 2
)");
  }
  m.save(path);
  return path;
}

TEST(TorchScript, a_saved_module_is_loaded_and_trained_step_by_step) {
  const std::string path =
      save_tiny_torchscript(commgate::testing::scratch_dir().string() + "/tiny.pt");
  auto model = load_torchscript_model(path, {8, 16}, at::Device(at::kCPU), false);
  EXPECT_DOUBLE_EQ(parameter_count(model->parameters()), 640);
  EXPECT_EQ(model->batch_size(), 8);
  EXPECT_EQ(model->description(), "torchscript:" + path);
  Trainer trainer(*model, at::Device(at::kCPU));
  const at::Tensor before = model->parameters()[0].clone();
  ComputeResult c = measure_compute(*model, trainer, 1, 3, "fp32");
  EXPECT_EQ(c.parameters, 640);
  EXPECT_EQ(c.batch_size, 8);
  EXPECT_GT(c.step_time_ms, 0);
  EXPECT_GT(c.backward_ms, 0);
  // The optimizer really stepped the module's own parameters.
  EXPECT_FALSE(at::equal(before, model->parameters()[0]));
}

TEST(TorchScript, unreadable_or_parameterless_modules_are_named_in_the_error) {
  try {
    load_torchscript_model("/nonexistent/model.pt", {8, 16}, at::Device(at::kCPU), false);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot load TorchScript module /nonexistent/model.pt"),
              std::string::npos)
        << e.what();
  }
  const std::string path =
      save_tiny_torchscript(commgate::testing::scratch_dir().string() + "/noparams.pt", false);
  try {
    load_torchscript_model(path, {8, 16}, at::Device(at::kCPU), false);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("has no trainable parameters"), std::string::npos)
        << e.what();
  }
}

TEST(TorchScript, the_probe_binary_measures_a_module_across_two_local_ranks) {
  const std::string path =
      save_tiny_torchscript(commgate::testing::scratch_dir().string() + "/tiny-process.pt");
  testing::Finished f = testing::run(
      {COMMGATE_PROBE_BIN, "--local-ranks", "2", "--torchscript", path, "--input-shape", "8,16",
       "--max-bytes", "64Ki", "--compute-iters", "3", "--ddp-iters", "2", "--timeout", "60",
       "--termination-log", ""},
      {}, commgate::testing::scratch_dir().string() + "/probe-ts", std::chrono::seconds(90));
  ASSERT_EQ(f.exit_code, 0) << f.err;
  ProbeResult r = parse_probe_result(nlohmann::json::parse(f.out));
  ASSERT_TRUE(r.compute);
  EXPECT_EQ(r.compute->model, "torchscript:" + path);
  EXPECT_EQ(r.compute->parameters, 640);
  EXPECT_EQ(r.compute->batch_size, 8);
  ASSERT_TRUE(r.ddp_step);
  EXPECT_EQ(r.ddp_step->buckets, 1);  // 2.5 KB of gradients: one bucket
}

// ---- DDP buckets and the reducer ----

TEST(DdpBuckets, fine_grained_parameters_bucket_like_the_comm_model) {
  // 30 MiB of 1 KiB parameters: 1 MiB first, then 25 MiB, then the rest, as core's model.
  std::vector<double> params(30 * 1024, 1024.0);
  auto buckets = assign_buckets(params, 1 << 20, 25 << 20);
  std::vector<double> sizes;
  for (const auto& b : buckets) sizes.push_back(static_cast<double>(b.size()) * 1024);
  EXPECT_EQ(sizes, ddp_bucket_sizes(30.0 * 1024 * 1024, DdpConfig{}));
  EXPECT_EQ(buckets.front().front(), params.size() - 1) << "reverse registration order";
}

TEST(DdpBuckets, a_bucket_closes_once_it_reaches_its_cap_as_ddp_does) {
  // Four 12 MiB tensors and a 4 KiB bias at the end: the bias and the last tensor form the
  // first bucket (over 1 MiB), then 24 MiB (under 25, stays open) + 12 MiB.
  const double mib = 1 << 20;
  auto b = assign_buckets({12 * mib, 12 * mib, 12 * mib, 12 * mib, 4096}, mib, 25 * mib);
  EXPECT_EQ(b, (std::vector<std::vector<size_t>>{{4, 3}, {2, 1, 0}}));
}

// A communicator standing for `n` ranks that all hold the same data: the sum is n times it.
class FakeComm final : public Communicator {
 public:
  explicit FakeComm(int n) : n_(n) {}
  std::string backend_name() const override { return "fake"; }
  std::string transport() const override { return "none"; }
  std::string interface_name() const override { return ""; }
  at::Device device() const override { return at::Device(at::kCPU); }
  int rank() const override { return 0; }
  int size() const override { return n_; }
  std::unique_ptr<PendingAllReduce> allreduce_sum_async(at::Tensor& t) override {
    launches.push_back(t.numel());
    dtypes.push_back(t.scalar_type());
    t.mul_(n_);
    // A one-value all-reduce is a vote (1: go on); a slower peer votes to go on.
    if (t.numel() == 1 && peer_votes_to_go_on > 0) {
      --peer_votes_to_go_on;
      t.add_(1.0);
    }
    struct Done final : PendingAllReduce {
      void wait() override {}
    };
    return std::make_unique<Done>();
  }
  double time_allreduce(at::Tensor&, int) override { return 0; }
  void barrier() override {}
  std::vector<int64_t> launches;
  std::vector<at::ScalarType> dtypes;
  int peer_votes_to_go_on = 0;

 private:
  int n_;
};

// The gradients of one plain backward (no reducer): what averaging over ranks must give.
std::vector<at::Tensor> plain_gradients(TrainableModel& model) {
  std::vector<at::Tensor> params = model.parameters();
  for (auto& p : params) p.mutable_grad().reset();
  model.forward_loss().backward();
  std::vector<at::Tensor> grads;
  for (auto& p : params) grads.push_back(p.grad().clone());
  return grads;
}

TEST(BucketedReducer, launches_buckets_in_order_during_backward_and_averages_gradients) {
  auto model = make_synthetic_mlp(synthetic_mlp_shape(2e6), 4, at::Device(at::kCPU), false);
  auto params = model->parameters();
  const std::vector<at::Tensor> want = plain_gradients(*model);

  FakeComm comm(2);
  BucketedReducer reducer(params, comm, 1 << 20, 2 << 20);  // small cap: several buckets
  ASSERT_GE(reducer.bucket_count(), 3u);
  for (auto& p : params) p.mutable_grad().reset();
  reducer.prepare_for_backward();
  model->forward_loss().backward();
  // Every bucket was launched by the hooks, before backward returned.
  EXPECT_EQ(comm.launches.size(), reducer.bucket_count());
  reducer.finalize_backward();
  std::vector<double> bytes = reducer.bucket_bytes();
  for (size_t b = 0; b < bytes.size(); ++b)
    EXPECT_EQ(comm.launches[b] * 4, bytes[b]) << "launch order";
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(at::equal(params[i].grad(), want[i]))
        << "gradient " << i << " is the average over ranks";
  }

  // Compute-only mode is DDP's no_sync(): no communication, no bucket copies or scaling,
  // each rank's own gradient left in .grad.
  comm.launches.clear();
  reducer.set_mode(BucketedReducer::Mode::kComputeOnly);
  for (auto& p : params) p.mutable_grad().reset();
  reducer.prepare_for_backward();
  model->forward_loss().backward();
  reducer.finalize_backward();
  EXPECT_TRUE(comm.launches.empty());
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(at::equal(params[i].grad(), want[i])) << "gradient " << i << " left as computed";
}

// A short step is timed over more pairs (until every rank has timed --ddp-min-seconds, at
// most 20x --ddp-iters), a long one over --ddp-iters; 0 keeps exactly --ddp-iters. Counted
// in bucket launches.
TEST(DdpStep, a_short_step_is_timed_over_more_pairs) {
  auto model = make_synthetic_mlp(synthetic_mlp_shape(2e5), 4, at::Device(at::kCPU), false);
  Trainer trainer(*model, at::Device(at::kCPU), "sgd");
  auto timed_pairs = [&](double min_seconds, int peer_votes_to_go_on = 0) {
    FakeComm comm(2);
    comm.peer_votes_to_go_on = peer_votes_to_go_on;
    DdpStepOptions opts;
    opts.warmup = 1;
    opts.iterations = 2;
    opts.min_timed_seconds = min_seconds;
    const DdpStepResult r = measure_ddp_step(*model, trainer, comm, opts);
    int64_t bucket_launches = 0;
    for (int64_t n : comm.launches) bucket_launches += n > 1;  // not the 1-value averages
    // Less the warm-up pairs and the buckets timed alone (as many times as --ddp-iters).
    return bucket_launches / r.buckets - opts.warmup - opts.iterations;
  };
  EXPECT_EQ(timed_pairs(0), 2);
  EXPECT_EQ(timed_pairs(1e9), 40);  // 20x --ddp-iters
  // This rank is done at once; a peer that has timed less keeps every rank going.
  EXPECT_EQ(timed_pairs(1e-9), 2);
  EXPECT_EQ(timed_pairs(1e-9, 3), 5);
  EXPECT_EQ(timed_pairs(1e-9, 100), 40);
}

// The buckets alone: each bucket launched once, as the step sends it (fp16 when
// compressing), and the gradients the step averaged left as they are.
TEST(BucketedReducer, buckets_timed_alone_are_each_sent_once_as_the_step_sends_them) {
  for (const std::optional<at::ScalarType> compress :
       {std::optional<at::ScalarType>(), std::optional<at::ScalarType>(at::kHalf)}) {
    auto model = make_synthetic_mlp(synthetic_mlp_shape(2e6), 4, at::Device(at::kCPU), false);
    auto params = model->parameters();
    FakeComm comm(2);
    BucketedReducer reducer(params, comm, 1 << 20, 2 << 20, compress);
    for (auto& p : params) p.mutable_grad().reset();
    reducer.prepare_for_backward();
    model->forward_loss().backward();
    reducer.finalize_backward();
    std::vector<at::Tensor> averaged;
    for (auto& p : params) averaged.push_back(p.grad().clone());
    comm.launches.clear();
    comm.dtypes.clear();
    EXPECT_GE(reducer.time_buckets_alone(), 0);
    std::vector<int64_t> want_numel;
    for (double bytes : reducer.bucket_bytes())
      want_numel.push_back(static_cast<int64_t>(bytes / 4));
    EXPECT_EQ(comm.launches, want_numel);
    for (const at::ScalarType t : comm.dtypes) EXPECT_EQ(t, compress ? at::kHalf : at::kFloat);
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_TRUE(at::equal(params[i].grad(), averaged[i])) << "gradient " << i;
  }
}

// DDP's fp16_compress_hook: each bucket is cast to fp16, divided and all-reduced, then
// cast back: half the bytes on the wire, gradients averaged to fp16's precision.
TEST(BucketedReducer, compressed_buckets_send_half_the_bytes_and_average_to_fp16_precision) {
  auto model = make_synthetic_mlp(synthetic_mlp_shape(2e6), 4, at::Device(at::kCPU), false);
  auto params = model->parameters();
  const std::vector<at::Tensor> want = plain_gradients(*model);

  FakeComm comm(2);
  BucketedReducer reducer(params, comm, 1 << 20, 2 << 20, at::kHalf);
  for (auto& p : params) p.mutable_grad().reset();
  reducer.prepare_for_backward();
  model->forward_loss().backward();
  reducer.finalize_backward();
  ASSERT_EQ(comm.launches.size(), reducer.bucket_count());
  ASSERT_EQ(comm.dtypes.size(), reducer.bucket_count());
  for (const at::ScalarType t : comm.dtypes) EXPECT_EQ(t, at::kHalf);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].grad().scalar_type(), at::kFloat);
    EXPECT_TRUE(at::allclose(params[i].grad(), want[i], 1e-2, 1e-4)) << "gradient " << i;
  }
}

// ---- rendezvous over an in-memory store ----

TEST(Rendezvous, all_ranks_join_and_hostnames_are_collected) {
  c10d::HashStore store;
  // Rank 1 announced itself earlier.
  store.set("commgate/joined/1", std::vector<uint8_t>{'n', '1'});
  auto info = join_world(store, "mem:0", 0, 2, "n0", std::chrono::milliseconds(2000));
  EXPECT_EQ(info.hostnames, (std::vector<std::string>{"n0", "n1"}));
}

TEST(Rendezvous, a_rank_that_never_joins_is_named_in_the_timeout_error) {
  c10d::HashStore store;
  try {
    join_world(store, "198.18.0.1:29500", 0, 3, "n0", std::chrono::milliseconds(200));
    FAIL() << "expected a timeout";
  } catch (const RendezvousError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("198.18.0.1:29500"), std::string::npos) << what;
    EXPECT_NE(what.find("rank(s) 1, 2 to join"), std::string::npos) << what;
    EXPECT_NE(what.find("1 of 3 joined"), std::string::npos) << what;
  }
}

// ---- the report ----

ProbeResult a_full_result(int sizes) {
  ProbeResult r;
  r.start_time = Clock::from_time_t(1790000000);
  r.nodes = 2;
  r.backend = "gloo";
  r.transport = "socket";
  r.interface_name = "eth0";
  r.device = "cpu";
  r.hostnames = {"node-a", "node-b"};
  r.warmup_iterations = 1;
  r.iterations = 5;
  for (double bytes : sweep_sizes(4096, 4096.0 * (1 << (sizes - 1)), 2)) {
    r.allreduce.push_back(
        make_result(allreduce_collective(), bytes, 1e-4 + bytes / 0.12e9, 2, true));
  }
  r.fit = fit_results(r.allreduce, 2);
  ComputeResult c;
  c.parameters = 25e6;
  c.model = "synthetic-mlp";
  c.precision = "fp32";
  c.batch_size = 32;
  c.iterations = 10;
  c.step_time_ms = 412.25;
  c.forward_ms = 100;
  c.backward_ms = 200;
  c.optimizer_ms = 112.25;
  c.p10_ms = 400;
  c.p90_ms = 430;
  r.compute = c;
  DdpStepResult d;
  d.bucket_cap_bytes = 25 << 20;
  d.first_bucket_bytes = 1 << 20;
  d.buckets = 5;
  d.step_time_ms = 1200;
  d.compute_only_step_time_ms = 420;
  d.exposed_comm_ms = 780;
  d.comm_share = 0.65;
  r.ddp_step = d;
  r.note = "unit test";
  return r;
}

TEST(Report, the_written_json_parses_back_into_the_same_result) {
  const std::string dir = commgate::testing::scratch_dir().string();
  ProbeConfig cfg;
  cfg.output_path = dir + "/probe-roundtrip.json";
  cfg.termination_log = dir + "/probe-roundtrip.termination";
  std::ostringstream out, err;
  ReportWriter writer(cfg, out, err);
  const ProbeResult want = a_full_result(15);
  writer.update([&](ProbeResult& r) { r = want; });
  ASSERT_TRUE(writer.publish());
  EXPECT_FALSE(writer.publish()) << "writes once";

  for (const std::string& text : {out.str(), testing::read_file(cfg.output_path)}) {
    ProbeResult got = parse_probe_result(nlohmann::json::parse(text));
    EXPECT_EQ(got.nodes, 2);
    EXPECT_EQ(got.backend, "gloo");
    EXPECT_EQ(got.interface_name, "eth0");
    EXPECT_EQ(got.hostnames, want.hostnames);
    ASSERT_EQ(got.allreduce.size(), want.allreduce.size());
    EXPECT_DOUBLE_EQ(got.allreduce.back().busbw_gbps, want.allreduce.back().busbw_gbps);
    EXPECT_NEAR(got.fit.busbw_bytes_per_s, want.fit.busbw_bytes_per_s, 1);
    ASSERT_TRUE(got.compute && got.ddp_step);
    EXPECT_DOUBLE_EQ(got.compute->optimizer_ms, 112.25);
    EXPECT_DOUBLE_EQ(got.ddp_step->comm_share, 0.65);
    EXPECT_EQ(got.note, "unit test");
    EXPECT_EQ(format_rfc3339(got.start_time), format_rfc3339(want.start_time));
  }
  const std::string compact = testing::read_file(*cfg.termination_log);
  EXPECT_LE(compact.size(), kTerminationMessageLimit);
  ProbeResult from_compact = parse_probe_result(nlohmann::json::parse(compact));
  ASSERT_EQ(from_compact.allreduce.size(), 1u) << "the compact form keeps the largest size";
  EXPECT_NEAR(from_compact.allreduce[0].busbw_gbps, want.allreduce.back().busbw_gbps, 1e-3);
  EXPECT_NE(err.str().find("comm share 65.0%"), std::string::npos) << err.str();
}

TEST(Report, the_nccl_version_loaded_is_in_the_full_result_and_the_reader_accepts_it) {
  ProbeConfig cfg;
  cfg.termination_log = "";
  cfg.quiet = true;
  std::ostringstream out, err;
  ReportWriter writer(cfg, out, err);
  writer.update([&](ProbeResult& r) { r = a_full_result(3); });
  writer.set_nccl_version(nccl_version_text(22707));
  ASSERT_TRUE(writer.publish());
  const auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["ncclVersion"], "2.27.7");
  EXPECT_EQ(parse_probe_result(doc).nodes, 2);

  std::ostringstream gloo_out, gloo_err;
  ReportWriter gloo(cfg, gloo_out, gloo_err);
  gloo.update([&](ProbeResult& r) { r = a_full_result(3); });
  ASSERT_TRUE(gloo.publish());
  EXPECT_FALSE(nlohmann::json::parse(gloo_out.str()).contains("ncclVersion"));
}

// One probe for several models (issue #21): each model's compute and DDP step in the
// result, in the compact termination message too, read back in order.
TEST(Report, several_models_fit_the_termination_message_and_read_back) {
  ProbeResult r = a_full_result(30);
  for (int i = 1; i < kMaxModelsPerProbe; ++i) {
    ModelResult m{*r.compute, r.ddp_step};
    m.compute.parameters = 1e6 * i;
    m.compute.gradient_dtype = "fp16";
    m.compute.step_time_ms = 10.123456 * i;
    r.additional_models.push_back(m);
  }
  r.error = ProbeError{"ddp-step", std::string(1024, 'x')};
  const std::string msg = termination_message(r);
  EXPECT_LE(msg.size(), kTerminationMessageLimit);
  const ProbeResult back = parse_probe_result(nlohmann::json::parse(msg));
  ASSERT_EQ(back.additional_models.size(), r.additional_models.size()) << msg;
  for (size_t i = 0; i < back.additional_models.size(); ++i) {
    EXPECT_EQ(back.additional_models[i].compute.parameters, 1e6 * (i + 1));
    EXPECT_EQ(back.additional_models[i].compute.gradient_dtype, "fp16");
    EXPECT_NEAR(back.additional_models[i].compute.step_time_ms, 10.12 * (i + 1), 0.01 * (i + 1));
    EXPECT_TRUE(back.additional_models[i].ddp_step);
  }
  ASSERT_TRUE(back.error);
  // The human summary has a line for each.
  const std::string summary = human_summary(r, ProbeConfig{});
  EXPECT_NE(summary.find("1M params"), std::string::npos) << summary;
  EXPECT_NE(summary.find("2M params"), std::string::npos) << summary;
  // A message that cannot hold them all keeps the first model's measurement.
  for (ModelResult& m : r.additional_models)
    m.compute.model = "torchscript:" + std::string(1500, 'p');
  const ProbeResult cut = parse_probe_result(nlohmann::json::parse(termination_message(r)));
  EXPECT_TRUE(cut.compute);
  EXPECT_TRUE(cut.ddp_step);
  EXPECT_TRUE(cut.additional_models.empty());
}

TEST(Report, the_termination_message_stays_within_4096_bytes_whatever_the_error) {
  ProbeResult r = a_full_result(30);
  r.hostnames.assign(5000, "a-rather-long-node-hostname.example.internal");
  r.error = ProbeError{"allreduce", std::string(100000, 'x')};
  const std::string msg = termination_message(r);
  EXPECT_LE(msg.size(), kTerminationMessageLimit);
  ProbeResult back = parse_probe_result(nlohmann::json::parse(msg));
  ASSERT_TRUE(back.error);
  EXPECT_EQ(back.error->stage, "allreduce");
}

TEST(Report, the_model_is_fed_the_probes_own_fit_and_compute) {
  ProbeConfig cfg;
  ProbeResult r = a_full_result(15);
  auto p = predict_at_probe(r, cfg);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->nodes, 2);
  // The baseline is the DDP-style step without communication, as in the decision.
  EXPECT_NEAR(p->compute_s, r.ddp_step->compute_only_step_time_ms / 1e3, 1e-9);
  EXPECT_GT(p->comm_share, 0.3);
  r.compute.reset();
  EXPECT_FALSE(predict_at_probe(r, cfg));
}

TEST(Report, the_termination_log_defaults_to_the_kubernetes_path_only_when_writable) {
  EXPECT_EQ(resolve_termination_log(std::string("/tmp/x")), "/tmp/x");
  EXPECT_EQ(resolve_termination_log(std::string("")), std::nullopt);
}

// ---- the link's rated speed ----

// A sysfs tree of the test's own: a physical NIC (class/net/eth1/device), a pod's veth
// (no device link: its nominal 10000 Mb/s is not read), an InfiniBand port as NCCL names
// it, and names that would leave the tree.
TEST(NodeLink, reads_a_physical_interfaces_speed_and_an_infiniband_ports_rate) {
  namespace fs = std::filesystem;
  const fs::path sys = commgate::testing::scratch_dir() / "sysfs";
  auto write = [](const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  };
  write(sys / "class/net/eth1/speed", "25000\n");
  fs::create_directories(sys / "class/net/eth1/device");
  write(sys / "class/net/eth0/speed", "10000\n");  // a veth: no device
  write(sys / "class/net/eth2/speed", "-1\n");
  fs::create_directories(sys / "class/net/eth2/device");
  EXPECT_EQ(read_node_link("eth1", sys.string()), (NodeLink{2.5e10, false}));
  EXPECT_EQ(read_node_link("eth0", sys.string()), (NodeLink{0, false}));
  EXPECT_EQ(read_node_link("eth2", sys.string()), (NodeLink{0, false}));
  EXPECT_EQ(read_node_link("missing", sys.string()), (NodeLink{0, false}));

  write(sys / "class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n");
  EXPECT_EQ(read_node_link("mlx5_0:1", sys.string()), (NodeLink{2e11, true}));
  EXPECT_EQ(read_node_link("mlx5_0:2", sys.string()), (NodeLink{0, true}));
  EXPECT_EQ(read_node_link("eth0", sys.string()), (NodeLink{0, true}));  // IB on the node
  for (const char* outside : {"../../../etc/passwd", "a/b", "", "mlx5_0:../../x"})
    EXPECT_EQ(read_node_link(outside, sys.string()).rate_bits_per_s, 0) << outside;
}

// ---- NCCL's log ----

TEST(NcclLog, tells_the_transport_and_interface_from_nccls_info_lines) {
  struct Case {
    std::string name, log, want_transport, want_iface;
  };
  const std::vector<Case> cases = {
      {"infiniband",
       "node0:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB "
       "eth0:10.0.0.1<0>\n"
       "node0:1:1 [0] NCCL INFO Using network IB\n"
       "node0:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n",
       "ib", "mlx5_0:1"},
      {"socket",
       "node0:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:198.18.0.1<0>\n"
       "node0:1:1 [0] NCCL INFO Using network Socket\n"
       "node0:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n",
       "socket", "eth0"},
      {"nvlink_inside_a_node",
       "node0:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n", "p2p/nvlink",
       ""},
      {"nothing_known", "some other text\n", "unknown", ""},
  };
  for (const auto& c : cases) {
    auto got = parse_nccl_transport(c.log);
    EXPECT_EQ(got.transport, c.want_transport) << c.name;
    EXPECT_EQ(got.interface_name, c.want_iface) << c.name;
  }
}

TEST(NcclLog, one_rank_has_transport_none_whatever_the_log_says) {
  const std::string socket_log =
      "node0:1:1 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n";
  EXPECT_EQ(nccl_transport_for_world(1, socket_log).transport, "none");
  EXPECT_EQ(nccl_transport_for_world(1, socket_log).interface_name, "");
  EXPECT_EQ(nccl_transport_for_world(2, socket_log).transport, "socket");
}

TEST(NcclLog, the_debug_file_expands_host_and_pid_as_nccl_does) {
  EXPECT_EQ(expand_nccl_debug_file("/out/nccl.%h.%p.log", "gpu-0", 4242),
            "/out/nccl.gpu-0.4242.log");
  EXPECT_EQ(expand_nccl_debug_file("100%%-%x-%", "h", 1), "100%-%x-%");
}

TEST(NcclLog, the_log_never_reaches_stdout_and_is_read_back_from_where_it_goes) {
  using Route = NcclLogPlan::Route;
  struct Case {
    std::string name;
    std::map<std::string, std::string> env;
    Route want_route;
    std::string want_read_path;
    std::map<std::string, std::string> want_set_env;
  };
  const std::string priv = "/tmp/commgate-nccl.7.log";
  const std::vector<Case> cases = {
      {"nothing_set_logs_info_to_a_private_file",
       {},
       Route::kPrivateFile,
       priv,
       {{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT,NET"}, {"NCCL_DEBUG_FILE", priv}}},
      {"a_level_without_a_file_goes_to_stderr_not_stdout",
       {{"NCCL_DEBUG", "WARN"}},
       Route::kStderr,
       "",
       {}},
      {"the_users_file_is_kept_and_expanded",
       {{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_FILE", "/out/nccl.%h.%p"}},
       Route::kUserFile,
       "/out/nccl.node-a.7",
       {}},
      {"a_file_without_a_level_gets_info",
       {{"NCCL_DEBUG_FILE", "/out/n.log"}},
       Route::kUserFile,
       "/out/n.log",
       {{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT,NET"}}},
  };
  for (const auto& c : cases) {
    NcclLogPlan got = plan_nccl_log(env_of(c.env), "node-a", 7, priv);
    EXPECT_EQ(got.route, c.want_route) << c.name;
    EXPECT_EQ(got.read_path, c.want_read_path) << c.name;
    EXPECT_EQ(got.set_env, c.want_set_env) << c.name;
  }
}

TEST(NcclLog, what_is_written_to_the_forwarder_reaches_the_target_and_is_kept) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  auto fwd = LogForwarder::start(fds[1]);
  // As NCCL opens its debug file: by name, "w".
  FILE* f = std::fopen(fwd->path().c_str(), "w");
  ASSERT_NE(f, nullptr) << fwd->path();
  std::fputs("host:1:1 [0] NCCL INFO via NET/Socket/0\n", f);
  std::fflush(f);
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  char buf[256];
  while (got.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(got, "host:1:1 [0] NCCL INFO via NET/Socket/0\n");
  while (fwd->text() != got && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(fwd->text(), got);
  std::fclose(f);
  close(fds[0]);
  close(fds[1]);
}

TEST(NcclLog, an_nccl_failure_names_the_call_the_rank_nccls_own_words_and_the_log) {
  NcclFailure f;
  f.where = "nccl_communicator.cpp:120";
  f.call = "wait for a barrier (a one-element all-reduce)";
  f.result = "remote process exited or there was a network error";
  f.last_error = "NET/Socket : peer 198.18.0.2<45678> closed the connection";
  f.rank = 0;
  f.log = "/tmp/commgate-nccl.7.log";
  EXPECT_EQ(nccl_failure_text(f),
            "nccl_communicator.cpp:120: NCCL wait for a barrier (a one-element all-reduce) "
            "failed on rank 0: remote process exited or there was a network error; NCCL says: "
            "NET/Socket : peer 198.18.0.2<45678> closed the connection (NCCL's log: "
            "/tmp/commgate-nccl.7.log)");
  f.log = "stderr";
  EXPECT_NE(nccl_failure_text(f).find("(NCCL's log is on stderr)"), std::string::npos);
  f.log.clear();
  f.last_error.clear();
  EXPECT_NE(nccl_failure_text(f).find("(set NCCL_DEBUG=INFO for NCCL's log)"), std::string::npos);
}

TEST(NcclLog, versions_read_as_nccl_writes_them) {
  EXPECT_EQ(nccl_version_text(22707), "2.27.7");
  EXPECT_EQ(nccl_version_text(21903), "2.19.3");
  EXPECT_EQ(nccl_version_text(2708), "2.7.8");
  EXPECT_EQ(nccl_version_text(0), "");
}

// ---- GPUs the probe cannot use, and the NCCL stub ----

TEST(GpuDiagnostics, a_too_old_driver_is_not_told_as_no_gpu) {
  CudaDeviceQuery q;
  q.error_name = "cudaErrorInsufficientDriver";
  q.error_string = "CUDA driver version is insufficient for CUDA runtime version";
  q.driver_version = 12020;
  q.runtime_version = 13000;
  EXPECT_EQ(cuda_unusable_text(q),
            "no usable GPU: cudaGetDeviceCount failed with cudaErrorInsufficientDriver (CUDA "
            "driver version is insufficient for CUDA runtime version); the driver supports CUDA "
            "12.2, this binary's runtime is CUDA 13.0 (the driver is too old for it)");
  CudaDeviceQuery none;
  none.error_name = "cudaErrorNoDevice";
  none.runtime_version = 13000;
  none.visible_devices = "";
  EXPECT_NE(cuda_unusable_text(none).find("no NVIDIA driver was found"), std::string::npos);
  CudaDeviceQuery hidden;
  hidden.driver_version = 13000;
  hidden.runtime_version = 13000;
  hidden.visible_devices = "-1";
  EXPECT_NE(cuda_unusable_text(hidden).find("found no CUDA device"), std::string::npos);
  EXPECT_NE(cuda_unusable_text(hidden).find("CUDA_VISIBLE_DEVICES=-1"), std::string::npos);
  CudaDeviceQuery fine;
  fine.count = 1;
  EXPECT_EQ(cuda_unusable_text(fine), "");
}

TEST(GpuDiagnostics, nccl_is_refused_with_the_reason) {
  CudaDeviceQuery one;
  one.count = 1;
  EXPECT_EQ(nccl_unavailable_reason(true, one, true), "");
  EXPECT_EQ(nccl_unavailable_reason(false, one, true),
            "this binary was built without the NCCL backend");
  EXPECT_NE(nccl_unavailable_reason(true, one, false).find("this LibTorch has no CUDA"),
            std::string::npos);
}

TEST(GpuDiagnostics, local_ranks_on_too_few_gpus_say_why_nccl_cannot) {
  struct Case {
    std::string name;
    BackendChoice requested;
    int ranks, gpus;
    bool nccl_built;
    BackendChoice want;
    std::string want_error, want_note;  // substrings; "" = none
  };
  const std::vector<Case> cases = {
      {"two_gpus_two_ranks_run_nccl", BackendChoice::kAuto, 2, 2, true, BackendChoice::kNccl, "",
       ""},
      {"auto_on_one_gpu_measures_with_gloo_and_says_why", BackendChoice::kAuto, 2, 1, true,
       BackendChoice::kGloo, "", "NCCL cannot run two ranks on one GPU"},
      {"nccl_on_one_gpu_is_refused_naming_the_duplicate_gpu_error", BackendChoice::kNccl, 2, 1,
       true, BackendChoice::kGloo,
       "needs 2 GPUs, 1 visible: NCCL cannot run two ranks on one GPU of one host (it stops with "
       "\"Duplicate GPU detected\")",
       ""},
      {"auto_without_gpus_is_plain_gloo", BackendChoice::kAuto, 2, 0, true, BackendChoice::kGloo,
       "", ""},
      {"nccl_not_built", BackendChoice::kNccl, 2, 0, false, BackendChoice::kGloo,
       "built without the NCCL backend", ""},
      {"gloo_asked_is_gloo", BackendChoice::kGloo, 4, 8, true, BackendChoice::kGloo, "", ""},
  };
  for (const auto& c : cases) {
    auto got = choose_local_ranks_backend(c.requested, c.ranks, c.gpus, c.nccl_built);
    EXPECT_EQ(got.backend, c.want) << c.name;
    if (c.want_error.empty()) {
      EXPECT_EQ(got.error, "") << c.name;
    } else {
      EXPECT_NE(got.error.find(c.want_error), std::string::npos) << c.name << ": " << got.error;
    }
    if (c.want_note.empty()) {
      EXPECT_EQ(got.note, "") << c.name;
    } else {
      EXPECT_NE(got.note.find(c.want_note), std::string::npos) << c.name << ": " << got.note;
    }
  }
}

TEST(GpuDiagnostics, waits_end_at_done_at_failure_or_at_the_deadline) {
  using std::chrono::milliseconds;
  using std::chrono::steady_clock;
  int calls = 0;
  auto done_third =
      poll_until([&](std::string*) { return ++calls < 3 ? PollState::kPending : PollState::kDone; },
                 steady_clock::now() + std::chrono::seconds(10));
  EXPECT_EQ(done_third.state, PollState::kDone);
  EXPECT_EQ(calls, 3);
  auto failed = poll_until(
      [](std::string* e) {
        *e = "unhandled system error";
        return PollState::kFailed;
      },
      steady_clock::now() + std::chrono::seconds(10));
  EXPECT_EQ(failed.state, PollState::kFailed);
  EXPECT_EQ(failed.error, "unhandled system error");
  const auto t0 = steady_clock::now();
  auto hung = poll_until([](std::string*) { return PollState::kPending; }, t0 + milliseconds(50));
  EXPECT_EQ(hung.state, PollState::kPending);
  EXPECT_GE(steady_clock::now() - t0, milliseconds(50));
  EXPECT_LT(steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(Collectives, inputs_must_be_contiguous_and_on_the_communicators_device) {
  const at::Device cpu(at::kCPU);
  EXPECT_EQ(collective_input_problem(at::zeros({4, 4}), cpu), "");
  EXPECT_EQ(collective_input_problem(at::zeros({4, 4}).t(), cpu), "the tensor is not contiguous");
  EXPECT_EQ(collective_input_problem(at::zeros({4}), at::Device(at::kCUDA, 0)),
            "the tensor is on cpu, the communicator on cuda:0");
  EXPECT_EQ(collective_input_problem(at::Tensor(), cpu), "the tensor is undefined");
}

TEST(NcclStub, a_binary_without_nccl_says_so_and_sees_no_gpu) {
  if (nccl_backend_built()) GTEST_SKIP() << "this build has the NCCL backend";
  EXPECT_EQ(nccl_runtime_version(), 0);
  CudaDeviceQuery q = query_cuda_devices();
  EXPECT_EQ(q.count, 0);
  EXPECT_NE(nccl_unavailable_reason(false, q, false).find("built without the NCCL backend"),
            std::string::npos);
}

TEST(NcclBuilt, without_a_driver_the_cuda_runtime_tells_why_no_gpu_is_usable) {
  if (!nccl_backend_built()) GTEST_SKIP() << "this build has no NCCL backend";
  CudaDeviceQuery q = query_cuda_devices();
  if (q.count > 0) GTEST_SKIP() << "a GPU is usable here";
  const std::string why = cuda_unusable_text(q);
  EXPECT_NE(why.find("no usable GPU: "), std::string::npos) << why;
  EXPECT_NE(why.find("runtime is CUDA "), std::string::npos) << why;
  EXPECT_GT(nccl_header_version(), 0);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::probe
