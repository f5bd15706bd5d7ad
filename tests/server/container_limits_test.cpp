// server/container_limits: the cgroup's limits read as the kernel writes them, and the
// server sizes that follow (issue #19 item 8).
#include "server/container_limits.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/probe_memory.h"

namespace commgate::server {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;

TEST(ContainerLimits, ParsesCgroupV2AndV1Files) {
  // The memory limit is core's parser (core/probe_memory.h), which the probe uses too.
  EXPECT_EQ(commgate::parse_cgroup_memory_limit("268435456\n"), 268435456.0);
  EXPECT_EQ(commgate::parse_cgroup_memory_limit("max\n"), std::nullopt);
  EXPECT_EQ(commgate::parse_cgroup_memory_limit("9223372036854771712\n"), std::nullopt)
      << "v1's no limit";
  EXPECT_EQ(commgate::parse_cgroup_memory_limit("lots"), std::nullopt);
  EXPECT_EQ(commgate::parse_cgroup_memory_limit(""), std::nullopt);
  EXPECT_EQ(parse_cgroup_cpu_max("max 100000\n"), std::nullopt);
  EXPECT_DOUBLE_EQ(parse_cgroup_cpu_max("150000 100000\n").value_or(0), 1.5);
  EXPECT_DOUBLE_EQ(parse_cgroup_cpu_max("50000 100000").value_or(0), 0.5);
  EXPECT_EQ(parse_cgroup_cpu_max("-1 100000"), std::nullopt) << "v1's no quota";
  EXPECT_EQ(parse_cgroup_cpu_max("100000"), std::nullopt);
}

TEST(ContainerLimits, ReadsV2ThenV1FromTheRootGiven) {
  const fs::path root = fs::temp_directory_path() / ("cg-limits-" + std::to_string(getpid()));
  const fs::path cgroup = root / "sys" / "fs" / "cgroup";
  fs::create_directories(cgroup / "memory");
  fs::create_directories(cgroup / "cpu");
  EXPECT_EQ(read_container_limits(root.string()).memory_bytes, std::nullopt) << "no files";
  std::ofstream(cgroup / "memory" / "memory.limit_in_bytes") << "536870912\n";
  std::ofstream(cgroup / "cpu" / "cpu.cfs_quota_us") << "200000\n";
  std::ofstream(cgroup / "cpu" / "cpu.cfs_period_us") << "100000\n";
  ContainerLimits v1 = read_container_limits(root.string());
  EXPECT_EQ(v1.memory_bytes, 536870912u);
  EXPECT_DOUBLE_EQ(v1.cpus.value_or(0), 2.0);
  std::ofstream(cgroup / "memory.max") << "268435456\n";
  std::ofstream(cgroup / "cpu.max") << "100000 100000\n";
  ContainerLimits v2 = read_container_limits(root.string());
  EXPECT_EQ(v2.memory_bytes, 268435456u);
  EXPECT_DOUBLE_EQ(v2.cpus.value_or(0), 1.0);
  fs::remove_all(root);
}

TEST(ContainerLimits, SizesTheServerToTheLimits) {
  struct Case {
    const char* what;
    ContainerLimits limits;
    unsigned hardware;
    ServerSizing want;
  };
  constexpr std::size_t kMi = 1024 * 1024;
  const std::size_t body = 7 * kMi;
  const Case cases[] = {
      {"the chart's 256Mi, 1 CPU, on a 16-core node", {256 * kMi, 1.0}, 16, {1, 819, 64 * kMi}},
      {"half a CPU rounds up to one thread", {256 * kMi, 0.5}, 16, {1, 819, 64 * kMi}},
      {"2.5 CPUs: 3 threads", {1024 * kMi, 2.5}, 16, {3, 3276, 256 * kMi}},
      {"a quota above the node's cores", {std::nullopt, 64.0}, 8, {8, 4096, 0}},
      {"no limits: the node's cores, the old caps", {}, 4, {4, 4096, 0}},
      {"a tiny limit still takes one largest body", {20 * kMi, std::nullopt}, 2, {2, 64, body}},
  };
  for (const auto& c : cases) {
    const ServerSizing got = size_server(c.limits, c.hardware, body);
    EXPECT_EQ(got.threads, c.want.threads) << c.what;
    EXPECT_EQ(got.max_connections, c.want.max_connections) << c.what;
    EXPECT_EQ(got.max_inflight_body_bytes, c.want.max_inflight_body_bytes) << c.what;
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::server
