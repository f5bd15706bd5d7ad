// The Kueue stand-in's topology-aware scheduling and queue conditions (sim/kueue_tas.h,
// sim/kueue_queue_status.h) and the check messages it copies into Events
// (sim/kueue_admission.h), table-driven; encoding cases from kubernetes-sigs/kueue
// v0.19.2's pkg/util/tas/tas_assignment_test.go (hostnamePrefixAssignment).
#include "sim/kueue_tas.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "sim/kueue_admission.h"
#include "sim/kueue_queue_status.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

// tas_assignment_test.go hostnamePrefixAssignment: half "pool-a-node-NNNNN", half
// "pool-b-node-NNNNN", one pod each.
std::vector<KueueTasDomain> hostname_prefix_domains(int count) {
  std::vector<KueueTasDomain> out;
  const int per_prefix = count / 2;
  for (int i = 0; i < count; ++i) {
    char host[64];
    std::snprintf(host, sizeof host, "pool-%s-node-%05d", i >= per_prefix ? "b" : "a",
                  i >= per_prefix ? i - per_prefix : i);
    out.push_back({host, 1});
  }
  return out;
}

TEST(KueueTasEncodingTest, one_domain_is_a_universal_value) {
  const json got = kueue_tas_encode({{"node-1", 4}});
  EXPECT_EQ(got, json::parse(R"({"levels":["kubernetes.io/hostname"],"slices":[
      {"domainCount":1,"valuesPerLevel":[{"universal":"node-1"}],"podCounts":{"universal":4}}]})"));
}

TEST(KueueTasEncodingTest, few_domains_take_the_shorter_single_slice) {
  // "enabled uses smaller single-slice encoding" (4 domains).
  const auto domains = hostname_prefix_domains(4);
  const json got = kueue_tas_encode(domains);
  EXPECT_EQ(got, json::parse(R"({"levels":["kubernetes.io/hostname"],"slices":[
      {"domainCount":4,"valuesPerLevel":[{"individual":{"prefix":"pool-","roots":
        ["a-node-00000","a-node-00001","b-node-00000","b-node-00001"]}}],
       "podCounts":{"universal":1}}]})"));
  EXPECT_EQ(kueue_tas_decode(got), domains);
}

TEST(KueueTasEncodingTest, many_domains_take_the_shorter_hostname_prefix_runs) {
  // "enabled uses smaller hostname-prefix encoding" (20 domains): one slice per pool.
  const auto domains = hostname_prefix_domains(20);
  const json got = kueue_tas_encode(domains);
  ASSERT_EQ(got["slices"].size(), 2u) << got.dump();
  EXPECT_EQ(got["slices"][0]["valuesPerLevel"][0]["individual"]["prefix"], "pool-a-node-0000");
  EXPECT_EQ(got["slices"][1]["valuesPerLevel"][0]["individual"]["prefix"], "pool-b-node-0000");
  EXPECT_EQ(got["slices"][0]["domainCount"], 10);
  EXPECT_EQ(kueue_tas_decode(got), domains);
}

TEST(KueueTasEncodingTest, counts_and_suffixes_round_trip) {
  // The "AWS EKS private DNS names" hosts: a common suffix, differing counts.
  const std::vector<KueueTasDomain> domains = {{"ip-10-24-34-0.us-west-2.compute.internal", 2},
                                               {"ip-10-24-34-1.us-west-2.compute.internal", 2},
                                               {"ip-10-24-35-0.us-west-2.compute.internal", 3},
                                               {"ip-10-24-35-1.us-west-2.compute.internal", 4}};
  const json got = kueue_tas_encode(domains);
  EXPECT_EQ(kueue_tas_decode(got), domains);
  for (const auto& slice : got["slices"])
    EXPECT_EQ(slice["valuesPerLevel"][0]["individual"]["suffix"], ".us-west-2.compute.internal");
  EXPECT_TRUE(kueue_tas_decode(json::parse(R"({"levels":["kubernetes.io/hostname"],
      "slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"roots":["a"]}}],
      "podCounts":{"universal":1}}]})"))
                  .empty())
      << "roots shorter than domainCount decode to nothing";
}

TEST(KueueTasPlacementTest, capacity_is_the_scarcest_resource) {
  const KueueTasNode node{"n", {{"cpu", 4}, {"nvidia.com/gpu", 8}, {"pods", 110}}};
  EXPECT_EQ(kueue_tas_pod_capacity(node, {{"nvidia.com/gpu", 2}, {"cpu", 1}}), 4);
  EXPECT_EQ(kueue_tas_pod_capacity(node, {{"nvidia.com/gpu", 3}}), 2);
  EXPECT_EQ(kueue_tas_pod_capacity(node, {{"example.com/fpga", 1}}), 0);
  EXPECT_EQ(kueue_tas_pod_capacity({"n", {{"pods", 1}}}, {}), 1);
}

TEST(KueueTasPlacementTest, packs_as_kueues_algorithms_do) {
  // Nodes taking 8, 2 and 4 one-GPU pods.
  const std::vector<KueueTasNode> nodes = {{"a", {{"nvidia.com/gpu", 8}, {"pods", 110}}},
                                           {"b", {{"nvidia.com/gpu", 2}, {"pods", 110}}},
                                           {"c", {{"nvidia.com/gpu", 4}, {"pods", 110}}}};
  const std::map<std::string, double> gpu = {{"nvidia.com/gpu", 1}};
  struct Case {
    const char* name;
    KueueTasMode mode;
    int32_t count;
    std::vector<KueueTasDomain> want;
    std::string why;
  };
  const std::vector<Case> cases = {
      // LeastFreeCapacity: the fullest node that takes them all.
      {"implied fits one", KueueTasMode::kUnconstrained, 3, {{"c", 3}}, ""},
      {"implied spreads from the fullest",
       KueueTasMode::kUnconstrained,
       10,
       {{"a", 4}, {"b", 2}, {"c", 4}},
       ""},
      // BestFit: the smallest node that takes them all.
      {"preferred fits one", KueueTasMode::kPreferred, 3, {{"c", 3}}, ""},
      {"preferred fits one exactly", KueueTasMode::kPreferred, 8, {{"a", 8}}, ""},
      {"preferred spreads from the largest, best fit last",
       KueueTasMode::kPreferred,
       10,
       {{"a", 8}, {"b", 2}},
       ""},
      {"required fits one", KueueTasMode::kRequired, 2, {{"b", 2}}, ""},
      {"required on one node only",
       KueueTasMode::kRequired,
       10,
       {},
       "topology \"default\" allows to fit only 8 out of 10 pod(s)"},
      {"more than all nodes",
       KueueTasMode::kPreferred,
       20,
       {},
       "topology \"default\" allows to fit only 14 out of 20 pod(s)"},
  };
  for (const auto& c : cases) {
    std::string why;
    const auto got = kueue_tas_place(nodes, gpu, c.count, c.mode, "default", why);
    if (c.why.empty()) {
      ASSERT_TRUE(got) << c.name << ": " << why;
      EXPECT_EQ(*got, c.want) << c.name;
    } else {
      EXPECT_FALSE(got) << c.name;
      EXPECT_EQ(why, c.why) << c.name;
    }
  }
  std::string why;
  EXPECT_FALSE(kueue_tas_place({}, gpu, 1, KueueTasMode::kUnconstrained, "default", why));
  EXPECT_EQ(why, "no topology domains at level: kubernetes.io/hostname");
  EXPECT_FALSE(
      kueue_tas_place({{"z", {{"pods", 110}}}}, gpu, 1, KueueTasMode::kRequired, "default", why));
  EXPECT_EQ(why, "topology \"default\" doesn't allow to fit any of 1 pod(s)");
}

TEST(KueueTasRequestTest, explicit_implied_and_flavor_matches) {
  const json plain = {{"name", "main"}, {"count", 2}};
  const json required = {{"name", "main"},
                         {"topologyRequest", {{"required", "kubernetes.io/hostname"}}}};
  const json rack = {{"name", "main"}, {"topologyRequest", {{"preferred", "example.com/rack"}}}};
  const json tas_flavor = {{"metadata", {{"name", "gpu"}}}, {"spec", {{"topologyName", "dc"}}}};
  const json flavor = {{"metadata", {{"name", "cpu"}}}, {"spec", json::object()}};
  std::string level;
  EXPECT_FALSE(kueue_tas_request(plain, false, level));
  EXPECT_EQ(kueue_tas_request(plain, true, level), KueueTasMode::kUnconstrained);
  EXPECT_EQ(level, "kubernetes.io/hostname");
  EXPECT_EQ(kueue_tas_request(required, false, level), KueueTasMode::kRequired);
  EXPECT_EQ(kueue_tas_request(rack, false, level), KueueTasMode::kPreferred);
  EXPECT_EQ(level, "example.com/rack");

  EXPECT_EQ(kueue_tas_flavor_mismatch(plain, tas_flavor, false, true),
            "Flavor \"gpu\" supports only TopologyAwareScheduling");
  EXPECT_EQ(kueue_tas_flavor_mismatch(plain, tas_flavor, true, true), "");
  EXPECT_EQ(kueue_tas_flavor_mismatch(plain, flavor, false, true), "");
  EXPECT_EQ(kueue_tas_flavor_mismatch(required, flavor, false, true),
            "Flavor \"cpu\" does not support TopologyAwareScheduling");
  EXPECT_EQ(kueue_tas_flavor_mismatch(required, flavor, false, false), "");
  EXPECT_EQ(kueue_tas_flavor_mismatch(required, tas_flavor, false, true), "");
  // The stand-in's Topology has the hostname level only.
  EXPECT_EQ(kueue_tas_flavor_mismatch(rack, tas_flavor, false, true),
            "Flavor \"gpu\" does not contain the requested level");
}

// A ClusterQueue on TAS flavor "gpu" naming `checks`, and what the TAS reads.
struct TasFixture {
  json flavors = {{"gpu",
                   {{"metadata", {{"name", "gpu"}}},
                    {"spec", {{"topologyName", "dc"}, {"nodeLabels", {{"pool", "gpu"}}}}}}}};
  std::map<std::string, json> checks;
  json cluster_queue;
  json workload = json::parse(R"({"metadata":{"name":"wl","namespace":"ns","uid":"u1"},
      "spec":{"podSets":[{"name":"main","count":3,"template":{"spec":{"containers":[
        {"name":"c","resources":{"requests":{"nvidia.com/gpu":"1"}}}]}}}]}})");
  json admission = json::parse(R"({"clusterQueue":"cq","podSetAssignments":[
      {"name":"main","flavors":{"nvidia.com/gpu":"gpu"},"count":3,
       "resourceUsage":{"nvidia.com/gpu":"3"}}]})");
  KueueTasCluster cluster;

  explicit TasFixture(const std::map<std::string, std::string>& check_controllers) {
    json named = json::array();
    for (const auto& [name, controller] : check_controllers) {
      checks[name] = {{"metadata", {{"name", name}}}, {"spec", {{"controllerName", controller}}}};
      named.push_back({{"name", name}});
    }
    cluster_queue = {
        {"metadata", {{"name", "cq"}}},
        {"spec",
         {{"resourceGroups", json::array({{{"coveredResources", json::array({"nvidia.com/gpu"})},
                                           {"flavors", json::array({{{"name", "gpu"}}})}}})},
          {"admissionChecksStrategy", {{"admissionChecks", named}}}}}};
    cluster.flavors = &flavors;
    cluster.checks = &checks;
    for (const auto& [name, gpus, pool, ready] :
         std::vector<std::tuple<std::string, int, std::string, bool>>{{"node-a", 8, "gpu", true},
                                                                      {"node-b", 2, "gpu", true},
                                                                      {"node-c", 8, "cpu", true},
                                                                      {"node-d", 8, "gpu", false}})
      cluster.nodes.push_back(
          {{"metadata",
            {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}, {"pool", pool}}}}},
           {"status",
            {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}, {"pods", "110"}}},
             {"conditions",
              json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}});
  }
};

TEST(KueueTasAssignTest, places_on_the_flavors_ready_nodes_less_what_is_used) {
  TasFixture f({});
  // A non-TAS pod holds 6 of node-a's 8 GPUs: 2 left there, 2 on node-b; node-c is in
  // another pool, node-d is not Ready.
  f.cluster.pods.push_back(json::parse(R"({"metadata":{"name":"other"},"spec":{"nodeName":"node-a",
      "containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"6"}}}]},
      "status":{"phase":"Running"}})"));
  // A finished pod and a TAS pod hold nothing of the non-TAS usage.
  f.cluster.pods.push_back(json::parse(R"({"metadata":{"name":"done"},"spec":{"nodeName":"node-b",
      "containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"2"}}}]},
      "status":{"phase":"Succeeded"}})"));
  f.cluster.pods.push_back(
      json::parse(R"({"metadata":{"name":"tas","labels":{"kueue.x-k8s.io/tas":"true"}},
      "spec":{"nodeName":"node-b","containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"2"}}}]},
      "status":{"phase":"Running"}})"));
  json admission = f.admission;
  ASSERT_EQ(kueue_tas_assign(admission, f.workload, f.cluster_queue, f.cluster, false), "");
  const json& psa = admission["podSetAssignments"][0];
  EXPECT_FALSE(psa.contains("delayedTopologyRequest"));
  EXPECT_EQ(kueue_tas_decode(psa["topologyAssignment"]),
            (std::vector<KueueTasDomain>{{"node-a", 2}, {"node-b", 1}}));

  // Another workload's assignment holds node-b's two GPUs: 2 of 3 fit.
  json other = f.workload;
  other["metadata"]["uid"] = "u2";
  other["status"] = {{"conditions", json::array({{{"type", "QuotaReserved"}, {"status", "True"}}})},
                     {"admission", f.admission}};
  other["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] =
      kueue_tas_encode({{"node-b", 2}});
  f.cluster.workloads.push_back(other);
  admission = f.admission;
  EXPECT_EQ(kueue_tas_assign(admission, f.workload, f.cluster_queue, f.cluster, false),
            "couldn't assign flavors to pod set main: "
            "topology \"dc\" allows to fit only 2 out of 3 pod(s)");
}

TEST(KueueTasAssignTest, provisioning_delays_the_topology_until_the_checks_are_ready) {
  TasFixture f(std::map<std::string, std::string>{{"prov", "kueue.x-k8s.io/provisioning-request"}});
  json admission = f.admission;
  ASSERT_EQ(kueue_tas_assign(admission, f.workload, f.cluster_queue, f.cluster, false), "");
  EXPECT_EQ(admission["podSetAssignments"][0]["delayedTopologyRequest"], "Pending");
  EXPECT_FALSE(admission["podSetAssignments"][0].contains("topologyAssignment"));

  json wl = f.workload;
  wl["status"] = {{"admission", admission},
                  {"conditions", json::array({{{"type", "QuotaReserved"}, {"status", "True"}}})},
                  {"admissionChecks", json::array({{{"name", "prov"}, {"state", "Pending"}}})}};
  EXPECT_TRUE(kueue_tas_pending(wl));
  EXPECT_FALSE(kueue_tas_needs_second_pass(wl)) << "a check still Pending";
  wl["status"]["admissionChecks"][0]["state"] = "Ready";
  EXPECT_TRUE(kueue_tas_needs_second_pass(wl));
  // Every check Ready, the topology still Pending: not admitted (and, as upstream with
  // UnadmittedWorkloadsObservability off, no Admitted=False written either) ...
  json admitted = wl;
  EXPECT_FALSE(kueue_sync_admitted_condition(admitted, "2026-12-07T00:00:00Z"));
  EXPECT_FALSE(kueue_is_admitted(admitted));
  // ... and one admitted before is no longer, with upstream's reason.
  admitted["status"]["conditions"].push_back({{"type", "Admitted"}, {"status", "True"}});
  ASSERT_TRUE(kueue_sync_admitted_condition(admitted, "2026-12-07T00:00:00Z"));
  EXPECT_EQ(kueue_condition(admitted, "Admitted")["reason"], "PendingDelayedTopologyRequests");
  EXPECT_EQ(kueue_condition(admitted, "Admitted")["message"],
            "There are pending delayed topology requests");

  // The second pass, with the quota held: placed, Ready.
  ASSERT_EQ(kueue_tas_assign(admission, wl, f.cluster_queue, f.cluster, true), "");
  EXPECT_EQ(admission["podSetAssignments"][0]["delayedTopologyRequest"], "Ready");
  EXPECT_EQ(kueue_tas_decode(admission["podSetAssignments"][0]["topologyAssignment"]),
            (std::vector<KueueTasDomain>{{"node-a", 3}}));
}

TEST(KueueTasAssignTest, multikueue_leaves_the_topology_to_the_worker) {
  TasFixture f(std::map<std::string, std::string>{{"mk", "kueue.x-k8s.io/multikueue"}});
  json admission = f.admission;
  ASSERT_EQ(kueue_tas_assign(admission, f.workload, f.cluster_queue, f.cluster, false), "");
  EXPECT_EQ(admission["podSetAssignments"][0]["delayedTopologyRequest"], "Pending");
  json wl = f.workload;
  wl["status"] = {{"admission", admission},
                  {"conditions", json::array({{{"type", "QuotaReserved"}, {"status", "True"}}})},
                  {"admissionChecks", json::array({{{"name", "mk"}, {"state", "Ready"}}})}};
  const json before = admission;
  ASSERT_EQ(kueue_tas_assign(admission, wl, f.cluster_queue, f.cluster, true), "");
  EXPECT_EQ(admission, before);
}

TEST(KueueQueueStatusTest, cluster_queue_active_reasons_are_upstreams) {
  const json flavors = {{"default", {{"metadata", {{"name", "default"}}}}}};
  auto check = [](const std::string& name, const std::string& controller, bool active) {
    return json{{"metadata", {{"name", name}}},
                {"spec", {{"controllerName", controller}}},
                {"status",
                 {{"conditions",
                   json::array({{{"type", "Active"}, {"status", active ? "True" : "False"}}})}}}};
  };
  auto cq = [](const json& flavor_names, const json& checks, const std::string& stop = "") {
    json groups = json::array();
    json fl = json::array();
    for (const auto& f : flavor_names) fl.push_back({{"name", f}});
    groups.push_back({{"coveredResources", json::array({"cpu"})}, {"flavors", fl}});
    json named = json::array();
    for (const auto& c : checks) named.push_back({{"name", c}});
    json out = {
        {"metadata", {{"name", "cq"}}},
        {"spec",
         {{"resourceGroups", groups}, {"admissionChecksStrategy", {{"admissionChecks", named}}}}}};
    if (!stop.empty()) out["spec"]["stopPolicy"] = stop;
    return out;
  };
  const std::map<std::string, json> checks = {
      {"commgate", check("commgate", "commgate.io/admission-check", true)},
      {"off", check("off", "commgate.io/admission-check", false)},
      {"prov", check("prov", "kueue.x-k8s.io/provisioning-request", true)},
      {"mk1", check("mk1", "kueue.x-k8s.io/multikueue", true)},
      {"mk2", check("mk2", "kueue.x-k8s.io/multikueue", true)}};
  struct Case {
    json cluster_queue;
    bool active;
    std::string reason, message;
  };
  const std::vector<Case> cases = {
      {cq({"default"}, {"commgate"}), true, "Ready", "Can admit new workloads"},
      {cq({"default"}, {"missing"}), false, "AdmissionCheckNotFound",
       "Can't admit new workloads: references missing AdmissionCheck(s): missing."},
      {cq({"default"}, {"off"}), false, "AdmissionCheckInactive",
       "Can't admit new workloads: references inactive AdmissionCheck(s): off."},
      {cq({"default"}, {"off", "zz", "commgate", "aa"}), false, "AdmissionCheckNotFound",
       "Can't admit new workloads: references missing AdmissionCheck(s): aa,zz, references "
       "inactive AdmissionCheck(s): off."},
      {cq({"default", "spot"}, json::array()), false, "FlavorNotFound",
       "Can't admit new workloads: references missing ResourceFlavor(s): spot."},
      {cq({"default"}, json::array(), "Hold"), false, "Stopped",
       "Can't admit new workloads: is stopped."},
      {cq({"default"}, json::array(), "None"), true, "Ready", "Can admit new workloads"},
      {cq({"default"}, {"mk1", "mk2"}), false, "MultipleMultiKueueAdmissionChecks",
       "Can't admit new workloads: Cannot use multiple MultiKueue AdmissionChecks on the same "
       "ClusterQueue, found: mk1,mk2."},
      {cq({"default"}, {"mk1", "prov"}), false, "MultiKueueWithProvisioningRequest",
       "Can't admit new workloads: Cannot use both MultiKueue and ProvisioningRequest "
       "AdmissionChecks together, found: mk1, prov."},
  };
  for (const auto& c : cases) {
    const auto got = kueue_cluster_queue_condition(c.cluster_queue, flavors, checks);
    EXPECT_EQ(got.active, c.active) << c.cluster_queue.dump();
    EXPECT_EQ(got.reason, c.reason) << c.cluster_queue.dump();
    EXPECT_EQ(got.message, c.message) << c.cluster_queue.dump();
  }
  json deleting = cq({"default"}, json::array());
  deleting["metadata"]["deletionTimestamp"] = "2026-12-07T00:00:00Z";
  EXPECT_EQ(kueue_cluster_queue_condition(deleting, flavors, checks).reason, "Terminating");
}

TEST(KueueQueueStatusTest, local_queue_follows_its_cluster_queue) {
  const json lq = {{"metadata", {{"name", "lq"}}}, {"spec", {{"clusterQueue", "cq"}}}};
  json cq = {{"status", {{"conditions", json::array({{{"type", "Active"}, {"status", "True"}}})}}}};
  auto got = kueue_local_queue_condition(lq, &cq);
  EXPECT_TRUE(got.active);
  EXPECT_EQ(got.reason, "Ready");
  EXPECT_EQ(got.message, "Can submit new workloads to localQueue");
  cq["status"]["conditions"][0]["status"] = "False";
  got = kueue_local_queue_condition(lq, &cq);
  EXPECT_EQ(got.reason, "ClusterQueueIsInactive");
  EXPECT_EQ(got.message, "Can't submit new workloads to clusterQueue");
  EXPECT_EQ(kueue_local_queue_condition(lq, nullptr).reason, "ClusterQueueDoesNotExist");
  json stopped = lq;
  stopped["spec"]["stopPolicy"] = "HoldAndDrain";
  EXPECT_EQ(kueue_local_queue_condition(stopped, &cq).message, "LocalQueue is stopped");
  EXPECT_EQ(got.to_json(), json::parse(R"({"type":"Active","status":"False",
      "reason":"ClusterQueueIsInactive","message":"Can't submit new workloads to clusterQueue"})"));
}

TEST(KueueEventNotesTest, pending_check_messages_are_joined_in_status_order) {
  json wl = {{"status",
              {{"admissionChecks",
                json::array({{{"name", "zeta"}, {"state", "Pending"}, {"message", "probing"}},
                             {{"name", "quiet"}, {"state", "Pending"}},
                             {{"name", "done"}, {"state", "Ready"}, {"message", "ok"}},
                             {{"name", "alpha"}, {"state", "Pending"}, {"message", "queued"}}})}}}};
  EXPECT_EQ(kueue_pending_checks_note(wl), "zeta: probing; alpha: queued");
  wl["status"]["admissionChecks"] =
      json::array({{{"name", "c"}, {"state", "Pending"}, {"message", std::string(2000, 'x')}}});
  const std::string note = kueue_pending_checks_note(wl);
  EXPECT_EQ(note.size(), 1024u);
  EXPECT_EQ(note.substr(1020), " ...");
  EXPECT_EQ(kueue_pending_checks_note(json::object()), "");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
