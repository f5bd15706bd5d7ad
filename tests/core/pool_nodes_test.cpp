// core/pool_nodes.h: a Node's summary, the cache's transform, tolerations as
// k8s.io/api/core/v1/toleration.go matches them, and the pool's count with its words.
#include "core/pool_nodes.h"

#include <gtest/gtest.h>

#include "core/pod_requests.h"
#include "tests/support/builders.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

// A Node as a kubelet reports one (trimmed from a real GPU node: most of a real one is
// images and heartbeats, which the summary drops).
json gpu_node(const std::string& name, const std::string& pool, int gpus) {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": ")" +
                     name + R"(", "resourceVersion": "4711", "uid": "u-)" + name + R"(",
      "labels": {"kubernetes.io/hostname": ")" +
                     name + R"(", "commgate.io/pool": ")" + pool + R"("},
      "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
      "managedFields": [{"manager": "kubelet", "operation": "Update"}]},
    "spec": {"podCIDR": "10.244.1.0/24",
      "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                 {"key": "example.com/soft", "effect": "PreferNoSchedule"}]},
    "status": {
      "capacity": {"cpu": "96", "memory": "1056Gi", "nvidia.com/gpu": ")" +
                     std::to_string(gpus) + R"("},
      "allocatable": {"cpu": "95500m", "memory": "1000Gi", "pods": "110",
                      "nvidia.com/gpu": ")" +
                     std::to_string(gpus) + R"("},
      "conditions": [
        {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2026-12-05T10:00:00Z"},
        {"type": "Ready", "status": "True", "reason": "KubeletReady",
         "lastHeartbeatTime": "2026-12-05T10:00:00Z", "lastTransitionTime": "2026-11-01T00:00:00Z"}],
      "images": [{"names": ["nvcr.io/nvidia/pytorch:24.05-py3"], "sizeBytes": 9000000000}],
      "nodeInfo": {"kubeletVersion": "v1.32.0"}}
  })");
}

TEST(PoolNodeOf, ReadsWhatThePoolCheckNeedsAndOnlyThat) {
  const PoolNode n = pool_node_of(gpu_node("gpu-a", "h100", 8));
  EXPECT_EQ(n.name, "gpu-a");
  EXPECT_EQ(n.labels.at("commgate.io/pool"), "h100");
  ASSERT_EQ(n.taints.size(), 1u) << "PreferNoSchedule keeps no pod off";
  EXPECT_EQ(n.taints[0], (NodeTaint{"nvidia.com/gpu", "present", "NoSchedule"}));
  EXPECT_FALSE(n.cordoned);
  EXPECT_TRUE(n.ready);
  EXPECT_EQ(n.accelerators, (std::map<std::string, double>{{"nvidia.com/gpu", 8}}))
      << "cpu, memory and pods are not accelerators";
}

TEST(PoolNodeOf, IsTotalOnAnyJson) {
  for (const json& odd : {json(), json("node"), json::array(), json::parse(R"({"metadata": 3})"),
                          json::parse(R"({"spec": {"taints": "all", "unschedulable": "yes"},
                                          "status": {"conditions": [{"type": "Ready"}],
                                                     "allocatable": {"nvidia.com/gpu": "x"}}})")}) {
    const PoolNode n = pool_node_of(odd);
    EXPECT_FALSE(n.ready) << odd.dump();
    EXPECT_FALSE(n.cordoned) << odd.dump();
    EXPECT_TRUE(n.taints.empty()) << odd.dump();
  }
}

TEST(KeepPoolNodeFields, KeepsTheSameSummaryInAFractionOfTheObject) {
  for (int gpus : {0, 8}) {
    json node = gpu_node("gpu-b", "h100", gpus);
    node["spec"]["unschedulable"] = true;
    const PoolNode before = pool_node_of(node);
    const size_t size_before = node.dump().size();
    keep_pool_node_fields(node);
    EXPECT_EQ(pool_node_of(node), before);
    EXPECT_EQ(node["metadata"]["resourceVersion"], "4711") << "the store compares it";
    EXPECT_FALSE(node["metadata"].contains("managedFields"));
    EXPECT_FALSE(node["status"].contains("images"));
    EXPECT_LT(node.dump().size() * 2, size_before);
  }
  json odd = "x";
  keep_pool_node_fields(odd);
  EXPECT_EQ(odd, "x");
}

struct TolerationCase {
  std::string name;
  json tolerations;
  NodeTaint taint;
  bool want;
};

TEST(Tolerates, AsCoreV1ToleratesTaint) {
  const NodeTaint gpu{"nvidia.com/gpu", "present", "NoSchedule"};
  const std::vector<TolerationCase> cases = {
      {"none", json::array(), gpu, false},
      {"not_a_list", "all", gpu, false},
      {"exists_same_key", json::parse(R"([{"key":"nvidia.com/gpu","operator":"Exists"}])"), gpu,
       true},
      {"equal_same_value", json::parse(R"([{"key":"nvidia.com/gpu","value":"present"}])"), gpu,
       true},
      {"equal_other_value", json::parse(R"([{"key":"nvidia.com/gpu","value":"absent"}])"), gpu,
       false},
      {"other_key", json::parse(R"([{"key":"dedicated","operator":"Exists"}])"), gpu, false},
      {"empty_key_exists_every_taint", json::parse(R"([{"operator":"Exists"}])"), gpu, true},
      {"empty_key_equal_nothing", json::parse(R"([{"key":"","value":"present"}])"), gpu, false},
      {"effect_must_match",
       json::parse(R"([{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoExecute"}])"), gpu,
       false},
      {"empty_effect_every_effect",
       json::parse(R"([{"key":"nvidia.com/gpu","operator":"Exists","effect":""}])"), gpu, true},
  };
  for (const auto& c : cases) EXPECT_EQ(tolerates(c.tolerations, c.taint), c.want) << c.name;
}

PoolNode node(const std::string& name, const std::string& pool, double gpus = 0) {
  return testing::a_pool_node(name, {{"commgate.io/pool", pool}}, gpus);
}

// A node whose kubernetes.io/hostname label is its name, as kubelet sets it.
PoolNode hosted(const std::string& name, const std::string& pool, bool cordoned = false) {
  PoolNode n = testing::a_pool_node(
      name, {{"commgate.io/pool", pool}, {std::string(kHostnameLabel), name}}, 8);
  n.cordoned = cordoned;
  return n;
}

struct CountCase {
  std::string name;
  std::vector<PoolNode> nodes;
  PoolDemand demand;
  PoolCount want;
  std::string want_words;
};

TEST(CountPool, CountsEachNodeOnceUnderTheFirstFilterItFails) {
  const std::map<std::string, std::string> h100 = {{"commgate.io/pool", "h100"}};
  PoolNode cordoned = node("c", "h100", 8);
  cordoned.cordoned = true;
  cordoned.ready = false;  // counted as cordoned only
  PoolNode not_ready = node("r", "h100", 8);
  not_ready.ready = false;
  PoolNode tainted = node("t", "h100", 8);
  tainted.taints = {{"dedicated", "infra", "NoExecute"}};
  const PoolNode small = node("s", "h100", 4);
  const PoolNode other = node("o", "a100", 8);
  const std::vector<CountCase> cases = {
      {"no_node_matches",
       {other},
       {h100, json::array(), {}},
       {},
       "no node (none matches the nodeSelector)"},
      {"all_usable",
       {node("a", "h100", 8), node("b", "h100", 8), other},
       {h100, json::array(), {{"nvidia.com/gpu", 8}}},
       {.selected = 2, .usable = 2},
       "2 usable nodes (all that match the nodeSelector)"},
      {"every_filter",
       {node("a", "h100", 8), cordoned, not_ready, tainted, small, other},
       {h100, json::array(), {{"nvidia.com/gpu", 8}}},
       {.selected = 5, .cordoned = 1, .not_ready = 1, .tainted = 1, .too_small = 1, .usable = 1},
       "1 usable node (5 match the nodeSelector: 1 cordoned, 1 not Ready, 1 has a taint the pods "
       "do not tolerate (dedicated=infra:NoExecute), 1 has fewer than 8 nvidia.com/gpu)"},
      {"tolerated_taint_counts",
       {tainted},
       {h100, json::parse(R"([{"key":"dedicated","operator":"Exists"}])"), {}},
       {.selected = 1, .usable = 1},
       "1 usable node (all that match the nodeSelector)"},
      {"cpu_pool_asks_no_gpu",
       {node("a", "cpu"), node("b", "cpu")},
       {{{"commgate.io/pool", "cpu"}}, json::array(), {}},
       {.selected = 2, .usable = 2},
       "2 usable nodes (all that match the nodeSelector)"},
      {"none_usable",
       {small, node("s2", "h100", 2)},
       {h100, json::array(), {{"nvidia.com/gpu", 8}}},
       {.selected = 2, .too_small = 2},
       "no usable node (2 match the nodeSelector: 2 have fewer than 8 nvidia.com/gpu)"},
      {"empty_selector_is_every_node",
       {node("a", "h100"), other},
       {{}, json::array(), {}},
       {.selected = 2, .usable = 2},
       "2 usable nodes (all that match the nodeSelector)"},
      // A Workload's hosts under topology-aware scheduling: the selector's nodes whose
      // kubernetes.io/hostname label is named, and no other.
      {"hostnames_keep_only_the_named_hosts",
       {hosted("a", "h100"), hosted("b", "h100"), hosted("c", "h100"), other},
       {h100, json::array(), {}, {"zz", "c", "a"}},  // in any order
       {.selected = 2, .usable = 2},
       "2 usable nodes (all that match the nodeSelector and the hostnames)"},
      {"hostnames_and_a_cordoned_host",
       {hosted("a", "h100", true), hosted("b", "h100")},
       {h100, json::array(), {}, {"a"}},
       {.selected = 1, .cordoned = 1},
       "no usable node (1 matches the nodeSelector and the hostnames: 1 cordoned)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const PoolCount got = count_pool(c.nodes, c.demand);
    EXPECT_EQ(got.selected, c.want.selected);
    EXPECT_EQ(got.cordoned, c.want.cordoned);
    EXPECT_EQ(got.not_ready, c.want.not_ready);
    EXPECT_EQ(got.tainted, c.want.tainted);
    EXPECT_EQ(got.too_small, c.want.too_small);
    EXPECT_EQ(got.usable, c.want.usable);
    EXPECT_EQ(describe_pool_count(got, c.demand), c.want_words);
  }
}

TEST(SelectorMiss, NamesThePairNoNodeHasAndTheCloseOneTheyDo) {
  std::vector<PoolNode> nodes = {node("a", "tiny"), node("b", "cpu-1gbe")};
  nodes[0].labels["gpu-type"] = "a100";
  struct Case {
    std::map<std::string, std::string> selector;
    std::string want;
  };
  const Case cases[] = {
      {{{"commgate.io/pool", "tinyy"}},
       "no node has commgate.io/pool=tinyy (did you mean \"tiny\"?)"},
      {{{"commgate.io/pool", "gpu-pool"}}, "no node has commgate.io/pool=gpu-pool"},
      {{{"gpu-typ", "a100"}}, "no node has the label gpu-typ (did you mean \"gpu-type\"?)"},
      {{{"zone", "eu"}}, "no node has the label zone"},
      // Each pair matches a node, the two together none.
      {{{"commgate.io/pool", "cpu-1gbe"}, {"gpu-type", "a100"}}, "no node has all of them"},
      {{{"commgate.io/pool", "tiny"}}, ""},
  };
  for (const auto& c : cases) EXPECT_EQ(selector_miss(nodes, c.selector), c.want);
}

TEST(PoolHasGpus, OnlyTheSelectedNodesCount) {
  const std::vector<PoolNode> nodes = {node("a", "cpu"), node("g", "h100", 8)};
  EXPECT_FALSE(pool_has_gpus(nodes, {{"commgate.io/pool", "cpu"}}));
  EXPECT_TRUE(pool_has_gpus(nodes, {{"commgate.io/pool", "h100"}}));
  EXPECT_TRUE(pool_has_gpus(nodes, {}));
  EXPECT_FALSE(pool_has_gpus({}, {}));
}

// core/pod_requests.h: one rule for the scheduler, the workload gate and the pool check.
TEST(PodRequests, RequestsElseLimitsWithSidecarsAsTheSchedulerCounts) {
  const json spec = json::parse(R"({
    "initContainers": [
      {"name": "fetch", "resources": {"requests": {"cpu": "4"}}},
      {"name": "sidecar", "restartPolicy": "Always",
       "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "1"}}},
      {"name": "warm", "resources": {"limits": {"nvidia.com/gpu": "4"}}}],
    "containers": [
      {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "2", "cpu": "2"},
                                  "requests": {"cpu": "500m"}}},
      {"name": "b", "resources": {"requests": {"memory": "1Gi", "cpu": "bad"}}}]})");
  const auto r = pod_requests(spec);
  EXPECT_DOUBLE_EQ(r.at("nvidia.com/gpu"), 5.0) << "4 beside the sidecar's 1 beats 2 + 1";
  EXPECT_DOUBLE_EQ(r.at("cpu"), 4.0) << "fetch's 4 beats 0.5 + 0 + 1: a request wins over a limit";
  EXPECT_DOUBLE_EQ(r.at("memory"), 1024.0 * 1024 * 1024);
  EXPECT_TRUE(pod_requests(json()).empty());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
