#include "server/container_limits.h"

#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/probe_memory.h"

namespace commgate::server {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r'))
    s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::optional<double> parse_cgroup_cpu_max(std::string_view text) {
  text = trim(text);
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto quota = parse_u64(text.substr(0, space));
  const auto period = parse_u64(trim(text.substr(space + 1)));
  if (!quota || !period || *period == 0 || *quota == 0) return std::nullopt;  // "max ..."
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

ContainerLimits read_container_limits(const std::string& root) {
  ContainerLimits limits;
  if (const auto bytes = cgroup_memory_limit(root)) {
    limits.memory_bytes = static_cast<uint64_t>(*bytes);
  }
  const std::string fs = root + "/sys/fs/cgroup";
  if (const auto v2 = read_text(fs + "/cpu.max")) {
    limits.cpus = parse_cgroup_cpu_max(*v2);
  } else if (const auto quota = read_text(fs + "/cpu/cpu.cfs_quota_us")) {
    const auto period = read_text(fs + "/cpu/cpu.cfs_period_us");
    // v1 writes "no quota" as -1, which parse_u64 refuses.
    if (period) limits.cpus = parse_cgroup_cpu_max(std::string(trim(*quota)) + " " + *period);
  }
  return limits;
}

ServerSizing size_server(const ContainerLimits& limits, unsigned hardware_threads,
                         std::size_t max_body_bytes) {
  ServerSizing s;
  const std::size_t hardware = std::max(1u, hardware_threads);
  s.threads = limits.cpus ? std::clamp<std::size_t>(
                                static_cast<std::size_t>(std::ceil(*limits.cpus)), 1, hardware)
                          : hardware;
  if (!limits.memory_bytes) return s;
  const auto memory = static_cast<std::size_t>(*limits.memory_bytes);
  s.max_inflight_body_bytes = std::max(memory / 4, max_body_bytes);
  s.max_connections = std::clamp<std::size_t>(memory / 2 / kConnectionBytes, 16, 4096);
  return s;
}

void release_free_memory() {
  // Looked up at run time: the binaries link tcmalloc where Debian has it (cli/CMakeLists.txt)
  // and glibc's allocator elsewhere.
  using Release = void (*)();
  static const auto tcmalloc_release =
      std::bit_cast<Release>(dlsym(RTLD_DEFAULT, "MallocExtension_ReleaseFreeMemory"));
  if (tcmalloc_release) {
    tcmalloc_release();
  } else {
    malloc_trim(0);
  }
}

}  // namespace commgate::server
