// commgate-probe's settings: one immutable struct, parsed once from the command line and
// the torchrun-style environment (flags override the environment). No globals.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model_names.h"

namespace commgate::probe {

// Exit codes (docs/probe.md). Only rank 0 writes the result; every rank exits with one of
// these, and `--local-ranks` exits with rank 0's code (or the first failing rank's).
enum ExitCode : int {
  kExitOk = 0,
  kExitFailed = 1,      // a stage failed (backend error, exception); the report says which
  kExitUsage = 2,       // bad flags or environment
  kExitRendezvous = 3,  // the store could not be reached, or peers did not join in time
  kExitTimeout = 4,     // --timeout expired; the report names the stage that hung
  kExitDataCheck = 5,   // an all-reduce produced a wrong sum
};

enum class BackendChoice { kAuto, kGloo, kNccl };

// A synthetic model to time after the first
// (`--also-model params=Q,batch=N,optimizer=NAME,dtype=fp32|fp16|bf16`):
// one probe of a pool serves the jobs of several models (issue #21).
struct SyntheticModel {
  double parameters = 25e6;
  int batch_size = 32;
  std::string optimizer = kDefaultOptimizer;
  std::string gradient_dtype = "fp32";
};

struct ProbeConfig {
  // World (torchrun env: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK,
  // LOCAL_WORLD_SIZE).
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int local_ranks = 0;  // > 0: spawn this many ranks here over loopback (workstation mode)
  // Ranks sharing this machine's memory: LOCAL_WORLD_SIZE, or the N of a --local-ranks
  // parent (COMMGATE_PROBE_LOCAL_RANKS, which it sets: its ranks each stand for a node,
  // LOCAL_WORLD_SIZE=1, but they share one machine).
  int ranks_sharing_memory = 0;  // 0: local_world_size

  BackendChoice backend = BackendChoice::kAuto;
  std::string
      interface_name;  // --interface, else GLOO_SOCKET_IFNAME; empty: the route to MASTER_ADDR

  // All-reduce sweep, as nccl-tests: sizes min_bytes * factor^k up to
  // min(gradient bytes, max_bytes), `warmup` untimed then at least `iterations` timed.
  double min_bytes = 4096;
  double max_bytes = 64.0 * 1024 * 1024;
  double size_factor = 4;
  int warmup = 1;
  int iterations = 5;
  // Small messages repeat until this much time is spent (up to 20x `iterations`), so
  // latency-bound sizes are not measured from a handful of noisy samples.
  double size_time_budget_s = 0.1;

  // Compute: a synthetic MLP with `parameters` gradient elements, or a TorchScript module.
  double parameters = 25e6;
  int batch_size = 32;
  // --optimizer: one of core's kOptimizers (model_names.h), reported as compute.optimizer.
  std::string optimizer = kDefaultOptimizer;
  // --gradient-dtype: what DDP all-reduces (fp16/bf16: its compression hooks); the DDP
  // step compresses its buckets so, and the result says it.
  std::string gradient_dtype = "fp32";
  std::string torchscript;
  std::vector<int64_t> input_shape;
  int compute_warmup = 2;
  int compute_iterations = 10;
  int threads = 0;            // torch intra-op threads; 0 = cores available / local ranks
  bool skip_compute = false;  // --no-compute: measure the link only
  // Timed after the first model, each in turn (at most kMaxModelsPerProbe - 1).
  std::vector<SyntheticModel> also_models;

  // DDP-style step (PyTorch defaults: first bucket 1 MiB, then 25 MiB).
  double bucket_cap_bytes = 25.0 * 1024 * 1024;
  double first_bucket_bytes = 1.0 * 1024 * 1024;
  int ddp_warmup = 1;
  int ddp_iterations = 5;
  double ddp_min_timed_seconds = 3;

  double timeout_s = 300;                      // bounds the whole run
  double rendezvous_timeout_s = 0;             // 0: the rest of --timeout
  std::string output_path;                     // --output FILE (rank 0)
  std::optional<std::string> termination_log;  // unset: /dev/termination-log when writable
  std::string note;                            // copied into ProbeResult.note
  bool quiet = false;                          // no human summary on stderr
};

// nullopt when absent.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_env();

struct ParseOutcome {
  std::optional<ProbeConfig> config;  // set when parsing succeeded
  bool help = false;                  // --help: print usage, exit 0
  std::string error;                  // what is wrong, naming the flag or variable
};

// `args` excludes argv[0].
ParseOutcome parse_probe_config(const std::vector<std::string>& args, const EnvLookup& env);
std::string probe_usage();

}  // namespace commgate::probe
