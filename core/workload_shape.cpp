#include "core/workload_shape.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <vector>

#include "core/json_access.h"
#include "core/pod_requests.h"
#include "core/quantity.h"

namespace commgate {
namespace {

using Json = nlohmann::json;

// A non-negative integer field, or `fallback` when absent or not an integer (the API
// server's validation, after the webhook, refuses the ill-typed ones).
long long count_or(const Json& object, const char* key, long long fallback) {
  const Json* v = json_member(object, key);
  if (!v || !v->is_number_integer()) return fallback;
  return std::max<long long>(0, v->get<long long>());
}

// Pods of a JobSpec that run at once: parallelism (default 1), no more than completions
// where set.
long long job_pods_at_once(const Json& job_spec, std::string* from, const std::string& path) {
  long long pods = count_or(job_spec, "parallelism", 1);
  *from = path + ".parallelism";
  if (const Json* c = json_member(job_spec, "completions"); c && c->is_number_integer()) {
    const long long completions = std::max<long long>(0, c->get<long long>());
    if (completions < pods) {
      pods = completions;
      *from = path + ".completions";
    }
  }
  return pods;
}

void count_declared(WorkloadShape& s, const Json& pod_spec, const std::string& path);

// `declared`: whether a larger run the pods declare counts (not for a part of a JobSet,
// whose pods declare the whole set's).
WorkloadShape job_shape(const Json& job_spec, const std::string& path, bool declared = true) {
  WorkloadShape s;
  const Json& pod_spec = json_at(job_spec, {"template", "spec"});
  s.accelerators_per_pod = pod_accelerators(pod_spec);
  s.accelerators_from = path + ".template.spec";
  const long long pods = job_pods_at_once(job_spec, &s.count_from, path);
  s.accelerated_pods = s.accelerators_per_pod > 0 ? pods : 0;
  if (declared && s.accelerators_per_pod > 0) count_declared(s, pod_spec, path + ".template.spec");
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
  const Json& jobs = json_at(jobset, {"spec", "replicatedJobs"});
  if (!jobs.is_array()) return total;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string path = "spec.replicatedJobs[" + std::to_string(i) + "]";
    WorkloadShape part =
        job_shape(json_at(jobs[i], {"template", "spec"}), path + ".template.spec", false);
    const long long replicas = count_or(jobs[i], "replicas", 1);
    part.accelerated_pods *= replicas;
    part.count_from = path + ".replicas x " + part.count_from;
    add_part(total, part);
  }
  for (size_t i = 0; i < jobs.size() && total.accelerators_per_pod > 0; ++i)
    count_declared(total, json_at(jobs[i], {"template", "spec", "template", "spec"}),
                   "spec.replicatedJobs[" + std::to_string(i) + "].template.spec.template.spec");
  return total;
}

WorkloadShape pytorchjob_shape(const Json& job) {
  WorkloadShape total;
  const Json& specs = json_at(job, {"spec", "pytorchReplicaSpecs"});
  if (!specs.is_object()) return total;
  for (const auto& [type, spec] : specs.items()) {
    const std::string path = "spec.pytorchReplicaSpecs." + type;
    WorkloadShape part;
    part.accelerators_per_pod = pod_accelerators(json_at(spec, {"template", "spec"}));
    part.accelerators_from = path + ".template.spec";
    part.accelerated_pods = count_or(spec, "replicas", 1);
    part.count_from = path + ".replicas";
    // An elastic job's workers may grow to maxReplicas.
    // The training operator reads replica types in any case ("worker").
    std::string lower = type;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "worker") {
      const long long most = count_or(json_at(job, {"spec", "elasticPolicy"}), "maxReplicas", 0);
      if (most > part.accelerated_pods) {
        part.accelerated_pods = most;
        part.count_from = "spec.elasticPolicy.maxReplicas";
      }
    }
    add_part(total, part);
  }
  if (total.accelerators_per_pod > 0)
    for (const auto& [type, spec] : specs.items())
      count_declared(total, json_at(spec, {"template", "spec"}),
                     "spec.pytorchReplicaSpecs." + type + ".template.spec");
  return total;
}

// One integer as Python's int() reads it, which is how torchrun (and accelerate,
// deepspeed) read a node count: blanks around it, a sign, underscores between digits,
// leading zeros, full-width digits (U+FF10..U+FF19). 0 for anything else or past 10^9.
long long python_int(std::string_view v) {
  auto blank = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  while (!v.empty() && blank(v.front())) v.remove_prefix(1);
  while (!v.empty() && blank(v.back())) v.remove_suffix(1);
  if (!v.empty() && (v.front() == '+' || v.front() == '-')) {
    if (v.front() == '-') return 0;
    v.remove_prefix(1);
  }
  long long n = 0;
  bool digit_before = false;
  for (size_t i = 0; i < v.size(); ++i) {
    int d = -1;
    if (v[i] >= '0' && v[i] <= '9') {
      d = v[i] - '0';
    } else if (v[i] == '_' && digit_before && i + 1 < v.size()) {
      digit_before = false;
      continue;
    } else if (static_cast<unsigned char>(v[i]) == 0xEF && i + 2 < v.size() &&
               static_cast<unsigned char>(v[i + 1]) == 0xBC &&
               static_cast<unsigned char>(v[i + 2]) >= 0x90 &&
               static_cast<unsigned char>(v[i + 2]) <= 0x99) {
      d = static_cast<unsigned char>(v[i + 2]) - 0x90;
      i += 2;
    } else {
      return 0;
    }
    n = n * 10 + d;
    if (n > 1'000'000'000) return 0;
    digit_before = true;
  }
  return digit_before ? n : 0;
}

// The node count a launcher's node-count value names: "4", or torchrun's "MIN:MAX" (the
// most).
long long nnodes_value(std::string_view v) {
  if (const auto colon = v.find(':'); colon != std::string_view::npos) v = v.substr(colon + 1);
  return python_int(v);
}

// The launchers' node-count flags: torchrun's --nnodes, also abbreviated as argparse allows
// (--nn, --nnode: no other torchrun option starts with --nn); accelerate's --num_machines
// and deepspeed's --num_nodes (either spelling).
bool is_node_count_flag(std::string_view flag) {
  if (flag.size() >= 4 && std::string_view("--nnodes").starts_with(flag)) return true;
  return flag == "--num_machines" || flag == "--num-machines" || flag == "--num_nodes" ||
         flag == "--num-nodes";
}

// Calls `word(text, where)` for each shell-ish word of a container's command and args
// together (a flag and its value may be split between them), each string also split as a
// shell splits `bash -c "..."`: on blanks, ; & | and quotes (so `--nnodes='4'` is a flag
// and its value). `where` says which string of the container it came from. No copies: the
// webhook reads pods of megabytes with this (issue #19: a copy per word cost 80x the
// request's size).
template <typename Word>
void for_each_word(const Json& container, Word&& word) {
  auto separator = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';' || c == '&' || c == '|' ||
           c == '\'' || c == '"';
  };
  for (const char* list : {"command", "args"}) {
    const Json* words = json_member(container, list);
    if (!words || !words->is_array()) continue;
    for (size_t w = 0; w < words->size(); ++w) {
      if (!(*words)[w].is_string()) continue;
      const std::string& text = (*words)[w].get_ref<const std::string&>();
      size_t start = 0;
      for (size_t i = 0; i <= text.size(); ++i) {
        if (i < text.size() && !separator(text[i])) continue;
        if (i > start) word(std::string_view(text).substr(start, i - start), list, w);
        start = i + 1;
      }
    }
  }
}

// The node count a pod (this PodSpec at `path`) declares for the run it belongs to (see
// workload_shape), and where: 0 when it declares none.
long long declared_nodes(const Json& pod_spec, const std::string& path, std::string* from) {
  long long most = 0;
  auto note = [&](long long n, const std::function<std::string()>& where) {
    if (n > most) {
      most = n;
      *from = where();
    }
  };
  for (const char* list : {"containers", "initContainers"}) {
    const Json* containers = json_member(pod_spec, list);
    if (!containers || !containers->is_array()) continue;
    for (size_t i = 0; i < containers->size(); ++i) {
      const std::string container_path = path + "." + list + "[" + std::to_string(i) + "]";
      // A flag whose value is the next word (`--nnodes 4`, `--nnodes= 4`).
      bool value_next = false;
      for_each_word((*containers)[i], [&](std::string_view word, const char* in, size_t w) {
        const auto where = [&] {
          return container_path + "." + in + "[" + std::to_string(w) + "]";
        };
        if (value_next) {
          value_next = false;
          note(nnodes_value(word), where);
          return;
        }
        const auto eq = word.find('=');
        if (!is_node_count_flag(word.substr(0, eq))) return;
        if (eq == std::string_view::npos || eq + 1 == word.size())
          value_next = true;
        else
          note(nnodes_value(word.substr(eq + 1)), where);
      });
      const Json* env = json_member((*containers)[i], "env");
      if (!env || !env->is_array()) continue;
      for (size_t e = 0; e < env->size(); ++e) {
        const Json* name = json_member((*env)[e], "name");
        const Json* value = json_member((*env)[e], "value");
        if (!name || !name->is_string() || !value || !value->is_string()) continue;
        const std::string& n = name->get_ref<const std::string&>();
        if (n == "PET_NNODES" || n == "NNODES")
          note(nnodes_value(value->get_ref<const std::string&>()),
               [&] { return container_path + ".env[" + std::to_string(e) + "] (" + n + ")"; });
      }
    }
  }
  return most;
}

// A pod template's pods run `pods` at once, unless they declare a larger run of their own
// (N single-pod Jobs whose pods each say `--nnodes=N`).
void count_declared(WorkloadShape& s, const Json& pod_spec, const std::string& path) {
  std::string from;
  if (const long long n = declared_nodes(pod_spec, path, &from); n > s.accelerated_pods) {
    s.accelerated_pods = n;
    s.count_from = from;
  }
}

WorkloadShape pod_shape(const Json& pod) {
  WorkloadShape s;
  const Json& spec = json_at(pod, {"spec"});
  s.accelerators_per_pod = pod_accelerators(spec);
  s.accelerators_from = "spec";
  if (s.accelerators_per_pod == 0) return s;
  s.accelerated_pods = 1;
  s.count_from = "a bare pod is one node";
  std::string from;
  if (const long long n = declared_nodes(spec, "spec", &from); n > 1) {
    s.accelerated_pods = n;
    s.count_from = from;
  }
  // One pod of a Kueue pod group (kubernetes-sigs/kueue pkg/controller/jobs/pod: the
  // group's pods carry its name as a label and its size as an annotation, and are admitted
  // together as one Workload): the group's size is the count.
  if (!json_string(pod, {"metadata", "labels", "kueue.x-k8s.io/pod-group-name"}).empty()) {
    const std::string total =
        json_string(pod, {"metadata", "annotations", "kueue.x-k8s.io/pod-group-total-count"});
    char* end = nullptr;
    const long long n = std::strtoll(total.c_str(), &end, 10);
    if (!total.empty() && end != nullptr && *end == '\0' && n > s.accelerated_pods) {
      s.accelerated_pods = n;
      s.count_from = "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]";
    }
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
  // gpu, NVIDIA's time-sliced gpu.shared, vgpu (k8s.amazonaws.com/vgpu).
  if (device == "gpu" || device.starts_with("gpu.") || device.ends_with("vgpu")) return true;
  if (vendor == "cloud-tpus.google.com") return true;
  // AMD's device plugin names GPU partitions too (amd.com/cpx_nps4, spx_nps1, ...).
  if (vendor == "amd.com") return true;
  if (vendor == "nvidia.com" && device.starts_with("mig-")) return true;
  if (vendor == "gpu.intel.com") return true;
  if (vendor == "habana.ai" && device == "gaudi") return true;
  if (vendor == "aws.amazon.com" && device.starts_with("neuron")) return true;
  return vendor == "google.com" && device == "tpu";
}

// Accelerators a pod with this PodSpec holds: its containers' together, or its largest
// init container's when larger (the scheduler's effective request).
// As the scheduler counts a pod's requests (k8s.io/component-helpers resource.PodRequests,
// with KEP-753's sidecars): the containers add up; an init container with restartPolicy
// Always is a sidecar that keeps running beside every later init container and beside the
// containers, so it adds to both; an ordinary init container runs alone beside the
// sidecars started before it. A sidecar's GPUs counted as an init container's (the largest
// one alone) let a pod hold more than its template seemed to ask (issue #19 review).
long long pod_accelerators(const nlohmann::json& pod_spec) {
  double total = 0;
  for (const auto& [name, amount] : pod_requests(pod_spec))
    if (is_accelerator_resource(name) && amount > 0) total += amount;
  return static_cast<long long>(total + 0.5);
}

WorkloadShape workload_shape(WorkloadKind kind, const nlohmann::json& object) {
  switch (kind) {
    case WorkloadKind::kJob:
      return job_shape(json_at(object, {"spec"}), "spec");
    case WorkloadKind::kCronJob:
      return job_shape(json_at(object, {"spec", "jobTemplate", "spec"}), "spec.jobTemplate.spec");
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
