// The simulated cluster under the largest Job the TrainingJob schema allows (10,000 pods)
// on 4 nodes: the scheduler binds only what the nodes hold (110 pods each, their
// allocatable `pods`), the rest stay Pending with the scheduler's message, and the API
// keeps answering while it happens. The checks count objects; the only time bounds are
// generous ones (a loaded 2-core machine must pass).
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "sim/api_server.h"
#include "sim/cluster.h"
#include "tests/server/test_client.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using server::testing::Client;
using namespace std::chrono_literals;

constexpr int kPods = 10'000;  // TrainingJob spec.numNodes maximum
constexpr int kNodes = 4;
constexpr int kPodsPerNode = 110;  // NodeSpec::max_pods, kubelet's default maxPods

// Small requests: what stops the scheduler is the nodes' pod count, as with a CPU-only
// template (the worst case for the filters: 110 bound pods on every node).
json small_job(const std::string& name, int n) {
  json container = {{"name", "main"},
                    {"image", "ignored"},
                    {"command", {"sleep", "300"}},
                    {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}}}};
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"completionMode", "Indexed"},
            {"completions", n},
            {"parallelism", n},
            {"template",
             {{"metadata", {{"labels", {{"app", name}}}}},
              {"spec",
               {{"restartPolicy", "Never"},
                {"terminationGracePeriodSeconds", 0},
                {"containers", {container}}}}}}}}};
}

struct Counts {
  int pods = 0, bound = 0, unschedulable = 0;
  std::string message;  // of one unschedulable pod
};

Counts count(ObjectStore& store, const ResourceInfo& pods) {
  Counts c;
  for (const auto& p : store.list(pods, "default", {}).items) {
    ++c.pods;
    if (!p["spec"].value("nodeName", "").empty()) {
      ++c.bound;
      continue;
    }
    for (const auto& cond : p.value("status", json::object()).value("conditions", json::array()))
      if (cond["type"] == "PodScheduled" && cond["status"] == "False" &&
          cond.value("reason", "") == "Unschedulable") {
        ++c.unschedulable;
        c.message = cond.value("message", "");
      }
  }
  return c;
}

TEST(SimScale, a_ten_thousand_pod_job_on_four_nodes_binds_what_fits_and_the_api_answers) {
  ApiServer api;
  api.start();
  SimCluster cluster(api.store());
  cluster.start();
  for (int i = 0; i < kNodes; ++i) cluster.add_node(node_spec("node-" + std::to_string(i)));
  ObjectStore& store = api.store();
  const ResourceInfo pods = *store.find_resource("", "v1", "pods");
  const ResourceInfo jobs = *store.find_resource("batch", "v1", "jobs");
  store.create(jobs, "default", small_job("big", kPods));

  Client client(api.port(), api.pki_dir() + "/ca.crt");
  ASSERT_EQ(client.connect(), "");
  auto get = [&](const std::string& target) {
    const auto start = std::chrono::steady_clock::now();
    const auto reply = client.request(
        "GET", target, "",
        {{"Authorization", "Bearer " + api.token()}, {"Accept", "application/json"}}, 30s);
    EXPECT_EQ(reply.status, 200) << target << ": " << reply.body.substr(0, 300);
    return std::chrono::steady_clock::now() - start;
  };

  // Until every pod exists and every one is either bound or marked Unschedulable. Meanwhile
  // what `kubectl get` asks for (a node list, a pod list's first page of 500) answers in
  // a few seconds at worst: a generous bound, the fixed sim answers in well under one.
  const int fits = kNodes * kPodsPerNode;
  const auto deadline = std::chrono::steady_clock::now() + 180s;
  Counts c;
  std::chrono::steady_clock::duration slowest{};
  while (std::chrono::steady_clock::now() < deadline) {
    slowest =
        std::max({slowest, get("/api/v1/nodes"), get("/api/v1/namespaces/default/pods?limit=500")});
    c = count(store, pods);
    ASSERT_LE(c.bound, fits) << "more pods bound than the nodes hold";
    if (c.pods == kPods && c.bound + c.unschedulable == kPods) break;
    std::this_thread::sleep_for(500ms);
  }
  EXPECT_EQ(c.pods, kPods);
  EXPECT_EQ(c.bound, fits);
  EXPECT_EQ(c.unschedulable, kPods - fits);
  EXPECT_EQ(c.message.substr(0, c.message.find(" preemption:")),
            "0/4 nodes are available: 4 Too many pods.");
  EXPECT_LT(slowest, 5s) << "a GET took "
                         << std::chrono::duration_cast<std::chrono::milliseconds>(slowest).count()
                         << " ms";
  // Every pod not yet finished is active, bound or not, as the Job controller counts.
  EXPECT_EQ(store.get(jobs, "default", "big")["status"].value("active", 0), kPods);
  cluster.stop();
  api.stop();
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
