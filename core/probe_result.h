// The probe's report (schema "commgate.io/v1alpha1", kind ProbeResult; docs/probe.md):
// what commgate-probe prints, what the operator reads from the probe pod's termination
// message, and what `commgate evaluate --measurement` takes.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/compute_spread.h"
#include "core/link_fit.h"
#include "core/link_rate.h"
#include "core/model_names.h"
#include "core/time_format.h"

namespace commgate {

inline constexpr const char* kProbeResultApiVersion = "commgate.io/v1alpha1";
inline constexpr const char* kProbeResultKind = "ProbeResult";
// Kubernetes truncates a container's termination message to 4096 bytes.
inline constexpr size_t kTerminationMessageLimit = 4096;

struct AllReduceResult {
  double bytes = 0;       // per-rank message size
  double time_us = 0;     // mean time of one all-reduce over the timed iterations
  double algbw_gbps = 0;  // bytes / time, GB/s (1e9)
  double busbw_gbps = 0;  // algbw * 2(n-1)/n
  bool data_check_ok = true;
};

struct ComputeResult {
  double parameters = 0;
  std::string gradient_dtype = "fp32";  // fp32 | fp16 | bf16
  std::string model;                    // "synthetic-mlp" or "torchscript:<path>"
  std::string precision;                // "fp32" on CPU, "bf16-amp" on GPU
  int batch_size = 0;
  // What the probe's optimizer step ran (kOptimizers). Results recorded before the field
  // existed timed Adam, so a result without it reads as "adam" (kUnrecordedOptimizer).
  std::string optimizer = kUnrecordedOptimizer;
  int iterations = 0;
  double step_time_ms = 0;  // median forward+backward+optimizer
  double forward_ms = 0;
  double backward_ms = 0;
  double optimizer_ms = 0;
  double p10_ms = 0;
  double p90_ms = 0;
  // Rounds of `iterations` timed steps run: the probe repeats a round while it is unsteady
  // (core/compute_spread.h); the medians and percentiles above are the last round's.
  int rounds = 0;
  // The slowest rank's median step, and that rank; -1 when not reported.
  double slowest_rank_step_ms = 0;
  int slowest_rank = -1;
};

// The spread of a probe's compute step, as the decision's caution reads it.
ComputeSpread spread_of(const ComputeResult& compute);

// The directly measured DDP-style step at the probed node count.
struct DdpStepResult {
  double bucket_cap_bytes = 0;
  double first_bucket_bytes = 0;
  int buckets = 0;
  double step_time_ms = 0;               // with bucketed, overlapped all-reduce
  double compute_only_step_time_ms = 0;  // same step, no communication, all ranks busy
  double exposed_comm_ms = 0;
  double comm_share = 0;
  // The step's buckets all-reduced back to back with no compute: the communication the
  // step had to hide. 0: not timed (probes before 2026-12-07).
  double allreduce_ms = 0;
};

// Another model timed by the same probe (`--also-model`): one probe of a pool serves the
// jobs of every model waiting on it (issue #21). The first model keeps `compute` and
// `ddpStep` (results written before this field read as they did).
struct ModelResult {
  ComputeResult compute;
  std::optional<DdpStepResult> ddp_step;
};

// At most this many models in one probe (the first and the additional ones): each adds
// its compute step and DDP step to the run, and about 600 bytes to the 4096-byte
// termination message (compact_probe_result keeps every one).
inline constexpr int kMaxModelsPerProbe = 3;

struct ProbeError {
  std::string stage;  // "rendezvous", "allreduce", "compute", "ddp-step"
  std::string message;
};

struct ProbeResult {
  TimePoint start_time{};
  double duration_seconds = 0;
  int nodes = 0;
  int procs_per_node = 1;
  std::string backend;    // gloo | nccl
  std::string transport;  // socket | ib | p2p/nvlink | shm | unknown
  std::string interface_name;
  // The rated speed of the measured interface on each node, combined (core/link_rate.h):
  // nullopt in results of probes that did not read it.
  std::optional<PoolLink> links;
  std::string device;  // "cpu" or "cuda"
  std::string gpu_product;
  std::vector<std::string> hostnames;
  std::string allreduce_dtype = "fp32";
  int warmup_iterations = 0;
  int iterations = 0;
  std::vector<AllReduceResult> allreduce;
  LinkFit fit;
  std::optional<ComputeResult> compute;
  std::optional<DdpStepResult> ddp_step;
  std::vector<ModelResult> additional_models;  // at most kMaxModelsPerProbe - 1
  std::optional<ProbeError> error;
  std::string note;  // provenance, e.g. "recorded on 2 netns nodes at 1gbit"
};

// Throws ValidationError with field paths. Unknown fields are ignored (forward
// compatibility: a newer probe may report more than this reader knows).
ProbeResult parse_probe_result(const nlohmann::json& doc);
nlohmann::json to_json(const ProbeResult& result);
// The termination-message form: the per-size table and host list dropped, numbers
// rounded. Always <= kTerminationMessageLimit bytes; throws std::length_error otherwise.
std::string compact_probe_result(const ProbeResult& result);

// GB/s as nccl-tests reports it (1e9 bytes per second).
inline double to_gbps(double bytes_per_s) {
  return bytes_per_s / 1e9;
}

}  // namespace commgate
