#include "sim/kueue_workloads.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "sim/json_fields.h"

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
  };
  return kinds;
}

std::string kueue_workload_name(const std::string& owner_name, const std::string& owner_uid,
                                const std::string& kind, const std::string& group) {
  std::string prefix = lower_case(kind) + "-" + owner_name;
  if (prefix.size() > kWorkloadNamePrefixLength) prefix.resize(kWorkloadNamePrefixLength);
  const std::string hash = sha1_hex(kind + "\n" + group + "\n" + owner_name + "\n" + owner_uid);
  return prefix + "-" + hash.substr(0, 5);
}

json kueue_pod_sets(const KueueJobKind& kind, const json& job) {
  json out = json::array();
  const json& spec = at(job, "spec");
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

json kueue_workload_for_job(const KueueJobKind& kind, const json& job) {
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
            {"podSets", kueue_pod_sets(kind, job)}}}};
}

bool kueue_job_suspended(const KueueJobKind& kind, const json& job) {
  const json& spec = at(job, "spec");
  const json& suspend =
      is_pytorchjob(kind) ? at(at(spec, "runPolicy"), "suspend") : at(spec, "suspend");
  return suspend.is_boolean() && suspend.get<bool>();
}

bool kueue_job_active(const KueueJobKind& kind, const json& job) {
  const json& status = at(job, "status");
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
