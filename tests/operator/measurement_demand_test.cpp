// operator/measurement_demand.h: the one probe a pool's waiting jobs get (issue #21): led by
// the oldest job, sized for the largest count, timing every model that waits up to
// kMaxModelsPerProbe, and which jobs a running probe serves.
#include "operator/measurement_demand.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/comm_profile.h"
#include "core/probe_result.h"
#include "operator/probe_job.h"
#include "tests/support/builders.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using namespace std::chrono_literals;

struct Waiting {
  std::string job;
  int age_s;  // how long ago it was created
  int probe_nodes;
  double parameters;
  int procs_per_node = 1;
  int backoff_limit_count = 3;
};

MeasurementDemand demand_of(const Waiting& w) {
  MeasurementDemand d;
  d.job = "ml/" + w.job;
  d.ns = "ml";
  d.created = TimePoint{} + 1h - std::chrono::seconds(w.age_s);
  d.pool = "pool-a";
  d.probe_nodes = w.probe_nodes;
  d.procs_per_node = w.procs_per_node;
  d.model.parameters = w.parameters;
  d.policy.spec.retry_strategy.backoff_limit_count = w.backoff_limit_count;
  return d;
}

struct PlanCase {
  std::string name;
  std::vector<Waiting> waiting;
  std::string lead;
  int nodes;
  std::vector<double> also_models;  // their parameters, in order
  std::vector<std::string> jobs;
  int attempts_allowed;
};

void PrintTo(const PlanCase& c, std::ostream* os) {
  *os << c.name;
}

class PlanProbe : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlanProbe, leads_with_the_oldest_and_times_every_model_it_can) {
  const PlanCase& c = GetParam();
  std::vector<MeasurementDemand> demands;
  for (const Waiting& w : c.waiting) demands.push_back(demand_of(w));
  const ProbePlan plan = plan_probe(demands);
  EXPECT_EQ(plan.lead.job, "ml/" + c.lead);
  EXPECT_EQ(plan.nodes, c.nodes);
  std::vector<double> also;
  for (const ModelSpec& m : plan.also_models) also.push_back(m.parameters);
  EXPECT_EQ(also, c.also_models);
  std::vector<std::string> jobs;
  for (const std::string& j : c.jobs) jobs.push_back("ml/" + j);
  EXPECT_EQ(plan.jobs, jobs);
  EXPECT_EQ(plan.attempts_allowed, c.attempts_allowed);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PlanProbe,
    ::testing::Values(PlanCase{"one_job", {{"bert", 10, 2, 25e6}}, "bert", 2, {}, {"bert"}, 4},
                      PlanCase{"one_model_two_counts",
                               {{"bert", 10, 2, 25e6}, {"gpt", 5, 3, 25e6}},
                               "bert",
                               3,
                               {},
                               {"bert", "gpt"},
                               4},
                      PlanCase{"two_models_one_probe",
                               {{"vit", 5, 3, 80e6}, {"bert", 10, 2, 25e6}},
                               "bert",
                               3,
                               {80e6},
                               {"bert", "vit"},
                               4},
                      PlanCase{"more_models_than_one_probe_times: the youngest waits",
                               {{"a", 40, 2, 1e6},
                                {"b", 30, 2, 2e6},
                                {"c", 20, 2, 3e6},
                                {"d", 10, 4, 4e6},
                                {"e", 5, 2, 2e6}},
                               "a",
                               4,
                               {2e6, 3e6},
                               {"a", "b", "c", "e"},
                               4},
                      PlanCase{"other_procs_per_node_wait: their link is another one",
                               {{"a", 40, 2, 1e6}, {"b", 30, 2, 2e6, 8}, {"c", 20, 2, 1e6, 8}},
                               "a",
                               2,
                               {},
                               {"a"},
                               4},
                      PlanCase{"the_most_attempts_any_policy_allows",
                               {{"a", 40, 2, 1e6, 1, 0}, {"b", 30, 2, 1e6, 1, 5}},
                               "a",
                               2,
                               {},
                               {"a", "b"},
                               6}),
    [](const auto& info) {
      std::string n = info.param.name.substr(0, info.param.name.find(':'));
      return n;
    });

TEST(JobsServed, the_jobs_whose_model_a_running_probe_times) {
  std::vector<MeasurementDemand> demands = {demand_of({"bert", 10, 2, 25e6}),
                                            demand_of({"vit", 5, 2, 80e6}),
                                            demand_of({"t5", 1, 2, 120e6})};
  EXPECT_EQ(jobs_served(demands, probe_models_annotation({demands[1].model, demands[0].model})),
            (std::vector<std::string>{"ml/bert", "ml/vit"}));
  // A probe an operator before issue #21 created: one model, one object.
  EXPECT_EQ(jobs_served(demands, probe_model_annotation(demands[2].model)),
            (std::vector<std::string>{"ml/t5"}));
  EXPECT_TRUE(jobs_served(demands, "").empty());
}

// A request that is not a TrainingJob (a Kueue Workload's, operator/kueue_check_reconciler.h)
// waits for its pool's measurement as a gated TrainingJob does, under its own key.
TEST(MeasurementDemandOfARequest, waits_for_the_pool_under_the_consumers_key) {
  Snapshot snapshot;
  snapshot.add_policy({{"apiVersion", "commgate.io/v1alpha1"},
                       {"kind", "CommPolicy"},
                       {"metadata", {{"name", "team"}}},
                       {"spec", {{"maxCommShare", 0.30}, {"probe", {{"maxNodes", 4}}}}}});
  const TrainingJob request = commgate::testing::a_training_job("wl")
                                  .namespace_("ml")
                                  .nodes(6)
                                  .procs_per_node(2)
                                  .params(25e6)
                                  .set("/spec/nodeSelector", {{"pool", "gpu-1g"}})
                                  .set("/spec/suspend", true)
                                  .policy_ref("team")
                                  .build();
  const std::string key = std::string(kWorkloadDemandPrefix) + "ml/wl";
  const auto demand = request_measurement_demand(key, request, snapshot, TimePoint{} + 1h);
  ASSERT_TRUE(demand.has_value());
  EXPECT_EQ(demand->job, key);
  EXPECT_EQ(demand->pool, pool_name({{"pool", "gpu-1g"}}));
  EXPECT_EQ(demand->probe_nodes, 4) << "within probe.maxNodes";
  EXPECT_EQ(demand->procs_per_node, 2);
  EXPECT_EQ(demand->model.parameters, 25e6);
  EXPECT_EQ(demand->policy.metadata.name, "team");
}

TEST(MeasurementDemandKeys, a_workloads_key_is_told_from_a_trainingjobs) {
  EXPECT_TRUE(is_workload_demand(std::string(kWorkloadDemandPrefix) + "ml/wl"));
  EXPECT_FALSE(is_workload_demand("ml/bert"));
  EXPECT_FALSE(is_workload_demand("ml/kueue-workload:x"));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
