// The probe the operator runs on a pool (issue #10, step "probe"): a headless Service and
// an Indexed batch/v1 Job with one commgate-probe pod per node. Pure: the same request and
// settings give byte-identical objects, so two operator replicas (or one restarted) create
// the same thing under the same deterministic name and the API server's AlreadyExists makes
// the creation exactly-once per pool. Names, labels and ownership: OPERATOR_CONTRACT.md and
// docs/operator.md.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/comm_policy.h"
#include "core/pool_nodes.h"
#include "core/training_job.h"

namespace commgate::op {

// From the operator's flags.
struct ProbeLaunchSettings {
  std::string ns = "commgate-system";  // where probes run (the operator's namespace)
  // The probe image; the policy's spec.probe.image wins when set. The chart's default
  // (image.probeRepository at its appVersion) is the same image.
  std::string image = "commgate/commgate-probe:0.1.0";
  std::vector<std::string> command = {"/usr/local/bin/commgate-probe"};
  // Rank 0's rendezvous port (MASTER_PORT) and the Service's port: not the training's
  // 29500, so a probe and a training sharing one address (loopback sim nodes, hostNetwork)
  // do not collide.
  int port = 29501;
  int ttl_seconds_after_finished = 600;
  // The probe's torch threads per rank (`--probe-threads`, the probe's --threads); 0: the
  // probe's default (the cores it may use).
  int threads = 0;
  // Probes running at once, in all and for the jobs of one namespace
  // (`--max-concurrent-probes`, `--max-probes-per-namespace`): each takes GPU nodes
  // outside the namespace's ResourceQuota, and one researcher's jobs with ten
  // nodeSelectors would otherwise start ten (issue #19 item 7). 0: no bound.
  int max_concurrent = 8;
  int max_per_namespace = 2;
  // How long a pool's first waiting job waits before its probe is created
  // (`--probe-gather`): jobs submitted together (one `kubectl apply` of several, a team's
  // jobs within a second) then share one probe that times each one's model (issue #21;
  // the trial of 2026-12-06 saw each get a probe of its own). 0: at once.
  std::chrono::milliseconds gather{1000};
};

struct ProbeRequest {
  std::string pool;         // the CommProfile's name (pool_name of the node selector)
  std::string profile_uid;  // the CommProfile's metadata.uid: the ownerReference
  std::map<std::string, std::string> node_selector;  // the job's
  // The pool's hostnames (MeasurementDemand::hostnames): the probe's pods run only on
  // nodes whose kubernetes.io/hostname is one of them (a required node affinity).
  std::vector<std::string> hostnames;
  nlohmann::json tolerations = nlohmann::json::array();
  int nodes = 2;  // already capped (probe_node_count)
  int procs_per_node = 1;
  ModelSpec model;
  // Other models waiting on the pool, timed after `model` by the same probe (plan_probe);
  // those the probe cannot time (probe_models) wait for a probe of their own.
  std::vector<ModelSpec> also_models;
  ProbeSettings policy_probe;  // timeout, sizes, iterations, backend, image
  std::string for_job;         // "namespace/name" of the job that asked
};

struct ProbeObjects {
  nlohmann::json service;
  nlohmann::json job;
};

// Labels and annotations every probe carries (also what readers select on).
inline constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
inline constexpr const char* kManagedByValue = "commgate";
inline constexpr const char* kRoleLabel = "commgate.io/role";
inline constexpr const char* kPoolLabel = "commgate.io/pool";
inline constexpr const char* kProbeForAnnotation = "commgate.io/probe-for";
inline constexpr const char* kProbeModelAnnotation = "commgate.io/probe-model";
inline constexpr const char* kProbeNodesAnnotation = "commgate.io/probe-nodes";
// Set by the Job controller on an Indexed Job's pods (label and annotation).
inline constexpr const char* kCompletionIndexKey = "batch.kubernetes.io/job-completion-index";
inline constexpr const char* kJobNameLabel = "batch.kubernetes.io/job-name";
// Start-up time allowed on top of the policy's probe timeout in activeDeadlineSeconds.
inline constexpr int kProbeStartupMarginSeconds = 60;

// "commgate-probe-" + pool: the Job's and the Service's name.
std::string probe_job_name(const std::string& pool);

// A probe Job's node count for a message, from its commgate.io/probe-nodes annotation:
// "3 nodes", "1 node" ("? nodes" when the annotation is missing or not a count).
std::string probe_nodes_text(const nlohmann::json& probe_job);

// Nodes a probe takes: min(requested, policy maxNodes), but at least 2 when the job asks for
// 2 or more (a one-node probe measures no link); 1 when it asks for 1.
int probe_node_count(int requested_nodes, const ProbeSettings& policy_probe);

// How the pool's nodes shape a probe (issue #20 defect 3): `backend: auto` becomes gloo
// on a pool whose nodes have no GPU (pods asking for nvidia.com/gpu would never schedule
// there; a pool with no node at all keeps auto), and `nodes` is how many the pool has
// usable for its pods (its nodeSelector, the tolerations it keeps, a GPU per process
// where it uses GPUs), which the probe takes at most unless the policy ignores the
// pool's size (onInsufficientNodes: ignore, where an autoscaler adds nodes for pending
// pods).
struct ProbePoolFit {
  std::string backend;  // the request's, with auto resolved on a pool without GPUs
  int nodes = 0;        // min(request.nodes, usable)
  PoolCount count;      // the pool's nodes for the probe's pods
  PoolDemand demand;    // what each probe pod asks of a node
};
ProbePoolFit fit_probe_to_pool(const ProbeRequest& request, const std::vector<PoolNode>& nodes);

// A model's signature as commgate.io/probe-model writes it: the compact JSON of
// {parameters, gradientDtype, batchSize, optimizer}, keys sorted.
std::string probe_model_annotation(const ModelSpec& model);

// The models a probe times: `model` (also when it measures the link only: its jobs are
// served by the link), then each of `also_models` that the probe can time: a synthetic
// model that fits the probe pod (a TorchScript module or a model too large for a CPU
// probe pod waits for a probe of its own, as the first model).
std::vector<ModelSpec> probe_models(const ProbeRequest& request);

// commgate.io/probe-model of a probe of `models`: the one signature (as probes before
// issue #21 wrote it), or a JSON array of them.
std::string probe_models_annotation(const std::vector<ModelSpec>& models);

// Whether a probe whose commgate.io/probe-model is `annotation` times `model`.
bool probe_times_model(const std::string& annotation, const ModelSpec& model);

// The probe's headless Service and Indexed Job. Deterministic (see the file comment).
ProbeObjects build_probe(const ProbeRequest& request, const ProbeLaunchSettings& settings);

// The job's tolerations (spec.tolerations, validated) a probe takes: those whose key is
// in `allowed_keys` (the policy's spec.probe.tolerationKeys). `dropped` names the others
// for the user ("node-role.kubernetes.io/control-plane:NoSchedule", "the one of every
// taint (no key)").
struct ProbeTolerations {
  nlohmann::json kept = nlohmann::json::array();
  std::vector<std::string> dropped;
};
ProbeTolerations probe_tolerations(const nlohmann::json& job_tolerations,
                                   const std::vector<std::string>& allowed_keys);

// Whether a new probe of `pool` for a job of `job_namespace` may start beside `probes`
// (the probe Jobs in the release namespace, role=probe): "" when it may (also when the
// pool's own probe is among them: creating it again is a no-op), else why not, for the
// job's Probed condition. Finished probes (Complete or Failed) do not count.
std::string probe_slot_refusal(const std::vector<nlohmann::json>& probes, const std::string& pool,
                               const std::string& job_namespace,
                               const ProbeLaunchSettings& settings);

}  // namespace commgate::op
