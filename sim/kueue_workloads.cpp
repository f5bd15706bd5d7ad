#include "sim/kueue_workloads.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "sim/api_status.h"
#include "sim/json_fields.h"
#include "sim/object_store.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

// workload_names.go: longMaxWorkloadNameLength 253 less "-" and the 5-digit hash.
constexpr std::size_t kWorkloadNamePrefixLength = 253 - 1 - 5;

std::string sha1_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha1(), nullptr) != 1)
    throw std::runtime_error("EVP_Digest(sha1) failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

std::string lower_case(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool is_pytorchjob(const KueueJobKind& kind) {
  return kind.kind == "PyTorchJob";
}
bool kueue_kind_is_jobset(const KueueJobKind& kind) {
  return kind.kind == "JobSet";
}
bool kueue_kind_is_trainjob(const KueueJobKind& kind) {
  return kind.kind == "TrainJob";
}

// trainer constants.go: the ancestor steps and the trainer's container name.
constexpr const char* kTrainerAncestorTrainer = "trainer";
constexpr const char* kTrainerDatasetInitializer = "dataset-initializer";
constexpr const char* kTrainerModelInitializer = "model-initializer";
constexpr const char* kTrainerNodeContainer = "node";

// jobset_controller.go PodSets/podsCount: one replicatedJob's pod set.
json jobset_replicated_job_pod_set(const json& replicated_job) {
  const json& job_spec = at(at(replicated_job, "template"), "spec");
  // PodsCountPerReplica: parallelism (default 1) capped by completions.
  int per_replica = int_or(at(job_spec, "parallelism"), 1);
  if (at(job_spec, "completions").is_number_integer())
    per_replica = std::min(per_replica, job_spec["completions"].get<int>());
  const json& tmpl = at(job_spec, "template");
  return {{"name", str(at(replicated_job, "name"))},
          {"count", int_or(at(replicated_job, "replicas"), 1) * per_replica},
          {"template", tmpl.is_object() ? tmpl : json::object()}};
}

// apply.UpsertEnvVars: each of `env` replaces the variable of its name or is appended.
void trainer_upsert_env(json& container, const json& env) {
  if (!env.is_array() || env.empty()) return;
  json& target = container["env"];
  if (!target.is_array()) target = json::array();
  for (const auto& var : env) {
    auto it = std::find_if(target.begin(), target.end(), [&](const json& existing) {
      return str(at(existing, "name")) == str(at(var, "name"));
    });
    if (it == target.end())
      target.push_back(var);
    else
      *it = var;
  }
}

// builder.go Trainer (and newRuntimeInfo for resourcesPerNode): the TrainJob's trainer
// settings in the "node" container of the trainer's pod template.
void trainer_override_node_container(json& pod_template, const json& trainer) {
  if (!trainer.is_object() || !at(at(pod_template, "spec"), "containers").is_array()) return;
  for (json& c : pod_template["spec"]["containers"]) {
    if (str(at(c, "name")) != kTrainerNodeContainer) continue;
    for (const char* field : {"image", "command", "args"})
      if (trainer.contains(field) && !trainer[field].is_null()) c[field] = trainer[field];
    const json& resources = at(trainer, "resourcesPerNode");
    if (at(resources, "limits").is_object() || at(resources, "requests").is_object()) {
      json whole = json::object();
      for (const char* part : {"limits", "requests"})
        if (at(resources, part).is_object()) whole[part] = resources[part];
      c["resources"] = whole;
    }
    trainer_upsert_env(c, at(trainer, "env"));
  }
}

// trainjob_controller.go getChildJobSet then JobSet.PodSets: the pod sets of the JobSet
// Trainer would build for `train_job` from `runtime` (see the header for what is left out).
json trainjob_pod_sets(const json& train_job, const json& runtime) {
  const json& trainer = at(at(train_job, "spec"), "trainer");
  const json& runtime_spec = at(runtime, "spec");
  const json& ml_policy = at(runtime_spec, "mlPolicy");
  const json& replicated_jobs = at(at(at(runtime_spec, "template"), "spec"), "replicatedJobs");
  json out = json::array();
  if (!replicated_jobs.is_array()) return out;
  for (json rj : replicated_jobs) {
    if (!rj.is_object()) continue;
    json& job_template = rj["template"];
    if (!job_template.is_object()) job_template = json::object();
    const std::string ancestor =
        str(at(at(at(job_template, "metadata"), "labels"), kTrainJobAncestorLabel));
    // newRuntimeInfo: the pod set's count is the Job's parallelism (default 1) ...
    int count = int_or(at(at(job_template, "spec"), "parallelism"), 1);
    if (ancestor == kTrainerAncestorTrainer) {
      // ... the trainer's the ML policy's numNodes, and the plugins' EnforceMLPolicy
      // (torch, plainml) put the TrainJob's numNodes in its place.
      if (ml_policy.is_object()) count = int_or(at(ml_policy, "numNodes"), 1);
      if (at(trainer, "numNodes").is_number_integer()) count = trainer["numNodes"].get<int>();
      if (at(at(job_template, "spec"), "template").is_object())
        trainer_override_node_container(job_template["spec"]["template"], trainer);
    }
    // builder.go Initializer and Trainer: one replica of each of those Jobs.
    if (ancestor == kTrainerAncestorTrainer || ancestor == kTrainerDatasetInitializer ||
        ancestor == kTrainerModelInitializer)
      rj["replicas"] = 1;
    // getChildJobSet: parallelism and completions set to every pod set's count.
    job_template["spec"]["parallelism"] = count;
    job_template["spec"]["completions"] = count;
    out.push_back(jobset_replicated_job_pod_set(rj));
  }
  return out;
}

// Kueue's entry of the TrainJob's spec.runtimePatches, added as the TrainJob webhook adds
// it on create (empty replicatedJobs) when it is not there.
json& trainjob_kueue_runtime_patch(json& train_job) {
  json& patches = train_job["spec"]["runtimePatches"];
  if (!patches.is_array()) patches = json::array();
  for (json& p : patches)
    if (str(at(p, "manager")) == kKueueRuntimePatchManager) return p;
  patches.push_back({{"manager", kKueueRuntimePatchManager},
                     {"trainingRuntimeSpec", {{"template", {{"spec", json::object()}}}}}});
  return patches.back();
}

bool condition_is_true(const json& object, const char* type) {
  return condition_true(object, type);
}

// The pod templates of the job by pod set name, for writing.
std::vector<std::pair<std::string, json*>> templates_of(const KueueJobKind& kind, json& job) {
  std::vector<std::pair<std::string, json*>> out;
  if (!job.contains("spec") || !job["spec"].is_object()) return out;
  json& spec = job["spec"];
  if (is_pytorchjob(kind)) {
    if (!spec.contains("pytorchReplicaSpecs") || !spec["pytorchReplicaSpecs"].is_object())
      return out;
    for (const char* type : {"Master", "Worker"}) {
      json& specs = spec["pytorchReplicaSpecs"];
      if (specs.contains(type) && specs[type].is_object())
        out.emplace_back(lower_case(type), &specs[type]["template"]);
    }
    return out;
  }
  if (kueue_kind_is_jobset(kind)) {
    if (!spec.contains("replicatedJobs") || !spec["replicatedJobs"].is_array()) return out;
    for (json& rj : spec["replicatedJobs"])
      if (rj.is_object())
        out.emplace_back(str(at(rj, "name")), &rj["template"]["spec"]["template"]);
    return out;
  }
  if (kueue_kind_is_trainjob(kind))
    return out;  // no pod templates: Kueue's runtime patch holds the infos
  out.emplace_back("main", &spec["template"]);
  return out;
}

void set_suspend(const KueueJobKind& kind, json& job, bool suspend) {
  if (is_pytorchjob(kind)) {
    job["spec"]["runPolicy"]["suspend"] = suspend;
  } else {
    job["spec"]["suspend"] = suspend;
  }
}

// Merges the string map `from` into template[part][field] (PodSetInfo.Merge).
void merge_map(json& tmpl, const char* part, const char* field, const json& from) {
  if (!from.is_object() || from.empty()) return;
  json& target = tmpl[part][field];
  if (!target.is_object()) target = json::object();
  for (const auto& [k, v] : from.items()) target[k] = v;
}

// Sets template[part][field] to `value`, or removes it when `value` is null or empty.
void restore_field(json& tmpl, const char* part, const char* field, const json& value) {
  const bool absent = value.is_null() || (value.is_object() && value.empty()) ||
                      (value.is_array() && value.empty());
  if (absent) {
    if (!tmpl.contains(part) || !tmpl[part].is_object()) return;
    tmpl[part].erase(field);
    if (tmpl[part].empty()) tmpl.erase(part);  // as the pod set recorded it: no such part
    return;
  }
  tmpl[part][field] = value;
}

}  // namespace

const std::vector<KueueJobKind>& kueue_job_kinds() {
  static const std::vector<KueueJobKind> kinds = {
      {"batch", "v1", "jobs", "Job"},
      {"kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"},
      {"jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"},
      {"trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob"},
  };
  return kinds;
}

const KueueJobKind& kueue_job_kind(const std::string& kind) {
  for (const auto& k : kueue_job_kinds())
    if (k.kind == kind) return k;
  throw std::invalid_argument("Kueue's stand-in does not integrate with " + kind);
}

std::optional<json> kueue_pod_set_source(const ObjectStore& store, const KueueJobKind& kind,
                                         const json& job) {
  if (!kueue_kind_is_trainjob(kind)) return json();
  // trainjob_controller.go getRuntimeSpec; the CRD defaults apiGroup and kind.
  const json& ref = at(at(job, "spec"), "runtimeRef");
  const std::string ref_kind = str(at(ref, "kind"));
  const bool cluster_scoped = ref_kind.empty() || ref_kind == "ClusterTrainingRuntime";
  const auto runtimes = store.find_resource(
      kind.group, kind.version, cluster_scoped ? "clustertrainingruntimes" : "trainingruntimes");
  if (!runtimes) return std::nullopt;
  try {
    return store.get(*runtimes, cluster_scoped ? "" : str(at(at(job, "metadata"), "namespace")),
                     str(at(ref, "name")));
  } catch (const ApiError&) {
    return std::nullopt;  // not found: retried on a later pass, as upstream's reconcile is
  }
}

std::string kueue_workload_name(const std::string& owner_name, const std::string& owner_uid,
                                const std::string& kind, const std::string& group) {
  std::string prefix = lower_case(kind) + "-" + owner_name;
  if (prefix.size() > kWorkloadNamePrefixLength) prefix.resize(kWorkloadNamePrefixLength);
  const std::string hash = sha1_hex(kind + "\n" + group + "\n" + owner_name + "\n" + owner_uid);
  return prefix + "-" + hash.substr(0, 5);
}

json kueue_pod_sets(const KueueJobKind& kind, const json& job, const json& source) {
  json out = json::array();
  const json& spec = at(job, "spec");
  if (kueue_kind_is_trainjob(kind)) {
    if (!source.is_object())
      throw std::invalid_argument(
          "spec.runtimeRef: runtime '" + str(at(at(spec, "runtimeRef"), "name")) +
          "' not found: a TrainJob's pod sets come from its (Cluster)TrainingRuntime");
    return trainjob_pod_sets(job, source);
  }
  if (kueue_kind_is_jobset(kind)) {
    const json& replicated_jobs = at(spec, "replicatedJobs");
    if (replicated_jobs.is_array())
      for (const auto& rj : replicated_jobs) out.push_back(jobset_replicated_job_pod_set(rj));
    return out;
  }
  if (is_pytorchjob(kind)) {
    const json& specs = at(spec, "pytorchReplicaSpecs");
    for (const char* type : {"Master", "Worker"}) {
      const json& rs = at(specs, type);
      if (!rs.is_object()) continue;
      out.push_back(
          {{"name", lower_case(type)},
           {"count", int_or(at(rs, "replicas"), 1)},
           {"template", at(rs, "template").is_object() ? rs["template"] : json::object()}});
    }
    return out;
  }
  int count = int_or(at(spec, "parallelism"), 1);
  if (at(spec, "completions").is_number_integer())
    count = std::min(count, spec["completions"].get<int>());
  json tmpl = at(spec, "template").is_object() ? spec["template"] : json::object();
  // job_controller.go cleanLabels: the labels the Job controller adds are not the pod set's.
  if (tmpl.contains("metadata") && tmpl["metadata"].is_object() &&
      tmpl["metadata"].contains("labels") && tmpl["metadata"]["labels"].is_object()) {
    for (const char* k : {"controller-uid", "batch.kubernetes.io/controller-uid", "job-name",
                          "batch.kubernetes.io/job-name"})
      tmpl["metadata"]["labels"].erase(k);
  }
  out.push_back({{"name", "main"}, {"count", count}, {"template", tmpl}});
  return out;
}

json kueue_workload_for_job(const KueueJobKind& kind, const json& job, const json& source) {
  const json& meta = at(job, "metadata");
  const std::string name = str(at(meta, "name")), uid = str(at(meta, "uid"));
  return {{"apiVersion", kKueueApiVersion},
          {"kind", "Workload"},
          {"metadata",
           {{"name", kueue_workload_name(name, uid, kind.kind, kind.group)},
            {"namespace", str(at(meta, "namespace"))},
            {"labels", {{kKueueJobUidLabel, uid}}},
            {"ownerReferences",
             {{{"apiVersion", kind.api_version()},
               {"kind", kind.kind},
               {"name", name},
               {"uid", uid},
               {"controller", true},
               {"blockOwnerDeletion", true}}}}}},
          {"spec",
           {{"queueName", str(at(at(meta, "labels"), kKueueQueueNameLabel))},
            {"podSets", kueue_pod_sets(kind, job, source)}}}};
}

bool kueue_job_suspended(const KueueJobKind& kind, const json& job) {
  const json& spec = at(job, "spec");
  const json& suspend =
      is_pytorchjob(kind) ? at(at(spec, "runPolicy"), "suspend") : at(spec, "suspend");
  return suspend.is_boolean() && suspend.get<bool>();
}

bool kueue_job_active(const KueueJobKind& kind, const json& job) {
  const json& status = at(job, "status");
  if (kueue_kind_is_jobset(kind) || kueue_kind_is_trainjob(kind)) {
    const json& jobs =
        at(status, kueue_kind_is_jobset(kind) ? "replicatedJobsStatus" : "jobsStatus");
    if (jobs.is_array())
      for (const auto& j : jobs)
        if (int_or(at(j, "active"), 0) > 0) return true;
    return false;
  }
  if (!is_pytorchjob(kind)) return int_or(at(status, "active"), 0) > 0;
  const json& replicas = at(status, "replicaStatuses");
  if (replicas.is_object())
    for (const auto& [type, rs] : replicas.items())
      if (int_or(at(rs, "active"), 0) > 0) return true;
  return false;
}

bool kueue_job_finished(const KueueJobKind& kind, const json& job) {
  if (is_pytorchjob(kind))
    return condition_is_true(job, "Succeeded") || condition_is_true(job, "Failed");
  if (kueue_kind_is_jobset(kind))
    return condition_is_true(job, "Completed") || condition_is_true(job, "Failed");
  return condition_is_true(job, "Complete") || condition_is_true(job, "Failed");
}

json kueue_pod_set_infos(const json& workload, const json& flavors) {
  json infos = json::object();
  const json& status = at(workload, "status");
  const json& assignments = at(at(status, "admission"), "podSetAssignments");
  if (assignments.is_array()) {
    for (const auto& a : assignments) {
      json info = {{"nodeSelector", json::object()},
                   {"labels", json::object()},
                   {"annotations", json::object()},
                   {"tolerations", json::array()}};
      std::vector<std::string> seen;
      const json& by_resource = at(a, "flavors");
      if (by_resource.is_object()) {
        for (const auto& [resource, flavor_name] : by_resource.items()) {
          const std::string f = str(flavor_name);
          if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
          seen.push_back(f);
          const json& flavor_spec = at(at(flavors, f.c_str()), "spec");
          const json& labels = at(flavor_spec, "nodeLabels");
          if (labels.is_object())
            for (const auto& [k, v] : labels.items()) info["nodeSelector"][k] = v;
          const json& tolerations = at(flavor_spec, "tolerations");
          if (tolerations.is_array())
            for (const auto& t : tolerations) info["tolerations"].push_back(t);
        }
      }
      infos[str(at(a, "name"))] = info;
    }
  }
  // The checks' podSetUpdates (reconciler.go getPodSetsInfoFromStatus).
  const json& checks = at(status, "admissionChecks");
  if (checks.is_array()) {
    for (const auto& check : checks) {
      const json& updates = at(check, "podSetUpdates");
      if (!updates.is_array()) continue;
      for (const auto& u : updates) {
        const std::string name = str(at(u, "name"));
        if (!infos.contains(name)) continue;
        for (const char* field : {"nodeSelector", "labels", "annotations"}) {
          const json& values = at(u, field);
          if (values.is_object())
            for (const auto& [k, v] : values.items()) infos[name][field][k] = v;
        }
        const json& tolerations = at(u, "tolerations");
        if (tolerations.is_array())
          for (const auto& t : tolerations) infos[name]["tolerations"].push_back(t);
      }
    }
  }
  return infos;
}

json kueue_started_job(const KueueJobKind& kind, const json& job, const json& infos) {
  json next = job;
  set_suspend(kind, next, false);
  if (kueue_kind_is_trainjob(kind)) {
    // trainjob_controller.go RunWithPodSetsInfo: one ReplicatedJobPatch per pod set, the
    // fields Go leaves out when empty left out.
    json replicated_jobs = json::array();
    if (infos.is_object()) {
      for (const auto& [pod_set, info] : infos.items()) {
        json metadata = json::object(), pod_spec = json::object();
        for (const char* field : {"labels", "annotations"})
          if (at(info, field).is_object() && !info[field].empty()) metadata[field] = info[field];
        for (const char* field : {"nodeSelector", "tolerations"})
          if (!at(info, field).is_null() && !info[field].empty()) pod_spec[field] = info[field];
        replicated_jobs.push_back(
            {{"name", pod_set},
             {"template",
              {{"spec", {{"template", {{"metadata", metadata}, {"spec", pod_spec}}}}}}}});
      }
    }
    trainjob_kueue_runtime_patch(
        next)["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"] = replicated_jobs;
    return next;
  }
  for (auto& [pod_set, tmpl] : templates_of(kind, next)) {
    const json& info = at(infos, pod_set.c_str());
    if (!info.is_object()) continue;
    if (!tmpl->is_object()) *tmpl = json::object();
    merge_map(*tmpl, "spec", "nodeSelector", at(info, "nodeSelector"));
    merge_map(*tmpl, "metadata", "labels", at(info, "labels"));
    merge_map(*tmpl, "metadata", "annotations", at(info, "annotations"));
    const json& tolerations = at(info, "tolerations");
    if (tolerations.is_array() && !tolerations.empty()) {
      json& target = (*tmpl)["spec"]["tolerations"];
      if (!target.is_array()) target = json::array();
      for (const auto& t : tolerations)
        if (std::find(target.begin(), target.end(), t) == target.end()) target.push_back(t);
    }
  }
  return next;
}

json kueue_stopped_job(const KueueJobKind& kind, const json& job, const json& workload) {
  json next = job;
  set_suspend(kind, next, true);
  if (kueue_kind_is_trainjob(kind)) {
    // RestorePodSetsInfo: Kueue's patch left without replicatedJobs (Go's nil: absent).
    json& patches = next["spec"]["runtimePatches"];
    if (patches.is_array())
      for (json& p : patches)
        if (str(at(p, "manager")) == kKueueRuntimePatchManager &&
            p.contains("trainingRuntimeSpec") && p["trainingRuntimeSpec"].contains("template") &&
            p["trainingRuntimeSpec"]["template"].contains("spec") &&
            p["trainingRuntimeSpec"]["template"]["spec"].is_object())
          p["trainingRuntimeSpec"]["template"]["spec"].erase("replicatedJobs");
    if (patches.is_null()) next["spec"].erase("runtimePatches");
    return next;
  }
  const json& pod_sets = at(at(workload, "spec"), "podSets");
  if (!pod_sets.is_array()) return next;
  for (auto& [pod_set, tmpl] : templates_of(kind, next)) {
    for (const auto& ps : pod_sets) {
      if (str(at(ps, "name")) != pod_set) continue;
      if (!tmpl->is_object()) *tmpl = json::object();
      const json& recorded = at(ps, "template");
      restore_field(*tmpl, "spec", "nodeSelector", at(at(recorded, "spec"), "nodeSelector"));
      restore_field(*tmpl, "spec", "tolerations", at(at(recorded, "spec"), "tolerations"));
      restore_field(*tmpl, "metadata", "labels", at(at(recorded, "metadata"), "labels"));
      restore_field(*tmpl, "metadata", "annotations", at(at(recorded, "metadata"), "annotations"));
    }
  }
  return next;
}

}  // namespace commgate::sim
