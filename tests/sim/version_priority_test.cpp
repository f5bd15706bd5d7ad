// Kubernetes' order of preference among an API group's versions (sim/version_priority.h),
// with the cases of apimachinery's pkg/version/helpers_test.go.
#include "sim/version_priority.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace {

TEST(VersionPriority, sorts_as_kubernetes_does) {
  // helpers_test.go's TestCompareKubeAwareVersionStrings order, shuffled.
  std::vector<std::string> versions = {"v1alpha1",  "foo1",    "v10beta3", "v1",      "v2beta1",
                                       "v11alpha2", "v10",     "v1beta1",  "foo10",   "v12alpha1",
                                       "v2",        "v3beta1", "v1beta2",  "v11beta2"};
  sort_by_version_priority(versions);
  const std::vector<std::string> want = {
      "v10",     "v2",      "v1",        "v11beta2",  "v10beta3", "v3beta1", "v2beta1",
      "v1beta2", "v1beta1", "v12alpha1", "v11alpha2", "v1alpha1", "foo1",    "foo10"};
  EXPECT_EQ(versions, want);
}

TEST(VersionPriority, the_kueue_crd_prefers_v1beta2) {
  // The v0.19.2 Workload CRD serves v1beta1 first and v1beta2 second.
  std::vector<std::string> versions = {"v1beta1", "v1beta2"};
  sort_by_version_priority(versions);
  EXPECT_EQ(versions.front(), "v1beta2");
}

TEST(VersionPriority, malformed_versions_come_last) {
  for (const std::string bad :
       {"v", "1", "vbeta1", "v1gamma1", "v1beta", "v1beta1x", "V1", "v1234567890", ""}) {
    EXPECT_TRUE(preferred_before("v1alpha1", bad)) << bad;
    EXPECT_FALSE(preferred_before(bad, "v1alpha1")) << bad;
  }
  EXPECT_FALSE(preferred_before("v1", "v1"));
}

}  // namespace
}  // namespace commgate::sim
