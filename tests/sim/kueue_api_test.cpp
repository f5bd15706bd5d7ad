// The Kueue stand-in (sim/kueue_controller.h) on a running sim over HTTPS: the upstream
// Kueue v0.19.2 CRDs created through the API, a ResourceFlavor, a ClusterQueue naming two
// AdmissionChecks, a LocalQueue; queued jobs get Workloads, quota and check entries, and
// the test plays the external check controllers with server-side applies on
// workloads/status: Ready -> Admitted and the job started on the flavor's nodes; Retry ->
// evicted, every entry back to Pending, retryCount 1, requeued; Rejected -> deactivated,
// the job kept suspended. Another controller's entry and its managedFields stay byte for
// byte through Kueue's own writes. A JobSet (jobset v0.12.0's CRD and example) and a
// TrainJob (trainer v2.3.0's CRDs, ClusterTrainingRuntime and Kueue example) queued the
// same way get their Workloads and are started when admitted.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "core/time_format.h"
#include "core/yaml_json.h"
#include "sim/api_server.h"
#include "sim/cluster.h"
#include "sim/kueue_workloads.h"
#include "tests/server/test_client.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using server::testing::Client;
using server::testing::Reply;

const char* kKueueApi = "/apis/kueue.x-k8s.io/v1beta2";
const char* kTeamWorkloads = "/apis/kueue.x-k8s.io/v1beta2/namespaces/team/workloads/";
const char* kOurCheck = "comm-check";
const char* kOurManager = "commgate.io/comm-check";
const char* kOtherCheck = "other-check";
const char* kOtherManager = "example.com/other-check";

json fixture(const std::string& relative) {
  std::ifstream in(std::filesystem::path(COMMGATE_SOURCE_DIR) / "../shared/fixtures/ecosystem" /
                   relative);
  std::stringstream text;
  text << in.rdbuf();
  return yaml_documents_to_json(text.str()).at(0);
}

json status_of(const json& workload) {
  return workload.is_object() ? workload.value("status", json::object()) : json::object();
}

json entry_named(const json& workload, const std::string& name) {
  for (const auto& e : status_of(workload).value("admissionChecks", json::array()))
    if (e["name"] == name) return e;
  return nullptr;
}

json managed_entry(const json& object, const std::string& manager) {
  for (const auto& e : object["metadata"].value("managedFields", json::array()))
    if (e["manager"] == manager) return e;
  return nullptr;
}

json condition_of(const json& workload, const std::string& type) {
  for (const auto& c : status_of(workload).value("conditions", json::array()))
    if (c["type"] == type) return c;
  return nullptr;
}

bool condition_is(const json& workload, const std::string& type, const std::string& status) {
  const json c = condition_of(workload, type);
  return !c.is_null() && c["status"] == status;
}

class KueueApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    client_ = std::make_unique<Client>(api_.port(), api_.pki_dir() + "/ca.crt");
    ASSERT_EQ(client_->connect(), "");
    cluster_ = std::make_unique<SimCluster>(api_.store());
    cluster_->start_kueue();
    for (const char* crd : {"kueue-v0.19.2/kueue.x-k8s.io_resourceflavors.yaml",
                            "kueue-v0.19.2/kueue.x-k8s.io_admissionchecks.yaml",
                            "kueue-v0.19.2/kueue.x-k8s.io_clusterqueues.yaml",
                            "kueue-v0.19.2/kueue.x-k8s.io_localqueues.yaml",
                            "kueue-v0.19.2/kueue.x-k8s.io_workloads.yaml",
                            "training-operator-v1.9.4/kubeflow.org_pytorchjobs.yaml"})
      ASSERT_EQ(
          call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", fixture(crd))
              .status,
          201)
          << crd;
    ASSERT_EQ(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", "team"}}}}).status, 201);
    create(std::string(kKueueApi) + "/resourceflavors",
           {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
            {"kind", "ResourceFlavor"},
            {"metadata", {{"name", "h100"}}},
            {"spec", {{"nodeLabels", {{"commgate.io/gpu", "h100"}}}}}});
    for (const auto& [check, controller] :
         {std::pair{kOurCheck, kOurManager}, std::pair{kOtherCheck, kOtherManager}}) {
      create(std::string(kKueueApi) + "/admissionchecks",
             {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
              {"kind", "AdmissionCheck"},
              {"metadata", {{"name", check}}},
              {"spec", {{"controllerName", controller}}}});
      // What each check's controller keeps: its Active condition.
      const Reply r =
          call("PATCH", std::string(kKueueApi) + "/admissionchecks/" + check + "/status",
               {{"status",
                 {{"conditions",
                   {{{"type", "Active"},
                     {"status", "True"},
                     {"reason", "Active"},
                     {"message", "The admission check is active"},
                     {"lastTransitionTime", format_rfc3339(Clock::now())}}}}}}},
               "application/merge-patch+json");
      ASSERT_EQ(r.status, 200) << r.body;
    }
    create(std::string(kKueueApi) + "/clusterqueues",
           json::parse(R"({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
             "metadata": {"name": "gpus"},
             "spec": {"namespaceSelector": {},
               "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                 "flavors": [{"name": "h100", "resources": [
                   {"name": "cpu", "nominalQuota": 64},
                   {"name": "memory", "nominalQuota": "512Gi"},
                   {"name": "nvidia.com/gpu", "nominalQuota": 32}]}]}],
               "admissionChecksStrategy": {"admissionChecks": [
                 {"name": "comm-check"}, {"name": "other-check"}]}}})"));
    create(std::string(kKueueApi) + "/namespaces/team/localqueues",
           {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
            {"kind", "LocalQueue"},
            {"metadata", {{"name", "user-queue"}, {"namespace", "team"}}},
            {"spec", {{"clusterQueue", "gpus"}}}});
  }
  void TearDown() override { cluster_->stop(); }

  // Creates the CRD of ../shared/fixtures/ecosystem/<relative> through the API.
  void install_crd(const std::string& relative) {
    const Reply r =
        call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", fixture(relative));
    ASSERT_EQ(r.status, 201) << relative << ": " << r.body;
  }

  Reply call(const std::string& method, const std::string& target, const json& body,
             const std::string& content_type = "application/json") {
    return client_->request(
        method, target, body.is_null() ? "" : body.dump(),
        {{"Authorization", "Bearer " + api_.token()}, {"Content-Type", content_type}});
  }
  json create(const std::string& collection, const json& object) {
    const Reply r = call("POST", collection, object);
    EXPECT_EQ(r.status, 201) << collection << ": " << r.body;
    return json::parse(r.body);
  }
  json get(const std::string& target) {
    const Reply r = call("GET", target, nullptr);
    return r.status == 200 ? json::parse(r.body) : json();
  }
  // Polls `target` until `ready` holds (10 s at most); the last object read.
  json wait_for(const std::string& target, const std::function<bool(const json&)>& ready,
                const std::string& what) {
    json last;
    for (int i = 0; i < 200; ++i) {
      last = get(target);
      if (!last.is_null() && ready(last)) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "timed out waiting for " << what << "; last: " << last.dump(2);
    return last;
  }
  // The check controller's write: its own entry only, forced, on workloads/status.
  Reply set_entry(const std::string& workload, const std::string& check, const std::string& manager,
                  const json& fields) {
    json e = {
        {"name", check}, {"message", ""}, {"lastTransitionTime", format_rfc3339(Clock::now())}};
    e.update(fields);
    const json config = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                         {"kind", "Workload"},
                         {"metadata", {{"name", workload}, {"namespace", "team"}}},
                         {"status", {{"admissionChecks", json::array({e})}}}};
    return call(
        "PATCH",
        std::string(kTeamWorkloads) + workload + "/status?fieldManager=" + manager + "&force=true",
        config, "application/apply-patch+yaml");
  }
  json queued_job(const std::string& name, int parallelism) {
    json job = fixture("kueue-v0.19.2/example-sample-job.yaml");
    job["metadata"].erase("generateName");
    job["metadata"]["name"] = name;
    job["metadata"]["namespace"] = "team";
    job["spec"]["parallelism"] = parallelism;
    job["spec"]["completions"] = parallelism;
    job["spec"]["suspend"] = true;
    return create("/apis/batch/v1/namespaces/team/jobs", job);
  }
  json queued_pytorchjob(const std::string& name) {
    json job = fixture("training-operator-v1.9.4/example-simple.yaml");
    job["metadata"]["name"] = name;
    job["metadata"]["namespace"] = "team";
    job["metadata"]["labels"][kKueueQueueNameLabel] = "user-queue";
    job["spec"]["runPolicy"]["suspend"] = true;
    for (const char* type : {"Master", "Worker"})
      job["spec"]["pytorchReplicaSpecs"][type]["template"]["spec"]["containers"][0]["resources"] = {
          {"limits", {{"nvidia.com/gpu", 8}}}};
    return create("/apis/kubeflow.org/v1/namespaces/team/pytorchjobs", job);
  }
  // The Workload of a job, once Kueue has reserved quota and added the check entries.
  json reserved_workload(const std::string& name) {
    return wait_for(
        kTeamWorkloads + name,
        [](const json& wl) {
          return condition_is(wl, "QuotaReserved", "True") &&
                 status_of(wl).value("admissionChecks", json::array()).size() == 2;
        },
        "quota and check entries on " + name);
  }

  ApiServer api_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<SimCluster> cluster_;
};

TEST_F(KueueApiTest, ready_checks_admit_the_job_and_start_it_on_the_flavor) {
  const json job = queued_job("sample", 3);
  const std::string name = kueue_workload_name("sample", job["metadata"]["uid"], "Job", "batch");
  json wl = reserved_workload(name);
  // The Workload as jobframework makes it: owned by the job, its pod set and count.
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["uid"], job["metadata"]["uid"]);
  EXPECT_EQ(wl["spec"]["queueName"], "user-queue");
  EXPECT_EQ(wl["spec"]["active"], true);  // the CRD's default
  ASSERT_EQ(wl["spec"]["podSets"].size(), 1u);
  EXPECT_EQ(wl["spec"]["podSets"][0]["name"], "main");
  EXPECT_EQ(wl["spec"]["podSets"][0]["count"], 3);
  // Quota in the ClusterQueue's flavor.
  const json& a = wl["status"]["admission"];
  EXPECT_EQ(a["clusterQueue"], "gpus");
  EXPECT_EQ(a["podSetAssignments"][0]["name"], "main");
  EXPECT_EQ(a["podSetAssignments"][0]["count"], 3);
  EXPECT_EQ(a["podSetAssignments"][0]["flavors"],
            json({{"cpu", "h100"}, {"memory", "h100"}, {"nvidia.com/gpu", "h100"}}));
  EXPECT_EQ(a["podSetAssignments"][0]["resourceUsage"],
            json({{"cpu", "300m"}, {"memory", "300Mi"}, {"nvidia.com/gpu", "3"}}));
  EXPECT_EQ(condition_of(wl, "QuotaReserved")["message"], "Quota reserved in ClusterQueue gpus");
  EXPECT_EQ(entry_named(wl, kOurCheck)["state"], "Pending");
  EXPECT_EQ(entry_named(wl, kOtherCheck)["state"], "Pending");
  // Who wrote what: the Workload created by "kueue", the quota applied as
  // "kueue-admission", the entries added by kueue's status Update.
  EXPECT_EQ(managed_entry(wl, "kueue-admission")["operation"], "Apply");
  EXPECT_EQ(managed_entry(wl, "kueue-admission")["subresource"], "status");
  EXPECT_FALSE(managed_entry(wl, "kueue").is_null());
  EXPECT_EQ(get("/apis/batch/v1/namespaces/team/jobs/sample")["spec"]["suspend"], true);

  // The other controller says Ready first: its entry and managedFields as they are now.
  Reply r = set_entry(name, kOtherCheck, kOtherManager, {{"state", "Ready"}, {"message", "ok"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json other_entry = entry_named(json::parse(r.body), kOtherCheck);
  const json other_fields = managed_entry(json::parse(r.body), kOtherManager);
  ASSERT_FALSE(other_fields.is_null()) << r.body;
  r = set_entry(name, kOurCheck, kOurManager, {{"state", "Ready"}, {"message", "within policy"}});
  ASSERT_EQ(r.status, 200) << r.body;

  wl = wait_for(
      kTeamWorkloads + name, [](const json& w) { return condition_is(w, "Admitted", "True"); },
      "Admitted");
  EXPECT_EQ(condition_of(wl, "Admitted")["reason"], "Admitted");
  json started = wait_for(
      "/apis/batch/v1/namespaces/team/jobs/sample",
      [](const json& j) { return j["spec"].value("suspend", true) == false; }, "job started");
  EXPECT_EQ(started["spec"]["template"]["spec"]["nodeSelector"],
            json({{"commgate.io/gpu", "h100"}}));
  // Kueue's forced applies co-own the entries but leave the other manager's as it was.
  EXPECT_EQ(entry_named(wl, kOtherCheck), other_entry);
  EXPECT_EQ(managed_entry(wl, kOtherManager), other_fields);
  EXPECT_EQ(entry_named(wl, kOurCheck)["state"], "Ready");
}

TEST_F(KueueApiTest, retry_evicts_resets_every_entry_and_requeues) {
  const json job = queued_pytorchjob("pytorch-simple");
  const std::string name =
      kueue_workload_name("pytorch-simple", job["metadata"]["uid"], "PyTorchJob", "kubeflow.org");
  json wl = reserved_workload(name);
  ASSERT_EQ(wl["spec"]["podSets"].size(), 2u);
  EXPECT_EQ(wl["spec"]["podSets"][0]["name"], "master");
  EXPECT_EQ(wl["spec"]["podSets"][1]["name"], "worker");
  EXPECT_EQ(wl["status"]["admission"]["podSetAssignments"][1]["resourceUsage"]["nvidia.com/gpu"],
            "8");
  ASSERT_EQ(set_entry(name, kOtherCheck, kOtherManager, {{"state", "Ready"}}).status, 200);
  // 2 s: lastTransitionTime holds whole seconds, so the backoff lasts at least 1 s and the
  // test sees the eviction before the requeue.
  const Reply r =
      set_entry(name, kOurCheck, kOurManager,
                {{"state", "Retry"}, {"message", "probe failed"}, {"requeueAfterSeconds", 2}});
  ASSERT_EQ(r.status, 200) << r.body;

  wl = wait_for(
      kTeamWorkloads + name,
      [](const json& w) {
        json e = entry_named(w, kOurCheck);
        return e["state"] == "Pending" && e.value("retryCount", 0) == 1;
      },
      "the Retry entry reset to Pending");
  json ours = entry_named(wl, kOurCheck);
  EXPECT_EQ(ours["message"], "Reset to Pending after eviction. Previously: Retry");
  EXPECT_EQ(ours["requeueAfterSeconds"], 2);
  json theirs = entry_named(wl, kOtherCheck);
  EXPECT_EQ(theirs["state"], "Pending");
  EXPECT_EQ(theirs["message"], "Reset to Pending after eviction. Previously: Ready");
  EXPECT_FALSE(theirs.contains("retryCount"));
  json evicted = condition_of(wl, "Evicted");
  EXPECT_EQ(evicted["reason"], "AdmissionCheck");
  EXPECT_EQ(evicted["message"],
            "Evicted due to AdmissionCheck in Retry state: \"comm-check\" (probe failed)");
  EXPECT_FALSE(condition_is(wl, "Admitted", "True"));

  // Requeued after the entry's requeueAfterSeconds: quota again, the eviction now past.
  wl = wait_for(
      kTeamWorkloads + name,
      [](const json& w) {
        return condition_is(w, "QuotaReserved", "True") && condition_is(w, "Evicted", "False");
      },
      "quota reserved again after the backoff");
  EXPECT_EQ(condition_of(wl, "Evicted")["reason"], "QuotaReserved");
  EXPECT_EQ(condition_of(wl, "Requeued")["reason"], "BackoffFinished");
  EXPECT_EQ(entry_named(wl, kOurCheck)["retryCount"], 1);
  EXPECT_EQ(
      get("/apis/kubeflow.org/v1/namespaces/team/pytorchjobs/pytorch-simple")["spec"]["runPolicy"]
                                                                             ["suspend"],
      true);
}

TEST_F(KueueApiTest, rejected_deactivates_the_workload_and_the_job_stays_suspended) {
  const json job = queued_job("too-big", 2);
  const std::string name = kueue_workload_name("too-big", job["metadata"]["uid"], "Job", "batch");
  reserved_workload(name);
  const Reply r = set_entry(name, kOurCheck, kOurManager,
                            {{"state", "Rejected"}, {"message", "2 nodes over policy"}});
  ASSERT_EQ(r.status, 200) << r.body;
  json wl = wait_for(
      kTeamWorkloads + name,
      [](const json& w) {
        return w["spec"].value("active", true) == false && condition_is(w, "Evicted", "True") &&
               condition_is(w, "QuotaReserved", "False");
      },
      "deactivated, evicted, quota released");
  EXPECT_EQ(condition_of(wl, "Evicted")["reason"], "DeactivatedDueToAdmissionCheck");
  EXPECT_EQ(condition_of(wl, "Evicted")["message"],
            "The workload is deactivated due to AdmissionCheck in Rejected state: "
            "\"comm-check\" (2 nodes over policy)");
  EXPECT_TRUE(condition_of(wl, "DeactivationTarget").is_null());
  EXPECT_FALSE(wl["status"].contains("admission"));
  // spec.active was a plain Update by "kueue".
  EXPECT_FALSE(managed_entry(wl, "kueue").is_null());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(get("/apis/batch/v1/namespaces/team/jobs/too-big")["spec"]["suspend"], true);
  EXPECT_TRUE(condition_is(get(kTeamWorkloads + name), "QuotaReserved", "False"));
}

TEST_F(KueueApiTest, an_inactive_admission_check_keeps_the_cluster_queue_from_admitting) {
  const Reply r = call("PATCH", std::string(kKueueApi) + "/admissionchecks/comm-check/status",
                       {{"status",
                         {{"conditions",
                           {{{"type", "Active"},
                             {"status", "False"},
                             {"reason", "BadParametersRef"},
                             {"message", "CommPolicy missing"},
                             {"lastTransitionTime", format_rfc3339(Clock::now())}}}}}}},
                       "application/merge-patch+json");
  ASSERT_EQ(r.status, 200) << r.body;
  const json job = queued_job("waits", 1);
  const std::string name = kueue_workload_name("waits", job["metadata"]["uid"], "Job", "batch");
  wait_for(
      kTeamWorkloads + name, [](const json& w) { return !w.is_null(); }, "the Workload");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(condition_is(get(kTeamWorkloads + name), "QuotaReserved", "True"));
}

TEST_F(KueueApiTest, a_queued_jobset_gets_a_pod_set_per_replicated_job_and_starts_when_admitted) {
  install_crd("jobset-v0.12.0/jobset.x-k8s.io_jobsets.yaml");
  json js = fixture("jobset-v0.12.0/example-pytorch-mnist.yaml");
  js["metadata"]["namespace"] = "team";
  js["metadata"]["labels"][kKueueQueueNameLabel] = "user-queue";
  js["spec"]["suspend"] = true;
  json& pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"];
  pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", 1}}}};
  const json created = create("/apis/jobset.x-k8s.io/v1alpha2/namespaces/team/jobsets", js);
  const std::string name =
      kueue_workload_name("pytorch", created["metadata"]["uid"], "JobSet", "jobset.x-k8s.io");
  json wl = reserved_workload(name);
  // Created through the Workload CRD's schema (its defaults are there), owned by the JobSet,
  // one pod set per replicated job: replicas 1 x 4 pods.
  EXPECT_EQ(wl["spec"]["active"], true);
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["kind"], "JobSet");
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["apiVersion"], "jobset.x-k8s.io/v1alpha2");
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["uid"], created["metadata"]["uid"]);
  ASSERT_EQ(wl["spec"]["podSets"].size(), 1u);
  EXPECT_EQ(wl["spec"]["podSets"][0]["name"], "workers");
  EXPECT_EQ(wl["spec"]["podSets"][0]["count"], 4);
  EXPECT_EQ(wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["image"],
            "gcr.io/k8s-staging-jobset/pytorch-mnist:latest");
  EXPECT_EQ(wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"]["nvidia.com/gpu"],
            "4");
  EXPECT_EQ(
      get("/apis/jobset.x-k8s.io/v1alpha2/namespaces/team/jobsets/pytorch")["spec"]["suspend"],
      true);

  ASSERT_EQ(set_entry(name, kOtherCheck, kOtherManager, {{"state", "Ready"}}).status, 200);
  ASSERT_EQ(set_entry(name, kOurCheck, kOurManager, {{"state", "Ready"}}).status, 200);
  wait_for(
      kTeamWorkloads + name, [](const json& w) { return condition_is(w, "Admitted", "True"); },
      "Admitted");
  const json started = wait_for(
      "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team/jobsets/pytorch",
      [](const json& j) { return j["spec"].value("suspend", true) == false; }, "JobSet started");
  EXPECT_EQ(
      started["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"],
      json({{"commgate.io/gpu", "h100"}}));
}

TEST_F(KueueApiTest, a_queued_trainjob_waits_for_its_runtime_and_starts_through_kueues_patch) {
  install_crd("trainer-v2.3.0/trainer.kubeflow.org_clustertrainingruntimes.yaml");
  install_crd("trainer-v2.3.0/trainer.kubeflow.org_trainjobs.yaml");
  json tj = fixture("trainer-v2.3.0/example-03-kueue-integration.yaml");
  tj["metadata"]["namespace"] = "team";
  tj["metadata"]["labels"][kKueueQueueNameLabel] = "user-queue";
  tj["spec"]["trainer"]["resourcesPerNode"]["limits"]["nvidia.com/gpu"] = 8;
  const std::string trainjob = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs/";
  const json created = create(trainjob, tj);
  ASSERT_EQ(created["spec"]["suspend"], true);
  const std::string name = kueue_workload_name("kueue-example", created["metadata"]["uid"],
                                               "TrainJob", "trainer.kubeflow.org");
  // Its ClusterTrainingRuntime does not exist yet: no pod sets, so no Workload.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(get(kTeamWorkloads + name).is_null());

  create("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes",
         fixture("trainer-v2.3.0/runtime-torch_distributed.yaml"));
  json wl = reserved_workload(name);
  EXPECT_EQ(wl["spec"]["active"], true);
  EXPECT_EQ(wl["metadata"]["ownerReferences"][0]["kind"], "TrainJob");
  ASSERT_EQ(wl["spec"]["podSets"].size(), 1u);
  const json& node = wl["spec"]["podSets"][0];
  EXPECT_EQ(node["name"], "node");
  EXPECT_EQ(node["count"], 3);  // spec.trainer.numNodes, not the runtime's 1
  const json& container = node["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "python:3.11-slim");
  EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"], 8);
  EXPECT_EQ(wl["status"]["admission"]["podSetAssignments"][0]["resourceUsage"],
            json({{"cpu", "6"}, {"memory", "12Gi"}, {"nvidia.com/gpu", "24"}}));

  ASSERT_EQ(set_entry(name, kOtherCheck, kOtherManager, {{"state", "Ready"}}).status, 200);
  ASSERT_EQ(set_entry(name, kOurCheck, kOurManager,
                      {{"state", "Ready"},
                       {"podSetUpdates",
                        {{{"name", "node"}, {"annotations", {{"commgate.io/decision", "d1"}}}}}}})
                .status,
            200);
  const json started = wait_for(
      trainjob + "kueue-example",
      [](const json& j) { return j["spec"].value("suspend", true) == false; }, "TrainJob started");
  // Written through the TrainJob CRD's schema: Kueue's runtime patch holds the PodSetInfo.
  const json& patches = started["spec"]["runtimePatches"];
  ASSERT_EQ(patches.size(), 1u) << started.dump(2);
  EXPECT_EQ(patches[0]["manager"], kKueueRuntimePatchManager);
  const json& rj = patches[0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"];
  ASSERT_EQ(rj.size(), 1u) << started.dump(2);
  EXPECT_EQ(rj[0]["name"], "node");
  EXPECT_EQ(rj[0]["template"]["spec"]["template"]["spec"]["nodeSelector"],
            json({{"commgate.io/gpu", "h100"}}));
  EXPECT_EQ(rj[0]["template"]["spec"]["template"]["metadata"]["annotations"],
            json({{"commgate.io/decision", "d1"}}));
  EXPECT_EQ(started["spec"]["trainer"], created["spec"]["trainer"]);
}

// --- ClusterQueue/LocalQueue conditions, Events and TAS (issue #23) ---

// The events.k8s.io/v1 Events about `name` (a kind's object) with `reason`, oldest first.
std::vector<json> events_about(const json& list, const std::string& kind, const std::string& name,
                               const std::string& reason) {
  std::vector<json> out;
  for (const auto& e : list.value("items", json::array()))
    if (e["regarding"]["kind"] == kind && e["regarding"]["name"] == name && e["reason"] == reason)
      out.push_back(e);
  return out;
}

TEST_F(KueueApiTest, cluster_and_local_queue_conditions_follow_their_admission_checks) {
  const std::string cq_path = std::string(kKueueApi) + "/clusterqueues/gpus";
  const std::string lq_path = std::string(kKueueApi) + "/namespaces/team/localqueues/user-queue";
  json cq = wait_for(
      cq_path, [](const json& q) { return condition_is(q, "Active", "True"); }, "Active queue");
  EXPECT_EQ(condition_of(cq, "Active")["reason"], "Ready");
  EXPECT_EQ(condition_of(cq, "Active")["message"], "Can admit new workloads");
  EXPECT_EQ(managed_entry(cq, "kueue")["subresource"], "status");  // a status Update
  json lq = wait_for(
      lq_path, [](const json& q) { return condition_is(q, "Active", "True"); }, "Active LQ");
  EXPECT_EQ(condition_of(lq, "Active")["message"], "Can submit new workloads to localQueue");

  // docs/kueue.md: an inactive check makes the ClusterQueue, and so its LocalQueues, inactive.
  Reply r = call("PATCH", std::string(kKueueApi) + "/admissionchecks/comm-check/status",
                 {{"status",
                   {{"conditions",
                     {{{"type", "Active"},
                       {"status", "False"},
                       {"reason", "BadParametersRef"},
                       {"message", "CommPolicy missing"},
                       {"lastTransitionTime", format_rfc3339(Clock::now())}}}}}}},
                 "application/merge-patch+json");
  ASSERT_EQ(r.status, 200) << r.body;
  cq = wait_for(
      cq_path, [](const json& q) { return condition_is(q, "Active", "False"); }, "inactive queue");
  EXPECT_EQ(condition_of(cq, "Active")["reason"], "AdmissionCheckInactive");
  EXPECT_EQ(condition_of(cq, "Active")["message"],
            "Can't admit new workloads: references inactive AdmissionCheck(s): comm-check.");
  lq = wait_for(
      lq_path, [](const json& q) { return condition_is(q, "Active", "False"); }, "inactive LQ");
  EXPECT_EQ(condition_of(lq, "Active")["reason"], "ClusterQueueIsInactive");

  // A deleted check: missing, not inactive.
  ASSERT_EQ(call("DELETE", std::string(kKueueApi) + "/admissionchecks/comm-check", nullptr).status,
            200);
  cq = wait_for(
      cq_path,
      [](const json& q) { return condition_of(q, "Active")["reason"] == "AdmissionCheckNotFound"; },
      "missing check");
  EXPECT_EQ(condition_of(cq, "Active")["message"],
            "Can't admit new workloads: references missing AdmissionCheck(s): comm-check.");
}

TEST_F(KueueApiTest, pending_check_messages_become_events_on_the_job) {
  const json job = queued_job("evented", 2);
  const std::string name = kueue_workload_name("evented", job["metadata"]["uid"], "Job", "batch");
  reserved_workload(name);
  const std::string events = "/apis/events.k8s.io/v1/namespaces/team/events";
  // The job framework's and the scheduler's own Events.
  json list = wait_for(
      events,
      [&](const json& l) { return !events_about(l, "Workload", name, "QuotaReserved").empty(); },
      "QuotaReserved event");
  const json created = events_about(list, "Job", "evented", "CreatedWorkload").at(0);
  EXPECT_EQ(created["note"], "Created Workload: team/" + name);
  EXPECT_EQ(created["reportingController"], "batch/job-kueue-controller");
  const json reserved = events_about(list, "Workload", name, "QuotaReserved").at(0);
  EXPECT_EQ(reserved["reportingController"], "kueue-admission");
  EXPECT_EQ(reserved["note"].get<std::string>().rfind(
                "Quota reserved in ClusterQueue gpus, wait time since queued was ", 0),
            0u)
      << reserved.dump();

  ASSERT_EQ(set_entry(name, kOurCheck, kOurManager,
                      {{"state", "Pending"}, {"message", "probing 2 nodes"}})
                .status,
            200);
  list = wait_for(
      events,
      [](const json& l) {
        return !events_about(l, "Job", "evented", "UpdatedAdmissionCheck").empty();
      },
      "UpdatedAdmissionCheck event");
  json updated = events_about(list, "Job", "evented", "UpdatedAdmissionCheck").at(0);
  EXPECT_EQ(updated["type"], "Normal");
  EXPECT_EQ(updated["note"], "comm-check: probing 2 nodes");
  EXPECT_EQ(updated["regarding"]["uid"], job["metadata"]["uid"]);
  EXPECT_EQ(updated["reportingController"], "batch/job-kueue-controller");
  EXPECT_FALSE(updated.contains("series"));
  // `kubectl describe job` lists core/v1 Events: the same one, seen through that view.
  bool in_core_view = false;
  for (const auto& e : get("/api/v1/namespaces/team/events").value("items", json::array()))
    in_core_view = in_core_view || (e["reason"] == "UpdatedAdmissionCheck" &&
                                    e["message"] == "comm-check: probing 2 nodes" &&
                                    e["involvedObject"]["name"] == "evented");
  EXPECT_TRUE(in_core_view);

  // Another change of the Workload reconciles the job again: the same note is a series.
  ASSERT_EQ(
      set_entry(name, kOtherCheck, kOtherManager, {{"state", "Pending"}, {"message", ""}}).status,
      200);
  list = wait_for(
      events,
      [](const json& l) {
        const auto e = events_about(l, "Job", "evented", "UpdatedAdmissionCheck");
        return !e.empty() && e[0].contains("series");
      },
      "a series");
  const auto repeated = events_about(list, "Job", "evented", "UpdatedAdmissionCheck");
  ASSERT_EQ(repeated.size(), 1u);
  EXPECT_GE(repeated[0]["series"]["count"].get<int>(), 2);
  // A new message while the job is unchanged: client-go's key leaves the note out, so it
  // counts in the same series and the Event keeps the first note.
  const int count = repeated[0]["series"]["count"].get<int>();
  ASSERT_EQ(set_entry(name, kOurCheck, kOurManager,
                      {{"state", "Pending"}, {"message", "waiting for 1 node"}})
                .status,
            200);
  list = wait_for(
      events,
      [&](const json& l) {
        const auto e = events_about(l, "Job", "evented", "UpdatedAdmissionCheck");
        return !e.empty() && e[0]["series"]["count"].get<int>() > count;
      },
      "the series counting the new message");
  updated = events_about(list, "Job", "evented", "UpdatedAdmissionCheck");
  ASSERT_EQ(updated.size(), 1u);
  EXPECT_EQ(updated[0]["note"], "comm-check: probing 2 nodes");
  // A change of the job itself (another resourceVersion): a new Event with the new note.
  ASSERT_EQ(call("PATCH", "/apis/batch/v1/namespaces/team/jobs/evented",
                 {{"metadata", {{"annotations", {{"example.com/touched", "1"}}}}}},
                 "application/merge-patch+json")
                .status,
            200);
  list = wait_for(
      events,
      [](const json& l) {
        return events_about(l, "Job", "evented", "UpdatedAdmissionCheck").size() == 2;
      },
      "a second UpdatedAdmissionCheck event");
  updated = events_about(list, "Job", "evented", "UpdatedAdmissionCheck");
  EXPECT_TRUE(updated[0]["note"] == "comm-check: waiting for 1 node" ||
              updated[1]["note"] == "comm-check: waiting for 1 node");

  // Both Ready: admitted, with the workload controller's Admitted event.
  ASSERT_EQ(set_entry(name, kOtherCheck, kOtherManager, {{"state", "Ready"}}).status, 200);
  ASSERT_EQ(set_entry(name, kOurCheck, kOurManager, {{"state", "Ready"}}).status, 200);
  list = wait_for(
      events, [&](const json& l) { return !events_about(l, "Workload", name, "Admitted").empty(); },
      "Admitted event");
  const json admitted = events_about(list, "Workload", name, "Admitted").at(0);
  EXPECT_EQ(admitted["reportingController"], "kueue-workload-controller");
  EXPECT_EQ(admitted["note"].get<std::string>().rfind(
                "Admitted by ClusterQueue gpus, wait time since reservation was ", 0),
            0u);
}

TEST_F(KueueApiTest, a_tas_flavor_assigns_hosts_once_provisioning_is_ready) {
  // Two 8-GPU nodes of the TAS flavor, one of another pool.
  for (const auto& [node, pool] : std::vector<std::pair<std::string, std::string>>{
           {"gpu-node-1", "tas"}, {"gpu-node-2", "tas"}, {"gpu-node-3", "other"}}) {
    NodeSpec spec = node_spec(node, 8);
    spec.labels["commgate.io/pool"] = pool;
    ASSERT_EQ(call("POST", "/api/v1/nodes", node_object(spec)).status, 201) << node;
  }
  create(std::string(kKueueApi) + "/resourceflavors",
         {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "ResourceFlavor"},
          {"metadata", {{"name", "tas-h100"}}},
          {"spec", {{"nodeLabels", {{"commgate.io/pool", "tas"}}}, {"topologyName", "default"}}}});
  create(std::string(kKueueApi) + "/admissionchecks",
         {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "AdmissionCheck"},
          {"metadata", {{"name", "prov"}}},
          {"spec", {{"controllerName", "kueue.x-k8s.io/provisioning-request"}}}});
  ASSERT_EQ(call("PATCH", std::string(kKueueApi) + "/admissionchecks/prov/status",
                 {{"status",
                   {{"conditions",
                     {{{"type", "Active"},
                       {"status", "True"},
                       {"reason", "Active"},
                       {"message", "The admission check is active"},
                       {"lastTransitionTime", format_rfc3339(Clock::now())}}}}}}},
                 "application/merge-patch+json")
                .status,
            200);
  create(std::string(kKueueApi) + "/clusterqueues",
         json::parse(R"({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
           "metadata": {"name": "tas"},
           "spec": {"namespaceSelector": {},
             "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
               "flavors": [{"name": "tas-h100", "resources": [
                 {"name": "cpu", "nominalQuota": 64},
                 {"name": "memory", "nominalQuota": "512Gi"},
                 {"name": "nvidia.com/gpu", "nominalQuota": 32}]}]}],
             "admissionChecksStrategy": {"admissionChecks": [
               {"name": "comm-check"}, {"name": "prov"}]}}})"));
  create(std::string(kKueueApi) + "/namespaces/team/localqueues",
         {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "LocalQueue"},
          {"metadata", {{"name", "tas-queue"}, {"namespace", "team"}}},
          {"spec", {{"clusterQueue", "tas"}}}});
  json job = fixture("kueue-v0.19.2/example-sample-job.yaml");
  job["metadata"].erase("generateName");
  job["metadata"]["name"] = "tas-job";
  job["metadata"]["namespace"] = "team";
  job["metadata"]["labels"][kKueueQueueNameLabel] = "tas-queue";
  job["spec"]["parallelism"] = 12;
  job["spec"]["completions"] = 12;
  job["spec"]["suspend"] = true;
  job = create("/apis/batch/v1/namespaces/team/jobs", job);
  const std::string name = kueue_workload_name("tas-job", job["metadata"]["uid"], "Job", "batch");

  // Quota first, the topology delayed for the ProvisioningRequest check.
  json wl = reserved_workload(name);
  json psa = wl["status"]["admission"]["podSetAssignments"][0];
  EXPECT_EQ(psa["delayedTopologyRequest"], "Pending");
  EXPECT_FALSE(psa.contains("topologyAssignment"));
  ASSERT_EQ(set_entry(name, kOurCheck, kOurManager, {{"state", "Ready"}}).status, 200);
  ASSERT_EQ(set_entry(name, "prov", "kueue-provisioning", {{"state", "Ready"}}).status, 200);

  // Every check Ready: the second pass assigns the hosts, then admits.
  wl = wait_for(
      kTeamWorkloads + name, [](const json& w) { return condition_is(w, "Admitted", "True"); },
      "Admitted with a topology");
  psa = wl["status"]["admission"]["podSetAssignments"][0];
  EXPECT_EQ(psa["delayedTopologyRequest"], "Ready");
  // The implied request (a TAS-only ClusterQueue) packs the fullest node first: 8 + 4.
  EXPECT_EQ(psa["topologyAssignment"], json::parse(R"({"levels":["kubernetes.io/hostname"],
      "slices":[{"domainCount":2,"valuesPerLevel":[{"individual":{"prefix":"gpu-node-",
      "roots":["1","2"]}}],"podCounts":{"individual":[8,4]}}]})"));
  wait_for(
      "/apis/batch/v1/namespaces/team/jobs/tas-job",
      [](const json& j) { return j["spec"].value("suspend", true) == false; }, "job started");
}

TEST_F(KueueApiTest, a_workload_reactivated_by_hand_is_requeued_and_its_checks_asked_again) {
  const json job = queued_job("resumable", 2);
  const std::string name = kueue_workload_name("resumable", job["metadata"]["uid"], "Job", "batch");
  reserved_workload(name);
  ASSERT_EQ(set_entry(name, kOtherCheck, kOtherManager, {{"state", "Ready"}}).status, 200);
  ASSERT_EQ(set_entry(name, kOurCheck, kOurManager, {{"state", "Ready"}}).status, 200);
  wait_for(
      "/apis/batch/v1/namespaces/team/jobs/resumable",
      [](const json& j) { return j["spec"].value("suspend", true) == false; }, "job started");

  // Deactivated by hand: evicted with the plain reason, the job stopped, the quota released.
  Reply r = call("PATCH", kTeamWorkloads + name, {{"spec", {{"active", false}}}},
                 "application/merge-patch+json");
  ASSERT_EQ(r.status, 200) << r.body;
  json wl = wait_for(
      kTeamWorkloads + name,
      [](const json& w) {
        return condition_is(w, "QuotaReserved", "False") && condition_is(w, "Requeued", "False");
      },
      "deactivated and the quota released");
  EXPECT_EQ(condition_of(wl, "Evicted")["reason"], "Deactivated");
  EXPECT_EQ(condition_of(wl, "Evicted")["message"], "The workload is deactivated");
  EXPECT_EQ(condition_of(wl, "Requeued")["reason"], "Deactivated");
  EXPECT_EQ(entry_named(wl, kOurCheck)["message"],
            "Reset to Pending after eviction. Previously: Ready");
  EXPECT_EQ(get("/apis/batch/v1/namespaces/team/jobs/resumable")["spec"]["suspend"], true);

  // Reactivated: Requeued=True Reactivated, queued, quota reserved again; the eviction is
  // past and both checks are asked again (their entries Pending), so it is not admitted.
  r = call("PATCH", kTeamWorkloads + name, {{"spec", {{"active", true}}}},
           "application/merge-patch+json");
  ASSERT_EQ(r.status, 200) << r.body;
  wl = wait_for(
      kTeamWorkloads + name, [](const json& w) { return condition_is(w, "QuotaReserved", "True"); },
      "quota reserved again after the reactivation");
  const json requeued = condition_of(wl, "Requeued");
  EXPECT_EQ(requeued["status"], "True");
  EXPECT_EQ(requeued["reason"], "Reactivated");
  EXPECT_EQ(requeued["message"], "The workload was reactivated");
  EXPECT_EQ(condition_of(wl, "Evicted")["status"], "False");
  EXPECT_EQ(condition_of(wl, "Evicted")["reason"], "QuotaReserved");
  EXPECT_EQ(condition_of(wl, "Evicted")["message"], "Previously: The workload is deactivated");
  EXPECT_EQ(entry_named(wl, kOurCheck)["state"], "Pending");
  EXPECT_EQ(entry_named(wl, kOtherCheck)["state"], "Pending");
  EXPECT_FALSE(condition_is(wl, "Admitted", "True"));
  EXPECT_EQ(get("/apis/batch/v1/namespaces/team/jobs/resumable")["spec"]["suspend"], true);

  // Our check, asked again, rejects it: deactivated again, by Kueue this time.
  r = set_entry(name, kOurCheck, kOurManager,
                {{"state", "Rejected"}, {"message", "2 nodes over policy"}});
  ASSERT_EQ(r.status, 200) << r.body;
  wl = wait_for(
      kTeamWorkloads + name,
      [](const json& w) {
        return w["spec"].value("active", true) == false &&
               condition_is(w, "QuotaReserved", "False") && condition_is(w, "Requeued", "False");
      },
      "deactivated again by the Rejected check");
  EXPECT_EQ(condition_of(wl, "Evicted")["reason"], "DeactivatedDueToAdmissionCheck");
  EXPECT_EQ(condition_of(wl, "Requeued")["reason"], "DeactivatedDueToAdmissionCheck");
  EXPECT_EQ(get("/apis/batch/v1/namespaces/team/jobs/resumable")["spec"]["suspend"], true);
}

// Kueue v0.19.2 reactivates only a Requeued=False reason of exactly "Deactivated"; one
// deactivated by a Rejected check carries "DeactivatedDueToAdmissionCheck" and stays out
// of the queue when reactivated (kubernetes-sigs/kueue#14870, fixed after v0.19.2).
TEST_F(KueueApiTest, a_workload_deactivated_by_a_rejected_check_stays_unqueued_when_reactivated) {
  const json job = queued_job("rejected", 2);
  const std::string name = kueue_workload_name("rejected", job["metadata"]["uid"], "Job", "batch");
  reserved_workload(name);
  Reply r = set_entry(name, kOurCheck, kOurManager,
                      {{"state", "Rejected"}, {"message", "2 nodes over policy"}});
  ASSERT_EQ(r.status, 200) << r.body;
  wait_for(
      kTeamWorkloads + name,
      [](const json& w) {
        return w["spec"].value("active", true) == false && condition_is(w, "Requeued", "False");
      },
      "deactivated by the Rejected check and the quota released");

  r = call("PATCH", kTeamWorkloads + name, {{"spec", {{"active", true}}}},
           "application/merge-patch+json");
  ASSERT_EQ(r.status, 200) << r.body;
  // A younger job in the same ClusterQueue gets quota: the scheduler, which takes the
  // oldest pending workload first, passed over the reactivated one after the patch.
  const json later = queued_job("later", 1);
  reserved_workload(kueue_workload_name("later", later["metadata"]["uid"], "Job", "batch"));
  const json wl = get(kTeamWorkloads + name);
  EXPECT_EQ(wl["spec"]["active"], true);
  EXPECT_EQ(condition_of(wl, "Requeued")["status"], "False");
  EXPECT_EQ(condition_of(wl, "Requeued")["reason"], "DeactivatedDueToAdmissionCheck");
  EXPECT_EQ(condition_of(wl, "QuotaReserved")["status"], "False");
  EXPECT_FALSE(status_of(wl).contains("admission"));
  EXPECT_EQ(condition_of(wl, "Evicted")["status"], "True");
  EXPECT_EQ(entry_named(wl, kOurCheck)["message"],
            "Reset to Pending after eviction. Previously: Rejected");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
