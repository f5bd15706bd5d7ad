// Nodes in network namespaces (scripts/netsim.sh): the kubelet runs each node's pods
// under `ip netns exec`, pods get the node's 198.18.0.x address, and a pod on one node
// reaches another node's pod by its DNS name. Root only; skipped otherwise.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "sim/api_status.h"
#include "sim/cluster.h"
#include "tests/support/wait.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using namespace std::chrono_literals;

// Two emulated nodes for the test's lifetime, named after this process (netsim.sh reaps
// the leftovers of a killed run by that owner pid).
class Netns {
 public:
  Netns() : prefix_("cs" + std::to_string(getpid() % 1000000)) {
    ok_ = std::system(command("up 2 1gbit").c_str()) == 0;
  }
  ~Netns() { [[maybe_unused]] int rc = std::system(command("down").c_str()); }
  bool ok() const { return ok_; }
  std::string node_ns(int i) const { return prefix_ + "-n" + std::to_string(i); }

 private:
  std::string command(const std::string& args) const {
    return "NETSIM_PREFIX=" + prefix_ + " NETSIM_OWNER_PID=" + std::to_string(getpid()) + " " +
           COMMGATE_NETSIM_SCRIPT + " " + args + " >/dev/null";
  }
  std::string prefix_;
  bool ok_ = false;
};

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 15s) {
  return testing::wait_until(done, limit);
}

TEST(ClusterNetns, pods_on_different_nodes_talk_over_the_emulated_links) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  Netns netns;
  ASSERT_TRUE(netns.ok()) << "netsim.sh up failed";
  ObjectStore store;
  SimCluster cluster(store);
  cluster.start();
  for (int i = 0; i < 2; ++i) {
    NodeSpec node = node_spec("n" + std::to_string(i));
    node.netns = netns.node_ns(i);
    node.address = "198.18.0." + std::to_string(i + 1);
    cluster.add_node(node);
  }
  const auto services = *store.find_resource("", "v1", "services");
  const auto jobs = *store.find_resource("batch", "v1", "jobs");
  const auto pods = *store.find_resource("", "v1", "pods");
  store.create(services, "default",
               {{"metadata", {{"name", "ranks"}}}, {"spec", {{"clusterIP", "None"}}}});
  const std::string script =
      "ping -c1 -W2 $MASTER_ADDR >/dev/null && "
      "ip -o -4 addr show dev eth0 | awk '{print $4}' > /dev/termination-log";
  store.create(jobs, "default",
               {{"metadata", {{"name", "net"}}},
                {"spec",
                 {{"completionMode", "Indexed"},
                  {"completions", 2},
                  {"parallelism", 2},
                  {"backoffLimit", 0},
                  {"template",
                   {{"metadata", {{"labels", {{"app", "net"}}}}},
                    {"spec",
                     {{"restartPolicy", "Never"},
                      {"subdomain", "ranks"},
                      {"affinity",
                       {{"podAntiAffinity",
                         {{"requiredDuringSchedulingIgnoredDuringExecution",
                           {{{"topologyKey", "kubernetes.io/hostname"},
                             {"labelSelector", {{"matchLabels", {{"app", "net"}}}}}}}}}}}},
                      {"containers",
                       {{{"name", "c"},
                         {"command", {"sh", "-c", script}},
                         {"env", {{{"name", "MASTER_ADDR"}, {"value", "net-0.ranks"}}}}}}}}}}}}}});
  auto finished = [&] {
    const json st = store.get(jobs, "default", "net").value("status", json::object());
    return st.value("succeeded", 0) + st.value("failed", 0) == 2;
  };
  ASSERT_TRUE(eventually(finished));
  EXPECT_EQ(store.get(jobs, "default", "net")["status"]["succeeded"], 2);
  for (const auto& p : store.list(pods, "default", {}).items) {
    const std::string node = p["spec"]["nodeName"];
    const std::string ip = "198.18.0." + std::to_string(node == "n0" ? 1 : 2);
    EXPECT_EQ(p["status"]["podIP"], ip);
    EXPECT_EQ(p["status"]["containerStatuses"][0]["state"]["terminated"]["message"], ip + "/24\n");
  }
  cluster.stop();
}

// A Job replaces a failed pod 0 on another node: the name is the live replacement's, not
// the finished pod's that holds it too.
TEST(ClusterNetns, a_pod_dns_name_resolves_to_the_live_pod_over_a_finished_one) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  Netns netns;
  ASSERT_TRUE(netns.ok()) << "netsim.sh up failed";
  ObjectStore store;
  SimCluster cluster(store);
  cluster.start();
  for (int i = 0; i < 2; ++i) {
    NodeSpec node = node_spec("n" + std::to_string(i));
    node.netns = netns.node_ns(i);
    node.address = "198.18.0." + std::to_string(i + 1);
    cluster.add_node(node);
  }
  const auto services = *store.find_resource("", "v1", "services");
  const auto pods = *store.find_resource("", "v1", "pods");
  store.create(services, "default",
               {{"metadata", {{"name", "ranks"}}}, {"spec", {{"clusterIP", "None"}}}});
  auto pod = [](const std::string& name, const std::string& node, const std::string& script,
                json env = json::array()) {
    return json{
        {"metadata", {{"name", name}}},
        {"spec",
         {{"restartPolicy", "Never"},
          {"hostname", name == "client" ? "client" : "z-0"},
          {"subdomain", "ranks"},
          {"nodeName", node},
          {"containers", {{{"name", "c"}, {"command", {"sh", "-c", script}}, {"env", env}}}}}}};
  };
  auto phase = [&](const std::string& name) {
    return store.get(pods, "default", name).value("status", json::object()).value("phase", "");
  };
  // "a-failed" sorts first: the store lists it before its replacement.
  store.create(pods, "default", pod("a-failed", "n0", "exit 1"));
  ASSERT_TRUE(eventually([&] { return phase("a-failed") == "Failed"; }));
  store.create(pods, "default", pod("b-replacement", "n1", "sleep 30"));
  ASSERT_TRUE(eventually([&] { return phase("b-replacement") == "Running"; }));
  store.create(pods, "default",
               pod("client", "n0", "echo $MASTER_ADDR > /dev/termination-log",
                   {{{"name", "MASTER_ADDR"}, {"value", "z-0.ranks"}}}));
  ASSERT_TRUE(eventually([&] { return phase("client") == "Succeeded"; }));
  EXPECT_EQ(store.get(pods, "default",
                      "client")["status"]["containerStatuses"][0]["state"]["terminated"]["message"],
            "198.18.0.2\n");
  cluster.stop();
}

}  // namespace
}  // namespace commgate::sim
