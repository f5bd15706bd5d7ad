#include "operator/probe_job.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "core/probe_memory.h"
#include "core/probe_result.h"
#include "core/probe_timeout.h"
#include "core/quantity.h"
#include "operator/gpu_resource.h"
#include "operator/object_fields.h"
#include "operator/workload_state.h"

namespace commgate::op {
namespace {

using nlohmann::json;

constexpr const char* kContainerName = "probe";
constexpr const char* kPortName = "rendezvous";
constexpr const char* kTerminationLogPath = "/dev/termination-log";
// The "nonroot" user of distroless images; any non-zero uid satisfies "restricted".
constexpr int kNonRootUid = 65532;

// The labels every object of one probe carries; also what its Service and its
// anti-affinity select on (the probe's pods and nothing else: one probe per pool at a time).
json probe_labels(const std::string& pool) {
  return {{kManagedByLabel, kManagedByValue}, {kRoleLabel, "probe"}, {kPoolLabel, pool}};
}

json owner_reference(const ProbeRequest& request) {
  // A cluster-scoped owner of a namespaced dependent is allowed. blockOwnerDeletion false:
  // deleting a CommProfile must not wait on its probe's foreground deletion.
  return json::array({{{"apiVersion", kApiVersion},
                       {"kind", "CommProfile"},
                       {"name", request.pool},
                       {"uid", request.profile_uid},
                       {"controller", true},
                       {"blockOwnerDeletion", false}}});
}

json object_meta(const ProbeRequest& request, const ProbeLaunchSettings& settings) {
  return {{"name", probe_job_name(request.pool)},
          {"namespace", settings.ns},
          {"labels", probe_labels(request.pool)},
          {"ownerReferences", owner_reference(request)}};
}

std::string join_shape(const std::vector<int64_t>& shape) {
  std::string out;
  for (int64_t d : shape) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

// Whether the probe pods take the job's GPUs (see probe_resources).
bool probe_uses_gpus(const ProbeRequest& request) {
  return request.policy_probe.backend != "gloo" && request.procs_per_node > 0;
}

// A CPU probe of a model that cannot fit in the largest probe pod would only be refused
// (docs/probe.md): with the job's stepTimeHintMs it measures the link alone.
bool link_only(const ProbeRequest& request) {
  const ModelSpec& model = request.model;
  return !probe_uses_gpus(request) && model.step_time_hint_ms && model.torch_script.empty() &&
         estimate_probe_memory(model.parameters, model.batch_size, model.optimizer).total() >
             kProbePodMemoryCap;
}

// Whether the probe can time another model beside its first: a synthetic model whose
// probe fits the probe pod (TorchScript modules are timed only as the first model).
bool can_also_time(const ProbeRequest& request, const ModelSpec& model) {
  return model.torch_script.empty() &&
         (probe_uses_gpus(request) ||
          estimate_probe_memory(model.parameters, model.batch_size, model.optimizer).total() <=
              kProbePodMemoryCap);
}

// The policy's probe.timeoutSeconds, or one sized by the model, for each model the probe
// times: a probe of several models gets each one's time.
int probe_timeout(const ProbeRequest& request) {
  const std::vector<ModelSpec> models = probe_models(request);
  int total = 0;
  for (size_t i = 0; i < models.size(); ++i)
    total += probe_timeout_seconds(request.policy_probe.timeout_seconds, models[i],
                                   i > 0 || !link_only(request));
  return total;
}

// The probe's flags (probe-job/probe_config.cpp): the job's model and the policy's probe
// settings. The world (rank, world size, master) comes from the environment instead.
// No --quiet: the human summary on stderr is what `kubectl logs` of a probe pod shows.
std::vector<std::string> probe_args(const ProbeRequest& request,
                                    const ProbeLaunchSettings& settings) {
  const ModelSpec& model = request.model;
  const ProbeSettings& probe = request.policy_probe;
  std::vector<std::string> args = {
      "--backend",        probe.backend.empty() ? "auto" : probe.backend,
      "--params",         format_quantity(model.parameters),
      "--batch-size",     std::to_string(model.batch_size),
      "--optimizer",      model.optimizer,
      "--gradient-dtype", model.gradient_dtype};
  if (link_only(request)) args.push_back("--no-compute");
  const std::vector<ModelSpec> models = probe_models(request);
  for (size_t i = 1; i < models.size(); ++i)
    args.insert(args.end(), {"--also-model", "params=" + format_quantity(models[i].parameters) +
                                                 ",batch=" + std::to_string(models[i].batch_size) +
                                                 ",optimizer=" + models[i].optimizer +
                                                 ",dtype=" + models[i].gradient_dtype});
  if (!model.torch_script.empty()) {
    // The probe takes the batch size from the shape's first dimension then.
    args.insert(args.end(), {"--torchscript", model.torch_script, "--input-shape",
                             join_shape(model.input_shape)});
  }
  args.insert(args.end(),
              {"--min-bytes", format_byte_quantity(probe.min_bytes), "--max-bytes",
               format_byte_quantity(std::max(probe.min_bytes, probe.max_bytes)), "--warmup",
               std::to_string(probe.warmup_iterations), "--iters", std::to_string(probe.iterations),
               "--timeout", std::to_string(probe_timeout(request)), "--termination-log",
               kTerminationLogPath});
  if (settings.threads > 0)
    args.insert(args.end(), {"--threads", std::to_string(settings.threads)});
  return args;
}

// torchrun-style environment, one rank per node: the probe measures the links between
// nodes, so WORLD_SIZE is the node count and RANK the pod's completion index.
json probe_env(const std::string& name, const ProbeLaunchSettings& settings, int nodes) {
  // A fieldRef on the completion-index annotation works both in a real cluster (the Job
  // controller sets it on Indexed Jobs' pods) and in commgate-sim's kubelet.
  const json rank_from_index = {
      {"fieldRef",
       {{"apiVersion", "v1"},
        {"fieldPath", std::string("metadata.annotations['") + kCompletionIndexKey + "']"}}}};
  return json::array({
      // Rank 0's pod DNS name: hostname <job>-0 under the headless Service <job>.
      {{"name", "MASTER_ADDR"}, {"value", name + "-0." + name}},
      {{"name", "MASTER_PORT"}, {"value", std::to_string(settings.port)}},
      {{"name", "WORLD_SIZE"}, {"value", std::to_string(nodes)}},
      {{"name", "RANK"}, {"valueFrom", rank_from_index}},
      {{"name", "LOCAL_RANK"}, {"value", "0"}},
      {{"name", "LOCAL_WORLD_SIZE"}, {"value", "1"}},
  });
}

// The GPUs of a node, as the training will take them, so the probe lands only on nodes
// that can run the job and its NCCL probe sees the same devices. A gloo probe asks for
// none: a CPU pool has no nvidia.com/gpu resource and such a pod would never schedule.
// auto and nccl ask for them (auto picks NCCL when a GPU is visible). Memory: request =
// limit = what the probe's model needs (core's probe_pod_memory_bytes), so a probe can
// neither crowd a node nor take more than the scheduler gave it.
// A probe of several models holds one at a time: the largest one's memory.
json probe_resources(const ProbeRequest& request) {
  const bool gpus = probe_uses_gpus(request);
  double memory = 0;
  for (const ModelSpec& model : probe_models(request))
    memory = std::max(
        memory, probe_pod_memory_bytes(model.parameters, model.batch_size, model.optimizer, gpus));
  json amounts = {{"memory", format_byte_quantity(memory)}};
  if (gpus) amounts[kGpuResource] = std::to_string(request.procs_per_node);
  return {{"limits", amounts}, {"requests", amounts}};
}

// Pod Security Standards "restricted": non-root, no privilege escalation, no capabilities,
// the runtime's default seccomp profile.
json pod_security_context() {
  return {{"runAsNonRoot", true},
          {"runAsUser", kNonRootUid},
          {"runAsGroup", kNonRootUid},
          {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

json container_security_context() {
  return {{"allowPrivilegeEscalation", false},
          {"capabilities", {{"drop", json::array({"ALL"})}}},
          {"runAsNonRoot", true},
          {"runAsUser", kNonRootUid},
          {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

// Labels of the pods of batch training, in any namespace: a Job's (Indexed Jobs,
// JobSets, Trainer's TrainJobs and commgate's own workloads run as Jobs) and Kubeflow's
// training operator's (PyTorchJob).
constexpr const char* kBusyPodLabelKeys[] = {"batch.kubernetes.io/job-name",
                                             "training.kubeflow.org/job-name"};

// One probe pod per node: no two of this probe's pods on one host. And, where the pool
// has the room, nodes no training runs on: the compute step a probe times beside another
// training is slower and unsteadier than the job's will be (#20: 22.5 s against 4.9 s).
// Preferred, not required: a pool that is busy everywhere is still measured, and the
// decision then says the step was unsteady (core/compute_spread.h).
json anti_affinity(const std::string& pool) {
  json preferred = json::array();
  for (const char* key : kBusyPodLabelKeys) {
    preferred.push_back(
        {{"weight", 100},
         {"podAffinityTerm",
          {{"labelSelector",
            {{"matchExpressions", json::array({{{"key", key}, {"operator", "Exists"}}})}}},
           {"namespaceSelector", json::object()},  // every namespace
           {"topologyKey", "kubernetes.io/hostname"}}}});
  }
  return {{"requiredDuringSchedulingIgnoredDuringExecution",
           json::array({{{"labelSelector", {{"matchLabels", probe_labels(pool)}}},
                         {"topologyKey", "kubernetes.io/hostname"}}})},
          {"preferredDuringSchedulingIgnoredDuringExecution", preferred}};
}

// The probe's affinity: its anti-affinity, and for a pool of named hosts a required node
// affinity on their kubernetes.io/hostname label (what Kueue's topology assignment names,
// and what its own TAS pins a pod to), so the probe measures exactly those hosts.
json probe_affinity(const ProbeRequest& request) {
  json affinity = {{"podAntiAffinity", anti_affinity(request.pool)}};
  if (!request.hostnames.empty()) {
    affinity["nodeAffinity"] = {
        {"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           json::array(
               {{{"matchExpressions", json::array({{{"key", kHostnameLabel},
                                                    {"operator", "In"},
                                                    {"values", request.hostnames}}})}}})}}}};
  }
  return affinity;
}

json container(const ProbeRequest& request, const ProbeLaunchSettings& settings,
               const std::string& name) {
  json c = {
      {"name", kContainerName},
      {"image", request.policy_probe.image.empty() ? settings.image : request.policy_probe.image},
      {"command", settings.command},
      {"args", probe_args(request, settings)},
      {"env", probe_env(name, settings, request.nodes)},
      {"ports",
       json::array({{{"name", kPortName}, {"containerPort", settings.port}, {"protocol", "TCP"}}})},
      {"securityContext", container_security_context()},
      {"terminationMessagePath", kTerminationLogPath},
      // File, not FallbackToLogsOnError: the message is rank 0's result or nothing;
      // a log tail in its place would read as a corrupt result.
      {"terminationMessagePolicy", "File"}};
  c["resources"] = probe_resources(request);
  return c;
}

json pod_template(const ProbeRequest& request, const ProbeLaunchSettings& settings,
                  const std::string& name) {
  json selector = json::object();
  for (const auto& [k, v] : request.node_selector) selector[k] = v;
  return {{"metadata", {{"labels", probe_labels(request.pool)}}},
          {"spec",
           {{"restartPolicy", "Never"},
            // The Job controller sets hostname <job>-<index>; with the subdomain the pod
            // gets the DNS name <job>-<index>.<job> through the headless Service.
            {"subdomain", name},
            {"nodeSelector", selector},
            {"tolerations", request.tolerations.is_array() ? request.tolerations : json::array()},
            {"affinity", probe_affinity(request)},
            // The probe never talks to the API server.
            {"automountServiceAccountToken", false},
            {"enableServiceLinks", false},
            {"securityContext", pod_security_context()},
            {"containers", json::array({container(request, settings, name)})}}}};
}

}  // namespace

std::string probe_nodes_text(const json& probe_job) {
  const std::string text = detail::annotation_of(probe_job, kProbeNodesAnnotation);
  int64_t nodes = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), nodes);
  if (ec != std::errc() || end != text.data() + text.size() || nodes < 1) return "? nodes";
  return format_nodes(nodes);
}

std::string probe_job_name(const std::string& pool) {
  return "commgate-probe-" + pool;
}

ProbePoolFit fit_probe_to_pool(const ProbeRequest& request, const std::vector<PoolNode>& nodes) {
  ProbePoolFit fit;
  fit.backend = request.policy_probe.backend.empty() ? "auto" : request.policy_probe.backend;
  // A pool with no node yet (one an autoscaler grows from pending pods) says nothing of
  // GPUs: auto stays auto, and the pods ask for them.
  const bool any_node =
      count_pool(nodes, {request.node_selector, request.tolerations, {}, request.hostnames})
          .selected > 0;
  if (fit.backend == "auto" && any_node && !pool_has_gpus(nodes, request.node_selector))
    fit.backend = "gloo";
  ProbeRequest resolved = request;
  resolved.policy_probe.backend = fit.backend;
  fit.demand.node_selector = request.node_selector;
  fit.demand.hostnames = request.hostnames;
  fit.demand.tolerations = request.tolerations;
  if (probe_uses_gpus(resolved))
    fit.demand.accelerators_per_pod[kGpuResource] = request.procs_per_node;
  fit.count = count_pool(nodes, fit.demand);
  fit.nodes = std::min(request.nodes, fit.count.usable);
  return fit;
}

int probe_node_count(int requested_nodes, const ProbeSettings& policy_probe) {
  if (requested_nodes <= 1) return 1;
  return std::max(2, std::min(requested_nodes, policy_probe.max_nodes));
}

std::string probe_model_annotation(const ModelSpec& model) {
  const json doc = {{"parameters", model.parameters},
                    {"gradientDtype", model.gradient_dtype},
                    {"batchSize", model.batch_size},
                    {"optimizer", model.optimizer}};
  return doc.dump();
}

std::vector<ModelSpec> probe_models(const ProbeRequest& request) {
  std::vector<ModelSpec> models = {request.model};
  if (link_only(request)) return models;  // --no-compute times no model
  for (const ModelSpec& also : request.also_models) {
    if (models.size() >= static_cast<size_t>(kMaxModelsPerProbe)) break;
    if (can_also_time(request, also)) models.push_back(also);
  }
  return models;
}

std::string probe_models_annotation(const std::vector<ModelSpec>& models) {
  if (models.size() == 1) return probe_model_annotation(models.front());
  json list = json::array();
  for (const ModelSpec& m : models) list.push_back(json::parse(probe_model_annotation(m)));
  return list.dump();
}

bool probe_times_model(const std::string& annotation, const ModelSpec& model) {
  const std::string mine = probe_model_annotation(model);
  if (annotation == mine) return true;
  const json list = json::parse(annotation, nullptr, false);
  if (!list.is_array()) return false;
  const json wanted = json::parse(mine);
  return std::find(list.begin(), list.end(), wanted) != list.end();
}

ProbeObjects build_probe(const ProbeRequest& request, const ProbeLaunchSettings& settings) {
  const std::string name = probe_job_name(request.pool);
  ProbeObjects out;

  json service_meta = object_meta(request, settings);
  out.service = {{"apiVersion", "v1"},
                 {"kind", "Service"},
                 {"metadata", service_meta},
                 {"spec",
                  {{"clusterIP", "None"},
                   {"selector", probe_labels(request.pool)},
                   // Rank 0's name must resolve before any pod is Ready (probe pods have
                   // no readiness probe, and the rendezvous is what makes them useful).
                   {"publishNotReadyAddresses", true},
                   {"ports", json::array({{{"name", kPortName},
                                           {"port", settings.port},
                                           {"targetPort", settings.port},
                                           {"protocol", "TCP"}}})}}}};

  json job_meta = object_meta(request, settings);
  job_meta["annotations"] = {
      {kProbeForAnnotation, request.for_job},
      {kProbeModelAnnotation, probe_models_annotation(probe_models(request))},
      {kProbeNodesAnnotation, std::to_string(request.nodes)}};
  out.job = {{"apiVersion", "batch/v1"},
             {"kind", "Job"},
             {"metadata", job_meta},
             {"spec",
              {{"completionMode", "Indexed"},
               {"completions", request.nodes},
               {"parallelism", request.nodes},
               // No Job-level retries: one failed rank spoils the measurement, and the
               // operator retries per the policy's retryStrategy with its own backoff.
               {"backoffLimit", 0},
               // The probe bounds its own run with --timeout and then reports which stage
               // hung; the deadline adds room for scheduling, image pull and start-up, so
               // it fires only when the probe could not report at all.
               {"activeDeadlineSeconds", probe_timeout(request) + kProbeStartupMarginSeconds},
               {"ttlSecondsAfterFinished", settings.ttl_seconds_after_finished},
               {"template", pod_template(request, settings, name)}}}};
  return out;
}

std::string probe_slot_refusal(const std::vector<json>& probes, const std::string& pool,
                               const std::string& job_namespace,
                               const ProbeLaunchSettings& settings) {
  int running = 0, in_namespace = 0;
  for (const json& probe : probes) {
    const json meta = probe.value("metadata", json::object());
    const json labels = meta.value("labels", json::object());
    if (labels.is_object() && labels.value(kPoolLabel, "") == pool) return "";
    const WorkloadPhase phase = workload_state(probe).phase;  // a batch/v1 Job's, any Job's
    if (phase == WorkloadPhase::kSucceeded || phase == WorkloadPhase::kFailed) continue;
    ++running;
    const json annotations = meta.value("annotations", json::object());
    const std::string for_job =
        annotations.is_object() ? annotations.value(kProbeForAnnotation, "") : "";
    if (for_job.substr(0, for_job.find('/')) == job_namespace) ++in_namespace;
  }
  auto run = [](int n) { return std::to_string(n) + (n == 1 ? " probe runs" : " probes run"); };
  if (settings.max_per_namespace > 0 && in_namespace >= settings.max_per_namespace)
    return "waiting for a probe slot: " + run(in_namespace) + " for jobs of namespace " +
           job_namespace + ", at most " + std::to_string(settings.max_per_namespace) +
           " at once (the operator's --max-probes-per-namespace)";
  if (settings.max_concurrent > 0 && running >= settings.max_concurrent)
    return "waiting for a probe slot: " + run(running) + ", at most " +
           std::to_string(settings.max_concurrent) +
           " at once (the operator's --max-concurrent-probes)";
  return "";
}

ProbeTolerations probe_tolerations(const json& job_tolerations,
                                   const std::vector<std::string>& allowed_keys) {
  ProbeTolerations out;
  if (!job_tolerations.is_array()) return out;
  for (const json& t : job_tolerations) {
    const std::string key = t.is_object() ? t.value("key", "") : "";
    if (!key.empty() &&
        std::find(allowed_keys.begin(), allowed_keys.end(), key) != allowed_keys.end()) {
      out.kept.push_back(t);
      continue;
    }
    const std::string effect = t.is_object() ? t.value("effect", "") : "";
    out.dropped.push_back(key.empty() ? "the one of every taint (no key)"
                                      : key + (effect.empty() ? "" : ":" + effect));
  }
  return out;
}

}  // namespace commgate::op
