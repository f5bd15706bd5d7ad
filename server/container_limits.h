// The container's limits as the kernel enforces them (cgroup v2, else v1), and the server
// sizes that follow from them (issue #19 item 8): a pod's memory limit, not the node's
// memory, is what an attacker must not push the webhook past, and its CPU quota, not the
// node's cores, is how many threads can run. Parsing is pure; reading takes a root so
// tests can point it at files of their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace commgate::server {

struct ContainerLimits {
  std::optional<uint64_t> memory_bytes;  // nullopt: no limit
  std::optional<double> cpus;            // quota / period; nullopt: no quota
};

// cgroup v2 cpu.max ("max 100000" or "150000 100000"): quota / period, nullopt for none.
std::optional<double> parse_cgroup_cpu_max(std::string_view text);

// Under `root` ("/" in production): the memory limit as core's cgroup_memory_limit reads it
// (core/probe_memory.h: this process's cgroup, v2 then v1), the CPU quota from
// <root>/sys/fs/cgroup/cpu.max (v2), else cpu/cpu.cfs_quota_us and cpu.cfs_period_us (v1).
// Missing files: no limit.
ContainerLimits read_container_limits(const std::string& root = "/");

struct ServerSizing {
  std::size_t threads = 1;
  std::size_t max_connections = 4096;
  std::size_t max_inflight_body_bytes = 0;  // 0: no budget
};

// What bounds a server under `limits` (docs/security.md, measured in docs/benchmarks.md):
// a quarter of the memory limit for request bodies in flight (never below one largest
// body, `max_body_bytes`), half of it for connections at kConnectionBytes each (an idle
// TLS connection measured about 94 KB, plus its read buffer's headroom), at most 4096;
// threads: the CPU quota rounded up, at least 1 and at most `hardware_threads`. Without a
// memory limit: 4096 connections and no body budget.
inline constexpr std::size_t kConnectionBytes = 160 * 1024;
ServerSizing size_server(const ContainerLimits& limits, unsigned hardware_threads,
                         std::size_t max_body_bytes);

// Hands the allocator's free memory back to the system (tcmalloc's ReleaseFreeMemory when
// the process runs on tcmalloc, else glibc's malloc_trim): after a large request, so that
// memory follows the load instead of its peak.
void release_free_memory();

}  // namespace commgate::server
