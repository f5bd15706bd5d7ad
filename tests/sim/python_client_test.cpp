// End to end with a second real client: the official Python Kubernetes client (Debian's
// python3-kubernetes) against the commgate-sim binary, as a researcher's notebook or the
// Kubeflow SDK would drive a cluster. The checks are in python_client_check.py; it exits
// non-zero and names each mismatch.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::wait_until;

class PythonClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("commgate-sim-python-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
};

TEST_F(PythonClientTest, official_client_reads_the_sim_as_a_cluster) {
  // Installed by scripts/install-deps.sh (make test): a missing module is a failure, not a
  // skip, so that a machine without it cannot pass unnoticed.
  ChildProcess probe({COMMGATE_PYTHON, "-c", "import kubernetes; print(kubernetes.__version__)"},
                     dir_ / "probe.out");
  ASSERT_EQ(probe.wait_exit(30s), 0)
      << COMMGATE_PYTHON
      << " cannot import kubernetes; install python3-kubernetes (scripts/install-deps.sh)\n"
      << probe.output();

  const std::string kubeconfig = (dir_ / "kubeconfig").string();
  // Bookmarks every 300 ms, so that a watch that allows them sees one soon.
  ChildProcess sim({COMMGATE_SIM_BIN, "--port", "0", "--kubeconfig-out", kubeconfig,
                    "--bookmark-interval-ms", "300"},
                   dir_ / "sim.out");
  ASSERT_TRUE(sim.started());
  ASSERT_TRUE(wait_until([&] {
    return sim.output().find("listening on https://127.0.0.1:") != std::string::npos;
  })) << sim.output();

  ChildProcess check(
      {COMMGATE_PYTHON, COMMGATE_SOURCE_DIR "/tests/sim/python_client_check.py", "--kubeconfig",
       kubeconfig, "--crd", COMMGATE_SOURCE_DIR "/crds/trainingjobs.commgate.io.yaml", "--work-dir",
       dir_.string()},
      dir_ / "check.out");
  ASSERT_TRUE(check.started());
  const int code = check.wait_exit(150s);
  EXPECT_EQ(code, 0) << check.output() << "\n--- commgate-sim ---\n" << sim.output();
  EXPECT_NE(check.output().find(" passed, 0 failed"), std::string::npos) << check.output();
}

}  // namespace
}  // namespace commgate::sim
