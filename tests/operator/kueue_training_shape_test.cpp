// operator/kueue_training_shape.h: which pod sets of a Kueue Workload are the training,
// and the nodes and processes per node they take, for each job kind Kueue queues.
#include "operator/kueue_training_shape.h"

#include <gtest/gtest.h>

#include "tests/operator/kueue_test_workloads.h"

namespace commgate::op::kueue {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using testing::a_job_workload;
using testing::a_jobset_workload;
using testing::a_pytorchjob_workload;
using testing::a_trainjob_workload;
using testing::hostname_assignment;
using testing::WorkloadBuilder;

// The elastic PyTorchJob example (Worker only, 2 replicas), `gpus` GPUs per pod.
WorkloadBuilder elastic_pytorchjob_workload(int gpus) {
  json job =
      testing::ecosystem_fixture("training-operator-v1.9.4/example-elastic-imagenet.yaml").at(0);
  testing::give_gpus(job, gpus);
  WorkloadBuilder b(testing::pytorchjob_pod_sets(job));
  b.owner("kubeflow.org/v1", "PyTorchJob", job["metadata"]["name"]);
  return b;
}

// A JobSet with a CPU "driver" replicated job beside the example's GPU workers.
WorkloadBuilder jobset_with_a_cpu_driver() {
  json jobset = testing::ecosystem_fixture("jobset-v0.12.0/example-pytorch-mnist.yaml").at(0);
  testing::give_gpus(jobset, 4);
  json driver = jobset["spec"]["replicatedJobs"][0];
  driver["name"] = "driver";
  driver["template"]["spec"]["parallelism"] = 1;
  driver["template"]["spec"]["completions"] = 1;
  driver["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = json::object();
  jobset["spec"]["replicatedJobs"].insert(jobset["spec"]["replicatedJobs"].begin(), driver);
  WorkloadBuilder b(testing::jobset_pod_sets(jobset["spec"]["replicatedJobs"]));
  b.owner("jobset.x-k8s.io/v1alpha2", "JobSet", "pytorch");
  return b;
}

// The workers on gpu-node-0 (1 pod) and gpu-node-1 (2 pods).
json two_hosts_one_and_two() {
  json ta = hostname_assignment("gpu-node-", {"0", "1"});
  ta["slices"][0]["podCounts"] = {{"individual", {1, 2}}};
  return ta;
}

struct Case {
  std::string name;
  WorkloadBuilder workload;
  int64_t gpus_per_node;
  JobKind want_kind;
  std::vector<std::string> want_pod_sets;
  int64_t want_pods;
  int64_t want_nodes;
  int64_t want_pods_per_node;
  int64_t want_procs_per_node;
  std::vector<std::string> want_hostnames = {};
  std::string want_basis = "";  // substring
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({.name = "pytorchjob_master_and_workers_each_fill_a_node",
               .workload = a_pytorchjob_workload(8, 3).reserved(),
               .gpus_per_node = 8,
               .want_kind = JobKind::kPyTorchJob,
               .want_pod_sets = {"master", "worker"},
               .want_pods = 4,
               .want_nodes = 4,
               .want_pods_per_node = 1,
               .want_procs_per_node = 8,
               .want_basis = "4 pods of 8 GPUs, one per node on nodes of 8 GPUs"});
  c.push_back({.name = "elastic_pytorchjob_has_workers_only",
               .workload = elastic_pytorchjob_workload(4).reserved(),
               .gpus_per_node = 4,
               .want_kind = JobKind::kPyTorchJob,
               .want_pod_sets = {"worker"},
               .want_pods = 2,
               .want_nodes = 2,
               .want_pods_per_node = 1,
               .want_procs_per_node = 4});
  c.push_back({.name = "one_gpu_pods_are_packed_a_node_full",
               .workload = a_pytorchjob_workload(1, 15).reserved(),
               .gpus_per_node = 8,
               .want_kind = JobKind::kPyTorchJob,
               .want_pod_sets = {"master", "worker"},
               .want_pods = 16,
               .want_nodes = 2,
               .want_pods_per_node = 8,
               .want_procs_per_node = 8,
               .want_basis = "16 pods of 1 GPU packed 8 per node on nodes of 8 GPUs"});
  c.push_back({.name = "packed_pods_that_do_not_fill_the_last_node_still_count_it",
               .workload = a_pytorchjob_workload(2, 4).reserved(),
               .gpus_per_node = 8,
               .want_kind = JobKind::kPyTorchJob,
               .want_pod_sets = {"master", "worker"},
               .want_pods = 5,
               .want_nodes = 2,
               .want_pods_per_node = 4,
               .want_procs_per_node = 8});
  c.push_back({.name = "fewer_pods_than_a_node_holds_take_one_node",
               .workload = a_job_workload().reserved(),
               .gpus_per_node = 4,
               .want_kind = JobKind::kJob,
               .want_pod_sets = {"main"},
               .want_pods = 3,
               .want_nodes = 1,
               .want_pods_per_node = 3,
               .want_procs_per_node = 3});
  c.push_back({.name = "trainjob_counts_the_trainer_not_the_initializers",
               .workload = a_trainjob_workload(2).reserved(),
               .gpus_per_node = 2,
               .want_kind = JobKind::kTrainJob,
               .want_pod_sets = {"node"},
               .want_pods = 3,
               .want_nodes = 3,
               .want_pods_per_node = 1,
               .want_procs_per_node = 2});
  c.push_back({.name = "trainjob_trainer_found_by_the_ancestor_label_on_its_pod_template",
               .workload = a_trainjob_workload(2)
                               .set("/spec/podSets/2/name", "trainer")
                               .set("/spec/podSets/2/template/metadata/labels",
                                    {{"trainer.kubeflow.org/trainjob-ancestor-step", "trainer"}})
                               .reserved(),
               .gpus_per_node = 2,
               .want_kind = JobKind::kTrainJob,
               .want_pod_sets = {"trainer"},
               .want_pods = 3,
               .want_nodes = 3,
               .want_pods_per_node = 1,
               .want_procs_per_node = 2});
  c.push_back({.name = "jobset_counts_replicas_times_parallelism",
               .workload = a_jobset_workload(1).reserved(),
               .gpus_per_node = 1,
               .want_kind = JobKind::kJobSet,
               .want_pod_sets = {"workers"},
               .want_pods = 4,
               .want_nodes = 4,
               .want_pods_per_node = 1,
               .want_procs_per_node = 1});
  c.push_back({.name = "jobset_replicas_multiply_the_count",
               .workload = a_jobset_workload(1).set("/spec/podSets/0/count", 8).reserved(),
               .gpus_per_node = 1,
               .want_kind = JobKind::kJobSet,
               .want_pod_sets = {"workers"},
               .want_pods = 8,
               .want_nodes = 8,
               .want_pods_per_node = 1,
               .want_procs_per_node = 1});
  c.push_back({.name = "jobset_leaves_out_a_cpu_driver",
               .workload = jobset_with_a_cpu_driver().reserved(),
               .gpus_per_node = 4,
               .want_kind = JobKind::kJobSet,
               .want_pod_sets = {"workers"},
               .want_pods = 4,
               .want_nodes = 4,
               .want_pods_per_node = 1,
               .want_procs_per_node = 4});
  c.push_back({.name = "cpu_training_runs_one_pod_per_node",
               .workload = a_jobset_workload(1)
                               .remove("/spec/podSets/0/template/spec/containers/0/resources")
                               .reserved(),
               .gpus_per_node = 8,
               .want_kind = JobKind::kJobSet,
               .want_pod_sets = {"workers"},
               .want_pods = 4,
               .want_nodes = 4,
               .want_pods_per_node = 1,
               .want_procs_per_node = 1,
               .want_basis = "asking for no GPU, one per node"});
  c.push_back({.name = "unknown_node_size_takes_one_pod_per_node",
               .workload = a_pytorchjob_workload(2, 3).reserved(),
               .gpus_per_node = 0,
               .want_kind = JobKind::kPyTorchJob,
               .want_pod_sets = {"master", "worker"},
               .want_pods = 4,
               .want_nodes = 4,
               .want_pods_per_node = 1,
               .want_procs_per_node = 2,
               .want_basis = "the nodes' GPU count is not known"});
  c.push_back({.name = "partial_admission_counts_the_admitted_pods",
               .workload = a_pytorchjob_workload(8, 3).reserved().assignment("worker", "count", 1),
               .gpus_per_node = 8,
               .want_kind = JobKind::kPyTorchJob,
               .want_pod_sets = {"master", "worker"},
               .want_pods = 2,
               .want_nodes = 2,
               .want_pods_per_node = 1,
               .want_procs_per_node = 8});
  c.push_back({.name = "without_an_admission_the_spec_counts",
               .workload = a_pytorchjob_workload(8, 3),
               .gpus_per_node = 8,
               .want_kind = JobKind::kPyTorchJob,
               .want_pod_sets = {"master", "worker"},
               .want_pods = 4,
               .want_nodes = 4,
               .want_pods_per_node = 1,
               .want_procs_per_node = 8});
  c.push_back({.name = "hostname_topology_gives_the_nodes_and_the_fullest_one",
               .workload = a_pytorchjob_workload(1, 3)
                               .reserved()
                               .assignment("master", "topologyAssignment",
                                           hostname_assignment("gpu-node-", {"0"}))
                               .assignment("worker", "topologyAssignment", two_hosts_one_and_two()),
               .gpus_per_node = 8,
               .want_kind = JobKind::kPyTorchJob,
               .want_pod_sets = {"master", "worker"},
               .want_pods = 4,
               .want_nodes = 2,
               .want_pods_per_node = 2,
               .want_procs_per_node = 2,
               .want_hostnames = {"gpu-node-0", "gpu-node-1"},
               .want_basis = "4 pods on the 2 hosts of the topology assignment"});
  c.push_back({.name = "a_training_pod_set_without_hostnames_falls_back_to_packing",
               .workload = a_pytorchjob_workload(1, 3).reserved().assignment(
                   "worker", "topologyAssignment", hostname_assignment("gpu-node-", {"0"}, 3)),
               .gpus_per_node = 8,
               .want_kind = JobKind::kPyTorchJob,
               .want_pod_sets = {"master", "worker"},
               .want_pods = 4,
               .want_nodes = 1,
               .want_pods_per_node = 4,
               .want_procs_per_node = 4});
  return c;
}

class TrainingShapeTest : public ::testing::TestWithParam<Case> {};

TEST_P(TrainingShapeTest, sizes_the_training) {
  const Case& c = GetParam();
  const TrainingShape s = training_shape(read_workload(c.workload.build()), c.gpus_per_node);
  EXPECT_EQ(to_string(s.kind), std::string(to_string(c.want_kind)));
  EXPECT_EQ(s.pod_sets, c.want_pod_sets);
  EXPECT_EQ(s.pods, c.want_pods);
  EXPECT_EQ(s.nodes, c.want_nodes) << s.basis;
  EXPECT_EQ(s.pods_per_node, c.want_pods_per_node) << s.basis;
  EXPECT_EQ(s.procs_per_node, c.want_procs_per_node) << s.basis;
  EXPECT_EQ(s.hostnames, c.want_hostnames);
  EXPECT_NE(s.basis.find(c.want_basis), std::string::npos) << s.basis;
}

INSTANTIATE_TEST_SUITE_P(KueueTrainingShape, TrainingShapeTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

struct BadCase {
  std::string name;
  WorkloadBuilder workload;
  int64_t gpus_per_node;
  std::string want_path;
  std::string want_message;  // substring
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<BadCase> bad_cases() {
  return {
      {"a_workload_without_an_owner",
       a_job_workload().remove("/metadata/ownerReferences").reserved(), 8,
       "metadata.ownerReferences", "no controller owner"},
      {"an_owner_kind_commgate_does_not_size",
       a_job_workload().owner("ray.io/v1", "RayJob").reserved(), 8, "metadata.ownerReferences",
       "the owner is a RayJob (ray.io/v1)"},
      {"a_kind_of_another_group_is_not_that_kind",
       a_job_workload().owner("example.com/v1", "Job").reserved(), 8, "metadata.ownerReferences",
       "the owner is a Job (example.com/v1)"},
      {"a_pytorchjob_workload_without_master_or_worker",
       a_pytorchjob_workload()
           .set("/spec/podSets/0/name", "launcher")
           .set("/spec/podSets/1/name", "chief"),
       8, "spec.podSets", "got launcher, chief"},
      {"a_trainjob_without_a_trainer_pod_set",
       a_trainjob_workload().set("/spec/podSets/2/name", "trainer-0"), 2, "spec.podSets",
       "none is named node; got dataset-initializer, model-initializer, trainer-0"},
      {"a_trainjob_with_two_trainer_pod_sets",
       a_trainjob_workload()
           .set("/spec/podSets/0/template/metadata/labels",
                {{"trainer.kubeflow.org/trainjob-ancestor-step", "trainer"}})
           .set("/spec/podSets/2/template/metadata/annotations",
                {{"trainer.kubeflow.org/trainjob-ancestor-step", "trainer"}}),
       2, "spec.podSets[2]", "a TrainJob has one trainer"},
      {"master_and_workers_asking_different_gpus",
       a_pytorchjob_workload(8, 3).set(
           "/spec/podSets/0/template/spec/containers/0/resources/limits/nvidia.com~1gpu", 4),
       8, "spec.podSets[1].template.spec",
       "its pods ask for 8 nvidia.com/gpu each, those of master for 4"},
      {"pods_whose_gpus_do_not_divide_a_node", a_pytorchjob_workload(3, 3), 8,
       "spec.podSets[0].template.spec",
       "does not divide the nodes' 8 GPUs: each node would keep 2 GPUs no pod can take"},
      {"pods_larger_than_a_node", a_pytorchjob_workload(16, 1), 8, "spec.podSets[0].template.spec",
       "ask for 16 GPUs each, but the nodes have 8 GPUs: no node can run one"},
      {"a_fraction_of_a_gpu",
       a_job_workload().set(
           "/spec/podSets/0/template/spec/containers/0/resources/requests/nvidia.com~1gpu", "500m"),
       8, "spec.podSets[0].template.spec", "GPUs are whole devices"},
      {"training_admitted_with_no_pods",
       a_pytorchjob_workload()
           .reserved()
           .assignment("master", "count", 0)
           .assignment("worker", "count", 0),
       8, "spec.podSets", "the training pod sets (master, worker) were admitted with no pods"},
  };
}

class TrainingShapeBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(TrainingShapeBadInputTest, says_why) {
  const BadCase& c = GetParam();
  const Workload wl = read_workload(c.workload.build());
  try {
    training_shape(wl, c.gpus_per_node);
    FAIL() << "sized";
  } catch (const ValidationError& e) {
    ASSERT_EQ(e.errors().size(), 1u) << e.what();
    EXPECT_EQ(e.errors().all()[0].path, c.want_path);
    EXPECT_NE(e.errors().all()[0].message.find(c.want_message), std::string::npos)
        << "want message containing: " << c.want_message << "\n got: " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(KueueTrainingShape, TrainingShapeBadInputTest,
                         ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& p) { return p.param.name; });

TEST(KueueTrainingShape, job_kinds_are_matched_by_group_and_kind) {
  EXPECT_EQ(job_kind_of({"kubeflow.org/v1", "PyTorchJob", "a", "u"}), JobKind::kPyTorchJob);
  EXPECT_EQ(job_kind_of({"trainer.kubeflow.org/v1alpha1", "TrainJob", "a", "u"}),
            JobKind::kTrainJob);
  EXPECT_EQ(job_kind_of({"jobset.x-k8s.io/v1alpha2", "JobSet", "a", "u"}), JobKind::kJobSet);
  EXPECT_EQ(job_kind_of({"batch/v1", "Job", "a", "u"}), JobKind::kJob);
  EXPECT_EQ(job_kind_of({"v1", "Pod", "a", "u"}), std::nullopt);
  EXPECT_EQ(job_kind_of({"kubeflow.org/v1", "TFJob", "a", "u"}), std::nullopt);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op::kueue
