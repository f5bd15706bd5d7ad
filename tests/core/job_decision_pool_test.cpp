// The pool check of decide_for_job (core/job_decision.h, issue #20 defect 2): a job larger
// than its pool's usable nodes is gated or denied with the pool's size in the message,
// as the policy's onInsufficientNodes says; the rest of the decision is untouched.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/job_decision.h"
#include "core/probe_result.h"
#include "core/profile_recording.h"
#include "tests/support/builders.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using testing::a_policy;
using testing::a_training_job;
using testing::test_now;

PoolNode pool_node(const std::string& name, const std::string& pool, double gpus = 0) {
  return testing::a_pool_node(name, {{"commgate.io/pool", pool}}, gpus);
}

// Two usable CPU nodes in pool `cpu`, a cordoned third; two 8-GPU nodes in pool `h100`;
// one node in pool `solo`.
std::shared_ptr<const std::vector<PoolNode>> cluster_nodes() {
  auto nodes = std::make_shared<std::vector<PoolNode>>();
  nodes->push_back(pool_node("cpu-a", "cpu"));
  nodes->push_back(pool_node("cpu-b", "cpu"));
  PoolNode cordoned = pool_node("cpu-c", "cpu");
  cordoned.cordoned = true;
  nodes->push_back(cordoned);
  nodes->push_back(pool_node("gpu-a", "h100", 8));
  nodes->push_back(pool_node("gpu-b", "h100", 8));
  nodes->push_back(pool_node("solo-a", "solo"));
  return nodes;
}

struct Case {
  std::string name;
  // minNodes 3: more than the pool's 2 usable nodes, so it is not downsized to them.
  testing::TrainingJobBuilder job = a_training_job("bert").nodes(6).min_nodes(3).set(
      "/spec/nodeSelector", {{"commgate.io/pool", "cpu"}});
  CommPolicy policy = a_policy().on_missing(MissingMeasurementAction::kAdmit).build();
  bool nodes_known = true;
  Requester requester = {};
  Action want_action;
  std::string want_reason;
  std::string want_message;  // substring
  std::string want_hint;     // substring too: what to change
  int want_usable = -1;      // -1: no pool count
  int want_admitted = -1;    // -1: not checked
};

CommPolicy on_insufficient(CommPolicy p, InsufficientNodesAction a) {
  p.spec.on_insufficient_nodes = a;
  return p;
}

TEST(DecideForJobPoolCheck, GatesOrDeniesAJobLargerThanItsPool) {
  const CommPolicy admit_unmeasured =
      a_policy().on_missing(MissingMeasurementAction::kAdmit).build();
  std::vector<Case> cases;
  cases.push_back({.name = "six_nodes_on_two_is_gated_by_default",
                   .want_action = Action::kGate,
                   .want_reason = reason::kPoolTooSmall,
                   .want_message = "the pool of nodeSelector {commgate.io/pool=cpu} has 2 usable "
                                   "nodes (3 match the nodeSelector: 1 cordoned), fewer than the 6 "
                                   "nodes this job would run",
                   .want_usable = 2});
  cases.push_back({.name = "the_message_says_how_to_run_now",
                   .want_action = Action::kGate,
                   .want_reason = reason::kPoolTooSmall,
                   .want_message = "suspended until the pool has them (onInsufficientNodes: gate); "
                                   "ask for at most 2 nodes to run now (spec.minNodes 3 keeps it "
                                   "from being downsized to them)",
                   .want_usable = 2});
  const auto cpu_job = [](int nodes, int min_nodes) {
    return a_training_job("bert").nodes(nodes).min_nodes(min_nodes).set(
        "/spec/nodeSelector", {{"commgate.io/pool", "cpu"}});
  };
  cases.push_back({.name = "min_nodes_lets_a_downsizing_policy_fit_it_to_the_pool",
                   .job = cpu_job(6, 1),
                   .want_action = Action::kDownsize,
                   .want_reason = reason::kPoolTooSmall,
                   .want_message = "the pool of nodeSelector {commgate.io/pool=cpu} has 2 usable "
                                   "nodes (3 match the nodeSelector: 1 cordoned), fewer than the 6 "
                                   "nodes asked for; spec.minNodes (1) allows fewer and the "
                                   "built-in default policy downsizes, so it runs on 2 nodes. ",
                   .want_usable = 2,
                   .want_admitted = 2});
  cases.push_back({.name = "min_nodes_equal_to_the_pool_fits",
                   .job = cpu_job(6, 2),
                   .want_action = Action::kDownsize,
                   .want_reason = reason::kPoolTooSmall,
                   .want_usable = 2,
                   .want_admitted = 2});
  cases.push_back({.name = "a_policy_that_denies_does_not_downsize_to_the_pool",
                   .job = cpu_job(6, 1),
                   .policy = a_policy()
                                 .on_missing(MissingMeasurementAction::kAdmit)
                                 .action(EnforcementAction::kDeny)
                                 .build(),
                   .want_action = Action::kGate,
                   .want_reason = reason::kPoolTooSmall,
                   .want_message = "ask for at most 2 nodes to run now",
                   .want_usable = 2});
  cases.push_back(
      {.name = "a_pool_of_one_fits_a_job_that_accepts_one_node",
       .job = a_training_job("bert").nodes(2).set("/spec/nodeSelector",
                                                  {{"commgate.io/pool", "solo"}}),
       .want_action = Action::kDownsize,
       .want_reason = reason::kPoolTooSmall,
       .want_message = "so it runs on 1 node. A single-node job sends no gradients between nodes",
       .want_usable = 1,
       .want_admitted = 1});
  cases.push_back({.name = "deny_refuses_it",
                   .policy = on_insufficient(admit_unmeasured, InsufficientNodesAction::kDeny),
                   .want_action = Action::kDeny,
                   .want_reason = reason::kPoolTooSmall,
                   .want_message = "so it is refused (onInsufficientNodes: deny)",
                   .want_usable = 2});
  cases.push_back({.name = "ignore_does_not_check",
                   .policy = on_insufficient(admit_unmeasured, InsufficientNodesAction::kIgnore),
                   .want_action = Action::kAdmit,
                   .want_reason = reason::kNoMeasurement});
  cases.push_back({.name = "a_job_that_fits_is_untouched",
                   .job = a_training_job("bert").nodes(2).set("/spec/nodeSelector",
                                                              {{"commgate.io/pool", "cpu"}}),
                   .want_action = Action::kAdmit,
                   .want_reason = reason::kNoMeasurement,
                   .want_usable = 2});
  cases.push_back({.name = "unknown_nodes_are_not_checked",
                   .nodes_known = false,
                   .want_action = Action::kAdmit,
                   .want_reason = reason::kNoMeasurement});
  cases.push_back(
      {.name = "an_exempt_requester_is_not_checked",
       .policy =
           a_policy().on_missing(MissingMeasurementAction::kAdmit).exempt_user("carol").build(),
       .requester = {"carol", {}},
       .want_action = Action::kAdmit,
       .want_reason = reason::kExempt});
  cases.push_back({.name = "a_nodeselector_typo_is_told_at_once",
                   .job = a_training_job("bert").nodes(1).set("/spec/nodeSelector",
                                                              {{"commgate.io/pool", "cpux"}}),
                   .want_action = Action::kGate,
                   .want_reason = reason::kPoolTooSmall,
                   .want_message = "has no node (none matches the nodeSelector), fewer than the 1 "
                                   "node this job would run",
                   .want_usable = 0});
  // The researcher cannot list Nodes: the message names the close value nodes have.
  cases.push_back({.name = "a_nodeselector_typo_gets_the_value_it_meant",
                   .job = a_training_job("bert").nodes(1).set("/spec/nodeSelector",
                                                              {{"commgate.io/pool", "cpux"}}),
                   .want_action = Action::kGate,
                   .want_reason = reason::kPoolTooSmall,
                   .want_message = "check spec.nodeSelector against the cluster's nodes' labels: "
                                   "no node has commgate.io/pool=cpux (did you mean \"cpu\"?)",
                   .want_usable = 0});
  cases.push_back({.name = "gated_for_a_measurement_it_is_checked_at_min_nodes",
                   .job = a_training_job("bert").nodes(6).min_nodes(2).set(
                       "/spec/nodeSelector", {{"commgate.io/pool", "cpu"}}),
                   .policy = a_policy().build(),
                   .want_action = Action::kGate,
                   .want_reason = reason::kNoMeasurement,
                   .want_usable = 2});
  cases.push_back({.name = "gated_for_a_measurement_min_nodes_over_the_pool",
                   .job = a_training_job("bert").nodes(6).min_nodes(3).set(
                       "/spec/nodeSelector", {{"commgate.io/pool", "cpu"}}),
                   .policy = a_policy().build(),
                   .want_action = Action::kGate,
                   .want_reason = reason::kPoolTooSmall,
                   .want_message = "fewer than the 3 nodes this job needs at the least "
                                   "(spec.minNodes)",
                   .want_usable = 2});
  cases.push_back({.name = "a_pool_of_one_node_can_measure_no_link",
                   .job = a_training_job("bert").nodes(2).set("/spec/nodeSelector",
                                                              {{"commgate.io/pool", "solo"}}),
                   .policy = a_policy().build(),
                   .want_action = Action::kGate,
                   .want_reason = reason::kPoolTooSmall,
                   .want_message = "has 1 usable node (all that match the nodeSelector), fewer "
                                   "than the 2 nodes a measurement of its link needs",
                   .want_usable = 1});
  cases.push_back({.name = "gpu_pool_counts_a_gpu_per_process",
                   .job = a_training_job("bert").nodes(2).procs_per_node(16).set(
                       "/spec/nodeSelector", {{"commgate.io/pool", "h100"}}),
                   .want_action = Action::kGate,
                   .want_reason = reason::kPoolTooSmall,
                   .want_message =
                       "has no usable node (2 match the nodeSelector: 2 have fewer than 16 "
                       "nvidia.com/gpu), fewer than the 2 nodes this job would run",
                   .want_hint = "; ask for fewer GPUs a node (spec.numProcPerNode)",
                   .want_usable = 0});
  cases.push_back({.name = "the_templates_own_accelerators_count",
                   .job = a_training_job("bert")
                              .nodes(2)
                              .procs_per_node(8)
                              .set("/spec/nodeSelector", {{"commgate.io/pool", "h100"}})
                              .set("/spec/template/spec/containers/0/resources",
                                   {{"limits", {{"amd.com/gpu", "8"}}}}),
                   .want_action = Action::kGate,
                   .want_reason = reason::kPoolTooSmall,
                   .want_message = "2 have fewer than 8 amd.com/gpu",
                   .want_usable = 0});
  cases.push_back({.name = "eight_gpus_per_pod_fit_eight_gpu_nodes",
                   .job = a_training_job("bert").nodes(2).procs_per_node(8).set(
                       "/spec/nodeSelector", {{"commgate.io/pool", "h100"}}),
                   .want_action = Action::kAdmit,
                   .want_reason = reason::kNoMeasurement,
                   .want_usable = 2});
  cases.push_back(
      {.name = "a_toleration_opens_a_tainted_pool",
       .job = a_training_job("bert")
                  .nodes(2)
                  .set("/spec/nodeSelector", {{"commgate.io/pool", "cpu"}})
                  .set("/spec/tolerations", json::parse(R"([{"key":"x","operator":"Exists"}])")),
       .want_action = Action::kAdmit,
       .want_reason = reason::kNoMeasurement,
       .want_usable = 2});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Snapshot snapshot;
    snapshot.policies.push_back(c.policy);
    if (c.nodes_known) snapshot.nodes = cluster_nodes();
    const TrainingJob job = c.job.build();
    const JobDecision jd = decide_for_job(job, snapshot, c.requester, test_now());
    ASSERT_TRUE(jd.policy);
    EXPECT_EQ(to_string(jd.decision.action), std::string(to_string(c.want_action)))
        << jd.decision.message;
    EXPECT_EQ(jd.decision.reason, c.want_reason) << jd.decision.message;
    EXPECT_NE(jd.decision.message.find(c.want_message), std::string::npos) << jd.decision.message;
    EXPECT_NE(jd.decision.message.find(c.want_hint), std::string::npos) << jd.decision.message;
    if (c.want_usable < 0) {
      EXPECT_FALSE(jd.pool);
    } else {
      ASSERT_TRUE(jd.pool);
      EXPECT_EQ(jd.pool->usable, c.want_usable);
    }
    if (jd.decision.action == Action::kDeny) EXPECT_EQ(jd.decision.admitted_nodes, 0);
    if (c.want_admitted >= 0) {
      EXPECT_EQ(jd.decision.admitted_nodes, c.want_admitted);
      EXPECT_EQ(jd.decision.requested_nodes, c.job.build().spec.num_nodes);
    }
  }
}

TEST(DecideForJobPoolCheck, KeepsTolerationsAndTemplateAcceleratorsInTheWebhooksParse) {
  const json doc =
      a_training_job("bert")
          .procs_per_node(8)
          .set("/spec/tolerations", json::parse(R"([{"key":"x","operator":"Exists"}])"))
          .set("/spec/template/spec/containers/0/resources",
               {{"limits", {{"nvidia.com/gpu", "8"}}}})
          .json();
  const TrainingJob job = parse_training_job(doc, ObjectSource::kAdmission, Verbatim::kSkip);
  EXPECT_EQ(job.spec.tolerations.size(), 1u);
  EXPECT_EQ(job.spec.template_accelerators, (std::map<std::string, double>{{"nvidia.com/gpu", 8}}));
  EXPECT_TRUE(job.spec.pod_template.is_null());
}

// A gate for a larger probe (ExtrapolationTooFar) on a pool whose usable nodes were all
// probed: no probe can lift it, so the pool binds the request as it binds a decided one
// (the trial of 2026-12-06: 10 nodes on a pool of 2, probed on 2, were gated "until a
// probe of at least 3 nodes" by the webhook and evaluate, then failed by the operator).
struct MeasuredPoolCase {
  std::string name;
  int pool_nodes;  // usable nodes in pool `measured`
  int num_nodes;
  int min_nodes;
  EnforcementAction enforcement;
  Action want_action;
  std::string want_reason;
  std::string want_message;  // substring
};

TEST(DecideForJobPoolCheck, APoolProbedWholeBindsAJobThatWaitsForALargerProbe) {
  // Two nodes at 1 Gbit/s, a 25M-parameter model (examples/measurements/).
  const std::filesystem::path recording = std::filesystem::path(COMMGATE_SOURCE_DIR) /
                                          "examples/measurements/"
                                          "probe-netns-2-nodes-1gbit-25M-params.json";
  std::ifstream in(recording);
  std::stringstream text;
  text << in.rdbuf();
  const ProbeResult probed = parse_probe_result(json::parse(text.str()));
  ASSERT_EQ(probed.nodes, 2);
  const std::map<std::string, std::string> selector = {{"commgate.io/pool", "measured"}};
  CommProfile profile;
  profile.node_selector = selector;
  profile.metadata.name = pool_name(selector);
  record_probe_result(profile, probed);
  ASSERT_TRUE(profile.status.link);
  const TimePoint now = profile.status.link->measured_at + std::chrono::minutes(1);

  const std::vector<MeasuredPoolCase> cases = {
      {"a_pool_of_two_downsizes_ten_nodes_to_what_it_holds", 2, 10, 1, EnforcementAction::kDownsize,
       Action::kDownsize, reason::kPoolTooSmall,
       "fewer than the 10 nodes asked for; spec.minNodes (1) allows fewer"},
      {"min_nodes_over_the_pool_waits_for_nodes_not_for_a_probe", 2, 10, 10,
       EnforcementAction::kDownsize, Action::kGate, reason::kPoolTooSmall,
       "fewer than the 10 nodes this job needs at the least (spec.minNodes)"},
      {"a_warning_policy_cannot_downsize_so_it_waits_for_nodes", 2, 10, 1, EnforcementAction::kWarn,
       Action::kGate, reason::kPoolTooSmall,
       "fewer than the 3 nodes a measurement of its link needs"},
      {"a_pool_with_more_nodes_than_probed_waits_for_the_larger_probe", 4, 10, 1,
       EnforcementAction::kDownsize, Action::kGate, reason::kExtrapolationTooFar,
       "until a probe of at least 3 nodes"},
  };
  for (const MeasuredPoolCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto nodes = std::make_shared<std::vector<PoolNode>>();
    for (int i = 0; i < c.pool_nodes; ++i)
      nodes->push_back(pool_node("measured-" + std::to_string(i), "measured"));
    Snapshot snapshot;
    snapshot.nodes = nodes;
    snapshot.policies.push_back(a_policy().action(c.enforcement).build());
    snapshot.profiles[profile.metadata.name] = profile;
    TrainingJob job = a_training_job("bert")
                          .nodes(c.num_nodes)
                          .min_nodes(c.min_nodes)
                          .set("/spec/nodeSelector", {{"commgate.io/pool", "measured"}})
                          .build();
    job.spec.model.parameters = probed.compute->parameters;
    job.spec.model.gradient_dtype = probed.compute->gradient_dtype;
    job.spec.model.batch_size = probed.compute->batch_size;
    job.spec.model.optimizer = probed.compute->optimizer;
    const JobDecision jd = decide_for_job(job, snapshot, {}, now);
    ASSERT_TRUE(jd.policy);
    ASSERT_TRUE(jd.measurement) << jd.decision.message;
    EXPECT_EQ(to_string(jd.decision.action), std::string(to_string(c.want_action)))
        << jd.decision.message;
    EXPECT_EQ(jd.decision.reason, c.want_reason) << jd.decision.message;
    EXPECT_NE(jd.decision.message.find(c.want_message), std::string::npos) << jd.decision.message;
    if (jd.decision.action == Action::kDownsize) {
      EXPECT_LE(jd.decision.admitted_nodes, c.pool_nodes);
      EXPECT_EQ(jd.decision.requested_nodes, c.num_nodes);
    }
  }
}

// The trial of 2026-12-07: a refusal named "the largest count that passes is 5 nodes" on a
// pool of 4 usable nodes; the job resubmitted at 5 waited for a fifth node. The count named
// is capped by the pool, and the message says why.
TEST(DecideForJobPoolCheck, ARefusalNamesNoMoreNodesThanThePoolHolds) {
  const std::filesystem::path recording = std::filesystem::path(COMMGATE_SOURCE_DIR) /
                                          "examples/measurements/"
                                          "probe-netns-2-nodes-5gbit-25M-params.json";
  std::ifstream in(recording);
  std::stringstream text;
  text << in.rdbuf();
  const ProbeResult probed = parse_probe_result(json::parse(text.str()));
  const std::map<std::string, std::string> selector = {{"commgate.io/pool", "measured"}};
  CommProfile profile;
  profile.node_selector = selector;
  profile.metadata.name = pool_name(selector);
  record_probe_result(profile, probed);
  const TimePoint now = profile.status.link->measured_at + std::chrono::minutes(1);
  TrainingJob job =
      a_training_job("bert").nodes(40).min_nodes(40).set("/spec/nodeSelector", selector).build();
  job.spec.model.parameters = probed.compute->parameters;
  job.spec.model.gradient_dtype = probed.compute->gradient_dtype;
  job.spec.model.batch_size = probed.compute->batch_size;
  job.spec.model.optimizer = probed.compute->optimizer;
  // A limit at which a few counts pass (the model's share grows with the count), found
  // without the pool check.
  Snapshot unpooled;
  unpooled.profiles[profile.metadata.name] = profile;
  int largest = 0;
  CommPolicy policy;
  for (double share = 0.05; share < 1; share += 0.01) {
    policy = a_policy().max_comm_share(share).action(EnforcementAction::kDeny).build();
    policy.spec.max_extrapolation = 40;
    unpooled.policies = {policy};
    largest = decide_for_job(job, unpooled, {}, now).decision.largest_passing_nodes;
    if (largest >= 4 && largest < 40) break;
  }
  ASSERT_GE(largest, 4) << "no limit lets 4 or more of 40 nodes pass";
  ASSERT_LT(largest, 40);

  Snapshot pooled = unpooled;
  auto nodes = std::make_shared<std::vector<PoolNode>>();
  for (int i = 0; i < largest - 1; ++i)
    nodes->push_back(pool_node("measured-" + std::to_string(i), "measured"));
  pooled.nodes = nodes;
  const JobDecision jd = decide_for_job(job, pooled, {}, now);
  EXPECT_EQ(jd.decision.action, Action::kDeny) << jd.decision.message;
  EXPECT_EQ(jd.decision.largest_passing_nodes, largest - 1) << jd.decision.message;
  EXPECT_NE(jd.decision.message.find("The largest count that passes and that the pool can hold "
                                     "is " +
                                     std::to_string(largest - 1) +
                                     " nodes (the pool of nodeSelector "
                                     "{commgate.io/pool=measured} has " +
                                     std::to_string(largest - 1) + " usable nodes"),
            std::string::npos)
      << jd.decision.message;
  EXPECT_EQ(jd.decision.message.find("The largest count that passes is"), std::string::npos)
      << jd.decision.message;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
