// What the probe's compute step needs in memory, known before anything is allocated, and
// what a machine may give it. The probe refuses a model that does not fit (a 1P-parameter
// model, within the CRD's bounds, would otherwise grow each rank by ~100 MB/s until the
// node ran out); the operator sizes the probe pod's memory from the same estimate; and
// `commgate evaluate`'s local probe refuses the same way. CPU-only math: the probe links
// it, the operator links it without LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace commgate {

// The probe's synthetic model: a stack of `layers` width x width Linear+ReLU layers and a
// width x `last_out` head, sized so the total (weights + biases) comes as close to the
// request as the shape allows.
struct MlpShape {
  int64_t width = 0;
  int layers = 0;  // hidden width x width layers
  int64_t last_out = 0;
  double parameters = 0;  // exact count of the shape
};
// About 24 layers (so gradients arrive in many tensors, as in real models), width a
// multiple of 64 in [64, 8192].
MlpShape synthetic_mlp_shape(double parameters);

// fp32 values of optimizer state per parameter, as LibTorch's optimizers keep them with
// the probe's settings (probe-job/compute.cpp make_optimizer): sgd 0; sgd-momentum 1 (the
// momentum buffer); adam and adamw 2 (both moments; no amsgrad); adagrad 1 (the sum);
// rmsprop 1 (square_avg; no momentum, not centered). Throws std::invalid_argument
// naming the choices for another name.
int optimizer_state_per_parameter(const std::string& optimizer);

// Bytes, by what holds them, of one rank's compute and DDP steps (fp32 throughout, as on
// the CPU; on a GPU the same tensors live in the GPU's memory).
struct ProbeMemoryEstimate {
  double weights = 0;          // parameters x 4
  double gradients = 0;        // parameters x 4
  double optimizer_state = 0;  // parameters x 4 x optimizer_state_per_parameter
  double ddp_buckets = 0;      // parameters x 4: the DDP step's flat bucket copies
  double activations = 0;      // what forward keeps for backward, for the batch
  double runtime = 0;          // LibTorch, the collective library, the sweep's buffers
  double total() const {
    return weights + gradients + optimizer_state + ddp_buckets + activations + runtime;
  }
};
inline constexpr double kProbeRuntimeBytes = 512.0 * 1048576;  // measured RSS ~ 300 MB

// The synthetic model's need for `parameters` at `batch_size` with `optimizer`.
ProbeMemoryEstimate estimate_probe_memory(double parameters, int batch_size,
                                          const std::string& optimizer);

// What this process may use: the smaller of its cgroup's memory limit (less what the
// cgroup already uses) and the machine's MemAvailable; `source` says which bound it.
struct MemoryAvailable {
  double bytes = 0;
  std::string source;  // "the cgroup's memory limit (memory.max)", "MemAvailable"
};

// Parsers of the files read, for tests: a cgroup v2 memory.max or v1
// memory.limit_in_bytes ("max", or v1's 2^63-ish "unlimited", give nullopt), and
// /proc/meminfo's MemAvailable line (kB) in bytes.
std::optional<double> parse_cgroup_memory_limit(const std::string& text);
std::optional<double> parse_mem_available(const std::string& meminfo);

// The memory limit of this process's cgroup (cgroup v2's memory.max of its own cgroup, or
// of a cgroup namespace's root, else v1's memory.limit_in_bytes) under `root` ("/" in
// production), in bytes; nullopt when none is set or none can be read. What the servers
// size themselves by (server/container_limits.h).
std::optional<double> cgroup_memory_limit(const std::string& root = "/");

// Reads the limits under `root` ("/" in production): /proc/meminfo, /proc/self/cgroup,
// cgroup v2's memory.max (and memory.current) of this process's cgroup, else v1's
// memory/memory.limit_in_bytes (and memory.usage_in_bytes). nullopt when nothing is known.
std::optional<MemoryAvailable> memory_available(const std::string& root = "/");

// "" when `ranks_here` ranks of `need` each fit in `available`, else the refusal: "the model
// needs 18.2 PiB of memory per rank (1e+15 parameters with adamw: weights 3.6 PiB,
// ...), this node has 12.0 GiB (MemAvailable) for 1 rank(s): ... give the TrainingJob
// spec.model.stepTimeHintMs".
std::string memory_refusal(const ProbeMemoryEstimate& need, double parameters,
                           const std::string& optimizer, const MemoryAvailable& available,
                           int ranks_here);

// The memory a probe pod asks for and is limited to (request = limit): the synthetic
// model's estimate on the CPU (where the probe also runs when `auto` finds no usable GPU)
// plus a quarter for what the estimate leaves out (a TorchScript model's activations,
// allocator slack), at least kProbePodMemoryFloor (2 GiB; 8 GiB with GPUs, for CUDA's
// host side), at most kProbePodMemoryCap. A model needing more than the cap still gets a
// pod that schedules, and the probe in it refuses with what it needs, rather than a pod
// that no node can take and a probe that times out saying nothing.
inline constexpr double kProbePodMemoryFloor = 2.0 * (1 << 30);
inline constexpr double kProbePodMemoryFloorGpu = 8.0 * (1 << 30);
inline constexpr double kProbePodMemoryCap = 64.0 * (1 << 30);
double probe_pod_memory_bytes(double parameters, int batch_size, const std::string& optimizer,
                              bool gpu);

// Human bytes with binary units: "512 MiB", "18.2 GiB", "3.6 PiB".
std::string format_memory(double bytes);

}  // namespace commgate
