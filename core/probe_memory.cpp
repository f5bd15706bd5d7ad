#include "core/probe_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace commgate {
namespace {

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<double> parse_bytes(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == 0 || v < 0) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// cgroup v2: "0::/kubepods/.../cri-containerd-..." in /proc/self/cgroup.
std::string cgroup_v2_path(const std::string& root) {
  const auto text = read_small_file(root + "/proc/self/cgroup");
  if (!text) return "";
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

// The memory-limit file of this process's cgroup and the one beside it that counts its
// usage: the first of cgroup v2's own cgroup, v2's root (a cgroup namespace's), v1.
struct CgroupMemoryFiles {
  std::string dir, limit_file, usage_file;
  std::string limit_text;  // what the limit file holds
};
std::optional<CgroupMemoryFiles> cgroup_memory_files(const std::string& root) {
  const std::string fs = root + "/sys/fs/cgroup";
  const std::string own = cgroup_v2_path(root);
  const CgroupMemoryFiles candidates[] = {
      {fs + (own == "/" ? "" : own), "memory.max", "memory.current", ""},
      {fs, "memory.max", "memory.current", ""},  // a cgroup namespace's root
      {fs + "/memory", "memory.limit_in_bytes", "memory.usage_in_bytes", ""},
  };
  for (const CgroupMemoryFiles& c : candidates) {
    if (auto text = read_small_file(c.dir + "/" + c.limit_file)) {
      CgroupMemoryFiles found = c;
      found.limit_text = std::move(*text);
      return found;
    }
  }
  return std::nullopt;
}

// The limit of this process's cgroup less what it already uses; nullopt without a limit.
std::optional<MemoryAvailable> cgroup_available(const std::string& root) {
  const auto files = cgroup_memory_files(root);
  if (!files) return std::nullopt;
  const auto limit = parse_cgroup_memory_limit(files->limit_text);
  if (!limit) return std::nullopt;  // the file says unlimited
  double used = 0;
  if (const auto usage = read_small_file(files->dir + "/" + files->usage_file)) {
    used = parse_bytes(*usage).value_or(0);
  }
  return MemoryAvailable{std::max(0.0, *limit - used),
                         "the container's cgroup memory limit (" + files->limit_file + ", " +
                             format_memory(*limit) + ", less " + format_memory(used) + " in use)"};
}

}  // namespace

MlpShape synthetic_mlp_shape(double parameters) {
  constexpr double kLayers = 24;
  MlpShape s;
  const double raw = std::sqrt(std::max(parameters, 1.0) / kLayers);
  s.width = std::clamp<int64_t>(static_cast<int64_t>(std::llround(raw / 64.0)) * 64, 64, 8192);
  const double per_layer = static_cast<double>(s.width * s.width + s.width);
  s.layers = std::max(0, static_cast<int>((parameters - (s.width + 1)) / per_layer));
  const double rest = parameters - s.layers * per_layer;
  s.last_out = std::max<int64_t>(1, std::llround(rest / static_cast<double>(s.width + 1)));
  s.parameters = s.layers * per_layer + static_cast<double>(s.last_out * (s.width + 1));
  return s;
}

int optimizer_state_per_parameter(const std::string& optimizer) {
  if (optimizer == "sgd") return 0;
  if (optimizer == "sgd-momentum" || optimizer == "adagrad" || optimizer == "rmsprop") return 1;
  if (optimizer == "adam" || optimizer == "adamw") return 2;
  throw std::invalid_argument("unknown optimizer \"" + optimizer +
                              "\" (one of sgd, sgd-momentum, adam, adamw, adagrad, rmsprop)");
}

ProbeMemoryEstimate estimate_probe_memory(double parameters, int batch_size,
                                          const std::string& optimizer) {
  constexpr double kFloat = 4;
  const MlpShape shape = synthetic_mlp_shape(parameters);
  ProbeMemoryEstimate e;
  e.weights = shape.parameters * kFloat;
  e.gradients = shape.parameters * kFloat;
  e.optimizer_state = shape.parameters * kFloat * optimizer_state_per_parameter(optimizer);
  e.ddp_buckets = shape.parameters * kFloat;
  // A batch x width tensor per layer kept by forward for backward, as much again at
  // backward's peak (its gradients), and the input: on the safe side.
  const double per_layer =
      static_cast<double>(std::max(batch_size, 1)) * static_cast<double>(shape.width) * kFloat;
  e.activations = per_layer * (2.0 * (shape.layers + 1) + 1);
  e.runtime = kProbeRuntimeBytes;
  return e;
}

std::optional<double> parse_cgroup_memory_limit(const std::string& text) {
  if (text.rfind("max", 0) == 0) return std::nullopt;
  const auto v = parse_bytes(text);
  // cgroup v1 writes "unlimited" as 2^63 rounded down to a page (9223372036854771712).
  if (!v || *v >= 0x1p62) return std::nullopt;
  return v;
}

std::optional<double> parse_mem_available(const std::string& meminfo) {
  std::istringstream lines(meminfo);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    const auto kb = parse_bytes(line.substr(line.find(':') + 1));
    if (kb) return *kb * 1024;
  }
  return std::nullopt;
}

std::optional<double> cgroup_memory_limit(const std::string& root) {
  const auto files = cgroup_memory_files(root);
  return files ? parse_cgroup_memory_limit(files->limit_text) : std::nullopt;
}

std::optional<MemoryAvailable> memory_available(const std::string& root) {
  std::optional<MemoryAvailable> out = cgroup_available(root);
  if (const auto meminfo = read_small_file(root + "/proc/meminfo")) {
    if (const auto bytes = parse_mem_available(*meminfo); bytes && (!out || *bytes < out->bytes)) {
      out = MemoryAvailable{*bytes, "MemAvailable in /proc/meminfo"};
    }
  }
  return out;
}

double probe_pod_memory_bytes(double parameters, int batch_size, const std::string& optimizer,
                              bool gpu) {
  const double need = estimate_probe_memory(parameters, batch_size, optimizer).total() * 1.25;
  const double floor = gpu ? kProbePodMemoryFloorGpu : kProbePodMemoryFloor;
  const double mib = 1048576;
  return std::ceil(std::clamp(need, floor, kProbePodMemoryCap) / mib) * mib;
}

std::string format_memory(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 6) {
    bytes /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 || bytes >= 100 ? "%.0f %s" : "%.1f %s", bytes,
                kUnits[unit]);
  return buf;
}

std::string memory_refusal(const ProbeMemoryEstimate& need, double parameters,
                           const std::string& optimizer, const MemoryAvailable& available,
                           int ranks_here) {
  const int ranks = std::max(1, ranks_here);
  if (need.total() * ranks <= available.bytes) return "";
  char count[32];
  std::snprintf(count, sizeof count, "%g", parameters);
  return "the model needs " + format_memory(need.total()) + " of memory per rank (" + count +
         " parameters with " + optimizer + ": weights " + format_memory(need.weights) +
         ", gradients " + format_memory(need.gradients) + ", optimizer state " +
         format_memory(need.optimizer_state) + ", DDP buckets " + format_memory(need.ddp_buckets) +
         ", activations " + format_memory(need.activations) + ", runtime " +
         format_memory(need.runtime) + ")" +
         (ranks > 1 ? " x " + std::to_string(ranks) + " ranks on this node" : "") +
         ", but this node has " + format_memory(available.bytes) + " (" + available.source +
         "): the compute step was not measured (nothing was allocated for it); give the "
         "TrainingJob spec.model.stepTimeHintMs, a single-node step time measured where the "
         "model fits";
}

}  // namespace commgate
