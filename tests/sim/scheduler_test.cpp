// The scheduler's filter decisions as tables (sim/scheduler.h), and one pass of
// Scheduler::schedule_once over a store.
#include "sim/scheduler.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json node(const std::string& name, int gpus, json labels = json::object(),
          json taints = json::array()) {
  json alloc = {
      {"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}, {"nvidia.com/gpu", std::to_string(gpus)}};
  labels["kubernetes.io/hostname"] = name;
  return {{"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"taints", taints}}},
          {"status", {{"capacity", alloc}, {"allocatable", alloc}}}};
}

json pod(const std::string& name, json spec_extra = json::object(), json labels = json::object()) {
  json spec = {{"containers", {{{"name", "c"}, {"command", {"true"}}}}}};
  spec.merge_patch(spec_extra);
  return {{"metadata", {{"name", name}, {"namespace", "default"}, {"labels", labels}}},
          {"spec", spec}};
}

json gpu_pod(const std::string& name, const std::string& gpus) {
  json p = pod(name);
  p["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", gpus}}}};
  return p;
}

const json kAntiAffinity = {{"affinity",
                             {{"podAntiAffinity",
                               {{"requiredDuringSchedulingIgnoredDuringExecution",
                                 {{{"topologyKey", "kubernetes.io/hostname"},
                                   {"labelSelector", {{"matchLabels", {{"app", "probe"}}}}}}}}}}}}};

TEST(FitFailures, table) {
  const json probe_labels = {{"app", "probe"}};
  struct Case {
    std::string what;
    json pod;
    json node;
    std::vector<json> on_node;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"plain pod fits", pod("p"), node("n", 0), {}, {}},
      {"gpu request fits", gpu_pod("p", "2"), node("n", 2), {}, {}},
      {"gpu used by a running pod",
       gpu_pod("p", "1"),
       node("n", 1),
       {gpu_pod("q", "1")},
       {"Insufficient nvidia.com/gpu"}},
      {"finished pods free their gpus",
       gpu_pod("p", "1"),
       node("n", 1),
       {[] {
         json q = gpu_pod("q", "1");
         q["status"]["phase"] = "Succeeded";
         return q;
       }()},
       {}},
      {"cpu and memory both short",
       pod("p", {{"containers",
                  {{{"name", "c"},
                    {"resources", {{"requests", {{"cpu", "9"}, {"memory", "17Gi"}}}}}}}}}),
       node("n", 0),
       {},
       {"Insufficient cpu", "Insufficient memory"}},
      {"millicores add up exactly",
       pod("p",
           {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "100m"}}}}}}}}}),
       node("n", 0),
       {pod("q", {{"containers",
                   {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "7900m"}}}}}}}}})},
       {}},
      {"nodeSelector mismatch",
       pod("p", {{"nodeSelector", {{"gpu", "h100"}}}}),
       node("n", 0, {{"gpu", "a100"}}),
       {},
       {"node(s) didn't match Pod's node affinity/selector"}},
      {"nodeSelector match",
       pod("p", {{"nodeSelector", {{"gpu", "h100"}}}}),
       node("n", 0, {{"gpu", "h100"}}),
       {},
       {}},
      {"required node affinity NotIn",
       pod("p",
           {{"affinity",
             {{"nodeAffinity",
               {{"requiredDuringSchedulingIgnoredDuringExecution",
                 {{"nodeSelectorTerms",
                   {{{"matchExpressions",
                      {{{"key", "zone"}, {"operator", "NotIn"}, {"values", {"a"}}}}}}}}}}}}}}}),
       node("n", 0, {{"zone", "a"}}),
       {},
       {"node(s) didn't match Pod's node affinity/selector"}},
      {"required node affinity Exists",
       pod("p",
           {{"affinity",
             {{"nodeAffinity",
               {{"requiredDuringSchedulingIgnoredDuringExecution",
                 {{"nodeSelectorTerms",
                   {{{"matchExpressions", {{{"key", "zone"}, {"operator", "Exists"}}}}}}}}}}}}}}),
       node("n", 0, {{"zone", "a"}}),
       {},
       {}},
      {"untolerated taint",
       pod("p"),
       node("n", 0, {}, {{{"key", "dedicated"}, {"value", "infra"}, {"effect", "NoSchedule"}}}),
       {},
       {"node(s) had untolerated taint {dedicated: infra}"}},
      {"PreferNoSchedule is not a filter",
       pod("p"),
       node("n", 0, {}, {{{"key", "k"}, {"effect", "PreferNoSchedule"}}}),
       {},
       {}},
      {"tolerated with Equal",
       pod("p", {{"tolerations",
                  {{{"key", "dedicated"},
                    {"operator", "Equal"},
                    {"value", "infra"},
                    {"effect", "NoSchedule"}}}}}),
       node("n", 0, {}, {{{"key", "dedicated"}, {"value", "infra"}, {"effect", "NoSchedule"}}}),
       {},
       {}},
      {"tolerated with Exists and no effect",
       pod("p", {{"tolerations", {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}}}}),
       node("n", 0, {},
            {{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoExecute"}}}),
       {},
       {}},
      {"taint checked before resources",
       gpu_pod("p", "4"),
       node("n", 1, {}, {{{"key", "k"}, {"value", "v"}, {"effect", "NoExecute"}}}),
       {},
       {"node(s) had untolerated taint {k: v}"}},
      {"anti-affinity against a probe on the node",
       pod("p", kAntiAffinity, probe_labels),
       node("n", 0),
       {pod("q", json::object(), probe_labels)},
       {"node(s) didn't match pod anti-affinity rules"}},
      {"anti-affinity ignores other labels",
       pod("p", kAntiAffinity, probe_labels),
       node("n", 0),
       {pod("q", json::object(), {{"app", "web"}})},
       {}},
      {"existing pod's anti-affinity repels",
       pod("p", json::object(), probe_labels),
       node("n", 0),
       {pod("q", kAntiAffinity, probe_labels)},
       {"node(s) didn't satisfy existing pods anti-affinity rules"}},
      {"unschedulable node",
       pod("p"),
       [] {
         json n = node("n", 0);
         n["spec"]["unschedulable"] = true;
         return n;
       }(),
       {},
       {"node(s) were unschedulable"}},
  };
  for (const auto& c : cases) EXPECT_EQ(fit_failures(c.pod, c.node, c.on_node), c.want) << c.what;
}

TEST(UnschedulableMessage, is_the_sorted_histogram) {
  EXPECT_EQ(unschedulable_message(3, {{"node(s) had untolerated taint {k: v}"},
                                      {"Insufficient nvidia.com/gpu"},
                                      {"Insufficient nvidia.com/gpu"}}),
            "0/3 nodes are available: 1 node(s) had untolerated taint {k: v}, 2 Insufficient "
            "nvidia.com/gpu.");
  EXPECT_EQ(unschedulable_message(0, {}), "no nodes available to schedule pods");
}

TEST(PodRequests, limits_stand_in_for_missing_requests_and_containers_add_up) {
  json p = gpu_pod("p", "2");
  p["spec"]["containers"].push_back(
      {{"name", "d"}, {"resources", {{"requests", {{"cpu", "250m"}}}}}});
  const auto r = pod_requests(p);
  EXPECT_DOUBLE_EQ(r.at("nvidia.com/gpu"), 2.0);
  EXPECT_DOUBLE_EQ(r.at("cpu"), 0.25);
}

// Init containers as kube-scheduler counts them: a sidecar (restartPolicy Always) adds to
// the containers; an ordinary init container needs its own stage, beside the sidecars
// started before it.
TEST(PodRequests, sidecars_add_up_and_init_containers_need_their_stage) {
  json p = gpu_pod("p", "1");
  const auto init = [](const char* name, const char* gpus, bool sidecar) {
    json c = {{"name", name}, {"resources", {{"limits", {{"nvidia.com/gpu", gpus}}}}}};
    if (sidecar) c["restartPolicy"] = "Always";
    return c;
  };
  p["spec"]["initContainers"] = json::array({init("side", "1", true)});
  EXPECT_DOUBLE_EQ(pod_requests(p).at("nvidia.com/gpu"), 2.0) << "1 + the sidecar's 1";
  p["spec"]["initContainers"].push_back(init("setup", "4", false));
  EXPECT_DOUBLE_EQ(pod_requests(p).at("nvidia.com/gpu"), 5.0) << "4 beside the sidecar's 1";
  p["spec"]["initContainers"] = json::array({init("setup", "3", false), init("side", "1", true)});
  EXPECT_DOUBLE_EQ(pod_requests(p).at("nvidia.com/gpu"), 3.0) << "3 alone, before the sidecar";
}

TEST(Scheduler, binds_what_fits_and_marks_the_rest_unschedulable) {
  ObjectStore store;
  const auto nodes = *store.find_resource("", "v1", "nodes");
  const auto pods = *store.find_resource("", "v1", "pods");
  store.create(nodes, "", node("n1", 1));
  store.create(nodes, "", node("n2", 1));
  for (const char* name : {"a", "b", "c"}) store.create(pods, "default", gpu_pod(name, "1"));
  Scheduler scheduler(store);
  EXPECT_EQ(scheduler.schedule_once(), 2);
  EXPECT_EQ(store.get(pods, "default", "a")["spec"]["nodeName"], "n1");
  EXPECT_EQ(store.get(pods, "default", "b")["spec"]["nodeName"], "n2");
  const json c = store.get(pods, "default", "c");
  EXPECT_FALSE(c["spec"].contains("nodeName"));
  const json cond = c["status"]["conditions"][0];
  EXPECT_EQ(cond["type"], "PodScheduled");
  EXPECT_EQ(cond["status"], "False");
  EXPECT_EQ(cond["reason"], "Unschedulable");
  EXPECT_EQ(cond["message"], "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.");
  // Unchanged world: a second pass writes nothing.
  const uint64_t rv = store.resource_version();
  EXPECT_EQ(scheduler.schedule_once(), 0);
  EXPECT_EQ(store.resource_version(), rv);
}

// topologySpreadConstraints on kubernetes.io/hostname as the chart's Deployments set them
// (maxSkew 1, the pod's component label, matchLabelKeys pod-template-hash).
json spread_pod(const std::string& name, const std::string& when, const std::string& hash = "h1",
                const std::string& app = "hook") {
  json constraint = {{"maxSkew", 1},
                     {"topologyKey", "kubernetes.io/hostname"},
                     {"whenUnsatisfiable", when},
                     {"labelSelector", {{"matchLabels", {{"app", app}}}}}};
  constraint["matchLabelKeys"] = json::array({"pod-template-hash"});
  json spec = json::object();
  spec["topologySpreadConstraints"] = json::array({constraint});
  return pod(name, spec, {{"app", app}, {"pod-template-hash", hash}});
}

TEST(SpreadFailures, table) {
  const std::vector<json> nodes = {node("n1", 0), node("n2", 0), node("n3", 0, {{"pool", "x"}})};
  json deleting = spread_pod("d", "DoNotSchedule");
  deleting["metadata"]["deletionTimestamp"] = "2026-12-02T09:00:00Z";
  json finished = spread_pod("f", "DoNotSchedule");
  finished["status"]["phase"] = "Failed";
  json elsewhere = spread_pod("e", "DoNotSchedule");
  elsewhere["metadata"]["namespace"] = "other";
  json pinned = spread_pod("p", "DoNotSchedule");
  pinned["spec"]["nodeSelector"] = {{"pool", "x"}};
  const std::string kSkew = "node(s) didn't match pod topology spread constraints";
  struct Case {
    std::string what;
    json pod;
    std::string node;
    std::map<std::string, std::vector<json>> by_node;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"an_empty_cluster_takes_the_first_replica_anywhere",
       spread_pod("p", "DoNotSchedule"),
       "n1",
       {},
       {}},
      {"a_second_replica_may_not_join_the_first_while_a_node_is_empty",
       spread_pod("p", "DoNotSchedule"),
       "n1",
       {{"n1", {spread_pod("a", "DoNotSchedule")}}},
       {kSkew}},
      {"a_second_replica_goes_to_an_empty_node",
       spread_pod("p", "DoNotSchedule"),
       "n2",
       {{"n1", {spread_pod("a", "DoNotSchedule")}}},
       {}},
      {"one_per_node_lets_the_fourth_go_anywhere",
       spread_pod("p", "DoNotSchedule"),
       "n1",
       {{"n1", {spread_pod("a", "DoNotSchedule")}},
        {"n2", {spread_pod("b", "DoNotSchedule")}},
        {"n3", {spread_pod("c", "DoNotSchedule")}}},
       {}},
      {"schedule_anyway_never_filters",
       spread_pod("p", "ScheduleAnyway"),
       "n1",
       {{"n1", {spread_pod("a", "ScheduleAnyway")}}},
       {}},
      {"a_deleting_pod_is_not_counted",
       spread_pod("p", "DoNotSchedule"),
       "n1",
       {{"n1", {deleting}}},
       {}},
      {"a_finished_pod_is_not_counted",
       spread_pod("p", "DoNotSchedule"),
       "n1",
       {{"n1", {finished}}},
       {}},
      {"another_namespaces_pod_is_not_counted",
       spread_pod("p", "DoNotSchedule"),
       "n1",
       {{"n1", {elsewhere}}},
       {}},
      {"another_template_hash_is_not_counted_match_label_keys",
       spread_pod("p", "DoNotSchedule", "h2"),
       "n1",
       {{"n1", {spread_pod("a", "DoNotSchedule")}}},
       {}},
      {"another_apps_pod_is_not_counted",
       spread_pod("p", "DoNotSchedule"),
       "n1",
       {{"n1", {spread_pod("a", "DoNotSchedule", "h1", "other")}}},
       {}},
      // n1 and n2 are empty but outside the pod's nodeSelector: n3 is the only domain.
      {"only_nodes_the_pod_may_use_are_domains",
       pinned,
       "n3",
       {{"n3", {spread_pod("a", "DoNotSchedule")}}},
       {}},
  };
  for (const auto& c : cases) {
    const json* target = nullptr;
    for (const auto& n : nodes)
      if (n["metadata"]["name"] == c.node) target = &n;
    EXPECT_EQ(spread_failures(c.pod, *target, nodes, c.by_node), c.want) << c.what;
  }
  json unlabelled = node("n4", 0);
  unlabelled["metadata"]["labels"].erase("kubernetes.io/hostname");
  EXPECT_EQ(spread_failures(spread_pod("p", "DoNotSchedule"), unlabelled, nodes, {}),
            std::vector<std::string>{
                "node(s) didn't match pod topology spread constraints (missing required label)"});
}

TEST(SpreadPenalty, counts_matching_pods_in_the_nodes_domain_for_schedule_anyway_only) {
  const std::vector<json> nodes = {node("n1", 0), node("n2", 0)};
  const std::map<std::string, std::vector<json>> by_node = {
      {"n1", {spread_pod("a", "ScheduleAnyway"), spread_pod("b", "ScheduleAnyway")}}};
  EXPECT_EQ(spread_penalty(spread_pod("p", "ScheduleAnyway"), nodes[0], nodes, by_node), 2);
  EXPECT_EQ(spread_penalty(spread_pod("p", "ScheduleAnyway"), nodes[1], nodes, by_node), 0);
  EXPECT_EQ(spread_penalty(spread_pod("p", "DoNotSchedule"), nodes[0], nodes, by_node), 0);
  EXPECT_EQ(spread_penalty(pod("p"), nodes[0], nodes, by_node), 0);
}

// The chart's two replicas (ScheduleAnyway, its default) land on two nodes, as do two
// DoNotSchedule replicas; a third DoNotSchedule replica with two nodes still goes (skew 1),
// and pods without constraints keep the first fitting node.
TEST(Scheduler, spreads_replicas_over_nodes_by_their_topology_spread_constraints) {
  ObjectStore store;
  const auto nodes = *store.find_resource("", "v1", "nodes");
  const auto pods = *store.find_resource("", "v1", "pods");
  store.create(nodes, "", node("n1", 0));
  store.create(nodes, "", node("n2", 0));
  store.create(pods, "default", spread_pod("soft-a", "ScheduleAnyway", "h1", "soft"));
  store.create(pods, "default", spread_pod("soft-b", "ScheduleAnyway", "h1", "soft"));
  store.create(pods, "default", spread_pod("hard-a", "DoNotSchedule"));
  store.create(pods, "default", spread_pod("hard-b", "DoNotSchedule"));
  store.create(pods, "default", spread_pod("hard-c", "DoNotSchedule"));
  store.create(pods, "default", pod("plain-a"));
  store.create(pods, "default", pod("plain-b"));
  Scheduler scheduler(store);
  EXPECT_EQ(scheduler.schedule_once(), 7);
  auto node_of = [&](const char* name) {
    return store.get(pods, "default", name)["spec"].value("nodeName", "");
  };
  EXPECT_NE(node_of("soft-a"), node_of("soft-b"));
  EXPECT_NE(node_of("hard-a"), node_of("hard-b"));
  EXPECT_FALSE(node_of("hard-c").empty());
  EXPECT_EQ(node_of("plain-a"), "n1");
  EXPECT_EQ(node_of("plain-b"), "n1");
}

// With one node, a DoNotSchedule replica beyond maxSkew waits with the scheduler's reason.
TEST(Scheduler, a_do_not_schedule_replica_beyond_max_skew_stays_pending) {
  ObjectStore store;
  const auto nodes = *store.find_resource("", "v1", "nodes");
  const auto pods = *store.find_resource("", "v1", "pods");
  store.create(nodes, "", node("n1", 0));
  json pinned_a = spread_pod("a", "DoNotSchedule"), pinned_b = spread_pod("b", "DoNotSchedule");
  // n2 is a domain for the constraint (no node selector excludes it) but has no room.
  json full = node("n2", 0);
  full["status"]["allocatable"]["pods"] = "0";
  store.create(nodes, "", full);
  store.create(pods, "default", pinned_a);
  store.create(pods, "default", pinned_b);
  Scheduler scheduler(store);
  EXPECT_EQ(scheduler.schedule_once(), 1);
  const json b = store.get(pods, "default", "b");
  EXPECT_FALSE(b["spec"].contains("nodeName"));
  EXPECT_EQ(b["status"]["conditions"][0]["message"],
            "0/2 nodes are available: 1 Too many pods, 1 node(s) didn't match pod topology "
            "spread constraints.");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

// The probe's placement (operator/probe_job.cpp): a preferred anti-affinity term against
// training pods in every namespace steers it to idle nodes of its pool; on a pool busy
// everywhere it still schedules. Finished pods hold nothing.
TEST(Scheduler, preferred_anti_affinity_keeps_a_pod_off_busy_nodes_where_it_can) {
  const json avoid_training = {
      {"affinity",
       {{"podAntiAffinity",
         {{"preferredDuringSchedulingIgnoredDuringExecution",
           {{{"weight", 100},
             {"podAffinityTerm",
              {{"labelSelector",
                {{"matchExpressions",
                  {{{"key", "batch.kubernetes.io/job-name"}, {"operator", "Exists"}}}}}},
               {"namespaceSelector", json::object()},
               {"topologyKey", "kubernetes.io/hostname"}}}}}}}}}}};
  auto training_on = [](const std::string& name, const std::string& node_name,
                        const std::string& phase) {
    json p = pod(name, {{"nodeName", node_name}}, {{"batch.kubernetes.io/job-name", "bert"}});
    p["metadata"]["namespace"] = "team-a";
    p["status"] = {{"phase", phase}};
    return p;
  };
  struct Case {
    std::string what;
    std::vector<json> bound;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"idle_cluster_takes_the_first_node", {}, "n1"},
      {"a_training_on_the_first_node_sends_it_to_the_second",
       {training_on("t1", "n1", "Running")},
       "n2"},
      {"a_finished_training_holds_nothing", {training_on("t1", "n1", "Succeeded")}, "n1"},
      {"the_least_busy_node_wins",
       {training_on("t1", "n1", "Running"), training_on("t2", "n2", "Running"),
        training_on("t3", "n2", "Running"), training_on("t4", "n3", "Running"),
        training_on("t5", "n3", "Running")},
       "n1"},
      {"a_pod_without_the_label_is_not_avoided",
       {[] {
         json p = pod("web", {{"nodeName", "n1"}});
         p["metadata"]["namespace"] = "team-a";
         p["status"] = {{"phase", "Running"}};
         return p;
       }()},
       "n1"},
  };
  for (const auto& c : cases) {
    ObjectStore store;
    const auto nodes = *store.find_resource("", "v1", "nodes");
    const auto pods = *store.find_resource("", "v1", "pods");
    const auto namespaces = *store.find_resource("", "v1", "namespaces");
    for (const char* ns : {"team-a", "commgate-system"})
      store.create(namespaces, "", {{"metadata", {{"name", ns}}}});
    for (const char* n : {"n1", "n2", "n3"}) store.create(nodes, "", node(n, 0));
    for (const auto& b : c.bound) {
      store.create(pods, "team-a", b);  // a create drops status, as the API server's does
      store.mutate(pods, "team-a", b["metadata"]["name"], WritePart::kStatus,
                   [&](const json& current) {
                     json next = current;
                     next["status"] = b["status"];
                     return next;
                   });
    }
    json probe = pod("probe-0", avoid_training);
    probe["metadata"]["namespace"] = "commgate-system";
    store.create(pods, "commgate-system", probe);
    Scheduler scheduler(store);
    EXPECT_EQ(scheduler.schedule_once(), 1) << c.what;
    EXPECT_EQ(store.get(pods, "commgate-system", "probe-0")["spec"].value("nodeName", ""), c.want)
        << c.what;
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
