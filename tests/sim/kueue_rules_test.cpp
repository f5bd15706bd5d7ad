// The Kueue stand-in's pure rules (sim/kueue_workloads.h, sim/kueue_quota.h,
// sim/kueue_admission.h), table-driven, with cases from kubernetes-sigs/kueue v0.19.2's
// own tests where they exist (workload_names_test.go).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "core/yaml_json.h"
#include "sim/kueue_admission.h"
#include "sim/kueue_quota.h"
#include "sim/kueue_workloads.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

const KueueJobKind& batch_job_kind() {
  return kueue_job_kinds().at(0);
}
const KueueJobKind& pytorchjob_kind() {
  return kueue_job_kinds().at(1);
}

json ecosystem_example(const std::string& relative) {
  std::ifstream in(std::filesystem::path(COMMGATE_SOURCE_DIR) / "../shared/fixtures/ecosystem" /
                   relative);
  std::stringstream text;
  text << in.rdbuf();
  return yaml_documents_to_json(text.str()).at(0);
}

TEST(KueueWorkloadsTest, workload_names_are_upstreams) {
  const std::string long_name =
      "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-"
      "department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-"
      "engineering-team-lead-senior-architect-validation-checked-approved-by-legal-and-ops-dept";
  struct Case {
    std::string owner, uid, kind, group, want;
  } cases[] = {
      {"name", "uid", "Job", "batch", "job-name-ef3a1"},
      {long_name, "uid", "Job", "batch",
       "job-marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-"
       "sub-department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-"
       "revision-by-engineering-team-lead-senior-architect-validation-checked-approved-by-l-"
       "218b8"},
      {"pytorch-simple", "abc", "PyTorchJob", "kubeflow.org", "pytorchjob-pytorch-simple-f459e"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(kueue_workload_name(c.owner, c.uid, c.kind, c.group), c.want) << c.owner;
}

TEST(KueueWorkloadsTest, pod_sets_per_kind) {
  json job = ecosystem_example("kueue-v0.19.2/example-sample-job.yaml");
  job["metadata"]["name"] = "sample";
  job["metadata"]["uid"] = "u1";
  struct Case {
    const char* what;
    json parallelism, completions;
    int want;
  } cases[] = {{"parallelism 3, completions 3", 3, 3, 3},
               {"completions below parallelism", 3, 2, 2},
               {"no parallelism", nullptr, nullptr, 1}};
  for (const auto& c : cases) {
    json j = job;
    j["spec"].erase("parallelism");
    j["spec"].erase("completions");
    if (!c.parallelism.is_null()) j["spec"]["parallelism"] = c.parallelism;
    if (!c.completions.is_null()) j["spec"]["completions"] = c.completions;
    const json sets = kueue_pod_sets(batch_job_kind(), j);
    ASSERT_EQ(sets.size(), 1u) << c.what;
    EXPECT_EQ(sets[0]["name"], "main") << c.what;
    EXPECT_EQ(sets[0]["count"], c.want) << c.what;
  }
  json pj = ecosystem_example("training-operator-v1.9.4/example-simple.yaml");
  pj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3;
  const json sets = kueue_pod_sets(pytorchjob_kind(), pj);
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0]["name"], "master");
  EXPECT_EQ(sets[0]["count"], 1);
  EXPECT_EQ(sets[1]["name"], "worker");
  EXPECT_EQ(sets[1]["count"], 3);
  EXPECT_EQ(sets[1]["template"], pj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]);
}

TEST(KueueWorkloadsTest, workload_is_owned_by_the_job_and_names_its_queue) {
  json pj = ecosystem_example("training-operator-v1.9.4/example-simple.yaml");
  pj["metadata"]["uid"] = "abc";
  pj["metadata"]["labels"][kKueueQueueNameLabel] = "team-a";
  const json wl = kueue_workload_for_job(pytorchjob_kind(), pj);
  EXPECT_EQ(wl["apiVersion"], "kueue.x-k8s.io/v1beta2");
  EXPECT_EQ(wl["metadata"]["name"], "pytorchjob-pytorch-simple-f459e");
  EXPECT_EQ(wl["metadata"]["namespace"], "kubeflow");
  EXPECT_EQ(wl["metadata"]["labels"][kKueueJobUidLabel], "abc");
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0], json({{"apiVersion", "kubeflow.org/v1"},
                                                        {"kind", "PyTorchJob"},
                                                        {"name", "pytorch-simple"},
                                                        {"uid", "abc"},
                                                        {"controller", true},
                                                        {"blockOwnerDeletion", true}}));
  EXPECT_EQ(wl["spec"]["queueName"], "team-a");
  EXPECT_EQ(wl["spec"]["podSets"].size(), 2u);
}

TEST(KueueWorkloadsTest, start_merges_flavor_labels_and_stop_restores_the_templates) {
  json pj = ecosystem_example("training-operator-v1.9.4/example-simple.yaml");
  pj["spec"]["runPolicy"]["suspend"] = true;
  pj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] = {{"team", "a"}};
  json wl = kueue_workload_for_job(pytorchjob_kind(), pj);
  wl["status"]["admission"] = {
      {"clusterQueue", "cq"},
      {"podSetAssignments",
       {{{"name", "master"}, {"flavors", {{"nvidia.com/gpu", "h100"}}}, {"count", 1}},
        {{"name", "worker"}, {"flavors", {{"nvidia.com/gpu", "h100"}}}, {"count", 1}}}}};
  wl["status"]["admissionChecks"] = {
      {{"name", "comm"},
       {"state", "Ready"},
       {"podSetUpdates", {{{"name", "worker"}, {"annotations", {{"commgate.io/pool", "p1"}}}}}}}};
  const json flavors = {{"h100", {{"spec", {{"nodeLabels", {{"gpu", "h100"}}}}}}}};
  const json infos = kueue_pod_set_infos(wl, flavors);
  EXPECT_TRUE(kueue_job_suspended(pytorchjob_kind(), pj));
  json started = kueue_started_job(pytorchjob_kind(), pj, infos);
  EXPECT_FALSE(kueue_job_suspended(pytorchjob_kind(), started));
  json& worker = started["spec"]["pytorchReplicaSpecs"]["Worker"]["template"];
  EXPECT_EQ(worker["spec"]["nodeSelector"], json({{"team", "a"}, {"gpu", "h100"}}));
  EXPECT_EQ(worker["metadata"]["annotations"], json({{"commgate.io/pool", "p1"}}));
  EXPECT_EQ(started["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["nodeSelector"],
            json({{"gpu", "h100"}}));

  json stopped = kueue_stopped_job(pytorchjob_kind(), started, wl);
  EXPECT_TRUE(kueue_job_suspended(pytorchjob_kind(), stopped));
  EXPECT_EQ(stopped["spec"]["pytorchReplicaSpecs"], pj["spec"]["pytorchReplicaSpecs"]);

  json job = ecosystem_example("kueue-v0.19.2/example-sample-job.yaml");
  job["spec"]["suspend"] = true;
  json job_started =
      kueue_started_job(batch_job_kind(), job, {{"main", {{"nodeSelector", {{"gpu", "h100"}}}}}});
  EXPECT_EQ(job_started["spec"]["suspend"], false);
  EXPECT_EQ(job_started["spec"]["template"]["spec"]["nodeSelector"], json({{"gpu", "h100"}}));
}

// JobSet and TrainJob (jobset_controller.go, trainjob_controller.go with trainer v2.2.1's
// runtime builder), from the upstream examples in the fixtures plus a queue label.
json queued_jobset() {
  json js = ecosystem_example("jobset-v0.12.0/example-pytorch-mnist.yaml");
  js["metadata"]["namespace"] = "team";
  js["metadata"]["uid"] = "u1";
  js["metadata"]["labels"][kKueueQueueNameLabel] = "user-queue";
  js["spec"]["suspend"] = true;
  return js;
}

json queued_trainjob() {
  json tj = ecosystem_example("trainer-v2.3.0/example-03-kueue-integration.yaml");
  tj["metadata"]["namespace"] = "team";
  tj["metadata"]["uid"] = "u2";
  tj["metadata"]["labels"][kKueueQueueNameLabel] = "user-queue";
  return tj;
}

json torch_distributed_runtime() {
  return ecosystem_example("trainer-v2.3.0/runtime-torch_distributed.yaml");
}

TEST(KueueWorkloadsTest, new_kinds_are_known_by_name) {
  EXPECT_EQ(kueue_job_kind("JobSet").api_version(), "jobset.x-k8s.io/v1alpha2");
  EXPECT_EQ(kueue_job_kind("JobSet").plural, "jobsets");
  EXPECT_EQ(kueue_job_kind("TrainJob").api_version(), "trainer.kubeflow.org/v1alpha1");
  EXPECT_EQ(kueue_job_kind("TrainJob").plural, "trainjobs");
  EXPECT_THROW(kueue_job_kind("RayJob"), std::invalid_argument);
  // workload_names.go: the hash covers the kind and group of the new kinds too.
  EXPECT_EQ(kueue_workload_name("pytorch", "u1", "JobSet", "jobset.x-k8s.io"),
            "jobset-pytorch-6ee37");
  EXPECT_EQ(kueue_workload_name("kueue-example", "u2", "TrainJob", "trainer.kubeflow.org"),
            "trainjob-kueue-example-7f661");
}

TEST(KueueWorkloadsTest, jobset_pod_sets_one_per_replicated_job) {
  const KueueJobKind& kind = kueue_job_kind("JobSet");
  struct Case {
    const char* what;
    json replicas, parallelism, completions;
    int want;
  } cases[] = {
      {"the example: parallelism 4, completions 4", nullptr, 4, 4, 4},
      {"2 replicas of 4 pods", 2, 4, 4, 8},
      {"completions cap parallelism", 3, 4, 2, 6},
      {"no parallelism: one pod per replica", 2, nullptr, nullptr, 2},
      {"completions above parallelism", nullptr, 2, 5, 2},
  };
  for (const auto& c : cases) {
    json js = queued_jobset();
    json& rj = js["spec"]["replicatedJobs"][0];
    rj.erase("replicas");
    rj["template"]["spec"].erase("parallelism");
    rj["template"]["spec"].erase("completions");
    if (!c.replicas.is_null()) rj["replicas"] = c.replicas;
    if (!c.parallelism.is_null()) rj["template"]["spec"]["parallelism"] = c.parallelism;
    if (!c.completions.is_null()) rj["template"]["spec"]["completions"] = c.completions;
    const json sets = kueue_pod_sets(kind, js);
    ASSERT_EQ(sets.size(), 1u) << c.what;
    EXPECT_EQ(sets[0]["name"], "workers") << c.what;
    EXPECT_EQ(sets[0]["count"], c.want) << c.what;
    EXPECT_EQ(sets[0]["template"], rj["template"]["spec"]["template"]) << c.what;
  }
  // Several replicated jobs: one pod set each, in the JobSet's order.
  json js = queued_jobset();
  json driver = js["spec"]["replicatedJobs"][0];
  driver["name"] = "driver";
  driver["template"]["spec"]["parallelism"] = 1;
  driver["template"]["spec"]["completions"] = 1;
  js["spec"]["replicatedJobs"].insert(js["spec"]["replicatedJobs"].begin(), driver);
  const json sets = kueue_pod_sets(kind, js);
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0]["name"], "driver");
  EXPECT_EQ(sets[0]["count"], 1);
  EXPECT_EQ(sets[1]["name"], "workers");
  EXPECT_EQ(sets[1]["count"], 4);

  const json wl = kueue_workload_for_job(kind, queued_jobset());
  EXPECT_EQ(wl["metadata"]["name"], "jobset-pytorch-6ee37");
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["apiVersion"], "jobset.x-k8s.io/v1alpha2");
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["kind"], "JobSet");
  EXPECT_EQ(wl["spec"]["queueName"], "user-queue");
}

TEST(KueueWorkloadsTest, jobset_start_merges_into_each_replicated_job_and_stop_restores) {
  const KueueJobKind& kind = kueue_job_kind("JobSet");
  json js = queued_jobset();
  js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {
      {"team", "a"}};
  json wl = kueue_workload_for_job(kind, js);
  wl["status"]["admission"] = {
      {"clusterQueue", "cq"},
      {"podSetAssignments",
       {{{"name", "workers"}, {"flavors", {{"nvidia.com/gpu", "h100"}}}, {"count", 4}}}}};
  wl["status"]["admissionChecks"] = {
      {{"name", "comm"},
       {"state", "Ready"},
       {"podSetUpdates", {{{"name", "workers"}, {"labels", {{"commgate.io/pool", "p1"}}}}}}}};
  const json infos =
      kueue_pod_set_infos(wl, {{"h100", {{"spec", {{"nodeLabels", {{"gpu", "h100"}}}}}}}});
  EXPECT_TRUE(kueue_job_suspended(kind, js));
  const json started = kueue_started_job(kind, js, infos);
  EXPECT_FALSE(kueue_job_suspended(kind, started));
  EXPECT_EQ(started["spec"]["suspend"], false);
  const json& pod = started["spec"]["replicatedJobs"][0]["template"]["spec"]["template"];
  EXPECT_EQ(pod["spec"]["nodeSelector"], json({{"team", "a"}, {"gpu", "h100"}}));
  EXPECT_EQ(pod["metadata"]["labels"], json({{"commgate.io/pool", "p1"}}));
  const json stopped = kueue_stopped_job(kind, started, wl);
  EXPECT_TRUE(kueue_job_suspended(kind, stopped));
  EXPECT_EQ(stopped["spec"]["replicatedJobs"], js["spec"]["replicatedJobs"]);
}

TEST(KueueWorkloadsTest, jobset_and_trainjob_activity_and_completion) {
  struct Case {
    const char* kind;
    json status;
    bool want_active, want_finished;
  } cases[] = {
      {"JobSet", json::object(), false, false},
      {"JobSet", {{"replicatedJobsStatus", {{{"name", "workers"}, {"active", 2}}}}}, true, false},
      {"JobSet", {{"replicatedJobsStatus", {{{"name", "workers"}, {"active", 0}}}}}, false, false},
      {"JobSet", {{"conditions", {{{"type", "Completed"}, {"status", "True"}}}}}, false, true},
      {"JobSet", {{"conditions", {{{"type", "Failed"}, {"status", "True"}}}}}, false, true},
      {"JobSet", {{"conditions", {{{"type", "Complete"}, {"status", "True"}}}}}, false, false},
      {"TrainJob", {{"jobsStatus", {{{"name", "node"}, {"active", 3}}}}}, true, false},
      {"TrainJob", {{"jobsStatus", {{{"name", "node"}, {"succeeded", 3}}}}}, false, false},
      {"TrainJob", {{"conditions", {{{"type", "Complete"}, {"status", "True"}}}}}, false, true},
      {"TrainJob", {{"conditions", {{{"type", "Failed"}, {"status", "True"}}}}}, false, true},
      {"TrainJob", {{"conditions", {{{"type", "Completed"}, {"status", "True"}}}}}, false, false},
  };
  for (const auto& c : cases) {
    const json job = {{"spec", json::object()}, {"status", c.status}};
    EXPECT_EQ(kueue_job_active(kueue_job_kind(c.kind), job), c.want_active)
        << c.kind << " " << c.status.dump();
    EXPECT_EQ(kueue_job_finished(kueue_job_kind(c.kind), job), c.want_finished)
        << c.kind << " " << c.status.dump();
  }
}

TEST(KueueWorkloadsTest, trainjob_pod_sets_come_from_the_runtime_with_the_trainjob_applied) {
  const KueueJobKind& kind = kueue_job_kind("TrainJob");
  const json tj = queued_trainjob();
  const json runtime = torch_distributed_runtime();

  // example-03 on torch-distributed: the trainer "node" with the TrainJob's numNodes,
  // image, command and resourcesPerNode.
  json sets = kueue_pod_sets(kind, tj, runtime);
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0]["name"], "node");
  EXPECT_EQ(sets[0]["count"], 3);
  const json& node = sets[0]["template"]["spec"]["containers"][0];
  EXPECT_EQ(node["name"], "node");
  EXPECT_EQ(node["image"], "python:3.11-slim");
  EXPECT_EQ(node["command"], tj["spec"]["trainer"]["command"]);
  EXPECT_EQ(node["resources"], tj["spec"]["trainer"]["resourcesPerNode"]);
  // The ancestor label is on the runtime's Job template, not its pod template: the
  // Workload's pod set does not carry it (a reader finds the trainer by the name "node").
  EXPECT_FALSE(sets[0]["template"].contains("metadata"));

  struct Case {
    const char* what;
    std::function<void(json& train_job, json& runtime)> change;
    std::vector<std::pair<std::string, int>> want;  // name, count
  } cases[] = {
      {"example-01: no image, the runtime's stays",
       [](json& t, json&) { t = ecosystem_example("trainer-v2.3.0/example-01-multi-node.yaml"); },
       {{"node", 3}}},
      {"no numNodes: the runtime's mlPolicy.numNodes",
       [](json& t, json& r) {
         t["spec"]["trainer"].erase("numNodes");
         r["spec"]["mlPolicy"]["numNodes"] = 2;
       },
       {{"node", 2}}},
      {"no numNodes, mlPolicy without numNodes: 1",
       [](json& t, json& r) {
         t["spec"]["trainer"].erase("numNodes");
         r["spec"]["mlPolicy"].erase("numNodes");
       },
       {{"node", 1}}},
      {"no numNodes, no mlPolicy: the Job's parallelism",
       [](json& t, json& r) {
         t["spec"]["trainer"].erase("numNodes");
         r["spec"].erase("mlPolicy");
         r["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] = 4;
       },
       {{"node", 4}}},
      {"the trainer's replicas forced to 1",
       [](json&, json& r) { r["spec"]["template"]["spec"]["replicatedJobs"][0]["replicas"] = 3; },
       {{"node", 3}}},
      {"an initializer first, one replica; another step's replicas kept",
       [](json&, json& r) {
         json& jobs = r["spec"]["template"]["spec"]["replicatedJobs"];
         json init = jobs[0];
         init["name"] = "dataset-initializer";
         init["replicas"] = 2;
         init["template"]["metadata"]["labels"][kTrainJobAncestorLabel] = "dataset-initializer";
         init["template"]["spec"]["parallelism"] = 1;
         init["template"]["spec"]["template"]["spec"]["containers"][0]["name"] =
             "dataset-initializer";
         json sidecar = jobs[0];
         sidecar["name"] = "launcher";
         sidecar["replicas"] = 2;
         sidecar["template"].erase("metadata");
         sidecar["template"]["spec"]["parallelism"] = 2;
         jobs.insert(jobs.begin(), init);
         jobs.push_back(sidecar);
       },
       {{"dataset-initializer", 1}, {"node", 3}, {"launcher", 4}}},
  };
  for (const auto& c : cases) {
    json t = queued_trainjob(), r = torch_distributed_runtime();
    c.change(t, r);
    const json got = kueue_pod_sets(kind, t, r);
    ASSERT_EQ(got.size(), c.want.size()) << c.what;
    for (std::size_t i = 0; i < c.want.size(); ++i) {
      EXPECT_EQ(got[i]["name"], c.want[i].first) << c.what;
      EXPECT_EQ(got[i]["count"], c.want[i].second) << c.what;
    }
  }
  // example-01 sets no image: the runtime's image stays; its command replaces none.
  json t1 = ecosystem_example("trainer-v2.3.0/example-01-multi-node.yaml");
  const json c1 = kueue_pod_sets(kind, t1, runtime)[0]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c1["image"], runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]
                                ["spec"]["template"]["spec"]["containers"][0]["image"]);
  EXPECT_EQ(c1["command"], t1["spec"]["trainer"]["command"]);
  EXPECT_FALSE(c1.contains("resources"));
  // Only the trainer's "node" container takes the TrainJob's settings; env is upserted.
  json t2 = queued_trainjob(), r2 = torch_distributed_runtime();
  json& containers = r2["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
                       ["template"]["spec"]["containers"];
  containers[0]["env"] = {{{"name", "A"}, {"value", "runtime"}}, {{"name", "B"}, {"value", "b"}}};
  containers.push_back({{"name", "sidecar"}, {"image", "busybox"}});
  t2["spec"]["trainer"]["env"] = {{{"name", "A"}, {"value", "job"}},
                                  {{"name", "C"}, {"value", "c"}}};
  const json got2 = kueue_pod_sets(kind, t2, r2)[0]["template"]["spec"]["containers"];
  EXPECT_EQ(got2[0]["env"], json::parse(R"([{"name": "A", "value": "job"},
      {"name": "B", "value": "b"}, {"name": "C", "value": "c"}])"));
  EXPECT_EQ(got2[1], json({{"name", "sidecar"}, {"image", "busybox"}}));

  // Without its runtime there are no pod sets: the error names the field.
  try {
    kueue_pod_sets(kind, tj);
    ADD_FAILURE() << "no error without the runtime";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("spec.runtimeRef"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("torch-distributed"), std::string::npos) << e.what();
  }

  const json wl = kueue_workload_for_job(kind, tj, runtime);
  EXPECT_EQ(wl["metadata"]["name"], "trainjob-kueue-example-7f661");
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["apiVersion"], "trainer.kubeflow.org/v1alpha1");
  EXPECT_EQ(wl["spec"]["queueName"], "user-queue");
  EXPECT_EQ(wl["spec"]["podSets"], sets);
}

TEST(KueueWorkloadsTest, trainjob_start_writes_kueues_runtime_patch_and_stop_empties_it) {
  const KueueJobKind& kind = kueue_job_kind("TrainJob");
  json tj = queued_trainjob();
  const json user_patch = {
      {"manager", "example.com/user"},
      {"trainingRuntimeSpec", {{"template", {{"metadata", {{"labels", {{"team", "a"}}}}}}}}}};
  tj["spec"]["runtimePatches"] = json::array({user_patch});
  const json infos = {{"node",
                       {{"nodeSelector", {{"gpu", "h100"}}},
                        {"labels", json::object()},
                        {"annotations", {{"commgate.io/pool", "p1"}}},
                        {"tolerations", json::array()}}}};
  EXPECT_TRUE(kueue_job_suspended(kind, tj));
  const json started = kueue_started_job(kind, tj, infos);
  EXPECT_FALSE(kueue_job_suspended(kind, started));
  ASSERT_EQ(started["spec"]["runtimePatches"].size(), 2u);
  EXPECT_EQ(started["spec"]["runtimePatches"][0], user_patch);
  EXPECT_EQ(started["spec"]["runtimePatches"][1], json::parse(R"({
      "manager": "kueue.x-k8s.io/manager",
      "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {
          "metadata": {"annotations": {"commgate.io/pool": "p1"}},
          "spec": {"nodeSelector": {"gpu": "h100"}}}}}}]}}}})"));
  EXPECT_EQ(started["spec"]["trainer"], tj["spec"]["trainer"]);  // immutable in the CRD

  // Stopped: suspended, Kueue's patch left empty as the webhook made it.
  const json stopped = kueue_stopped_job(kind, started, json::object());
  EXPECT_TRUE(kueue_job_suspended(kind, stopped));
  ASSERT_EQ(stopped["spec"]["runtimePatches"].size(), 2u);
  EXPECT_EQ(stopped["spec"]["runtimePatches"][0], user_patch);
  EXPECT_EQ(stopped["spec"]["runtimePatches"][1],
            json::parse(R"({"manager": "kueue.x-k8s.io/manager",
                            "trainingRuntimeSpec": {"template": {"spec": {}}}})"));
  // Started again: the same entry is reused, not a second one.
  const json restarted = kueue_started_job(kind, stopped, infos);
  EXPECT_EQ(restarted["spec"]["runtimePatches"], started["spec"]["runtimePatches"]);
  // A TrainJob stopped before it had a patch gets none.
  const json never = kueue_stopped_job(kind, queued_trainjob(), json::object());
  EXPECT_FALSE(never["spec"].contains("runtimePatches"));
}

json cluster_queue(const json& flavors) {
  return {{"metadata", {{"name", "cq"}}},
          {"spec",
           {{"resourceGroups",
             {{{"coveredResources", {"cpu", "nvidia.com/gpu"}}, {"flavors", flavors}}}}}}};
}

json flavor_quota(const std::string& name, const std::string& cpu, int gpus) {
  return {{"name", name},
          {"resources",
           {{{"name", "cpu"}, {"nominalQuota", cpu}},
            {{"name", "nvidia.com/gpu"}, {"nominalQuota", gpus}}}}};
}

json workload_asking(int count, int gpus, const json& node_selector = nullptr) {
  json spec = {{"containers",
                {{{"name", "c"},
                  {"resources", {{"requests", {{"cpu", "500m"}, {"nvidia.com/gpu", gpus}}}}}}}}};
  if (!node_selector.is_null()) spec["nodeSelector"] = node_selector;
  return {
      {"spec",
       {{"podSets", {{{"name", "worker"}, {"count", count}, {"template", {{"spec", spec}}}}}}}}};
}

TEST(KueueQuotaTest, first_flavor_whose_nominal_quota_fits) {
  const json flavors = {{"a100", {{"spec", {{"nodeLabels", {{"gpu", "a100"}}}}}}},
                        {"h100", {{"spec", {{"nodeLabels", {{"gpu", "h100"}}}}}}}};
  const json cq = cluster_queue({flavor_quota("a100", "16", 8), flavor_quota("h100", "64", 32)});
  struct Case {
    const char* what;
    json workload;
    KueueUsage used;
    std::string want_flavor;  // "" = does not fit
    std::string want_message;
  } cases[] = {
      {"fits the first", workload_asking(2, 4), {}, "a100", ""},
      {"first too small", workload_asking(4, 4), {}, "h100", ""},
      {"first used up", workload_asking(1, 4), {{"a100", {{"nvidia.com/gpu", 6}}}}, "h100", ""},
      {"selector names the second", workload_asking(1, 1, {{"gpu", "h100"}}), {}, "h100", ""},
      {"nothing fits",
       workload_asking(8, 8),
       {},
       "",
       "couldn't assign flavors to pod set worker: insufficient quota for nvidia.com/gpu in "
       "flavor h100, request > maximum capacity (64 > 32)"},
  };
  for (const auto& c : cases) {
    const auto d = kueue_reserve_quota(c.workload, cq, flavors, c.used);
    if (c.want_flavor.empty()) {
      EXPECT_TRUE(d.admission.is_null()) << c.what;
      EXPECT_EQ(d.message, c.want_message) << c.what;
      continue;
    }
    ASSERT_FALSE(d.admission.is_null()) << c.what << ": " << d.message;
    const json& a = d.admission["podSetAssignments"][0];
    EXPECT_EQ(d.admission["clusterQueue"], "cq") << c.what;
    EXPECT_EQ(a["name"], "worker") << c.what;
    EXPECT_EQ(a["flavors"], json({{"cpu", c.want_flavor}, {"nvidia.com/gpu", c.want_flavor}}))
        << c.what;
    EXPECT_EQ(a["count"], c.workload["spec"]["podSets"][0]["count"]) << c.what;
  }
  const auto d = kueue_reserve_quota(workload_asking(2, 4), cq, flavors, {});
  EXPECT_EQ(d.admission["podSetAssignments"][0]["resourceUsage"],
            json({{"cpu", "1"}, {"nvidia.com/gpu", "8"}}));
}

TEST(KueueQuotaTest, a_resource_no_group_covers_is_unavailable) {
  json wl = workload_asking(1, 1);
  wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]
    ["example.com/fpga"] = 1;
  const auto d = kueue_reserve_quota(wl, cluster_queue({flavor_quota("a", "8", 8)}),
                                     {{"a", json::object()}}, {});
  EXPECT_TRUE(d.admission.is_null());
  EXPECT_EQ(d.message, "resource example.com/fpga unavailable in ClusterQueue");
}

TEST(KueueQuotaTest, usage_counts_only_workloads_holding_quota_in_the_queue) {
  auto holding = [](const std::string& cq, const char* reserved) {
    return json{{"status",
                 {{"conditions", {{{"type", "QuotaReserved"}, {"status", reserved}}}},
                  {"admission",
                   {{"clusterQueue", cq},
                    {"podSetAssignments",
                     {{{"name", "w"},
                       {"flavors", {{"nvidia.com/gpu", "h100"}}},
                       {"resourceUsage", {{"nvidia.com/gpu", "8"}}}}}}}}}}};
  };
  const KueueUsage usage =
      kueue_cluster_queue_usage({holding("cq", "True"), holding("cq", "True"),
                                 holding("cq", "False"), holding("other", "True")},
                                "cq");
  EXPECT_EQ(usage.at("h100").at("nvidia.com/gpu"), 16);
}

TEST(KueueQuotaTest, quantities_print_as_resource_quantity_would) {
  struct Case {
    const char* resource;
    double amount;
    const char* want;
  } cases[] = {{"cpu", 3, "3"},
               {"cpu", 0.5, "500m"},
               {"cpu", 1.25, "1250m"},
               {"memory", 100.0 * 1024 * 1024 * 3, "300Mi"},
               {"nvidia.com/gpu", 8, "8"}};
  for (const auto& c : cases)
    EXPECT_EQ(kueue_quantity_text(c.resource, c.amount), c.want) << c.resource << " " << c.amount;
}

const char* kNow = "2026-12-06T12:00:00Z";

json workload_with(const json& entries, const json& conditions = json::array()) {
  return {{"metadata", {{"name", "w"}, {"namespace", "ns"}, {"generation", 1}}},
          {"spec", {{"queueName", "q"}}},
          {"status", {{"admissionChecks", entries}, {"conditions", conditions}}}};
}

json entry(const std::string& name, const std::string& state, const std::string& message = "") {
  return {{"name", name},
          {"state", state},
          {"message", message},
          {"lastTransitionTime", "2026-12-06T11:00:00Z"}};
}

TEST(KueueAdmissionTest, check_entries_follow_the_cluster_queue) {
  struct Case {
    const char* what;
    json entries;
    std::set<std::string> checks;
    json want;  // null: unchanged
  } cases[] = {
      {"added Pending, sorted by name",
       json::array({entry("zeta", "Ready")}),
       {"alpha", "zeta"},
       json::array({{{"name", "alpha"},
                     {"state", "Pending"},
                     {"message", ""},
                     {"lastTransitionTime", kNow}},
                    entry("zeta", "Ready")})},
      {"one no longer asked removed",
       json::array({entry("a", "Ready"), entry("b", "Pending")}),
       {"a"},
       json::array({entry("a", "Ready")})},
      {"in sync", json::array({entry("a", "Retry")}), {"a"}, nullptr},
      {"none asked: cleared", json::array({entry("a", "Ready")}), {}, json::array()},
  };
  for (const auto& c : cases) {
    const auto got = kueue_synced_check_entries(workload_with(c.entries), c.checks, kNow);
    if (c.want.is_null()) {
      EXPECT_FALSE(got.has_value()) << c.what;
    } else {
      ASSERT_TRUE(got.has_value()) << c.what;
      EXPECT_EQ(*got, c.want) << c.what;
    }
  }
}

TEST(KueueAdmissionTest, cluster_queue_checks_honour_on_flavors) {
  const json cq = {{"spec",
                    {{"admissionChecksStrategy",
                      {{"admissionChecks",
                        {{{"name", "comm"}}, {{"name", "prov"}, {"onFlavors", {"h100"}}}}}}}}}};
  json wl = workload_with(json::array());
  EXPECT_EQ(kueue_cluster_queue_checks(cq, wl), std::set<std::string>({"comm"}));
  wl["status"]["admission"] = {
      {"podSetAssignments", {{{"name", "w"}, {"flavors", {{"nvidia.com/gpu", "h100"}}}}}}};
  EXPECT_EQ(kueue_cluster_queue_checks(cq, wl), std::set<std::string>({"comm", "prov"}));
}

TEST(KueueAdmissionTest, eviction_resets_every_check_to_pending) {
  json retry = entry("comm", "Retry", "probe failed");
  retry["requeueAfterSeconds"] = 30;
  retry["retryCount"] = 2;
  json wl = workload_with(json::array({retry, entry("other", "Ready"), entry("third", "Pending")}));
  kueue_prepare_for_eviction(wl, "AdmissionCheck", "Evicted due to x", kNow);
  const json& e = wl["status"]["admissionChecks"];
  EXPECT_EQ(e[0], json({{"name", "comm"},
                        {"state", "Pending"},
                        {"message", "Reset to Pending after eviction. Previously: Retry"},
                        {"lastTransitionTime", kNow},
                        {"requeueAfterSeconds", 30},
                        {"retryCount", 3}}));
  EXPECT_EQ(e[1], json({{"name", "other"},
                        {"state", "Pending"},
                        {"message", "Reset to Pending after eviction. Previously: Ready"},
                        {"lastTransitionTime", kNow}}));
  EXPECT_EQ(e[2], entry("third", "Pending"));
  const json& evicted = kueue_condition(wl, "Evicted");
  EXPECT_EQ(evicted["status"], "True");
  EXPECT_EQ(evicted["reason"], "AdmissionCheck");
  EXPECT_EQ(evicted["observedGeneration"], 1);
}

TEST(KueueAdmissionTest, checks_message_is_upstreams) {
  const json wl = workload_with(json::array(
      {entry("b", "Rejected", "too slow"), entry("a", "Rejected"), entry("c", "Ready")}));
  EXPECT_EQ(kueue_checks_message(wl, "Rejected"),
            "AdmissionChecks in Rejected state: \"a\"; \"b\" (too slow)");
  EXPECT_EQ(kueue_checks_message(wl, "Ready"), "AdmissionCheck in Ready state: \"c\"");
}

TEST(KueueAdmissionTest, conditions_move_their_transition_time_only_on_a_status_change) {
  json wl = workload_with(json::array());
  EXPECT_TRUE(kueue_set_condition(
      wl, {{"type", "Admitted"}, {"status", "True"}, {"reason", "Admitted"}, {"message", "m"}},
      "2026-12-06T10:00:00Z"));
  EXPECT_FALSE(kueue_set_condition(
      wl, {{"type", "Admitted"}, {"status", "True"}, {"reason", "Admitted"}, {"message", "m"}},
      kNow));
  EXPECT_TRUE(kueue_set_condition(
      wl, {{"type", "Admitted"}, {"status", "True"}, {"reason", "Admitted"}, {"message", "n"}},
      kNow));
  EXPECT_EQ(kueue_condition(wl, "Admitted")["lastTransitionTime"], "2026-12-06T10:00:00Z");
  EXPECT_TRUE(kueue_set_condition(
      wl,
      {{"type", "Admitted"}, {"status", "False"}, {"reason", "NoReservation"}, {"message", "n"}},
      kNow));
  EXPECT_EQ(kueue_condition(wl, "Admitted")["lastTransitionTime"], kNow);
}

json condition(const std::string& type, const std::string& status,
               const std::string& reason = "r") {
  return {{"type", type},
          {"status", status},
          {"reason", reason},
          {"message", ""},
          {"lastTransitionTime", "2026-12-06T11:00:00Z"}};
}

TEST(KueueAdmissionTest, next_workload_step_follows_upstreams_reconcile) {
  const TimePoint now = *parse_rfc3339(kNow);
  const json reserved = condition("QuotaReserved", "True");
  json retry_later = entry("comm", "Retry");
  retry_later["lastTransitionTime"] = "2026-12-06T11:59:50Z";
  retry_later["requeueAfterSeconds"] = 60;
  struct Case {
    const char* what;
    json workload;
    std::optional<std::set<std::string>> checks;
    KueueWorkloadStep want;
  } cases[] = {
      {"no reservation", workload_with(json::array()), std::set<std::string>{"comm"},
       KueueWorkloadStep::kNone},
      {"reserved, entry missing", workload_with(json::array(), json::array({reserved})),
       std::set<std::string>{"comm"}, KueueWorkloadStep::kSyncChecks},
      {"reserved, entry Pending",
       workload_with(json::array({entry("comm", "Pending")}), json::array({reserved})),
       std::set<std::string>{"comm"}, KueueWorkloadStep::kNone},
      {"every entry Ready",
       workload_with(json::array({entry("comm", "Ready")}), json::array({reserved})),
       std::set<std::string>{"comm"}, KueueWorkloadStep::kSyncAdmitted},
      {"admitted already",
       workload_with(json::array({entry("comm", "Ready")}),
                     json::array({reserved, condition("Admitted", "True")})),
       std::set<std::string>{"comm"}, KueueWorkloadStep::kNone},
      {"Rejected", workload_with(json::array({entry("comm", "Rejected")}), json::array({reserved})),
       std::set<std::string>{"comm"}, KueueWorkloadStep::kSetDeactivationTarget},
      {"Retry", workload_with(json::array({entry("comm", "Retry")}), json::array({reserved})),
       std::set<std::string>{"comm"}, KueueWorkloadStep::kEvictForRetry},
      {"Retry with requeueAfterSeconds",
       workload_with(json::array({retry_later}), json::array({reserved})),
       std::set<std::string>{"comm"}, KueueWorkloadStep::kSetRequeueAt},
      {"Retry, evicted already",
       workload_with(json::array({entry("comm", "Retry")}),
                     json::array({reserved, condition("Evicted", "True", "AdmissionCheck")})),
       std::set<std::string>{"comm"}, KueueWorkloadStep::kNone},
      {"DeactivationTarget",
       workload_with(
           json::array({entry("comm", "Rejected")}),
           json::array({reserved, condition("DeactivationTarget", "True", "AdmissionCheck")})),
       std::set<std::string>{"comm"}, KueueWorkloadStep::kDeactivate},
      {"requeued False, no backoff left",
       workload_with(json::array({entry("comm", "Pending")}),
                     json::array({condition("Requeued", "False", "AdmissionCheck")})),
       std::set<std::string>{"comm"}, KueueWorkloadStep::kBackoffFinished},
      {"no ClusterQueue", workload_with(json::array(), json::array({reserved})), std::nullopt,
       KueueWorkloadStep::kSyncAdmitted},
  };
  for (const auto& c : cases)
    EXPECT_EQ(kueue_next_workload_step(c.workload, c.checks, now), c.want) << c.what;

  json inactive = workload_with(json::array({entry("comm", "Rejected")}), json::array({reserved}));
  inactive["spec"]["active"] = false;
  EXPECT_EQ(kueue_next_workload_step(inactive, std::set<std::string>{"comm"}, now),
            KueueWorkloadStep::kEvictDeactivated);
  json backoff = workload_with(json::array({entry("comm", "Pending")}),
                               json::array({condition("Requeued", "False", "AdmissionCheck")}));
  backoff["status"]["requeueState"] = {{"requeueAt", "2026-12-06T12:00:30Z"}};
  EXPECT_EQ(kueue_next_workload_step(backoff, std::set<std::string>{"comm"}, now),
            KueueWorkloadStep::kNone);
}

TEST(KueueAdmissionTest, the_admission_apply_carries_every_entry_whole_and_only_its_conditions) {
  json wl =
      workload_with(json::array({entry("comm", "Ready", "ok"), entry("other", "Pending")}),
                    json::array({condition("QuotaReserved", "True"), condition("Custom", "True")}));
  wl["metadata"]["uid"] = "u";
  wl["metadata"]["resourceVersion"] = "7";
  wl["status"]["admission"] = {{"clusterQueue", "cq"}};
  wl["status"]["requeueState"] = json::object();
  const json config = kueue_admission_status_apply(wl);
  EXPECT_EQ(config["metadata"],
            json({{"name", "w"}, {"namespace", "ns"}, {"uid", "u"}, {"resourceVersion", "7"}}));
  EXPECT_EQ(config["status"]["admissionChecks"], wl["status"]["admissionChecks"]);
  ASSERT_EQ(config["status"]["conditions"].size(), 1u);
  EXPECT_EQ(config["status"]["conditions"][0]["type"], "QuotaReserved");
  EXPECT_FALSE(config["status"].contains("requeueState"));  // no count, no requeueAt
  EXPECT_EQ(config["status"]["admission"], wl["status"]["admission"]);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
