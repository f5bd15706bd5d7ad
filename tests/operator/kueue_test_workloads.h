// Kueue Workloads for the tests of operator/kueue_*, built as Kueue v0.19.2 builds them
// from the upstream example jobs in ../shared/fixtures/ecosystem/ (pod sets per job kind:
// pkg/controller/jobs/kubeflow/kubeflowjob, jobs/jobset, jobs/trainjob, jobs/job), and
// the Kueue v0.19.2 Workload CRD's v1beta2 schema to hold them and what commgate writes
// to. (Header-only and kept beside its tests until a second folder needs it; then it moves
// to tests/support.)
#pragma once

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "core/time_format.h"
#include "core/yaml_json.h"

namespace commgate::op::kueue::testing {

using nlohmann::json;

// The documents of ../shared/fixtures/ecosystem/<relative>.
inline std::vector<json> ecosystem_fixture(const std::string& relative) {
  const auto path =
      std::filesystem::path(COMMGATE_SOURCE_DIR) / "../shared/fixtures/ecosystem" / relative;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return yaml_documents_to_json(text.str());
}

// The openAPIV3Schema of the Workload CRD's v1beta2 version (Kueue v0.19.2).
inline const json& workload_v1beta2_schema() {
  static const json schema = [] {
    const json crd = ecosystem_fixture("kueue-v0.19.2/kueue.x-k8s.io_workloads.yaml").at(0);
    for (const json& v : crd.at("spec").at("versions"))
      if (v.at("name") == "v1beta2") return v.at("schema").at("openAPIV3Schema");
    throw std::runtime_error("the Workload CRD has no v1beta2 version");
  }();
  return schema;
}

// Gives every container under `node` `gpus` nvidia.com/gpu (as a limit: the request
// defaults to it).
inline void give_gpus(json& node, int gpus) {
  if (node.is_object()) {
    for (auto& [key, child] : node.items()) {
      if (key == "containers" && child.is_array())
        for (json& container : child) container["resources"]["limits"]["nvidia.com/gpu"] = gpus;
      give_gpus(child, gpus);
    }
  } else if (node.is_array()) {
    for (json& child : node) give_gpus(child, gpus);
  }
}

inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A PyTorchJob's pod sets (KubeflowJob.PodSets): Master then Worker, those present, named
// lower-case, count replicas (default 1).
inline json pytorchjob_pod_sets(const json& job) {
  json out = json::array();
  const json& specs = job.at("spec").at("pytorchReplicaSpecs");
  for (const char* type : {"Master", "Worker"}) {
    if (!specs.contains(type)) continue;
    const json& rs = specs.at(type);
    out.push_back({{"name", lower(type)},
                   {"count", rs.value("replicas", 1)},
                   {"template", rs.at("template")}});
  }
  return out;
}

// A JobSet's pod sets (JobSet.PodSets): one per replicated job, count replicas x
// min(parallelism, completions).
inline json jobset_pod_sets(const json& replicated_jobs) {
  json out = json::array();
  for (const json& rj : replicated_jobs) {
    const json& job_spec = rj.at("template").at("spec");
    const int parallelism = job_spec.value("parallelism", 1);
    const int per_replica = std::min(parallelism, job_spec.value("completions", parallelism));
    out.push_back({{"name", lower(rj.at("name").get<std::string>())},
                   {"count", rj.value("replicas", 1) * per_replica},
                   {"template", job_spec.at("template")}});
  }
  return out;
}

// A batch Job's pod set (Job.PodSets): "main", count min(parallelism, completions).
inline json job_pod_sets(const json& job) {
  const json& spec = job.at("spec");
  const int parallelism = spec.value("parallelism", 1);
  return json::array({{{"name", "main"},
                       {"count", std::min(parallelism, spec.value("completions", parallelism))},
                       {"template", spec.at("template")}}});
}

// The replicated jobs of the dataset and model initializers, as Trainer v2.3.0's torchtune
// runtimes declare them (manifests/base/runtimes/torchtune/llama3_2/llama3_2_1B.yaml): the
// ancestor label on the Job template, not on the pod template.
inline json trainjob_initializers() {
  const auto initializer = [](const std::string& name) {
    return json{
        {"name", name},
        {"template",
         {{"metadata", {{"labels", {{"trainer.kubeflow.org/trainjob-ancestor-step", name}}}}},
          {"spec",
           {{"template",
             {{"spec",
               {{"containers",
                 json::array(
                     {{{"name", name}, {"image", "ghcr.io/kubeflow/trainer/" + name}}})}}}}}}}}}};
  };
  return json::array({initializer("dataset-initializer"), initializer("model-initializer")});
}

// A TrainJob's pod sets: those of the JobSet Trainer builds from the runtime (the
// ClusterTrainingRuntime fixture, with `initializers` before its own replicated jobs), the
// trainer's Job (ancestor label "trainer") with parallelism spec.trainer.numNodes, and its
// node containers given `gpus` GPUs each.
inline json trainjob_pod_sets(const json& train_job, const json& runtime, const json& initializers,
                              int gpus) {
  json replicated = initializers;
  for (json rj : runtime.at("spec").at("template").at("spec").at("replicatedJobs")) {
    const json& labels = rj["template"]["metadata"]["labels"];
    if (labels.value("trainer.kubeflow.org/trainjob-ancestor-step", "") == "trainer") {
      const int nodes = train_job.at("spec").at("trainer").at("numNodes");
      rj["template"]["spec"]["parallelism"] = nodes;
      rj["template"]["spec"]["completions"] = nodes;
      give_gpus(rj["template"]["spec"]["template"], gpus);
    }
    replicated.push_back(rj);
  }
  return jobset_pod_sets(replicated);
}

// A Workload as Kueue's job framework creates one and its scheduler and controllers fill
// in, from `pod_sets` (spec.podSets) and the job that owns it.
class WorkloadBuilder {
 public:
  explicit WorkloadBuilder(json pod_sets) {
    doc_ = {
        {"apiVersion", "kueue.x-k8s.io/v1beta2"},
        {"kind", "Workload"},
        {"metadata",
         {{"name", "job-train-1a2b3"},
          {"namespace", "ml"},
          {"uid", "wl-uid-1"},
          {"resourceVersion", "4711"},
          {"generation", 1}}},
        {"spec", {{"active", true}, {"podSets", std::move(pod_sets)}, {"queueName", "user-queue"}}},
        {"status", json::object()}};
  }

  WorkloadBuilder& owner(const std::string& api_version, const std::string& kind,
                         const std::string& name = "train") {
    doc_["metadata"]["ownerReferences"] = json::array({{{"apiVersion", api_version},
                                                        {"kind", kind},
                                                        {"name", name},
                                                        {"uid", "job-uid-1"},
                                                        {"controller", true},
                                                        {"blockOwnerDeletion", true}}});
    return *this;
  }
  WorkloadBuilder& condition(const std::string& type, bool status) {
    doc_["status"]["conditions"].push_back({{"type", type},
                                            {"status", status ? "True" : "False"},
                                            {"reason", status ? type : "Not" + type},
                                            {"message", ""},
                                            {"lastTransitionTime", "2026-11-30T17:00:00Z"}});
    return *this;
  }
  // QuotaReserved=True, and status.admission with an assignment of every pod set (its spec
  // count, flavor "gpu-a100" for every resource Kueue counts).
  WorkloadBuilder& reserved(const std::string& cluster_queue = "cluster-queue") {
    condition("QuotaReserved", true);
    json assignments = json::array();
    for (const json& ps : doc_["spec"]["podSets"])
      assignments.push_back({{"name", ps.at("name")},
                             {"count", ps.value("count", 1)},
                             {"flavors", {{"cpu", "gpu-a100"}, {"nvidia.com/gpu", "gpu-a100"}}}});
    doc_["status"]["admission"] = {{"clusterQueue", cluster_queue},
                                   {"podSetAssignments", std::move(assignments)}};
    return *this;
  }
  // Sets a field of pod set `pod_set`'s assignment (call after reserved()).
  WorkloadBuilder& assignment(const std::string& pod_set, const std::string& key, json value) {
    for (json& a : doc_["status"]["admission"]["podSetAssignments"])
      if (a["name"] == pod_set) a[key] = std::move(value);
    return *this;
  }
  WorkloadBuilder& check(const std::string& name, const std::string& state,
                         const std::string& message = "",
                         std::optional<int> requeue_after_seconds = std::nullopt) {
    json entry = {{"name", name},
                  {"state", state},
                  {"message", message},
                  {"lastTransitionTime", "2026-11-30T17:00:00Z"}};
    if (requeue_after_seconds) entry["requeueAfterSeconds"] = *requeue_after_seconds;
    doc_["status"]["admissionChecks"].push_back(std::move(entry));
    return *this;
  }
  WorkloadBuilder& active(bool a) {
    doc_["spec"]["active"] = a;
    return *this;
  }
  // Sets a field by JSON pointer ("/status/admission/clusterQueue").
  WorkloadBuilder& set(const std::string& pointer, json value) {
    doc_[json::json_pointer(pointer)] = std::move(value);
    return *this;
  }
  WorkloadBuilder& remove(const std::string& pointer) {
    const json::json_pointer p(pointer);
    doc_[p.parent_pointer()].erase(p.back());
    return *this;
  }
  json build() const { return doc_; }

 private:
  json doc_;
};

// A PyTorchJob's Workload, from training-operator v1.9.4's examples/pytorch/simple.yaml
// with `gpus` GPUs per pod and `workers` workers.
inline WorkloadBuilder a_pytorchjob_workload(int gpus = 8, int workers = 3) {
  json job = ecosystem_fixture("training-operator-v1.9.4/example-simple.yaml").at(0);
  job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = workers;
  give_gpus(job, gpus);
  WorkloadBuilder b(pytorchjob_pod_sets(job));
  b.owner("kubeflow.org/v1", "PyTorchJob", job["metadata"]["name"]);
  return b;
}

// A TrainJob's Workload: trainer v2.3.0's example-01-multi-node (3 nodes) on its
// torch-distributed runtime, with the torchtune runtimes' two initializers, `gpus` GPUs
// per node pod.
inline WorkloadBuilder a_trainjob_workload(int gpus = 2) {
  const json train_job = ecosystem_fixture("trainer-v2.3.0/example-01-multi-node.yaml").at(0);
  const json runtime = ecosystem_fixture("trainer-v2.3.0/runtime-torch_distributed.yaml").at(0);
  WorkloadBuilder b(trainjob_pod_sets(train_job, runtime, trainjob_initializers(), gpus));
  b.owner("trainer.kubeflow.org/v1alpha1", "TrainJob", train_job["metadata"]["name"]);
  return b;
}

// A JobSet's Workload: jobset v0.12.0's PyTorch MNIST example (one replicated job
// "workers", parallelism 4), `gpus` GPUs per pod.
inline WorkloadBuilder a_jobset_workload(int gpus = 1) {
  json jobset = ecosystem_fixture("jobset-v0.12.0/example-pytorch-mnist.yaml").at(0);
  give_gpus(jobset, gpus);
  WorkloadBuilder b(jobset_pod_sets(jobset["spec"]["replicatedJobs"]));
  b.owner("jobset.x-k8s.io/v1alpha2", "JobSet", jobset["metadata"]["name"]);
  return b;
}

// A batch Job's Workload: Kueue v0.19.2's sample job (parallelism 3, 1 GPU per pod).
inline WorkloadBuilder a_job_workload() {
  const json job = ecosystem_fixture("kueue-v0.19.2/example-sample-job.yaml").at(0);
  WorkloadBuilder b(job_pod_sets(job));
  b.owner("batch/v1", "Job", "sample-job-x7k2p");
  return b;
}

// A topologyAssignment at the hostname level: one domain per host, `pods` each, encoded as
// Kueue does for hosts sharing a prefix (tas_assignment.go compactSliceEncoding).
inline json hostname_assignment(const std::string& prefix, const std::vector<std::string>& roots,
                                int pods = 1) {
  return {{"levels", json::array({"kubernetes.io/hostname"})},
          {"slices",
           json::array({{{"domainCount", roots.size()},
                         {"valuesPerLevel",
                          json::array({{{"individual", {{"prefix", prefix}, {"roots", roots}}}}})},
                         {"podCounts", {{"universal", pods}}}}})}};
}

}  // namespace commgate::op::kueue::testing
