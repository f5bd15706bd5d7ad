// The Job controller's pure helpers (sim/job_controller.h).
#include "sim/job_controller.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

TEST(CompletedIndexes, format_and_parse_round_trip) {
  const std::pair<std::set<int>, std::string> cases[] = {
      {{}, ""}, {{0}, "0"}, {{0, 1, 2}, "0-2"}, {{0, 1, 2, 4, 6, 7}, "0-2,4,6-7"}, {{3, 5}, "3,5"}};
  for (const auto& [set, text] : cases) {
    EXPECT_EQ(format_completed_indexes(set), text);
    EXPECT_EQ(parse_completed_indexes(text), set) << text;
  }
}

TEST(IndexesToCreate, fills_the_lowest_missing_indexes_up_to_parallelism) {
  struct Case {
    int completions, parallelism;
    std::set<int> succeeded, active;
    std::vector<int> want;
  };
  const Case cases[] = {
      {3, 3, {}, {}, {0, 1, 2}}, {3, 2, {}, {}, {0, 1}}, {3, 2, {0}, {1}, {2}},
      {3, 3, {0, 2}, {}, {1}},   {3, 1, {}, {0}, {}},    {2, 5, {0, 1}, {}, {}},
  };
  for (const auto& c : cases)
    EXPECT_EQ(indexes_to_create(c.completions, c.parallelism, c.succeeded, c.active), c.want);
}

TEST(PodForJob, indexed_pods_carry_index_hostname_env_and_owner) {
  const json job = {
      {"metadata", {{"name", "probe"}, {"namespace", "ml"}, {"uid", "job-uid"}}},
      {"spec",
       {{"template",
         {{"metadata", {{"labels", {{"app", "probe"}}}}},
          {"spec",
           {{"subdomain", "ranks"},
            {"containers", {{{"name", "c"}, {"env", {{{"name", "X"}, {"value", "1"}}}}}}}}}}}}}};
  const json pod = pod_for_job(job, 2);
  const json& meta = pod["metadata"];
  EXPECT_EQ(meta["generateName"], "probe-2-");
  EXPECT_EQ(meta["labels"]["batch.kubernetes.io/job-completion-index"], "2");
  EXPECT_EQ(meta["annotations"]["batch.kubernetes.io/job-completion-index"], "2");
  EXPECT_EQ(meta["labels"]["app"], "probe");
  EXPECT_EQ(meta["labels"]["batch.kubernetes.io/job-name"], "probe");
  EXPECT_EQ(meta["labels"]["batch.kubernetes.io/controller-uid"], "job-uid");
  EXPECT_EQ(meta["ownerReferences"][0]["uid"], "job-uid");
  EXPECT_EQ(meta["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(meta["ownerReferences"][0]["blockOwnerDeletion"], true);
  EXPECT_EQ(pod["spec"]["hostname"], "probe-2");
  EXPECT_EQ(pod["spec"]["subdomain"], "ranks");
  const json& env = pod["spec"]["containers"][0]["env"];
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[0]["name"], "JOB_COMPLETION_INDEX");
  EXPECT_EQ(env[0]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  EXPECT_EQ(env[1]["name"], "X");
  const json plain = pod_for_job(job, -1);
  EXPECT_EQ(plain["metadata"]["generateName"], "probe-");
  EXPECT_FALSE(plain["spec"].contains("hostname"));
}

TEST(JobFinished, needs_a_true_complete_or_failed_condition) {
  EXPECT_FALSE(job_finished(json::object()));
  EXPECT_FALSE(
      job_finished({{"status", {{"conditions", {{{"type", "Complete"}, {"status", "False"}}}}}}}));
  EXPECT_TRUE(
      job_finished({{"status", {{"conditions", {{{"type", "Failed"}, {"status", "True"}}}}}}}));
}

}  // namespace
}  // namespace commgate::sim
