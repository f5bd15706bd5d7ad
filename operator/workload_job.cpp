#include "operator/workload_job.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

#include "core/quantity.h"
#include "operator/gpu_resource.h"

namespace commgate::op {
namespace {

using nlohmann::json;

constexpr const char* kManagedBy = "app.kubernetes.io/managed-by";
constexpr const char* kRole = "commgate.io/role";
constexpr const char* kTrainingJobLabel = "commgate.io/trainingjob";
constexpr const char* kCompletionIndexRef =
    "metadata.annotations['batch.kubernetes.io/job-completion-index']";

// The torchrun variables the operator owns: a template entry of the same name is replaced
// (the operator's numNodes may differ from what the researcher wrote: a downsize).
constexpr std::array<std::string_view, 11> kTorchrunEnv = {
    "MASTER_ADDR",       "MASTER_PORT", "NNODES",        "NODE_RANK",       "NPROC_PER_NODE",
    "WORLD_SIZE",        "PET_NNODES",  "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT",
    "PET_NPROC_PER_NODE"};

bool is_torchrun_env(std::string_view name) {
  return std::find(kTorchrunEnv.begin(), kTorchrunEnv.end(), name) != kTorchrunEnv.end();
}

json labels_of(const TrainingJob& job) {
  return {{kManagedBy, "commgate"}, {kRole, "workload"}, {kTrainingJobLabel, job.metadata.name}};
}

// What selects the workload's pods (Service selector, anti-affinity): the TrainingJob's
// label and the role, never the researcher's own labels.
json pod_selector_of(const TrainingJob& job) {
  return {{kRole, "workload"}, {kTrainingJobLabel, job.metadata.name}};
}

json metadata_of(const TrainingJob& job, const std::string& job_uid) {
  return {{"name", job.metadata.name},
          {"namespace", job.metadata.namespace_},
          {"labels", labels_of(job)},
          {"ownerReferences", json::array({{{"apiVersion", kApiVersion},
                                            {"kind", "TrainingJob"},
                                            {"name", job.metadata.name},
                                            {"uid", job_uid},
                                            {"controller", true},
                                            {"blockOwnerDeletion", true}}})}};
}

json value_env(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

json completion_index_env(const std::string& name) {
  return {
      {"name", name},
      {"valueFrom", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", kCompletionIndexRef}}}}}};
}

// The torchrun environment, in a fixed order: the plain names the script may read, then
// the PET_* defaults of torchrun's flags.
json torchrun_env(const TrainingJob& job, const WorkloadSettings& settings) {
  const std::string& name = job.metadata.name;
  const std::string master_addr = name + "-0." + name;
  const std::string port = std::to_string(settings.master_port);
  const std::string nnodes = std::to_string(job.spec.num_nodes);
  const std::string nproc = std::to_string(job.spec.num_proc_per_node);
  const std::string world =
      std::to_string(static_cast<long long>(job.spec.num_nodes) * job.spec.num_proc_per_node);
  return json::array({value_env("MASTER_ADDR", master_addr), value_env("MASTER_PORT", port),
                      value_env("NNODES", nnodes), completion_index_env("NODE_RANK"),
                      value_env("NPROC_PER_NODE", nproc), value_env("WORLD_SIZE", world),
                      value_env("PET_NNODES", nnodes), completion_index_env("PET_NODE_RANK"),
                      value_env("PET_MASTER_ADDR", master_addr), value_env("PET_MASTER_PORT", port),
                      value_env("PET_NPROC_PER_NODE", nproc)});
}

// A container's env: the torchrun variables first (so the researcher's own entries may
// refer to them as $(NNODES)), then the NCCL settings the researcher did not set, then
// the researcher's entries but those the operator owns.
json container_env(const json& container, const json& torchrun,
                   const std::map<std::string, std::string>& nccl_env) {
  const json own = container.value("env", json::array());
  std::set<std::string> own_names;
  for (const auto& e : own)
    if (e.is_object() && e.contains("name") && e["name"].is_string())
      own_names.insert(e["name"].get<std::string>());
  json env = torchrun;
  for (const auto& [k, v] : nccl_env)
    if (!own_names.count(k)) env.push_back(value_env(k, v));
  for (const auto& e : own) {
    const bool owned = e.is_object() && e.contains("name") && e["name"].is_string() &&
                       is_torchrun_env(e["name"].get<std::string>());
    if (!owned) env.push_back(e);
  }
  return env;
}

bool names_gpu(const json& resources) {
  for (const char* kind : {"limits", "requests"})
    if (resources.contains(kind) && resources[kind].is_object() &&
        resources[kind].contains(kGpuResource))
      return true;
  return false;
}

bool template_names_gpu(const json& pod_spec) {
  for (const char* list : {"containers", "initContainers"})
    if (pod_spec.contains(list) && pod_spec[list].is_array())
      for (const auto& c : pod_spec[list])
        if (c.is_object() && c.contains("resources") && names_gpu(c["resources"])) return true;
  return false;
}

// The template's nodeSelector with the job's merged in; the job's value wins on a clash
// (it names the pool the decision measured).
json merged_node_selector(const json& pod_spec, const std::map<std::string, std::string>& job) {
  json selector = pod_spec.value("nodeSelector", json::object());
  if (!selector.is_object()) selector = json::object();
  for (const auto& [k, v] : job) selector[k] = v;
  return selector;
}

// The template's tolerations, then the job's that are not already there.
json merged_tolerations(const json& pod_spec, const json& job) {
  json tolerations = pod_spec.value("tolerations", json::array());
  if (!tolerations.is_array()) tolerations = json::array();
  if (job.is_array())
    for (const auto& t : job)
      if (std::find(tolerations.begin(), tolerations.end(), t) == tolerations.end())
        tolerations.push_back(t);
  return tolerations;
}

// One pod per node: numNodes is a count of nodes (the decision priced numNodes nodes over
// the pool's link), so two pods on one node are refused by the scheduler. Appended to the
// template's own required anti-affinity terms.
void add_one_pod_per_node(json& pod_spec, const TrainingJob& job) {
  json& affinity = pod_spec["affinity"];
  if (!affinity.is_object()) affinity = json::object();
  json& anti = affinity["podAntiAffinity"];
  if (!anti.is_object()) anti = json::object();
  json& terms = anti["requiredDuringSchedulingIgnoredDuringExecution"];
  if (!terms.is_array()) terms = json::array();
  terms.push_back({{"labelSelector", {{"matchLabels", pod_selector_of(job)}}},
                   {"topologyKey", "kubernetes.io/hostname"}});
}

json pod_template(const TrainingJob& job, const std::map<std::string, std::string>& nccl_env,
                  const WorkloadSettings& settings, PoolDevice device) {
  json tmpl = job.spec.pod_template.is_object() ? job.spec.pod_template : json::object();
  json& meta = tmpl["metadata"];
  if (!meta.is_object()) meta = json::object();
  json& labels = meta["labels"];
  if (!labels.is_object()) labels = json::object();
  labels.update(labels_of(job));  // ours win: the Service and the operator select by them

  json& spec = tmpl["spec"];
  if (!spec.is_object()) spec = json::object();
  spec["subdomain"] = job.metadata.name;
  if (!spec.contains("restartPolicy")) spec["restartPolicy"] = "Never";
  if (!job.spec.node_selector.empty() || spec.contains("nodeSelector"))
    spec["nodeSelector"] = merged_node_selector(spec, job.spec.node_selector);
  const json tolerations = merged_tolerations(spec, job.spec.tolerations);
  if (!tolerations.empty()) spec["tolerations"] = tolerations;
  add_one_pod_per_node(spec, job);

  json& containers = spec["containers"];
  if (!containers.is_array()) containers = json::array();
  if (device == PoolDevice::kCuda && !template_names_gpu(spec) && !containers.empty() &&
      containers[0].is_object())
    containers[0]["resources"]["limits"][kGpuResource] = std::to_string(job.spec.num_proc_per_node);
  const json torchrun = torchrun_env(job, settings);
  for (auto& c : containers) {
    if (!c.is_object()) continue;
    c["env"] = container_env(c, torchrun, nccl_env);
    // A failed rank's log tail becomes its termination message, which the TrainingJob's
    // message quotes (operator/pod_failure.h); the template's own choice stands.
    if (!c.contains("terminationMessagePolicy"))
      c["terminationMessagePolicy"] = "FallbackToLogsOnError";
  }
  return tmpl;
}

json service_of(const TrainingJob& job, const std::string& job_uid,
                const WorkloadSettings& settings) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", metadata_of(job, job_uid)},
          {"spec",
           {{"clusterIP", "None"},
            {"publishNotReadyAddresses", true},
            {"selector", pod_selector_of(job)},
            {"ports", json::array({{{"name", "master"},
                                    {"port", settings.master_port},
                                    {"targetPort", settings.master_port},
                                    {"protocol", "TCP"}}})}}}};
}

json job_of(const TrainingJob& job, const std::string& job_uid,
            const std::map<std::string, std::string>& nccl_env, const WorkloadSettings& settings,
            PoolDevice device) {
  json spec = {{"completionMode", "Indexed"},
               {"completions", job.spec.num_nodes},
               {"parallelism", job.spec.num_nodes},
               {"template", pod_template(job, nccl_env, settings, device)}};
  const RunPolicy& run = job.spec.run_policy;
  if (run.backoff_limit) spec["backoffLimit"] = *run.backoff_limit;
  if (run.active_deadline_seconds) spec["activeDeadlineSeconds"] = *run.active_deadline_seconds;
  if (run.ttl_seconds_after_finished)
    spec["ttlSecondsAfterFinished"] = *run.ttl_seconds_after_finished;
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", metadata_of(job, job_uid)},
          {"spec", spec}};
}

// The parts of a `+`-joined transport ("ib+p2p/nvlink").
std::set<std::string> transport_parts(const std::string& transport) {
  std::set<std::string> parts;
  std::size_t start = 0;
  while (start <= transport.size()) {
    const std::size_t end = std::min(transport.find('+', start), transport.size());
    if (end > start) parts.insert(transport.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace

std::map<std::string, std::string> nccl_env_of(const CommProfileStatus& profile) {
  std::map<std::string, std::string> env;
  const auto parts = transport_parts(profile.transport);
  const std::string& interface = profile.interface_name;
  if (profile.backend == "nccl" && parts.count("socket")) {
    // NCCL moved bytes over TCP sockets (no InfiniBand found or usable): keep it from
    // trying IB again, on the interface it used.
    env["NCCL_IB_DISABLE"] = "1";
    if (!interface.empty()) env["NCCL_SOCKET_IFNAME"] = interface;
  } else if (profile.backend == "gloo" && (parts.count("socket") || parts.count("loopback"))) {
    if (!interface.empty()) env["GLOO_SOCKET_IFNAME"] = interface;
  }
  // InfiniBand (interface = an HCA port), NVLink, shm, none, unknown: NCCL finds these by
  // itself; pinning one HCA would take the other rails away.
  return env;
}

PoolDevice pool_device_of(const CommProfileStatus& profile) {
  if (profile.device == "cuda") return PoolDevice::kCuda;
  if (profile.device == "cpu") return PoolDevice::kCpu;
  return PoolDevice::kNotMeasured;
}

WorkloadObjects build_workload(const TrainingJob& job, const std::string& job_uid,
                               const std::map<std::string, std::string>& nccl_env,
                               const WorkloadSettings& settings, PoolDevice device) {
  return {service_of(job, job_uid, settings), job_of(job, job_uid, nccl_env, settings, device)};
}

std::vector<std::string> replaced_template_env(const TrainingJob& job) {
  std::vector<std::string> replaced;
  const json& tmpl = job.spec.pod_template;
  if (!tmpl.is_object() || !tmpl.contains("spec") || !tmpl["spec"].is_object()) return replaced;
  const json containers = tmpl["spec"].value("containers", json::array());
  if (!containers.is_array()) return replaced;
  for (const auto& c : containers) {
    if (!c.is_object()) continue;
    const std::string container = c.value("name", "");
    const json env = c.value("env", json::array());
    if (!env.is_array()) continue;
    for (const auto& e : env)
      if (e.is_object() && e.contains("name") && e["name"].is_string() &&
          is_torchrun_env(e["name"].get<std::string>()))
        replaced.push_back(container + "/" + e["name"].get<std::string>());
  }
  return replaced;
}

std::string workload_size_drift(const json& workload, int admitted_nodes) {
  const json spec = workload.value("spec", json::object());
  auto differs = [&](const char* field) {
    const auto it = spec.find(field);
    return it == spec.end() || !it->is_number_integer() || it->get<int64_t>() != admitted_nodes;
  };
  if (!differs("parallelism") && !differs("completions")) return "";
  auto shown = [&](const char* field) {
    const auto it = spec.find(field);
    return it == spec.end() ? std::string("unset") : it->dump();
  };
  const json meta = workload.value("metadata", json::object());
  return "Job " + meta.value("namespace", "") + "/" + meta.value("name", "") + " has parallelism " +
         shown("parallelism") + " and completions " + shown("completions") +
         ", but commgate admitted " + format_nodes(admitted_nodes);
}

json workload_size_restore(int admitted_nodes) {
  return {{"spec", {{"completions", admitted_nodes}, {"parallelism", admitted_nodes}}}};
}

}  // namespace commgate::op
