#include "core/workload_shape.h"

#include <algorithm>
#include <array>

#include "core/quantity.h"

namespace commgate {
namespace {

using Json = nlohmann::json;

const Json* member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A non-negative integer field, or `fallback` when absent or not an integer (the API
// server's validation, after the webhook, refuses the ill-typed ones).
long long count_or(const Json& object, const char* key, long long fallback) {
  const Json* v = member(object, key);
  if (!v || !v->is_number_integer()) return fallback;
  return std::max<long long>(0, v->get<long long>());
}

// Accelerators of one container: each accelerator resource's limit, else its request.
long long container_accelerators(const Json& container) {
  const Json* resources = member(container, "resources");
  if (!resources) return 0;
  long long total = 0;
  for (const char* part : {"limits", "requests"}) {
    const Json* list = member(*resources, part);
    if (!list || !list->is_object()) continue;
    for (const auto& [name, value] : list->items()) {
      if (!is_accelerator_resource(name)) continue;
      // A request counts only where no limit names the resource (extended resources
      // must have them equal when both are set).
      if (std::string_view(part) == "requests") {
        const Json* limits = member(*resources, "limits");
        if (limits && member(*limits, name.c_str())) continue;
      }
      std::string text = value.is_string()   ? value.get<std::string>()
                         : value.is_number() ? value.dump()
                                             : std::string();
      std::string error;
      const auto n = parse_quantity(text, &error);
      if (n && *n > 0) total += static_cast<long long>(*n + 0.5);
    }
  }
  return total;
}

const Json& at(const Json& object, std::initializer_list<const char*> path) {
  static const Json kNull;
  const Json* v = &object;
  for (const char* key : path) {
    v = member(*v, key);
    if (!v) return kNull;
  }
  return *v;
}

// Pods of a JobSpec that run at once: parallelism (default 1), no more than completions
// where set.
long long job_pods_at_once(const Json& job_spec, std::string* from, const std::string& path) {
  long long pods = count_or(job_spec, "parallelism", 1);
  *from = path + ".parallelism";
  if (const Json* c = member(job_spec, "completions"); c && c->is_number_integer()) {
    const long long completions = std::max<long long>(0, c->get<long long>());
    if (completions < pods) {
      pods = completions;
      *from = path + ".completions";
    }
  }
  return pods;
}

WorkloadShape job_shape(const Json& job_spec, const std::string& path) {
  WorkloadShape s;
  s.accelerators_per_pod = pod_accelerators(at(job_spec, {"template", "spec"}));
  s.accelerators_from = path + ".template.spec";
  const long long pods = job_pods_at_once(job_spec, &s.count_from, path);
  s.accelerated_pods = s.accelerators_per_pod > 0 ? pods : 0;
  return s;
}

// One more part of a workload made of several (JobSet's replicated jobs, PyTorchJob's
// replica types): its accelerated pods add up, the largest per-pod count is kept.
void add_part(WorkloadShape& total, const WorkloadShape& part) {
  if (part.accelerators_per_pod == 0) return;
  total.accelerated_pods += part.accelerated_pods;
  total.count_from += (total.count_from.empty() ? "" : " + ") + part.count_from;
  if (part.accelerators_per_pod > total.accelerators_per_pod) {
    total.accelerators_per_pod = part.accelerators_per_pod;
    total.accelerators_from = part.accelerators_from;
  }
}

WorkloadShape jobset_shape(const Json& jobset) {
  WorkloadShape total;
  const Json& jobs = at(jobset, {"spec", "replicatedJobs"});
  if (!jobs.is_array()) return total;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string path = "spec.replicatedJobs[" + std::to_string(i) + "]";
    WorkloadShape part = job_shape(at(jobs[i], {"template", "spec"}), path + ".template.spec");
    const long long replicas = count_or(jobs[i], "replicas", 1);
    part.accelerated_pods *= replicas;
    part.count_from = path + ".replicas x " + part.count_from;
    add_part(total, part);
  }
  return total;
}

WorkloadShape pytorchjob_shape(const Json& job) {
  WorkloadShape total;
  const Json& specs = at(job, {"spec", "pytorchReplicaSpecs"});
  if (!specs.is_object()) return total;
  for (const auto& [type, spec] : specs.items()) {
    const std::string path = "spec.pytorchReplicaSpecs." + type;
    WorkloadShape part;
    part.accelerators_per_pod = pod_accelerators(at(spec, {"template", "spec"}));
    part.accelerators_from = path + ".template.spec";
    part.accelerated_pods = count_or(spec, "replicas", 1);
    part.count_from = path + ".replicas";
    // An elastic job's workers may grow to maxReplicas.
    if (type == "Worker") {
      const long long most = count_or(at(job, {"spec", "elasticPolicy"}), "maxReplicas", 0);
      if (most > part.accelerated_pods) {
        part.accelerated_pods = most;
        part.count_from = "spec.elasticPolicy.maxReplicas";
      }
    }
    add_part(total, part);
  }
  return total;
}

// The node count a torchrun-style `--nnodes` value names: "4", or "MIN:MAX" (the most).
long long nnodes_value(std::string_view v) {
  if (const auto colon = v.find(':'); colon != std::string_view::npos) v = v.substr(colon + 1);
  long long n = 0;
  if (v.empty() || v.size() > 9) return 0;
  for (char c : v) {
    if (c < '0' || c > '9') return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

// The node count a bare pod declares for the run it belongs to (see workload_shape), and
// where: 0 when it declares none.
long long declared_nodes(const Json& pod_spec, std::string* from) {
  long long most = 0;
  const Json& containers = at(pod_spec, {"containers"});
  if (!containers.is_array()) return 0;
  auto note = [&](long long n, std::string where) {
    if (n > most) {
      most = n;
      *from = std::move(where);
    }
  };
  for (size_t i = 0; i < containers.size(); ++i) {
    const std::string path = "spec.containers[" + std::to_string(i) + "]";
    for (const char* list : {"command", "args"}) {
      const Json* words = member(containers[i], list);
      if (!words || !words->is_array()) continue;
      for (size_t w = 0; w < words->size(); ++w) {
        if (!(*words)[w].is_string()) continue;
        const std::string word = (*words)[w].get<std::string>();
        // Anywhere in a word, so that `bash -c "torchrun --nnodes=4 ..."` counts too.
        for (size_t at_flag = word.find("--nnodes"); at_flag != std::string::npos;
             at_flag = word.find("--nnodes", at_flag + 1)) {
          size_t v = at_flag + 8;
          std::string_view rest(word);
          if (v < word.size() && (word[v] == '=' || word[v] == ' ')) {
            rest = rest.substr(v + 1);
          } else if (v == word.size() && w + 1 < words->size() && (*words)[w + 1].is_string()) {
            note(nnodes_value((*words)[w + 1].get_ref<const std::string&>()),
                 path + "." + list + "[" + std::to_string(w + 1) + "]");
            continue;
          } else {
            continue;
          }
          rest = rest.substr(0, rest.find_first_of(" \t\n;&|\"'"));
          note(nnodes_value(rest), path + "." + list + "[" + std::to_string(w) + "]");
        }
      }
    }
    const Json* env = member(containers[i], "env");
    if (!env || !env->is_array()) continue;
    for (size_t e = 0; e < env->size(); ++e) {
      const Json* name = member((*env)[e], "name");
      const Json* value = member((*env)[e], "value");
      if (!name || !name->is_string() || !value || !value->is_string()) continue;
      const std::string& n = name->get_ref<const std::string&>();
      if (n == "PET_NNODES" || n == "NNODES")
        note(nnodes_value(value->get_ref<const std::string&>()),
             path + ".env[" + std::to_string(e) + "] (" + n + ")");
    }
  }
  return most;
}

WorkloadShape pod_shape(const Json& pod) {
  WorkloadShape s;
  const Json& spec = at(pod, {"spec"});
  s.accelerators_per_pod = pod_accelerators(spec);
  s.accelerators_from = "spec";
  if (s.accelerators_per_pod == 0) return s;
  s.accelerated_pods = 1;
  s.count_from = "a bare pod is one node";
  std::string from;
  if (const long long n = declared_nodes(spec, &from); n > 1) {
    s.accelerated_pods = n;
    s.count_from = from;
  }
  return s;
}

}  // namespace

std::optional<WorkloadKind> workload_kind_of(std::string_view group, std::string_view kind) {
  if (group == "batch" && kind == "Job") return WorkloadKind::kJob;
  if (group == "batch" && kind == "CronJob") return WorkloadKind::kCronJob;
  if (group == "jobset.x-k8s.io" && kind == "JobSet") return WorkloadKind::kJobSet;
  if (group == "kubeflow.org" && kind == "PyTorchJob") return WorkloadKind::kPyTorchJob;
  if (group.empty() && kind == "Pod") return WorkloadKind::kPod;
  return std::nullopt;
}

const char* to_string(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kJob:
      return "Job";
    case WorkloadKind::kCronJob:
      return "CronJob";
    case WorkloadKind::kJobSet:
      return "JobSet";
    case WorkloadKind::kPyTorchJob:
      return "PyTorchJob";
    case WorkloadKind::kPod:
      return "Pod";
  }
  return "?";
}

bool is_accelerator_resource(std::string_view name) {
  const auto slash = name.find('/');
  if (slash == std::string_view::npos) return false;
  const std::string_view vendor = name.substr(0, slash);
  const std::string_view device = name.substr(slash + 1);
  if (device == "gpu") return true;
  if (vendor == "nvidia.com" && device.starts_with("mig-")) return true;
  if (vendor == "gpu.intel.com") return true;
  if (vendor == "habana.ai" && device == "gaudi") return true;
  if (vendor == "aws.amazon.com" && device.starts_with("neuron")) return true;
  return vendor == "google.com" && device == "tpu";
}

// Accelerators a pod with this PodSpec holds: its containers' together, or its largest
// init container's when larger (the scheduler's effective request).
long long pod_accelerators(const nlohmann::json& pod_spec) {
  long long sum = 0;
  long long init = 0;
  if (const Json* cs = member(pod_spec, "containers"); cs && cs->is_array())
    for (const Json& c : *cs) sum += container_accelerators(c);
  if (const Json* cs = member(pod_spec, "initContainers"); cs && cs->is_array())
    for (const Json& c : *cs) init = std::max(init, container_accelerators(c));
  return std::max(sum, init);
}

WorkloadShape workload_shape(WorkloadKind kind, const nlohmann::json& object) {
  switch (kind) {
    case WorkloadKind::kJob:
      return job_shape(at(object, {"spec"}), "spec");
    case WorkloadKind::kCronJob:
      return job_shape(at(object, {"spec", "jobTemplate", "spec"}), "spec.jobTemplate.spec");
    case WorkloadKind::kJobSet:
      return jobset_shape(object);
    case WorkloadKind::kPyTorchJob:
      return pytorchjob_shape(object);
    case WorkloadKind::kPod:
      return pod_shape(object);
  }
  return {};
}

}  // namespace commgate
