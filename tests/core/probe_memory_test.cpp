// What the probe's model needs in memory, what a machine may give it, and the refusal
// (core/probe_memory.h).
#include "core/probe_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace commgate {
namespace COMMGATE_TEST_UNIT {

constexpr double kGiB = 1024.0 * 1024 * 1024;

struct EstimateCase {
  std::string name;
  double parameters;
  std::string optimizer;
  int batch_size;
  double want_state_values;  // optimizer state, fp32 values per parameter
  double want_total_gib_min;
  double want_total_gib_max;
};

void PrintTo(const EstimateCase& c, std::ostream* os) {
  *os << c.name;
}

class ProbeMemoryEstimates : public ::testing::TestWithParam<EstimateCase> {};

TEST_P(ProbeMemoryEstimates, counts_weights_gradients_optimizer_state_buckets_and_activations) {
  const EstimateCase& c = GetParam();
  const ProbeMemoryEstimate e = estimate_probe_memory(c.parameters, c.batch_size, c.optimizer);
  const double exact = synthetic_mlp_shape(c.parameters).parameters;
  EXPECT_DOUBLE_EQ(e.weights, exact * 4);
  EXPECT_DOUBLE_EQ(e.gradients, exact * 4);
  EXPECT_DOUBLE_EQ(e.ddp_buckets, exact * 4);
  EXPECT_DOUBLE_EQ(e.optimizer_state, exact * 4 * c.want_state_values);
  EXPECT_GT(e.activations, 0);
  EXPECT_DOUBLE_EQ(e.runtime, kProbeRuntimeBytes);
  EXPECT_GE(e.total() / kGiB, c.want_total_gib_min) << format_memory(e.total());
  EXPECT_LE(e.total() / kGiB, c.want_total_gib_max) << format_memory(e.total());
}

INSTANTIATE_TEST_SUITE_P(
    ProbeMemory, ProbeMemoryEstimates,
    ::testing::Values(
        // 25M x 4 B x (1 + 1 + 1 + state) + 512 MiB runtime.
        EstimateCase{"sgd_keeps_no_state", 25e6, "sgd", 32, 0, 0.75, 0.85},
        EstimateCase{"sgd_momentum_keeps_one_buffer", 25e6, "sgd-momentum", 32, 1, 0.85, 0.95},
        EstimateCase{"adam_keeps_two_moments", 25e6, "adam", 32, 2, 0.95, 1.05},
        EstimateCase{"adamw_keeps_two_moments", 25e6, "adamw", 32, 2, 0.95, 1.05},
        EstimateCase{"adagrad_keeps_its_sum", 25e6, "adagrad", 32, 1, 0.85, 0.95},
        EstimateCase{"rmsprop_keeps_its_square_average", 25e6, "rmsprop", 32, 1, 0.85, 0.95},
        // 350M adamw: 7 GB of parameters and state, 6.5 GiB.
        EstimateCase{"bert_large_with_adamw_needs_about_7_gib", 350e6, "adamw", 32, 2, 6.8, 7.2},
        // A large batch grows the activations: 65536 x 1024 floats x 2 per layer, 49 tensors.
        EstimateCase{"a_batch_of_65536_adds_its_activations", 25e6, "sgd", 65536, 0, 12.5, 13.5},
        // The user trial's model: 1P parameters, within the CRD's bound of 1e15.
        EstimateCase{"one_peta_parameters_need_petabytes", 1e15, "adamw", 32, 2, 1e15 * 20 / kGiB,
                     1e15 * 40 / kGiB}),
    [](const ::testing::TestParamInfo<EstimateCase>& p) { return p.param.name; });

TEST(ProbeMemory, an_unknown_optimizer_names_the_choices) {
  try {
    optimizer_state_per_parameter("lamb");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("one of sgd, sgd-momentum"), std::string::npos);
  }
}

TEST(ProbeMemory, refuses_what_does_not_fit_and_says_what_to_do) {
  const MemoryAvailable node{12 * kGiB, "MemAvailable in /proc/meminfo"};
  const ProbeMemoryEstimate small = estimate_probe_memory(25e6, 32, "adamw");
  EXPECT_EQ(memory_refusal(small, 25e6, "adamw", node, 1), "");
  EXPECT_EQ(memory_refusal(small, 25e6, "adamw", node, 8), "");  // 8 x ~1 GiB

  const ProbeMemoryEstimate huge = estimate_probe_memory(1e15, 32, "adamw");
  const std::string why = memory_refusal(huge, 1e15, "adamw", node, 1);
  EXPECT_NE(why.find("the model needs "), std::string::npos) << why;
  EXPECT_NE(why.find(" PiB of memory per rank (1e+15 parameters with adamw: weights 3.6 PiB"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("but this node has 12.0 GiB (MemAvailable in /proc/meminfo)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("spec.model.stepTimeHintMs"), std::string::npos) << why;

  // Two local ranks share one machine: together they do not fit where one would.
  const ProbeMemoryEstimate bert = estimate_probe_memory(350e6, 32, "adamw");
  EXPECT_EQ(memory_refusal(bert, 350e6, "adamw", node, 1), "");
  const std::string two = memory_refusal(bert, 350e6, "adamw", node, 2);
  EXPECT_NE(two.find(" x 2 ranks on this node"), std::string::npos) << two;
}

TEST(ProbeMemory, parses_cgroup_limits_and_meminfo) {
  EXPECT_EQ(parse_cgroup_memory_limit("max\n"), std::nullopt);                  // v2 unlimited
  EXPECT_EQ(parse_cgroup_memory_limit("9223372036854771712\n"), std::nullopt);  // v1 unlimited
  EXPECT_EQ(parse_cgroup_memory_limit("4294967296\n"), 4294967296.0);
  EXPECT_EQ(parse_cgroup_memory_limit(""), std::nullopt);
  EXPECT_EQ(parse_mem_available("MemTotal:  32000 kB\nMemAvailable:   2048 kB\n"), 2048 * 1024.0);
  EXPECT_EQ(parse_mem_available("MemTotal:  32000 kB\n"), std::nullopt);
}

// A fake root: /proc and /sys/fs/cgroup as a container sees them.
class FakeRoot {
 public:
  FakeRoot() {
    root_ = std::filesystem::temp_directory_path() /
            ("cg-memroot-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(root_);
  }
  ~FakeRoot() { std::filesystem::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    const auto p = root_ / path;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string path() const { return root_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path root_;
};

TEST(ProbeMemory, the_smaller_of_the_cgroup_limit_and_memavailable_bounds) {
  {
    FakeRoot r;  // cgroup v2, a limit of 4 GiB with 1 GiB in use, a roomy machine
    r.write("proc/meminfo", "MemAvailable: 67108864 kB\n");
    r.write("proc/self/cgroup", "0::/kubepods/pod1/c1\n");
    r.write("sys/fs/cgroup/kubepods/pod1/c1/memory.max", "4294967296\n");
    r.write("sys/fs/cgroup/kubepods/pod1/c1/memory.current", "1073741824\n");
    const auto a = memory_available(r.path());
    ASSERT_TRUE(a);
    EXPECT_EQ(a->bytes, 3 * kGiB);
    EXPECT_NE(a->source.find("cgroup memory limit (memory.max, 4.0 GiB"), std::string::npos)
        << a->source;
  }
  {
    FakeRoot r;  // cgroup v1, 2 GiB limit, in a cgroup namespace
    r.write("proc/meminfo", "MemAvailable: 67108864 kB\n");
    r.write("proc/self/cgroup", "4:memory:/\n");
    r.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "2147483648\n");
    const auto a = memory_available(r.path());
    ASSERT_TRUE(a);
    EXPECT_EQ(a->bytes, 2 * kGiB);
    EXPECT_NE(a->source.find("memory.limit_in_bytes"), std::string::npos) << a->source;
  }
  {
    FakeRoot r;  // no limit: the machine's MemAvailable
    r.write("proc/meminfo", "MemAvailable: 1048576 kB\n");
    r.write("proc/self/cgroup", "0::/\n");
    r.write("sys/fs/cgroup/memory.max", "max\n");
    const auto a = memory_available(r.path());
    ASSERT_TRUE(a);
    EXPECT_EQ(a->bytes, 1 * kGiB);
    EXPECT_EQ(a->source, "MemAvailable in /proc/meminfo");
  }
  EXPECT_FALSE(memory_available("/nonexistent-root"));
}

TEST(ProbeMemory, probe_pods_get_the_estimate_with_headroom_between_floor_and_cap) {
  EXPECT_EQ(probe_pod_memory_bytes(25e6, 32, "adamw", false), kProbePodMemoryFloor);
  EXPECT_EQ(probe_pod_memory_bytes(25e6, 32, "adamw", true), kProbePodMemoryFloorGpu);
  const double bert = probe_pod_memory_bytes(350e6, 32, "adamw", false);
  EXPECT_GT(bert, estimate_probe_memory(350e6, 32, "adamw").total() * 1.2);
  EXPECT_LT(bert, estimate_probe_memory(350e6, 32, "adamw").total() * 1.3);
  EXPECT_EQ(std::fmod(bert, 1048576.0), 0.0);  // whole MiB
  EXPECT_EQ(probe_pod_memory_bytes(1e15, 32, "adamw", false), kProbePodMemoryCap);
}

TEST(ProbeMemory, formats_binary_units) {
  EXPECT_EQ(format_memory(512), "512 B");
  EXPECT_EQ(format_memory(512.0 * 1048576), "512 MiB");
  EXPECT_EQ(format_memory(12 * kGiB), "12.0 GiB");
  EXPECT_EQ(format_memory(4e15), "3.6 PiB");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
