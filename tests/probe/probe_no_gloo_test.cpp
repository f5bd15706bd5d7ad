// The probe built without Gloo, as against pip's LibTorch (no Gloo headers): this test
// compiles probe-job/gloo_communicator.cpp with COMMGATE_PROBE_WITHOUT_GLOO, the switch
// the header check (__has_include(<gloo/algorithm.h>)) turns on by itself there.
#include <gtest/gtest.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "probe-job/gloo_communicator.h"

namespace commgate::probe {
namespace COMMGATE_TEST_UNIT {

TEST(NoGloo, the_build_says_it_has_no_gloo_and_refuses_clearly) {
  EXPECT_FALSE(gloo_backend_built());
  auto store = c10::make_intrusive<c10d::HashStore>();
  try {
    make_gloo_communicator(store, 0, 1, GlooOptions{});
    FAIL() << "a build without Gloo made a Gloo communicator";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("built without Gloo"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace commgate::probe
