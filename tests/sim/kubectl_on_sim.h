// A fixture for the tests that drive the in-process sim with the real kubectl: the API
// server started and the admin's kubectl on it (tests/support/kubectl.h); skipped without
// kubectl. Header-only: COMMGATE_KUBECTL is each test binary's own. A fixture that needs
// more calls KubectlOnSim::SetUp() first and returns when IsSkipped().
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sim/api_server.h"
#include "tests/support/kubectl.h"

namespace commgate::sim {

class KubectlOnSim : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(COMMGATE_KUBECTL)) GTEST_SKIP() << "no kubectl";
    api_.start();
    dir_ = api_.pki_dir();
    kubectl_ = testing::Kubectl::with_kubeconfig(COMMGATE_KUBECTL, dir_, api_.kubeconfig());
  }

  using Result = testing::KubectlResult;
  Result kubectl(const std::vector<std::string>& args) { return kubectl_.run(args); }

  ApiServer api_;
  std::string dir_;  // the sim's directory: the test's files go there
  testing::Kubectl kubectl_;
};

}  // namespace commgate::sim
