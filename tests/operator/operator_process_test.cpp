// The operator process's pure parts: which TrainingJobs an operator-created Job or Pod
// wakes (from its labels), which TrainingJobs a new Snapshot may decide (the suspended
// ones), and the Lease identity. The process itself runs against the sim in
// operator_cli_e2e_test.cpp.
#include "operator/operator_process.h"

#include <gtest/gtest.h>

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json with_labels(const std::string& ns, json labels) {
  json metadata = {{"name", "x"}, {"labels", labels}};
  if (!ns.empty()) metadata["namespace"] = ns;
  return {{"metadata", metadata}};
}

struct RefCase {
  std::string name;
  json object;
  ManagedRef want;
};

TEST(ManagedRefOf, ReadsTheWorkloadsTrainingJobAndTheProbesPool) {
  const std::vector<RefCase> cases = {
      {"workload_job_names_its_trainingjob",
       with_labels("research",
                   {{"commgate.io/role", "workload"}, {"commgate.io/trainingjob", "bert"}}),
       {"research/bert", ""}},
      {"probe_pod_names_its_pool",
       with_labels("commgate-system",
                   {{"commgate.io/role", "probe"}, {"commgate.io/pool", "pool-1a2b"}}),
       {"", "pool-1a2b"}},
      {"no_commgate_labels", with_labels("a", {{"app", "x"}}), {"", ""}},
      {"no_labels_at_all", {{"metadata", {{"name", "x"}, {"namespace", "a"}}}}, {"", ""}},
      {"trainingjob_label_without_namespace_is_ignored",
       with_labels("", {{"commgate.io/trainingjob", "bert"}}),
       {"", ""}},
      {"non_string_label_values_are_ignored",
       with_labels("a", {{"commgate.io/trainingjob", 3}, {"commgate.io/pool", true}}),
       {"", ""}},
  };
  for (const RefCase& c : cases) {
    SCOPED_TRACE(c.name);
    const ManagedRef got = managed_ref_of(c.object);
    EXPECT_EQ(got.trainingjob, c.want.trainingjob);
    EXPECT_EQ(got.pool, c.want.pool);
  }
}

TEST(LeaderIdentity, IsThePodNameAndASuffix) {
  EXPECT_EQ(leader_identity("commgate-operator-7f9c-x", "0a1b2c3d"),
            "commgate-operator-7f9c-x_0a1b2c3d");
  EXPECT_EQ(leader_identity("", "0a1b2c3d"), "commgate-operator_0a1b2c3d");
}

// What the caches keep of managed Jobs and Pods: what the reconciler reads (metadata,
// status, spec.completions and activeDeadlineSeconds; a pod's nodeName), not the pod
// template that is most of a workload Job.
TEST(CacheTransforms, JobsAndPodsKeepWhatTheReconcilerReads) {
  json job = {{"metadata", {{"name", "bert"}, {"uid", "u"}, {"managedFields", json::array()}}},
              {"spec",
               {{"completions", 2},
                {"activeDeadlineSeconds", 360},
                {"template", {{"spec", {{"containers", json::array({{{"name", "t"}}})}}}}}}},
              {"status", {{"active", 2}}}};
  keep_what_the_reconciler_reads_of_a_job(job);
  EXPECT_EQ(job, json({{"metadata", {{"name", "bert"}, {"uid", "u"}}},
                       {"spec", {{"completions", 2}, {"activeDeadlineSeconds", 360}}},
                       {"status", {{"active", 2}}}}));
  json pod = {{"metadata", {{"name", "bert-0"}}},
              {"spec", {{"nodeName", "n1"}, {"containers", json::array({{{"name", "t"}}})}}},
              {"status", {{"phase", "Running"}}}};
  keep_what_the_reconciler_reads_of_a_pod(pod);
  EXPECT_EQ(pod, json({{"metadata", {{"name", "bert-0"}}},
                       {"spec", {{"nodeName", "n1"}}},
                       {"status", {{"phase", "Running"}}}}));
  json odd = "x";
  keep_what_the_reconciler_reads_of_a_job(odd);
  keep_what_the_reconciler_reads_of_a_pod(odd);
  EXPECT_EQ(odd, "x");
}

}  // namespace COMMGATE_TEST_UNIT
// A snapshot wakes the suspended jobs only when what their decision reads changed.
TEST(DecisionInputsOf, ChangeWithPolicySpecsProfilesAndNamespaceLabelsButNotPolicyStatus) {
  Snapshot base;
  CommPolicy policy;
  policy.metadata.name = "team";
  policy.metadata.generation = 3;
  policy.metadata.resource_version = "100";
  base.policies.push_back(policy);
  CommProfile profile;
  profile.metadata.name = "pool-1a2b";
  profile.metadata.resource_version = "200";
  base.profiles["pool-1a2b"] = profile;
  base.namespace_labels["research"] = {{"team", "vision"}};
  const std::string before = decision_inputs_of(base);

  Snapshot counters_written = base;  // a status write: new resourceVersion, same generation
  counters_written.policies[0].metadata.resource_version = "101";
  EXPECT_EQ(decision_inputs_of(counters_written), before);

  Snapshot spec_changed = base;
  spec_changed.policies[0].metadata.generation = 4;
  EXPECT_NE(decision_inputs_of(spec_changed), before);

  Snapshot measured = base;  // a probe result recorded in the profile's status
  measured.profiles["pool-1a2b"].metadata.resource_version = "201";
  EXPECT_NE(decision_inputs_of(measured), before);

  Snapshot relabelled = base;
  relabelled.namespace_labels["research"]["team"] = "nlp";
  EXPECT_NE(decision_inputs_of(relabelled), before);

  Snapshot policy_deleted = base;
  policy_deleted.policies.clear();
  EXPECT_NE(decision_inputs_of(policy_deleted), before);

  Snapshot node_changed = base;  // a node's summary changed (the pool check reads them)
  node_changed.nodes_generation = base.nodes_generation + 1;
  EXPECT_NE(decision_inputs_of(node_changed), before);
}

}  // namespace commgate::op
