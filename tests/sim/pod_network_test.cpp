// A pod's address in its node's podCIDR (sim/pod_network.h); the namespaces themselves
// are made in cluster_netns_test.cpp (root).
#include "sim/pod_network.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

TEST(PodAddress, is_host_index_of_a_slash_24_via_its_first_address) {
  const auto a = pod_address("198.19.3.0/24", 5);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->ip, "198.19.3.5");
  EXPECT_EQ(a->gateway, "198.19.3.1");
  EXPECT_EQ(pod_address("198.19.0.0/24", 254)->ip, "198.19.0.254");
}

TEST(PodAddress, refuses_what_it_cannot_place) {
  for (const char* cidr : {"198.19.3.0/16", "198.19.3.7/24", "198.19.300.0/24", "fd00::/64",
                           "198.19.3.0/24x", "", "198.19.3.0"})
    EXPECT_FALSE(pod_address(cidr, 5)) << cidr;
  EXPECT_FALSE(pod_address("198.19.3.0/24", 1)) << "the bridge's";
  EXPECT_FALSE(pod_address("198.19.3.0/24", 255)) << "broadcast";
  EXPECT_FALSE(pod_address("198.19.3.0/24", 0));
}

TEST(PodNetnsName, follows_the_node_namespace) {
  EXPECT_EQ(pod_netns_name("cgslow-n2", 7), "cgslow-n2-p7");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
