// The Deployment controller's pure helpers (sim/deployment_controller.h).
#include "sim/deployment_controller.h"

#include <gtest/gtest.h>

#include <set>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json a_deployment(int replicas, json strategy = json()) {
  json d = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "web"}, {"namespace", "ns"}, {"uid", "d-uid"}, {"generation", 3}}},
      {"spec",
       {{"replicas", replicas},
        {"selector", {{"matchLabels", {{"app", "web"}}}}},
        {"template",
         {{"metadata", {{"labels", {{"app", "web"}}}}},
          {"spec", {{"containers", {{{"name", "c"}, {"image", "nginx:1"}}}}}}}}}}};
  if (!strategy.is_null()) d["spec"]["strategy"] = strategy;
  return d;
}

TEST(PodTemplateHash, is_stable_short_and_drawn_from_the_safe_alphabet) {
  const json tmpl = a_deployment(1)["spec"]["template"];
  const std::string hash = pod_template_hash(tmpl);
  EXPECT_EQ(hash, pod_template_hash(tmpl));
  EXPECT_LE(hash.size(), 10u);
  EXPECT_FALSE(hash.empty());
  EXPECT_EQ(hash.find_first_not_of("bcdfghjklmnpqrstvwxz2456789"), std::string::npos) << hash;
}

TEST(PodTemplateHash, differs_when_the_template_or_the_collision_count_differs) {
  const json tmpl = a_deployment(1)["spec"]["template"];
  json changed = tmpl;
  changed["spec"]["containers"][0]["image"] = "nginx:2";
  struct Case {
    const char* name;
    std::string a, b;
  };
  const Case cases[] = {
      {"another image", pod_template_hash(tmpl), pod_template_hash(changed)},
      {"a collision count", pod_template_hash(tmpl), pod_template_hash(tmpl, 1)},
      {"another collision count", pod_template_hash(tmpl, 1), pod_template_hash(tmpl, 2)},
  };
  for (const auto& c : cases) EXPECT_NE(c.a, c.b) << c.name;
}

TEST(SafeEncode, maps_digits_as_upstream_rand_SafeEncodeString) {
  // "0" is byte 48: 48 % 27 = 21 -> '4'; "9" is 57 % 27 = 3 -> 'f'.
  EXPECT_EQ(safe_encode("0"), "4");
  EXPECT_EQ(safe_encode("9"), "f");
  EXPECT_EQ(safe_encode("09"), "4f");
}

TEST(ReplicaSetName, is_the_deployment_and_the_hash_within_253_characters) {
  EXPECT_EQ(replica_set_name("web", "5d4b8c7f9"), "web-5d4b8c7f9");
  const std::string long_name(260, 'a');
  const std::string name = replica_set_name(long_name, "5d4b8c7f9");
  EXPECT_EQ(name.size(), 253u);
  EXPECT_EQ(name.substr(name.size() - 10), "-5d4b8c7f9");
}

TEST(IntOrPercent, resolves_numbers_and_percentages_rounding_as_asked) {
  struct Case {
    const char* name;
    json value;
    int total;
    bool round_up;
    int want;
  };
  const Case cases[] = {
      {"absent_takes_the_default_25_percent_down", nullptr, 10, false, 2},
      {"absent_takes_the_default_25_percent_up", nullptr, 10, true, 3},
      {"an_integer_is_itself", 1, 10, false, 1},
      {"a_string_integer_is_itself", "4", 10, false, 4},
      {"zero_percent_is_zero", "0%", 10, true, 0},
      {"fifty_percent_of_three_rounds_up_to_two", "50%", 3, true, 2},
      {"fifty_percent_of_three_rounds_down_to_one", "50%", 3, false, 1},
  };
  for (const auto& c : cases)
    EXPECT_EQ(resolve_int_or_percent(c.value, c.total, c.round_up, "25%"), c.want) << c.name;
}

TEST(MaxUnavailable, follows_upstreams_deployment_util) {
  struct Case {
    const char* name;
    json deployment;
    int want;
  };
  const Case cases[] = {
      {"default_25_percent_of_four", a_deployment(4), 1},
      {"default_25_percent_of_two_rounds_down_to_zero", a_deployment(2), 0},
      {"recreate_is_zero", a_deployment(4, {{"type", "Recreate"}}), 0},
      {"zero_replicas_is_zero", a_deployment(0), 0},
      {"both_zero_means_one",
       a_deployment(2, {{"type", "RollingUpdate"},
                        {"rollingUpdate", {{"maxSurge", 0}, {"maxUnavailable", 0}}}}),
       1},
      {"at_most_the_replicas",
       a_deployment(2, {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", 5}}}}), 2},
  };
  for (const auto& c : cases) EXPECT_EQ(max_unavailable(c.deployment), c.want) << c.name;
}

TEST(ReplicaSetFor, carries_the_hash_label_selector_revision_and_controller_reference) {
  const json rs = replica_set_for(a_deployment(3), "abc", 3, 2);
  EXPECT_EQ(rs["kind"], "ReplicaSet");
  EXPECT_EQ(rs["metadata"]["name"], "web-abc");
  EXPECT_EQ(rs["metadata"]["namespace"], "ns");
  EXPECT_EQ(rs["metadata"]["labels"], json({{"app", "web"}, {"pod-template-hash", "abc"}}));
  EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "2");
  EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"], "3");
  EXPECT_EQ(rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"], "4");
  const json& owner = rs["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner, json({{"apiVersion", "apps/v1"},
                         {"kind", "Deployment"},
                         {"name", "web"},
                         {"uid", "d-uid"},
                         {"controller", true},
                         {"blockOwnerDeletion", true}}));
  EXPECT_EQ(rs["spec"]["replicas"], 3);
  EXPECT_EQ(rs["spec"]["selector"]["matchLabels"],
            json({{"app", "web"}, {"pod-template-hash", "abc"}}));
  EXPECT_EQ(rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"], "abc");
}

TEST(PodForReplicaSet, is_named_after_it_labelled_from_its_template_and_owned_by_it) {
  json rs = replica_set_for(a_deployment(1), "abc", 1, 1);
  rs["metadata"]["uid"] = "rs-uid";
  const json pod = pod_for_replica_set(rs);
  EXPECT_EQ(pod["metadata"]["generateName"], "web-abc-");
  EXPECT_EQ(pod["metadata"]["labels"]["pod-template-hash"], "abc");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], "rs-uid");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "nginx:1");
}

json a_pod(const std::string& name, const std::string& node, const std::string& phase, bool ready,
           const std::string& created) {
  json p = {{"metadata", {{"name", name}, {"creationTimestamp", created}}},
            {"spec", json::object()},
            {"status",
             {{"phase", phase},
              {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  return p;
}

TEST(PodsToDelete, takes_unscheduled_then_pending_then_unready_then_the_newest) {
  const std::vector<json> pods = {
      a_pod("ready-old", "n", "Running", true, "2026-01-01T00:00:00Z"),
      a_pod("ready-new", "n", "Running", true, "2026-01-02T00:00:00Z"),
      a_pod("unready", "n", "Running", false, "2026-01-01T00:00:00Z"),
      a_pod("pending", "n", "Pending", false, "2026-01-01T00:00:00Z"),
      a_pod("unscheduled", "", "Pending", false, "2026-01-01T00:00:00Z"),
  };
  struct Case {
    int count;
    std::vector<std::string> want;
  };
  const Case cases[] = {
      {0, {}},
      {1, {"unscheduled"}},
      {3, {"unscheduled", "pending", "unready"}},
      {4, {"unscheduled", "pending", "unready", "ready-new"}},
      {9, {"unscheduled", "pending", "unready", "ready-new", "ready-old"}},
  };
  for (const auto& c : cases) EXPECT_EQ(pods_to_delete(pods, c.count), c.want) << c.count;
}

json an_rs(const std::string& name, int spec, int replicas, int ready, int available) {
  return {{"metadata", {{"name", name}}},
          {"spec", {{"replicas", spec}}},
          {"status",
           {{"replicas", replicas}, {"readyReplicas", ready}, {"availableReplicas", available}}}};
}

TEST(DeploymentStatus, counts_and_conditions_as_the_controller_writes_them) {
  const std::string now = "2026-12-02T09:00:00Z";
  struct Case {
    const char* name;
    json deployment;
    std::vector<json> old_rs;
    json new_rs;
    int want_replicas, want_updated, want_available;
    std::string want_available_reason, want_progressing_reason;
  };
  json progressing = a_deployment(2);
  progressing["status"]["conditions"] = {{{"type", "Progressing"},
                                          {"status", "True"},
                                          {"reason", "NewReplicaSetCreated"},
                                          {"lastTransitionTime", "2026-12-02T08:00:00Z"}}};
  const Case cases[] = {
      {"a_new_replica_set_without_pods_is_created_and_unavailable",
       a_deployment(2),
       {},
       an_rs("web-a", 2, 0, 0, 0),
       0,
       0,
       0,
       "MinimumReplicasUnavailable",
       "NewReplicaSetCreated"},
      {"pods_on_the_way_are_progress",
       progressing,
       {},
       an_rs("web-a", 2, 2, 1, 1),
       2,
       2,
       1,
       "MinimumReplicasUnavailable",
       "ReplicaSetUpdated"},
      {"every_pod_available_has_successfully_progressed",
       progressing,
       {},
       an_rs("web-a", 2, 2, 2, 2),
       2,
       2,
       2,
       "MinimumReplicasAvailable",
       "NewReplicaSetAvailable"},
      {"old_pods_left_are_not_complete",
       progressing,
       {an_rs("web-old", 1, 1, 1, 1)},
       an_rs("web-a", 2, 2, 2, 2),
       3,
       2,
       3,
       "MinimumReplicasAvailable",
       "ReplicaSetUpdated"},
  };
  for (const auto& c : cases) {
    std::vector<json> all = c.old_rs;
    all.push_back(c.new_rs);
    const json status = deployment_status(c.deployment, &c.new_rs, all, now);
    EXPECT_EQ(status.value("replicas", 0), c.want_replicas) << c.name;
    EXPECT_EQ(status.value("updatedReplicas", 0), c.want_updated) << c.name;
    EXPECT_EQ(status.value("availableReplicas", 0), c.want_available) << c.name;
    EXPECT_EQ(status["observedGeneration"], 3) << c.name;
    ASSERT_EQ(status["conditions"].size(), 2u) << c.name;
    EXPECT_EQ(status["conditions"][0]["type"], "Available") << c.name;
    EXPECT_EQ(status["conditions"][0]["reason"], c.want_available_reason) << c.name;
    EXPECT_EQ(status["conditions"][1]["type"], "Progressing") << c.name;
    EXPECT_EQ(status["conditions"][1]["reason"], c.want_progressing_reason) << c.name;
  }
}

TEST(DeploymentStatus, keeps_the_transition_time_while_the_status_holds) {
  json d = a_deployment(1);
  d["status"]["conditions"] = {{{"type", "Progressing"},
                                {"status", "True"},
                                {"reason", "ReplicaSetUpdated"},
                                {"lastTransitionTime", "2026-12-02T08:00:00Z"}}};
  const json rs = an_rs("web-a", 1, 1, 1, 1);
  const json status = deployment_status(d, &rs, {rs}, "2026-12-02T09:00:00Z");
  EXPECT_EQ(status["conditions"][1]["reason"], "NewReplicaSetAvailable");
  EXPECT_EQ(status["conditions"][1]["lastTransitionTime"], "2026-12-02T08:00:00Z");
  EXPECT_EQ(status["conditions"][1]["lastUpdateTime"], "2026-12-02T09:00:00Z");
  EXPECT_EQ(status["conditions"][1]["message"],
            "ReplicaSet \"web-a\" has successfully progressed.");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
