// Which Kueue LocalQueues run commgate's admission check (core/kueue_queues.h).
#include "core/kueue_queues.h"

#include <gtest/gtest.h>

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json cluster_queue(const std::string& name, json rules) {
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"resourceGroups",
             {{{"flavors", {{{"name", "a100"}}}}}, {{"flavors", {{{"name", "h100"}}}}}}},
            {"admissionChecksStrategy", {{"admissionChecks", std::move(rules)}}}}}};
}

TEST(KueueQueues, ALocalQueueIsCheckedWhenItsClusterQueueRunsOurCheckOnEveryFlavor) {
  const std::vector<json> checks = {
      {{"metadata", {{"name", "comm"}}}, {"spec", {{"controllerName", "commgate.io/comm-check"}}}},
      {{"metadata", {{"name", "prov"}}},
       {"spec", {{"controllerName", "kueue.x-k8s.io/provisioning-request"}}}}};
  struct Case {
    std::string name;
    json rules;
    bool checked;
    std::string why_part;
  };
  const Case cases[] = {
      {"our check, every flavor", {{{"name", "comm"}}}, true, ""},
      {"our check beside another", {{{"name", "prov"}}, {{"name", "comm"}}}, true, ""},
      {"onFlavors listing every flavor",
       {{{"name", "comm"}, {"onFlavors", {"h100", "a100"}}}},
       true,
       ""},
      {"onFlavors listing one of two",
       {{{"name", "comm"}, {"onFlavors", {"a100"}}}},
       false,
       "AdmissionCheck comm runs on some of its flavors only"},
      {"another controller's check only",
       {{{"name", "prov"}}},
       false,
       "no AdmissionCheck with controllerName commgate.io/comm-check"},
      {"no checks", json::array(), false, "no AdmissionCheck"},
      {"a check name that does not exist", {{{"name", "missing"}}}, false, "no AdmissionCheck"},
  };
  for (const auto& c : cases) {
    const KueueQueues q = kueue_queues(
        {{{"metadata", {{"name", "lq"}, {"namespace", "ml"}}}, {"spec", {{"clusterQueue", "cq"}}}}},
        {cluster_queue("cq", c.rules)}, checks);
    const KueueQueue* lq = q.find("ml", "lq");
    ASSERT_NE(lq, nullptr) << c.name;
    EXPECT_EQ(lq->checked, c.checked) << c.name;
    EXPECT_NE(lq->why_not.find(c.why_part), std::string::npos) << c.name << ": " << lq->why_not;
    EXPECT_EQ(q.find("other", "lq"), nullptr);
  }
  const KueueQueues orphan = kueue_queues(
      {{{"metadata", {{"name", "lq"}, {"namespace", "ml"}}}, {"spec", {{"clusterQueue", "gone"}}}}},
      {}, checks);
  EXPECT_FALSE(orphan.find("ml", "lq")->checked);
  EXPECT_EQ(orphan.find("ml", "lq")->why_not, "its ClusterQueue gone does not exist");
}

TEST(KueueQueues, TheWatchKeepsOnlyWhatIsRead) {
  json cq = cluster_queue("cq", {{{"name", "comm"}}});
  cq["metadata"]["resourceVersion"] = "7";
  cq["metadata"]["annotations"]["big"] = std::string(4096, 'x');
  cq["spec"]["resourceGroups"][0]["coveredResources"] = {"cpu", "nvidia.com/gpu"};
  cq["spec"]["namespaceSelector"] = json::object();
  cq["status"]["pendingWorkloads"] = 3;
  json kept = cq;
  keep_kueue_queue_fields(kept);
  EXPECT_EQ(
      kept,
      (json{{"metadata", {{"name", "cq"}, {"resourceVersion", "7"}}},
            {"spec",
             {{"admissionChecksStrategy", {{"admissionChecks", {{{"name", "comm"}}}}}},
              {"resourceGroups", {{{"flavors", {{{"name", "a100"}}, {{"name", "h100"}}}}}}}}}}));
  // What kueue_queues reads is the same either way.
  const json lq = {{"metadata", {{"name", "lq"}, {"namespace", "ml"}}},
                   {"spec", {{"clusterQueue", "cq"}}}};
  const json check = {{"metadata", {{"name", "comm"}}},
                      {"spec", {{"controllerName", "commgate.io/comm-check"}}}};
  EXPECT_TRUE(kueue_queues({lq}, {kept}, {check}).find("ml", "lq")->checked);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
