// The index from suspended TrainingJobs to the pools they wait on (operator/pool_index.h):
// what the measurement controller's demand and a new snapshot's wake-up read, kept from
// the TrainingJobs' watch events alone.
#include "operator/pool_index.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/comm_profile.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json trainingjob(json suspend, const std::string& pool_label = "a") {
  json spec = {{"nodeSelector", {{"commgate.io/pool", pool_label}}}};
  if (!suspend.is_null()) spec["suspend"] = suspend;
  return {{"spec", spec}};
}

TEST(WaitingPoolOf, IsThePoolOfAJobWithSpecSuspendTrue) {
  EXPECT_EQ(waiting_pool_of(trainingjob(true)), pool_name({{"commgate.io/pool", "a"}}));
  EXPECT_EQ(waiting_pool_of(trainingjob(false)), std::nullopt);
  EXPECT_EQ(waiting_pool_of(trainingjob(nullptr)), std::nullopt) << "no suspend field";
  EXPECT_EQ(waiting_pool_of(trainingjob("true")), std::nullopt) << "a string is not true";
  EXPECT_EQ(waiting_pool_of(json::array()), std::nullopt);
}

// Each step is a watch event; after it, the jobs waiting (all, and by pool) and the pools
// the update says to look at again.
TEST(PoolIndex, FollowsTheJobsFromTheirEvents) {
  const std::string a = pool_name({{"commgate.io/pool", "a"}});
  const std::string b = pool_name({{"commgate.io/pool", "b"}});
  struct Step {
    const char* name;
    std::string key;
    json object;  // null: deleted
    std::vector<std::string> touched, waiting, on_a;
  };
  const std::vector<Step> steps = {
      {"a gated job", "ns/j1", trainingjob(true), {a}, {"ns/j1"}, {"ns/j1"}},
      {"a running job is not in it", "ns/j2", trainingjob(false), {}, {"ns/j1"}, {"ns/j1"}},
      {"a second gated job", "m/j3", trainingjob(true), {a}, {"m/j3", "ns/j1"}, {"m/j3", "ns/j1"}},
      {"moved to another pool: both pools",
       "ns/j1",
       trainingjob(true, "b"),
       {a, b},
       {"m/j3", "ns/j1"},
       {"m/j3"}},
      {"launched: its pool", "ns/j1", trainingjob(false, "b"), {b}, {"m/j3"}, {"m/j3"}},
      {"deleted", "m/j3", nullptr, {a}, {}, {}},
      {"deleting what is not there", "x/y", nullptr, {}, {}, {}},
  };
  PoolIndex index;
  for (const Step& step : steps) {
    SCOPED_TRACE(step.name);
    std::vector<std::string> touched =
        index.update(step.key, step.object.is_null() ? nullptr : &step.object);
    std::sort(touched.begin(), touched.end());
    std::vector<std::string> want = step.touched;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(touched, want);
    EXPECT_EQ(index.waiting(), step.waiting);
    EXPECT_EQ(index.waiting_on(a), step.on_a);
  }
  EXPECT_TRUE(index.pools().empty());
}

// A consumer whose pool the caller computes (a Kueue Workload's key): the same moves.
TEST(PoolIndex, UpdatePoolMovesAKeyBetweenPools) {
  PoolIndex index;
  const std::string key = "kueue-workload:ml/job-train-1";
  EXPECT_EQ(index.update_pool(key, "pool-a"), std::vector<std::string>{"pool-a"});
  EXPECT_EQ(index.waiting_on("pool-a"), std::vector<std::string>{key});
  EXPECT_EQ(index.update_pool(key, "pool-b"), (std::vector<std::string>{"pool-a", "pool-b"}));
  EXPECT_TRUE(index.waiting_on("pool-a").empty());
  EXPECT_EQ(index.update_pool(key, "pool-b"), std::vector<std::string>{"pool-b"});
  EXPECT_EQ(index.update_pool(key, std::nullopt), std::vector<std::string>{"pool-b"});
  EXPECT_TRUE(index.waiting().empty());
  EXPECT_TRUE(index.update_pool(key, std::nullopt).empty());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
