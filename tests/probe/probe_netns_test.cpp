// Emulated nodes: ranks in network namespaces joined by a bridge, links shaped with tc
// tbf (scripts/netsim.sh). The probe must see the link: busbw of the largest size within
// 10% of the rate, and a larger comm share on a slower link. Needs root; skipped (with
// the reason) otherwise. Results are kept under COMMGATE_PROBE_RESULTS_DIR so the
// comparison test reads the runs of the rate tests (ctest fixtures).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/probe_result.h"
#include "tests/probe/subprocess.h"
#include "tests/support/scratch_dir.h"

namespace commgate::probe {
namespace COMMGATE_TEST_UNIT {

using std::chrono::seconds;
using testing::Finished;

const std::string kProbe = COMMGATE_PROBE_BIN;
const std::string kNetsim = COMMGATE_NETSIM_SCRIPT;
const std::string kResults = COMMGATE_PROBE_RESULTS_DIR;

std::string scratch(const std::string& name) {
  return (commgate::testing::scratch_dir() / ("netns-" + name)).string();
}

// N namespaces at RATE for the lifetime of the object. The prefix carries this process's
// pid (unique among concurrent runs), and netsim.sh records it as the owner, so a later
// run reaps what a killed test left behind.
class EmulatedNodes {
 public:
  EmulatedNodes(int nodes, const std::string& rate)
      : prefix_("cg" + std::to_string(getpid() % 1000000)) {
    Finished f = testing::run({kNetsim, "up", std::to_string(nodes), rate}, env(),
                              scratch(prefix_ + "-up"), seconds(60));
    ok_ = f.exit_code == 0;
    error_ = f.err;
  }
  ~EmulatedNodes() {
    testing::run({kNetsim, "down"}, env(), scratch(prefix_ + "-down"), seconds(60));
  }
  EmulatedNodes(const EmulatedNodes&) = delete;
  EmulatedNodes& operator=(const EmulatedNodes&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& prefix() const { return prefix_; }  // NETSIM_PREFIX of these nodes

  // Starts one probe per node (rank i on node i, master on node 0) and waits for all.
  std::vector<Finished> run_probe(int ranks, const std::vector<std::string>& args,
                                  const std::string& master, seconds limit) {
    std::vector<std::unique_ptr<testing::Subprocess>> procs;
    for (int r = ranks - 1; r >= 0; --r) {  // rank 0 last: the others wait for its store
      std::vector<std::string> argv = {kNetsim, "exec", std::to_string(r), kProbe};
      argv.insert(argv.end(), args.begin(), args.end());
      auto e = env();
      e["MASTER_ADDR"] = master;
      e["MASTER_PORT"] = "29500";
      e["RANK"] = std::to_string(r);
      e["WORLD_SIZE"] = std::to_string(ranks);
      procs.push_back(std::make_unique<testing::Subprocess>(
          argv, e, scratch(prefix_ + "-rank" + std::to_string(r))));
    }
    std::vector<Finished> out(ranks);
    for (int i = 0; i < ranks; ++i) out[ranks - 1 - i] = procs[i]->wait(limit);
    return out;
  }

 private:
  std::map<std::string, std::string> env() const {
    return {{"NETSIM_PREFIX", prefix_}, {"NETSIM_OWNER_PID", std::to_string(getpid())}};
  }
  std::string prefix_;
  bool ok_ = false;
  std::string error_;
};

#define SKIP_UNLESS_ROOT()                                                                   \
  if (geteuid() != 0) {                                                                      \
    GTEST_SKIP()                                                                             \
        << "emulated nodes need root (network namespaces, veth, tc); run the tests as root"; \
  }

// A small model so a run takes seconds even at 200mbit; one torch thread per rank, as on
// a node of its own (all ranks share this machine's cores).
std::vector<std::string> probe_args(const std::string& note) {
  return {"--params",  "5M",  "--batch-size",      "32", "--max-bytes", "16Mi", "--threads", "1",
          "--timeout", "120", "--termination-log", "",   "--note",      note};
}

ProbeResult run_and_keep(int ranks, const std::string& rate, const std::string& name) {
  EmulatedNodes nodes(ranks, rate);
  if (!nodes.ok()) ADD_FAILURE() << "netsim up failed: " << nodes.error();
  auto runs = nodes.run_probe(
      ranks, probe_args(name + ": " + std::to_string(ranks) + " netns nodes at " + rate),
      "198.18.0.1", seconds(150));
  for (int r = 0; r < ranks; ++r)
    EXPECT_EQ(runs[r].exit_code, 0) << "rank " << r << ":\n" << runs[r].err;
  std::filesystem::create_directories(kResults);
  std::ofstream(kResults + "/" + name + ".json") << runs[0].out;
  std::cerr << runs[0].err;
  return parse_probe_result(nlohmann::json::parse(runs[0].out));
}

void expect_link_rate(const ProbeResult& r, double rate_gbps) {
  ASSERT_FALSE(r.allreduce.empty());
  const auto& largest = r.allreduce.back();
  EXPECT_NEAR(largest.busbw_gbps, rate_gbps, 0.1 * rate_gbps)
      << "busbw of " << largest.bytes << " bytes should be within 10% of the link rate";
  for (const auto& a : r.allreduce) EXPECT_TRUE(a.data_check_ok) << a.bytes;
  EXPECT_EQ(r.interface_name, "eth0");
  EXPECT_EQ(r.transport, "socket");
  ASSERT_TRUE(r.ddp_step);
  EXPECT_GT(r.ddp_step->comm_share, 0);
}

TEST(EmulatedNodes, two_ranks_at_1gbit_reach_the_link_rate) {
  SKIP_UNLESS_ROOT();
  ProbeResult r = run_and_keep(2, "1gbit", "two_ranks_1gbit");
  EXPECT_EQ(r.nodes, 2);
  expect_link_rate(r, 0.125);
}

TEST(EmulatedNodes, two_ranks_at_200mbit_reach_the_link_rate) {
  SKIP_UNLESS_ROOT();
  ProbeResult r = run_and_keep(2, "200mbit", "two_ranks_200mbit");
  expect_link_rate(r, 0.025);
}

TEST(EmulatedNodes, three_ranks_at_1gbit_reach_the_link_rate) {
  SKIP_UNLESS_ROOT();
  ProbeResult r = run_and_keep(3, "1gbit", "three_ranks_1gbit");
  EXPECT_EQ(r.nodes, 3);
  expect_link_rate(r, 0.125);
}

TEST(EmulatedNodes, comm_share_is_larger_on_the_slower_link) {
  SKIP_UNLESS_ROOT();
  // Reads what the two-rank rate tests wrote (ctest runs them first: fixtures).
  auto load = [](const std::string& name) {
    std::ifstream in(kResults + "/" + name + ".json");
    if (!in)
      throw std::runtime_error("missing " + kResults + "/" + name + ".json: run its test first");
    return parse_probe_result(nlohmann::json::parse(in));
  };
  ProbeResult fast = load("two_ranks_1gbit");
  ProbeResult slow = load("two_ranks_200mbit");
  ASSERT_TRUE(fast.ddp_step && slow.ddp_step);
  EXPECT_GT(slow.ddp_step->comm_share, fast.ddp_step->comm_share);
  EXPECT_GT(slow.ddp_step->exposed_comm_ms, fast.ddp_step->exposed_comm_ms);
}

TEST(EmulatedNodes, a_wrong_master_addr_between_nodes_fails_clearly) {
  SKIP_UNLESS_ROOT();
  EmulatedNodes nodes(2, "1gbit");
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  // 198.18.0.9 is on the nodes' subnet but nobody has it: rank 1 cannot reach a store.
  testing::Subprocess p({kNetsim, "exec", "1", kProbe, "--no-compute", "--timeout", "5"},
                        {{"NETSIM_PREFIX", "cg" + std::to_string(getpid() % 1000000)},
                         {"MASTER_ADDR", "198.18.0.9"},
                         {"MASTER_PORT", "29500"},
                         {"RANK", "1"},
                         {"WORLD_SIZE", "2"}},
                        scratch("wrong-master"));
  Finished f = p.wait(seconds(30));
  EXPECT_EQ(f.exit_code, 3) << f.err;
  EXPECT_LE(f.seconds, 5 + 5);
  EXPECT_NE(f.err.find("198.18.0.9:29500"), std::string::npos) << f.err;
}

// A node's CPU cap (NETSIM_CPU, bench/ddp-validation/run.sh's nodes): its quota per
// NETSIM_CPU_PERIOD_US (10 ms by default) written to the node's cgroup, with the command
// in it; a period or quota the kernel would refuse or misread is refused by name, and the
// command does not run.
TEST(EmulatedNodes, a_node_cpu_cap_is_written_with_its_period) {
  SKIP_UNLESS_ROOT();
  EmulatedNodes nodes(1, "1gbit");
  ASSERT_TRUE(nodes.ok()) << nodes.error();
  const std::string group = "commgate-" + nodes.prefix() + "-n0";
  auto exec_capped = [&](const std::string& cpu, const std::string& period) {
    std::map<std::string, std::string> env = {{"NETSIM_PREFIX", nodes.prefix()},
                                              {"NETSIM_CPU", cpu}};
    if (!period.empty()) env["NETSIM_CPU_PERIOD_US"] = period;
    return testing::run({kNetsim, "exec", "0", "cat", "/proc/self/cgroup"}, env,
                        scratch("cpu-cap-" + cpu + "-" + period), seconds(30));
  };
  auto read = [](const std::string& path) {  // the first line of a cgroup file
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
  };
  // The cap as the cgroup holds it: "QUOTA PERIOD" (v1's two files, or v2's cpu.max).
  auto cap = [&] {
    const std::string v1 = "/sys/fs/cgroup/cpu/" + group;
    if (std::filesystem::exists(v1))
      return read(v1 + "/cpu.cfs_quota_us") + " " + read(v1 + "/cpu.cfs_period_us");
    return read("/sys/fs/cgroup/" + group + "/cpu.max");
  };

  Finished f = exec_capped("0.5", "");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_NE(f.out.find(group), std::string::npos) << f.out;
  EXPECT_EQ(cap(), "5000 10000");

  f = exec_capped("0.5", "2000");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_NE(f.out.find(group), std::string::npos) << f.out;
  EXPECT_EQ(cap(), "1000 2000");

  // Leading zeros are decimal (cgroup v1 would read "010000" as octal, 4096 us).
  f = exec_capped("0.5", "010000");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(cap(), "5000 10000");

  for (const std::string bad : {"500", "1000001", "10ms", "99999999999999999999"}) {
    f = exec_capped("0.5", bad);
    EXPECT_NE(f.exit_code, 0) << bad;
    EXPECT_NE(f.err.find("NETSIM_CPU_PERIOD_US must be microseconds from 1000 to 1000000, got '" +
                         bad + "'"),
              std::string::npos)
        << f.err;
    EXPECT_EQ(f.out.find(group), std::string::npos) << "the command ran: " << f.out;
  }
  f = exec_capped("0.25", "2000");
  EXPECT_NE(f.exit_code, 0);
  EXPECT_NE(f.err.find("NETSIM_CPU 0.25 of a 2000 us period is under the kernel's 1000 us least "
                       "quota"),
            std::string::npos)
      << f.err;
  EXPECT_EQ(f.out.find(group), std::string::npos) << "the command ran: " << f.out;
  EXPECT_EQ(cap(), "5000 10000") << "a refused cap leaves the last one";
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::probe
