#include "operator/kueue_training_shape.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/field_errors.h"

namespace commgate::op::kueue {
namespace {

constexpr const char* kShapeWhat = "cannot size the training";

[[noreturn]] void shape_fail(const std::string& path, const std::string& message) {
  FieldErrors errors;
  errors.add(path, message);
  throw ValidationError(kShapeWhat, std::move(errors));
}

std::string shape_pod_set_path(size_t index) {
  return index_path("spec.podSets", index);
}

std::string shape_join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

std::string shape_names(const Workload& wl) {
  std::vector<std::string> names;
  for (const PodSet& ps : wl.pod_sets) names.push_back(ps.name);
  return shape_join(names);
}

bool shape_is_trainer(const PodSet& ps) {
  const auto carries = [](const std::map<std::string, std::string>& m) {
    auto it = m.find(kTrainJobAncestorLabel);
    return it != m.end() && it->second == kTrainJobAncestorTrainer;
  };
  return carries(ps.labels) || carries(ps.annotations);
}

// The indexes in spec.podSets of the training pod sets of a `kind` job.
std::vector<size_t> shape_training_pod_sets(const Workload& wl, JobKind kind) {
  std::vector<size_t> out;
  const auto named = [&](std::initializer_list<const char*> names) {
    for (size_t i = 0; i < wl.pod_sets.size(); ++i)
      for (const char* n : names)
        if (wl.pod_sets[i].name == n) out.push_back(i);
  };
  switch (kind) {
    case JobKind::kPyTorchJob:
      named({"master", "worker"});
      if (out.empty())
        shape_fail("spec.podSets",
                   "a PyTorchJob's Workload has the pod sets master and worker "
                   "(its replica types), got " +
                       shape_names(wl));
      break;
    case JobKind::kTrainJob:
      for (size_t i = 0; i < wl.pod_sets.size(); ++i)
        if (shape_is_trainer(wl.pod_sets[i])) out.push_back(i);
      if (out.size() > 1)
        shape_fail(shape_pod_set_path(out[1]),
                   std::string("a second pod set carries ") + kTrainJobAncestorLabel + ": " +
                       kTrainJobAncestorTrainer + " (the first is " + wl.pod_sets[out[0]].name +
                       "): a TrainJob has one trainer");
      if (out.empty()) named({kTrainJobTrainerPodSet});
      if (out.empty())
        shape_fail("spec.podSets",
                   std::string("no pod set is the TrainJob's trainer: none carries ") +
                       kTrainJobAncestorLabel + ": " + kTrainJobAncestorTrainer +
                       " and none is named " + kTrainJobTrainerPodSet + "; got " + shape_names(wl));
      break;
    case JobKind::kJobSet:
      for (size_t i = 0; i < wl.pod_sets.size(); ++i)
        if (wl.pod_sets[i].gpus_per_pod > 0) out.push_back(i);
      if (out.empty())
        for (size_t i = 0; i < wl.pod_sets.size(); ++i) out.push_back(i);
      if (out.empty()) shape_fail("spec.podSets", "the Workload has no pod sets");
      break;
    case JobKind::kJob:
      named({"main"});
      if (out.empty())
        shape_fail("spec.podSets",
                   "a batch Job's Workload has the pod set main, got " + shape_names(wl));
      break;
  }
  return out;
}

// The nodes of a hostname-level topology assignment of every training pod set with pods:
// the hostnames in order of first appearance and the pods on each. Empty when any such pod
// set has no assignment at the hostname level.
std::vector<std::pair<std::string, int64_t>> shape_hosts(const Workload& wl,
                                                         const std::vector<size_t>& training) {
  std::vector<std::pair<std::string, int64_t>> hosts;
  if (!wl.admission) return hosts;
  for (size_t i : training) {
    const PodSet& ps = wl.pod_sets[i];
    if (wl.admitted_count(ps.name) == 0) continue;
    const PodSetAssignment* a = wl.admission->find(ps.name);
    if (!a || !a->topology_assignment || !a->topology_assignment->lowest_level_is_hostname())
      return {};
    for (const TopologyDomain& d : a->topology_assignment->domains) {
      const std::string& host = d.values.back();
      auto it =
          std::find_if(hosts.begin(), hosts.end(), [&](const auto& h) { return h.first == host; });
      if (it == hosts.end())
        hosts.emplace_back(host, d.pod_count);
      else
        it->second += d.pod_count;
    }
  }
  return hosts;
}

std::string shape_gpus(int64_t n) {
  return std::to_string(n) + (n == 1 ? " GPU" : " GPUs");
}

std::string shape_pods(int64_t n) {
  return std::to_string(n) + (n == 1 ? " pod" : " pods");
}

}  // namespace

const char* to_string(JobKind kind) {
  return name_of(kJobKinds, kind);
}

std::optional<JobKind> job_kind_of(const OwnerReference& owner) {
  const std::string group = owner.group();
  if (group == "kubeflow.org" && owner.kind == "PyTorchJob") return JobKind::kPyTorchJob;
  if (group == "trainer.kubeflow.org" && owner.kind == "TrainJob") return JobKind::kTrainJob;
  if (group == "jobset.x-k8s.io" && owner.kind == "JobSet") return JobKind::kJobSet;
  if (group == "batch" && owner.kind == "Job") return JobKind::kJob;
  return std::nullopt;
}

TrainingShape training_shape(const Workload& wl, int64_t gpus_per_node) {
  if (!wl.owner)
    shape_fail("metadata.ownerReferences",
               "no controller owner: commgate sizes the Workloads Kueue creates for a "
               "PyTorchJob, TrainJob, JobSet or Job");
  const std::optional<JobKind> kind = job_kind_of(*wl.owner);
  if (!kind)
    shape_fail("metadata.ownerReferences",
               "the owner is a " + wl.owner->kind + " (" + wl.owner->api_version +
                   "); commgate sizes PyTorchJob (kubeflow.org), TrainJob "
                   "(trainer.kubeflow.org), JobSet (jobset.x-k8s.io) and Job (batch)");

  TrainingShape out;
  out.kind = *kind;
  const std::vector<size_t> training = shape_training_pod_sets(wl, *kind);

  std::optional<size_t> first_with_pods;
  for (size_t i : training) {
    const PodSet& ps = wl.pod_sets[i];
    out.pod_sets.push_back(ps.name);
    const int64_t pods = wl.admitted_count(ps.name);
    if (pods == 0) continue;
    out.pods += pods;
    if (ps.gpus_per_pod != std::floor(ps.gpus_per_pod))
      shape_fail(shape_pod_set_path(i) + ".template.spec",
                 "its pods ask for " + std::to_string(ps.gpus_per_pod) +
                     " nvidia.com/gpu each; GPUs are whole devices");
    const auto gpus = static_cast<int64_t>(ps.gpus_per_pod);
    if (!first_with_pods) {
      first_with_pods = i;
      out.gpus_per_pod = gpus;
    } else if (gpus != out.gpus_per_pod) {
      shape_fail(shape_pod_set_path(i) + ".template.spec",
                 "its pods ask for " + std::to_string(gpus) + " nvidia.com/gpu each, those of " +
                     wl.pod_sets[*first_with_pods].name + " for " +
                     std::to_string(out.gpus_per_pod) +
                     ": commgate decides for one process count per node, so every training "
                     "pod must ask for the same GPUs");
    }
  }
  if (out.pods == 0)
    shape_fail("spec.podSets", "the training pod sets (" + shape_join(out.pod_sets) +
                                   ") were admitted with no pods");
  const int64_t procs_per_pod = std::max<int64_t>(out.gpus_per_pod, 1);

  if (const auto hosts = shape_hosts(wl, training); !hosts.empty()) {
    out.nodes = static_cast<int64_t>(hosts.size());
    for (const auto& [host, pods] : hosts) {
      out.hostnames.push_back(host);
      out.pods_per_node = std::max(out.pods_per_node, pods);
    }
    out.procs_per_node = out.pods_per_node * procs_per_pod;
    out.basis = shape_pods(out.pods) + " on the " + std::to_string(out.nodes) +
                " hosts of the topology assignment";
    return out;
  }

  const std::string pod_set_path = shape_pod_set_path(*first_with_pods) + ".template.spec";
  if (out.gpus_per_pod == 0 || gpus_per_node <= 0) {
    out.nodes = out.pods;
    out.pods_per_node = 1;
    out.procs_per_node = procs_per_pod;
    out.basis = out.gpus_per_pod == 0
                    ? shape_pods(out.pods) + " asking for no GPU, one per node"
                    : shape_pods(out.pods) + " of " + shape_gpus(out.gpus_per_pod) +
                          ", one per node (the nodes' GPU count is not known)";
    return out;
  }
  if (out.gpus_per_pod > gpus_per_node)
    shape_fail(pod_set_path, "its pods ask for " + shape_gpus(out.gpus_per_pod) +
                                 " each, but the nodes have " + shape_gpus(gpus_per_node) +
                                 ": no node can run one");
  if (gpus_per_node % out.gpus_per_pod != 0)
    shape_fail(pod_set_path,
               "its pods ask for " + shape_gpus(out.gpus_per_pod) +
                   " each, which does not divide "
                   "the nodes' " +
                   shape_gpus(gpus_per_node) + ": each node would keep " +
                   shape_gpus(gpus_per_node % out.gpus_per_pod) +
                   " no pod can take, and where the pods land cannot be foreseen; ask for a "
                   "divisor of " +
                   std::to_string(gpus_per_node));
  const int64_t fit = gpus_per_node / out.gpus_per_pod;
  out.nodes = (out.pods + fit - 1) / fit;
  out.pods_per_node = std::min(out.pods, fit);
  out.procs_per_node = out.pods_per_node * procs_per_pod;
  out.basis = shape_pods(out.pods) + " of " + shape_gpus(out.gpus_per_pod) +
              (fit > 1 ? " packed " + std::to_string(fit) + " per node" : ", one per node") +
              " on nodes of " + shape_gpus(gpus_per_node);
  return out;
}

}  // namespace commgate::op::kueue
