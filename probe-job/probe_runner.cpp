#include "probe-job/probe_runner.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <sched.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>

#include "core/probe_memory.h"
#include "core/quantity.h"
#include "probe-job/allreduce_sweep.h"
#include "probe-job/communicator.h"
#include "probe-job/compute.h"
#include "probe-job/ddp_step.h"
#include "probe-job/gloo_communicator.h"
#include "probe-job/gpu_diagnostics.h"
#include "probe-job/nccl_communicator.h"
#include "probe-job/nccl_log.h"
#include "probe-job/net_interface.h"
#include "probe-job/rendezvous.h"
#include "probe-job/report.h"
#include "probe-job/stats.h"
#include "probe-job/watchdog.h"

namespace commgate::probe {
namespace {

// Each rank's link rate to rank 0 through the rendezvous store (core/link_rate.h), after
// the sweep (every rank has passed it, so every key is set or about to be). Not part of
// the measurement: a store that does not answer within 10 s, or a text that does not
// decode, leaves the result without it rather than failing the probe.
std::optional<PoolLink> exchange_links(c10d::Store& store, int rank, int world_size,
                                       const NodeLink& mine, bool reporter) {
  const auto key = [](int r) { return "commgate/link/" + std::to_string(r); };
  try {
    const std::string text = encode_node_link(mine);
    store.set(key(rank), std::vector<uint8_t>(text.begin(), text.end()));
    if (!reporter) return std::nullopt;
    std::vector<std::string> keys;
    for (int r = 0; r < world_size; ++r) keys.push_back(key(r));
    store.wait(keys, std::chrono::seconds(10));
    std::vector<NodeLink> links;
    for (int r = 0; r < world_size; ++r) {
      const auto bytes = store.get(key(r));
      const auto link = decode_node_link(std::string(bytes.begin(), bytes.end()));
      if (!link) return std::nullopt;
      links.push_back(*link);
    }
    return combine_node_links(links);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// OpenBLAS (which CPU LibTorch calls for matmuls) keeps its own thread pool and does not
// follow at::set_num_threads; with several ranks per machine it would oversubscribe.
void set_blas_threads(int threads) {
  using SetThreads = void (*)(int);
  if (void* sym = dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) {
    reinterpret_cast<SetThreads>(sym)(threads);
  }
}

// "allreduce 16 MiB" -> "allreduce": ProbeError.stage is the stage's name.
std::string stage_name(const std::string& stage) {
  return stage.substr(0, stage.find(' '));
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

class StageFailure : public std::runtime_error {
 public:
  StageFailure(std::string stage, const std::string& message, int code)
      : std::runtime_error(message), stage_(std::move(stage)), code_(code) {}
  const std::string& stage() const { return stage_; }
  int code() const { return code_; }

 private:
  std::string stage_;
  int code_;
};

// A failed rank leaves at once: a process group whose peer is gone can block in its
// destructor forever.
[[noreturn]] void exit_now(std::ostream& out, std::ostream& err, int code) {
  out.flush();
  err.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

// The NCCL header the probe was compiled with and the library loaded at run time should
// be the same NCCL; say so when their major.minor differ.
void warn_on_nccl_mismatch(const ProbeConfig& cfg, std::ostream& err) {
  const int built = nccl_header_version(), loaded = nccl_runtime_version();
  if (cfg.rank != 0 || built / 100 == loaded / 100) return;
  err << "commgate-probe: warning: built against NCCL " << nccl_version_text(built)
      << " but running NCCL " << nccl_version_text(loaded)
      << " (LD_LIBRARY_PATH picks the library; docs/probe.md)\n";
}

// "" when the synthetic model fits in what this machine may give the ranks on it, else
// the refusal (core/probe_memory.h). On a GPU the model lives in the GPU's memory, where a
// failed allocation fails at once (CUDA out of memory) instead of growing the host.
std::string synthetic_model_refusal(const ProbeConfig& cfg, const SyntheticModel& model,
                                    const at::Device& device) {
  if (device.is_cuda()) return "";
  const auto available = memory_available();
  if (!available) return "";
  return memory_refusal(
      estimate_probe_memory(model.parameters, model.batch_size, model.optimizer), model.parameters,
      model.optimizer, *available,
      cfg.ranks_sharing_memory > 0 ? cfg.ranks_sharing_memory : cfg.local_world_size);
}

}  // namespace

int default_threads(int local_world_size) {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cores = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
  return std::max(1, cores / std::max(1, local_world_size));
}

int run_rank(const ProbeConfig& cfg, std::ostream& out, std::ostream& err) {
  const bool reporter = cfg.rank == 0;
  ReportWriter writer(cfg, out, err);
  writer.update([&](ProbeResult& r) {
    r.start_time = Clock::now();
    r.procs_per_node = cfg.local_world_size;
    r.nodes = std::max(1, cfg.world_size / cfg.local_world_size);
    r.note = cfg.note;
    r.allreduce_dtype = "fp32";
    r.warmup_iterations = cfg.warmup;
    r.iterations = cfg.iterations;
    r.backend = cfg.backend == BackendChoice::kNccl ? "nccl" : "gloo";
    r.device = "cpu";
  });

  auto report_error = [&](const std::string& stage, const std::string& message) {
    if (reporter) {
      writer.publish([&](ProbeResult& r) { r.error = ProbeError{stage, message}; });
    } else {
      err << "commgate-probe rank " << cfg.rank << ": " << stage << " failed: " << message << "\n";
      err.flush();
    }
  };

  // Rank 0 reports, so its watchdog fires first; the others give it 2 s, or their exit
  // would reach rank 0 as a lost connection before its own deadline names the stage.
  const double budget_s = cfg.timeout_s + (reporter ? 0.0 : 2.0);
  const auto probe_start = std::chrono::steady_clock::now();
  Watchdog watchdog(to_ms(budget_s), [&](const std::string& stage, double elapsed) {
    char msg[512];
    std::snprintf(
        msg, sizeof msg,
        "timed out after %.0fs (--timeout %.0f) in stage \"%s\" on rank %d: a peer may have "
        "stopped, or the link is much slower than the sweep assumes",
        elapsed, cfg.timeout_s, stage.c_str(), cfg.rank);
    report_error(stage_name(stage), msg);
    std::_Exit(kExitTimeout);
  });

  try {
    // Setup: threads, backend choice, the route to the master.
    const int threads = cfg.threads > 0 ? cfg.threads : default_threads(cfg.local_world_size);
    at::set_num_threads(threads);
    set_blas_threads(threads);
    at::globalContext().setFlushDenormal(true);
    at::manual_seed(1 + cfg.rank);

    const std::string no_nccl = nccl_unavailable_reason(nccl_backend_built(), query_cuda_devices(),
                                                        torch::cuda::is_available());
    BackendChoice backend = cfg.backend;
    if (backend == BackendChoice::kAuto)
      backend = no_nccl.empty() ? BackendChoice::kNccl : BackendChoice::kGloo;
    if (backend == BackendChoice::kNccl && !no_nccl.empty()) {
      throw StageFailure("backend", "--backend nccl: " + no_nccl, kExitFailed);
    }
    if (backend == BackendChoice::kGloo && !gloo_backend_built()) {
      const std::string no_gloo =
          "this binary was built without Gloo (LibTorch's Gloo headers were not found)";
      throw StageFailure("backend",
                         cfg.backend == BackendChoice::kAuto
                             ? "no backend can run here: " + no_nccl + "; and " + no_gloo
                             : "--backend gloo: " + no_gloo,
                         kExitFailed);
    }
    writer.update([&](ProbeResult& r) {
      r.backend = backend == BackendChoice::kNccl ? "nccl" : "gloo";
      r.device = backend == BackendChoice::kNccl ? "cuda" : "cpu";
    });

    watchdog.enter("rendezvous");
    std::string route_error;
    auto route = route_to(cfg.master_addr, &route_error);
    if (!route) throw StageFailure("rendezvous", "MASTER_ADDR " + route_error, kExitRendezvous);
    const std::string where = cfg.master_addr + ":" + std::to_string(cfg.master_port);
    const double rdv_s = cfg.rendezvous_timeout_s > 0 ? cfg.rendezvous_timeout_s
                                                      : std::max(1.0, watchdog.remaining_s() - 2.0);
    c10::intrusive_ptr<c10d::Store> store;
    RendezvousInfo info;
    try {
      store = connect_tcp_store(cfg.master_addr, cfg.master_port, cfg.rank, cfg.world_size,
                                to_ms(rdv_s));
      info = join_world(*store, where, cfg.rank, cfg.world_size, local_hostname(), to_ms(rdv_s));
    } catch (const RendezvousError& e) {
      throw StageFailure("rendezvous", e.what(), kExitRendezvous);
    }
    writer.update([&](ProbeResult& r) { r.hostnames = info.hostnames; });

    watchdog.enter("backend");
    std::unique_ptr<Communicator> comm;
    const auto collective_timeout = to_ms(std::max(1.0, watchdog.remaining_s()));
    if (backend == BackendChoice::kNccl) {
      NcclOptions o;
      o.local_rank = cfg.local_rank;
      o.timeout = collective_timeout;
      // NCCL's waits end 1 s before the watchdog would, so they are the ones that report.
      o.deadline = std::chrono::steady_clock::now() +
                   to_ms(std::max(0.5, watchdog.remaining_s() - (reporter ? 1.0 : 3.0)));
      o.socket_interface = cfg.interface_name.empty() ? route->interface_name : cfg.interface_name;
      o.hostname = local_hostname();
      comm = make_nccl_communicator(store, cfg.rank, cfg.world_size, o);
      warn_on_nccl_mismatch(cfg, err);
    } else {
      GlooOptions o;
      o.interface_name = cfg.interface_name;
      o.bind_address = route->address;
      o.route_interface = route->interface_name;
      o.timeout = collective_timeout;
      comm = make_gloo_communicator(store, cfg.rank, cfg.world_size, o);
    }
    if (comm->backend_name() == "nccl") writer.set_nccl_version(comm->library_version());
    writer.update([&](ProbeResult& r) {
      r.gpu_product = comm->device_product();
      r.interface_name = comm->interface_name();
      r.transport = comm->transport();
    });

    // The model comes first: its gradient size bounds the sweep. A synthetic model that
    // would not fit in memory is refused before anything is allocated for it; the link is
    // still measured (the result keeps it), then the compute stage fails on every rank.
    std::unique_ptr<TrainableModel> model;
    std::string refused;
    const bool autocast = comm->device().is_cuda();
    if (!cfg.skip_compute) {
      watchdog.enter("compute");
      if (!cfg.torchscript.empty()) {
        model = load_torchscript_model(cfg.torchscript, cfg.input_shape, comm->device(), autocast);
      } else if (refused = synthetic_model_refusal(
                     cfg, {cfg.parameters, cfg.batch_size, cfg.optimizer}, comm->device());
                 refused.empty()) {
        model = make_synthetic_mlp(synthetic_mlp_shape(cfg.parameters), cfg.batch_size,
                                   comm->device(), autocast);
      }
    }
    // The same on every rank, whether or not this one built its model.
    const double gradient_bytes = model
                                      ? parameter_count(model->parameters()) * 4
                                      : (cfg.skip_compute || !cfg.torchscript.empty()
                                             ? cfg.max_bytes
                                             : synthetic_mlp_shape(cfg.parameters).parameters * 4);
    // The sweep reaches the largest model's gradient: each model's all-reduces are timed.
    double largest_gradient_bytes = gradient_bytes;
    for (const SyntheticModel& m : cfg.also_models)
      largest_gradient_bytes =
          std::max(largest_gradient_bytes, synthetic_mlp_shape(m.parameters).parameters * 4);

    SweepOptions sweep;
    sweep.max_bytes = std::min(cfg.max_bytes, largest_gradient_bytes);
    sweep.min_bytes = std::min(cfg.min_bytes, sweep.max_bytes);
    sweep.factor = cfg.size_factor;
    sweep.warmup = cfg.warmup;
    sweep.iterations = cfg.iterations;
    sweep.size_time_budget_s = cfg.size_time_budget_s;
    SweepReport swept =
        run_allreduce_sweep(*comm, sweep, [&](const std::string& s) { watchdog.enter(s); });
    comm->refresh_transport();
    writer.update([&](ProbeResult& r) {
      r.allreduce = swept.results;
      r.fit = swept.fit;
      r.transport = comm->transport();
      r.interface_name = comm->interface_name();
    });
    if (!swept.data_ok) {
      std::string sizes;
      for (const auto& a : swept.results) {
        if (!a.data_check_ok) sizes += (sizes.empty() ? "" : ", ") + format_bytes(a.bytes);
      }
      throw StageFailure("allreduce",
                         "data check failed: the all-reduced sum was wrong at " + sizes,
                         kExitDataCheck);
    }
    if (auto links = exchange_links(*store, cfg.rank, cfg.world_size,
                                    read_node_link(comm->interface_name()), reporter))
      writer.update([&](ProbeResult& r) { r.links = *links; });

    if (!cfg.skip_compute && cfg.torchscript.empty()) {
      watchdog.enter("compute");
      // Every rank stops if one has too little memory (a lone rank computing would wait
      // for the others at its next collective).
      const bool any_refused = mean_over_ranks(*comm, refused.empty() ? 0.0 : 1.0) > 0;
      if (any_refused) {
        throw StageFailure("compute",
                           refused.empty() ? "another rank's node has too little memory for "
                                             "the model (its stderr says how much); give the "
                                             "TrainingJob spec.model.stepTimeHintMs"
                                           : refused,
                           kExitFailed);
      }
    }
    // One model's compute step, then its DDP step, every rank at once. The models still to
    // time share the time left: a round repeated for the first leaves room for the others.
    const int models = (model ? 1 : 0) + static_cast<int>(cfg.also_models.size());
    int models_timed = 0;
    auto time_model =
        [&](TrainableModel& timed, const std::string& optimizer, const std::string& gradient_dtype,
            const std::function<void(ProbeResult&, const ComputeResult&)>& got_compute,
            const std::function<void(ProbeResult&, const DdpStepResult&)>& got_ddp) {
          watchdog.enter("compute");
          Trainer trainer(timed, comm->device(), optimizer);
          comm->barrier();  // every rank computes at once, as in training
          const auto model_start = std::chrono::steady_clock::now();
          const double share = (budget_s - seconds_since(probe_start)) / (models - models_timed);
          ++models_timed;
          // Another round while any rank's was unsteady and this model's share of the time
          // left holds three more (the round, the DDP step after it, a margin), so a repeat
          // never costs the probe.
          auto repeat = [&](bool unsteady, double round_s) {
            const bool mine = unsteady && share - seconds_since(model_start) > 3 * round_s;
            return mean_over_ranks(*comm, mine ? 1.0 : 0.0) > 0;
          };
          ComputeResult c =
              measure_compute(timed, trainer, cfg.compute_warmup, cfg.compute_iterations,
                              autocast ? "bf16-amp" : "fp32", repeat);
          // The step is the same whatever DDP all-reduces; the record is for the job's dtype.
          c.gradient_dtype = gradient_dtype;
          const std::vector<double> medians = values_of_ranks(*comm, c.step_time_ms);
          const auto slowest = std::max_element(medians.begin(), medians.end());
          c.slowest_rank = static_cast<int>(slowest - medians.begin());
          c.slowest_rank_step_ms = *slowest;
          // The ranks' mean step from the medians gathered already (no second collective).
          c.step_time_ms = std::accumulate(medians.begin(), medians.end(), 0.0) /
                           static_cast<double>(medians.size());
          for (double* v : {&c.forward_ms, &c.backward_ms, &c.optimizer_ms, &c.p10_ms, &c.p90_ms}) {
            *v = mean_over_ranks(*comm, *v);
          }
          writer.update([&](ProbeResult& r) { got_compute(r, c); });

          watchdog.enter("ddp-step");
          DdpStepOptions d;
          d.first_bucket_bytes = cfg.first_bucket_bytes;
          d.bucket_cap_bytes = cfg.bucket_cap_bytes;
          d.warmup = cfg.ddp_warmup;
          d.iterations = cfg.ddp_iterations;
          d.min_timed_seconds = cfg.ddp_min_timed_seconds;
          d.gradient_dtype = gradient_dtype;
          const DdpStepResult ddp = measure_ddp_step(timed, trainer, *comm, d);
          writer.update([&](ProbeResult& r) { got_ddp(r, ddp); });
        };
    if (model) {
      time_model(
          *model, cfg.optimizer, cfg.gradient_dtype,
          [](ProbeResult& r, const ComputeResult& c) { r.compute = c; },
          [](ProbeResult& r, const DdpStepResult& d) { r.ddp_step = d; });
      model.reset();  // freed before the next model is built
    }
    for (const SyntheticModel& also : cfg.also_models) {
      watchdog.enter("compute");
      // A model that does not fit on some rank's node is not timed (the others still
      // are): its jobs wait for a probe of their own, which says why.
      const std::string refusal = synthetic_model_refusal(cfg, also, comm->device());
      if (mean_over_ranks(*comm, refusal.empty() ? 0.0 : 1.0) > 0) {
        ++models_timed;
        if (reporter)
          err << "commgate-probe: not timing the model of " << format_count(also.parameters)
              << " parameters: "
              << (refusal.empty() ? "another rank's node has too little memory for it" : refusal)
              << "\n";
        continue;
      }
      auto timed = make_synthetic_mlp(synthetic_mlp_shape(also.parameters), also.batch_size,
                                      comm->device(), autocast);
      time_model(
          *timed, also.optimizer, also.gradient_dtype,
          [](ProbeResult& r, const ComputeResult& c) {
            r.additional_models.push_back(ModelResult{c, std::nullopt});
          },
          [](ProbeResult& r, const DdpStepResult& d) { r.additional_models.back().ddp_step = d; });
    }

    // Rank 0 serves the store: nobody leaves before everybody is done with it.
    watchdog.enter("finish");
    comm->barrier();
    // Under the watchdog: destroying a communicator (ncclCommDestroy, Gloo's pairs) can
    // block when a peer is gone.
    comm.reset();
    watchdog.disarm();
    if (reporter) writer.publish();
    return reporter && writer.output_failed() ? kExitFailed : kExitOk;
  } catch (const StageFailure& e) {
    report_error(e.stage(), e.what());
    exit_now(out, err, e.code());
  } catch (const std::exception& e) {
    report_error(stage_name(watchdog.stage()), exception_text(e));
    exit_now(out, err, kExitFailed);
  }
}

}  // namespace commgate::probe
