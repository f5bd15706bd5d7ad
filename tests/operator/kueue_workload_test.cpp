// operator/kueue_workload.h: a Kueue v1beta2 Workload read into what the check uses, from
// Workloads built as Kueue builds them for the upstream example jobs; malformed input
// named by field path; other API versions refused.
#include "operator/kueue_workload.h"

#include <gtest/gtest.h>

#include "tests/crds/schema_check.h"
#include "tests/operator/kueue_test_workloads.h"

namespace commgate::op::kueue {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using testing::a_job_workload;
using testing::a_jobset_workload;
using testing::a_pytorchjob_workload;
using testing::a_trainjob_workload;
using testing::WorkloadBuilder;

struct FixtureCase {
  std::string name;
  WorkloadBuilder workload;
  std::string want_owner_kind;
  std::string want_owner_group;
  std::vector<std::string> want_pod_sets;
  std::vector<int64_t> want_counts;
  std::vector<double> want_gpus;
};

void PrintTo(const FixtureCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<FixtureCase> fixture_cases() {
  return {
      {.name = "pytorchjob_has_master_and_worker_pod_sets",
       .workload = a_pytorchjob_workload(8, 3),
       .want_owner_kind = "PyTorchJob",
       .want_owner_group = "kubeflow.org",
       .want_pod_sets = {"master", "worker"},
       .want_counts = {1, 3},
       .want_gpus = {8, 8}},
      {.name = "trainjob_has_its_initializers_and_the_node_pod_set",
       .workload = a_trainjob_workload(2),
       .want_owner_kind = "TrainJob",
       .want_owner_group = "trainer.kubeflow.org",
       .want_pod_sets = {"dataset-initializer", "model-initializer", "node"},
       .want_counts = {1, 1, 3},
       .want_gpus = {0, 0, 2}},
      {.name = "jobset_has_a_pod_set_per_replicated_job",
       .workload = a_jobset_workload(1),
       .want_owner_kind = "JobSet",
       .want_owner_group = "jobset.x-k8s.io",
       .want_pod_sets = {"workers"},
       .want_counts = {4},
       .want_gpus = {1}},
      {.name = "batch_job_has_the_main_pod_set",
       .workload = a_job_workload(),
       .want_owner_kind = "Job",
       .want_owner_group = "batch",
       .want_pod_sets = {"main"},
       .want_counts = {3},
       .want_gpus = {1}},
  };
}

class WorkloadFixtureTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(WorkloadFixtureTest, reads_owner_and_pod_sets) {
  const FixtureCase& c = GetParam();
  const Workload wl = read_workload(c.workload.build());
  ASSERT_TRUE(wl.owner.has_value());
  EXPECT_EQ(wl.owner->kind, c.want_owner_kind);
  EXPECT_EQ(wl.owner->group(), c.want_owner_group);
  EXPECT_EQ(wl.owner->uid, "job-uid-1");
  std::vector<std::string> names;
  std::vector<int64_t> counts;
  std::vector<double> gpus;
  for (const PodSet& ps : wl.pod_sets) {
    names.push_back(ps.name);
    counts.push_back(ps.count);
    gpus.push_back(ps.gpus_per_pod);
  }
  EXPECT_EQ(names, c.want_pod_sets);
  EXPECT_EQ(counts, c.want_counts);
  EXPECT_EQ(gpus, c.want_gpus);
}

// The test Workloads are what the API server would store: the Kueue v0.19.2 CRD's v1beta2
// schema accepts them, so the reader is tested on the CRD's own field names.
TEST_P(WorkloadFixtureTest, the_built_workload_passes_the_upstream_crd_schema) {
  const FixtureCase& c = GetParam();
  const json doc = c.workload.build();
  const auto issues = commgate::testing::validate(testing::workload_v1beta2_schema(), doc);
  EXPECT_TRUE(issues.empty()) << commgate::testing::to_string(issues);
}

INSTANTIATE_TEST_SUITE_P(KueueWorkload, WorkloadFixtureTest, ::testing::ValuesIn(fixture_cases()),
                         [](const ::testing::TestParamInfo<FixtureCase>& p) {
                           return p.param.name;
                         });

TEST(KueueWorkload, reads_metadata_status_and_admission) {
  const json doc =
      a_pytorchjob_workload(8, 3)
          .reserved("team-a-cq")
          .condition("Admitted", false)
          .assignment("worker", "delayedTopologyRequest", "Pending")
          .assignment("master", "topologyAssignment",
                      testing::hostname_assignment("gpu-node-", {"7"}))
          .check("prov", "Ready", "provisioned")
          .check("comm", "Retry", "probe failed", 120)
          .set("/status/admissionChecks/1/retryCount", 2)
          .set("/status/admissionChecks/0/podSetUpdates",
               json::array({{{"name", "worker"}, {"nodeSelector", {{"pool", "a"}}}}}))
          .set("/spec/podSets/1/template/spec/nodeSelector", {{"cloud.example.com/pool", "a100"}})
          .build();
  const Workload wl = read_workload(doc);
  EXPECT_EQ(wl.metadata.name, "job-train-1a2b3");
  EXPECT_EQ(wl.metadata.namespace_, "ml");
  EXPECT_EQ(wl.metadata.uid, "wl-uid-1");
  EXPECT_EQ(wl.metadata.resource_version, "4711");
  EXPECT_TRUE(wl.active);
  EXPECT_TRUE(wl.conditions.quota_reserved);
  EXPECT_FALSE(wl.conditions.admitted);
  EXPECT_FALSE(wl.conditions.finished);
  EXPECT_FALSE(wl.conditions.evicted);

  ASSERT_TRUE(wl.admission.has_value());
  EXPECT_EQ(wl.admission->cluster_queue, "team-a-cq");
  const PodSetAssignment* worker = wl.admission->find("worker");
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->count, 3);
  EXPECT_EQ(worker->flavors.at("nvidia.com/gpu"), "gpu-a100");
  EXPECT_EQ(worker->delayed_topology_request, DelayedTopology::kPending);
  EXPECT_FALSE(worker->topology_assignment.has_value());
  const PodSetAssignment* master = wl.admission->find("master");
  ASSERT_NE(master, nullptr);
  ASSERT_TRUE(master->topology_assignment.has_value());
  EXPECT_EQ(master->topology_assignment->hostnames(), std::vector<std::string>{"gpu-node-7"});
  EXPECT_EQ(wl.pod_set("worker")->node_selector.at("cloud.example.com/pool"), "a100");

  ASSERT_EQ(wl.admission_checks.size(), 2u);
  const AdmissionCheckState* comm = wl.check("comm");
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->state, CheckState::kRetry);
  EXPECT_EQ(comm->message, "probe failed");
  EXPECT_EQ(comm->requeue_after_seconds, 120);
  EXPECT_EQ(comm->retry_count, 2);
  EXPECT_EQ(comm->last_transition_time, parse_rfc3339("2026-11-30T17:00:00Z"));
  EXPECT_EQ(wl.check("prov")->pod_set_updates[0]["nodeSelector"]["pool"], "a");
  EXPECT_TRUE(wl.check("comm")->pod_set_updates.is_null());
  EXPECT_EQ(wl.check("absent"), nullptr);
}

TEST(KueueWorkload, each_condition_counts_only_when_true) {
  const Workload wl = read_workload(a_job_workload()
                                        .condition("QuotaReserved", true)
                                        .condition("Admitted", true)
                                        .condition("Finished", false)
                                        .condition("Evicted", true)
                                        .build());
  EXPECT_TRUE(wl.conditions.quota_reserved);
  EXPECT_TRUE(wl.conditions.admitted);
  EXPECT_FALSE(wl.conditions.finished);
  EXPECT_TRUE(wl.conditions.evicted);
}

TEST(KueueWorkload, absent_fields_take_the_crd_defaults) {
  const Workload wl = read_workload(a_job_workload()
                                        .remove("/spec/active")
                                        .remove("/spec/podSets/0/name")
                                        .remove("/spec/podSets/0/count")
                                        .build());
  EXPECT_TRUE(wl.active);
  ASSERT_EQ(wl.pod_sets.size(), 1u);
  EXPECT_EQ(wl.pod_sets[0].name, "main");
  EXPECT_EQ(wl.pod_sets[0].count, 1);
  EXPECT_FALSE(wl.admission.has_value());
  EXPECT_TRUE(wl.admission_checks.empty());
}

TEST(KueueWorkload, inactive_workload_reads_inactive) {
  EXPECT_FALSE(read_workload(a_job_workload().active(false).build()).active);
}

TEST(KueueWorkload, the_admitted_count_is_the_assignments_else_the_specs) {
  const Workload partial = read_workload(
      a_pytorchjob_workload(8, 3).reserved().assignment("worker", "count", 2).build());
  EXPECT_EQ(partial.admitted_count("worker"), 2);
  EXPECT_EQ(partial.admitted_count("master"), 1);
  EXPECT_EQ(partial.admitted_count("absent"), 0);
  const Workload old = read_workload(a_pytorchjob_workload(8, 3)
                                         .reserved()
                                         .remove("/status/admission/podSetAssignments/1/count")
                                         .build());
  EXPECT_EQ(old.admitted_count("worker"), 3);
}

TEST(KueueWorkload, the_owner_is_the_controller_reference) {
  json doc = a_job_workload().build();
  const json config_map = {
      {"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "x"}, {"uid", "cm-uid"}};
  json& refs = doc["metadata"]["ownerReferences"];
  refs.insert(refs.begin(), config_map);
  const Workload wl = read_workload(doc);
  ASSERT_TRUE(wl.owner.has_value());
  EXPECT_EQ(wl.owner->kind, "Job");
  EXPECT_FALSE(read_workload(a_job_workload().remove("/metadata/ownerReferences").build())
                   .owner.has_value());
}

struct BadCase {
  std::string name;
  WorkloadBuilder workload;
  std::string want_path;
  std::string want_message;  // substring
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<BadCase> bad_cases() {
  const auto reserved = [] { return a_pytorchjob_workload(8, 3).reserved(); };
  return {
      {"unknown_check_state", reserved().check("comm", "Done"), "status.admissionChecks[0].state",
       "must be one of Pending, Ready, Retry, Rejected, got \"Done\""},
      {"negative_pod_set_count", a_job_workload().set("/spec/podSets/0/count", -1),
       "spec.podSets[0].count", "must be >= 0, got -1"},
      {"active_not_a_boolean", a_job_workload().set("/spec/active", "yes"), "spec.active",
       "must be true or false"},
      {"condition_status_not_true_false_unknown",
       a_job_workload().condition("QuotaReserved", true).set("/status/conditions/0/status", "Yes"),
       "status.conditions[0].status", "must be one of True, False, Unknown"},
      {"condition_without_type",
       a_job_workload().condition("QuotaReserved", true).remove("/status/conditions/0/type"),
       "status.conditions[0].type", "required field is missing"},
      {"assignment_count_a_string", reserved().assignment("worker", "count", "3"),
       "status.admission.podSetAssignments[1].count", "must be an integer"},
      {"unknown_delayed_topology_state",
       reserved().assignment("worker", "delayedTopologyRequest", "Later"),
       "status.admission.podSetAssignments[1].delayedTopologyRequest",
       "must be one of Pending, Ready"},
      {"topology_pod_counts_shorter_than_the_domains",
       reserved().assignment(
           "worker", "topologyAssignment",
           json{{"levels", {"kubernetes.io/hostname"}},
                {"slices",
                 {{{"domainCount", 2},
                   {"valuesPerLevel", {{{"individual", {{"roots", {"a", "b"}}}}}}},
                   {"podCounts", {{"individual", {1}}}}}}}}),
       "status.admission.podSetAssignments[1].topologyAssignment.slices[0].podCounts.individual",
       "has 1 pod counts, but domainCount is 2"},
      {"owner_reference_without_uid", a_job_workload().remove("/metadata/ownerReferences/0/uid"),
       "metadata.ownerReferences[0].uid", "required field is missing"},
      {"transition_time_not_rfc3339",
       reserved()
           .check("comm", "Pending")
           .set("/status/admissionChecks/0/lastTransitionTime", "yesterday"),
       "status.admissionChecks[0].lastTransitionTime", "must be an RFC 3339 time"},
      {"negative_requeue_after", reserved().check("comm", "Retry", "", -5),
       "status.admissionChecks[0].requeueAfterSeconds", "must be >= 0, got -5"},
      {"check_without_name",
       reserved().check("comm", "Pending").remove("/status/admissionChecks/0/name"),
       "status.admissionChecks[0].name", "required field is missing"},
      {"pod_sets_missing", a_job_workload().remove("/spec/podSets"), "spec.podSets",
       "required field is missing"},
      {"node_selector_value_not_a_string",
       a_job_workload().set("/spec/podSets/0/template/spec/nodeSelector", {{"gpu", true}}),
       "spec.podSets[0].template.spec.nodeSelector.gpu", "must be a string"},
      {"wrong_kind", a_job_workload().set("/kind", "ClusterQueue"), "kind",
       "must be Workload, got \"ClusterQueue\""},
  };
}

class WorkloadBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(WorkloadBadInputTest, names_the_field) {
  const BadCase& c = GetParam();
  try {
    read_workload(c.workload.build());
    FAIL() << "accepted";
  } catch (const UnsupportedWorkloadVersion& e) {
    FAIL() << "refused as another version: " << e.what();
  } catch (const ValidationError& e) {
    bool found = false;
    for (const FieldError& fe : e.errors().all())
      found =
          found || (fe.path == c.want_path && fe.message.find(c.want_message) != std::string::npos);
    EXPECT_TRUE(found) << "want " << c.want_path << ": ..." << c.want_message << "...\ngot "
                       << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(KueueWorkload, WorkloadBadInputTest, ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& p) { return p.param.name; });

TEST(KueueWorkload, reports_every_malformed_field_in_one_pass) {
  try {
    read_workload(a_job_workload()
                      .set("/spec/active", 1)
                      .set("/spec/podSets/0/count", -2)
                      .check("comm", "Maybe")
                      .build());
    FAIL() << "accepted";
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.errors().size(), 3u) << e.what();
  }
}

TEST(KueueWorkload, another_api_version_is_refused_as_unsupported) {
  for (const json& version : {json("kueue.x-k8s.io/v1beta1"), json("kueue.x-k8s.io/v1"), json()}) {
    json doc = a_job_workload().build();
    if (version.is_null())
      doc.erase("apiVersion");
    else
      doc["apiVersion"] = version;
    try {
      read_workload(doc);
      FAIL() << "accepted " << version;
    } catch (const UnsupportedWorkloadVersion& e) {
      ASSERT_EQ(e.errors().size(), 1u);
      EXPECT_EQ(e.errors().all()[0].path, "apiVersion");
      EXPECT_NE(std::string(e.what()).find("kueue.x-k8s.io/v1beta2 Workloads only"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(KueueWorkload, a_document_that_is_not_an_object_is_invalid_not_unsupported) {
  try {
    read_workload(json::array());
    FAIL() << "accepted";
  } catch (const UnsupportedWorkloadVersion&) {
    FAIL() << "read as another version";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("must be a Workload object"), std::string::npos)
        << e.what();
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op::kueue
