// The probe's objects (operator/probe_job.h): the headless Service and the Indexed Job the
// operator creates for a pool, checked field by field where a wrong value would break the
// probe (rendezvous, placement, Pod Security admission, ownership, exactly-once creation).
// The scenario: a 340M-parameter bf16 model on 8-GPU nodes of the pool {pool: a100}, a
// policy probe timeout of 120 s.
#include "operator/probe_job.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/comm_profile.h"
#include "core/probe_memory.h"
#include "core/probe_result.h"
#include "core/quantity.h"
#include "tests/support/builders.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

ProbeRequest a_request() {
  ProbeRequest r;
  r.node_selector = {{"pool", "a100"}, {"topology.kubernetes.io/zone", "eu-1a"}};
  r.pool = pool_name(r.node_selector);
  r.profile_uid = "6f1c2d3e-0000-4000-8000-000000000001";
  r.tolerations = json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}});
  r.nodes = 3;
  r.procs_per_node = 8;
  r.model.parameters = 340e6;
  r.model.gradient_dtype = "bf16";
  r.model.batch_size = 16;
  r.model.optimizer = "adamw";
  r.policy_probe.timeout_seconds = 120;
  r.policy_probe.min_bytes = 8 * 1024.0;
  r.policy_probe.max_bytes = 256 * 1048576.0;
  r.policy_probe.iterations = 20;
  r.policy_probe.warmup_iterations = 5;
  r.for_job = "research/bert-large";
  return r;
}

const json& container_of(const ProbeObjects& o) {
  return o.job["spec"]["template"]["spec"]["containers"][0];
}

std::vector<std::string> args_of(const ProbeObjects& o) {
  return container_of(o)["args"].get<std::vector<std::string>>();
}

// The value after `flag` in `args`; nullopt when the flag is absent.
std::optional<std::string> flag_value(const std::vector<std::string>& args,
                                      const std::string& flag) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag) return args[i + 1];
  return std::nullopt;
}

json env_named(const ProbeObjects& o, const std::string& name) {
  for (const auto& e : container_of(o)["env"])
    if (e["name"] == name) return e;
  return nullptr;
}

// --- probe_node_count ---

struct NodeCountCase {
  std::string name;
  int requested;
  int max_nodes;
  int want;
};

void PrintTo(const NodeCountCase& c, std::ostream* os) {
  *os << c.name;
}

class ProbeNodeCount : public ::testing::TestWithParam<NodeCountCase> {};

TEST_P(ProbeNodeCount, caps_at_the_policy_and_keeps_a_link) {
  const auto& c = GetParam();
  ProbeSettings p;
  p.max_nodes = c.max_nodes;
  EXPECT_EQ(probe_node_count(c.requested, p), c.want);
}

INSTANTIATE_TEST_SUITE_P(
    ProbeJob, ProbeNodeCount,
    ::testing::Values(NodeCountCase{"a_one_node_job_probes_one_node", 1, 4, 1},
                      NodeCountCase{"a_two_node_job_probes_both", 2, 4, 2},
                      NodeCountCase{"a_job_under_the_cap_probes_every_node", 3, 4, 3},
                      NodeCountCase{"a_big_job_probes_the_policys_max_nodes", 64, 4, 4},
                      NodeCountCase{"a_max_nodes_of_one_still_probes_a_link", 8, 1, 2},
                      NodeCountCase{"a_nonsense_zero_request_probes_one_node", 0, 4, 1}),
    [](const ::testing::TestParamInfo<NodeCountCase>& p) { return p.param.name; });

// --- names, labels, ownership ---

TEST(ProbeJob, job_and_service_share_the_pools_deterministic_name) {
  const ProbeRequest r = a_request();
  const ProbeObjects o = build_probe(r, {});
  const std::string name = "commgate-probe-" + r.pool;
  EXPECT_EQ(probe_job_name(r.pool), name);
  EXPECT_EQ(o.job["metadata"]["name"], name);
  EXPECT_EQ(o.service["metadata"]["name"], name);
  EXPECT_EQ(o.job["metadata"]["namespace"], "commgate-system");
  EXPECT_EQ(o.service["metadata"]["namespace"], "commgate-system");
  // A DNS label: the Service name, and every pod hostname <job>-<index> under it.
  EXPECT_LE((name + "-" + std::to_string(kMaxNodes)).size(), 63u);
}

TEST(ProbeJob, runs_in_the_operators_namespace_from_settings) {
  ProbeLaunchSettings s;
  s.ns = "ops";
  const ProbeObjects o = build_probe(a_request(), s);
  EXPECT_EQ(o.job["metadata"]["namespace"], "ops");
  EXPECT_EQ(o.service["metadata"]["namespace"], "ops");
}

TEST(ProbeJob, labels_say_who_manages_it_its_role_and_pool) {
  const ProbeRequest r = a_request();
  const ProbeObjects o = build_probe(r, {});
  const json want = {{"app.kubernetes.io/managed-by", "commgate"},
                     {"commgate.io/role", "probe"},
                     {"commgate.io/pool", r.pool}};
  EXPECT_EQ(o.job["metadata"]["labels"], want);
  EXPECT_EQ(o.service["metadata"]["labels"], want);
  EXPECT_EQ(o.job["spec"]["template"]["metadata"]["labels"], want);
}

TEST(ProbeJob, annotations_record_who_asked_the_model_and_the_node_count) {
  const ProbeObjects o = build_probe(a_request(), {});
  const json& a = o.job["metadata"]["annotations"];
  EXPECT_EQ(a["commgate.io/probe-for"], "research/bert-large");
  EXPECT_EQ(a["commgate.io/probe-nodes"], "3");
  EXPECT_EQ(
      a["commgate.io/probe-model"],
      R"({"batchSize":16,"gradientDtype":"bf16","optimizer":"adamw","parameters":340000000.0})");
  const json model = json::parse(a["commgate.io/probe-model"].get<std::string>());
  EXPECT_EQ(model["parameters"].get<double>(), 340e6);
}

TEST(ProbeJob, owned_by_the_pools_commgate_profile_without_blocking_its_deletion) {
  const ProbeRequest r = a_request();
  const ProbeObjects o = build_probe(r, {});
  const json want = json::array({{{"apiVersion", "commgate.io/v1alpha1"},
                                  {"kind", "CommProfile"},
                                  {"name", r.pool},
                                  {"uid", r.profile_uid},
                                  {"controller", true},
                                  {"blockOwnerDeletion", false}}});
  EXPECT_EQ(o.job["metadata"]["ownerReferences"], want);
  EXPECT_EQ(o.service["metadata"]["ownerReferences"], want);
}

// --- the Service ---

TEST(ProbeJob, service_is_headless_publishes_unready_pods_and_selects_the_probes_pods) {
  const ProbeObjects o = build_probe(a_request(), {});
  const json& spec = o.service["spec"];
  EXPECT_EQ(o.service["apiVersion"], "v1");
  EXPECT_EQ(o.service["kind"], "Service");
  EXPECT_EQ(spec["clusterIP"], "None");
  EXPECT_EQ(spec["publishNotReadyAddresses"], true);
  EXPECT_EQ(spec["selector"], o.job["spec"]["template"]["metadata"]["labels"]);
  ASSERT_EQ(spec["ports"].size(), 1u);
  EXPECT_EQ(spec["ports"][0]["port"], 29501);
  EXPECT_EQ(spec["ports"][0]["targetPort"], 29501);
}

TEST(ProbeJob, service_and_rendezvous_use_the_port_from_settings) {
  ProbeLaunchSettings s;
  s.port = 31000;
  const ProbeObjects o = build_probe(a_request(), s);
  EXPECT_EQ(o.service["spec"]["ports"][0]["port"], 31000);
  EXPECT_EQ(container_of(o)["ports"][0]["containerPort"], 31000);
  EXPECT_EQ(env_named(o, "MASTER_PORT")["value"], "31000");
}

// --- the Job ---

TEST(ProbeJob, indexed_job_with_one_pod_per_node_and_no_job_level_retries) {
  const ProbeObjects o = build_probe(a_request(), {});
  const json& spec = o.job["spec"];
  EXPECT_EQ(o.job["apiVersion"], "batch/v1");
  EXPECT_EQ(o.job["kind"], "Job");
  EXPECT_EQ(spec["completionMode"], "Indexed");
  EXPECT_EQ(spec["completions"], 3);
  EXPECT_EQ(spec["parallelism"], 3);
  EXPECT_EQ(spec["backoffLimit"], 0);
  EXPECT_EQ(spec["ttlSecondsAfterFinished"], 600);
  EXPECT_EQ(spec["template"]["spec"]["restartPolicy"], "Never");
}

TEST(ProbeJob, deadline_is_the_probes_timeout_plus_a_startup_margin) {
  ProbeRequest r = a_request();
  r.policy_probe.timeout_seconds = 300;
  ProbeLaunchSettings s;
  s.ttl_seconds_after_finished = 60;
  const ProbeObjects o = build_probe(r, s);
  EXPECT_EQ(o.job["spec"]["activeDeadlineSeconds"], 300 + kProbeStartupMarginSeconds);
  EXPECT_EQ(o.job["spec"]["ttlSecondsAfterFinished"], 60);
  // The probe's own timeout is the policy's, so it reports the hung stage before the
  // Job's deadline kills it.
  EXPECT_EQ(flag_value(args_of(o), "--timeout"), "300");

  // A policy without probe.timeoutSeconds: sized by the model (340M parameters: 3.4 x 300
  // s, up to a whole minute), the probe's flag and the deadline alike (#20).
  r.policy_probe.timeout_seconds = 0;
  const ProbeObjects sized = build_probe(r, s);
  EXPECT_EQ(flag_value(args_of(sized), "--timeout"), "1020");
  EXPECT_EQ(sized.job["spec"]["activeDeadlineSeconds"], 1020 + kProbeStartupMarginSeconds);
}

TEST(ProbeJob, pods_land_on_the_jobs_nodes_one_per_host) {
  const ProbeRequest r = a_request();
  const ProbeObjects o = build_probe(r, {});
  const json& pod = o.job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["nodeSelector"],
            json({{"pool", "a100"}, {"topology.kubernetes.io/zone", "eu-1a"}}));
  EXPECT_EQ(pod["tolerations"], r.tolerations);
  const json& terms =
      pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
  ASSERT_EQ(terms.size(), 1u);
  EXPECT_EQ(terms[0]["topologyKey"], "kubernetes.io/hostname");
  // Against the probe's own pods: its selector matches the template's labels.
  EXPECT_EQ(terms[0]["labelSelector"]["matchLabels"],
            o.job["spec"]["template"]["metadata"]["labels"]);
  EXPECT_FALSE(pod["affinity"].contains("podAffinity"));
  // Where the pool has room, away from nodes running training in any namespace (Job pods,
  // which Indexed Jobs, JobSets and TrainJobs make, and PyTorchJob's): preferred only.
  const json& preferred =
      pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"];
  ASSERT_EQ(preferred.size(), 2u);
  std::vector<std::string> keys;
  for (const auto& p : preferred) {
    EXPECT_EQ(p["weight"], 100);
    const json& term = p["podAffinityTerm"];
    EXPECT_EQ(term["topologyKey"], "kubernetes.io/hostname");
    EXPECT_EQ(term["namespaceSelector"], json::object());
    const json& expr = term["labelSelector"]["matchExpressions"][0];
    EXPECT_EQ(expr["operator"], "Exists");
    keys.push_back(expr["key"]);
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"batch.kubernetes.io/job-name",
                                            "training.kubeflow.org/job-name"}));
}

TEST(ProbeJob, pods_get_dns_names_under_the_headless_service) {
  const ProbeObjects o = build_probe(a_request(), {});
  const json& pod = o.job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["subdomain"], o.service["metadata"]["name"]);
  // The Job controller sets each pod's hostname <job>-<index>; a template hostname would
  // give every pod the same one.
  EXPECT_FALSE(pod.contains("hostname"));
}

TEST(ProbeJob, pod_passes_pod_security_restricted) {
  const ProbeObjects o = build_probe(a_request(), {});
  const json& pod = o.job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(pod["securityContext"]["runAsUser"], 65532);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  const json& sc = container_of(o)["securityContext"];
  EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
  EXPECT_EQ(sc["capabilities"]["drop"], json::array({"ALL"}));
  EXPECT_EQ(sc["runAsNonRoot"], true);
  EXPECT_EQ(sc["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_FALSE(sc["capabilities"].contains("add"));
  EXPECT_FALSE(pod.contains("hostNetwork"));
  EXPECT_FALSE(pod.contains("volumes"));  // no hostPath or any other
  EXPECT_EQ(pod["automountServiceAccountToken"], false);
}

TEST(ProbeJob, container_writes_its_result_as_the_termination_message) {
  const ProbeObjects o = build_probe(a_request(), {});
  const json& c = container_of(o);
  EXPECT_EQ(c["terminationMessagePolicy"], "File");
  EXPECT_EQ(c["terminationMessagePath"], "/dev/termination-log");
  EXPECT_EQ(flag_value(args_of(o), "--termination-log"), "/dev/termination-log");
}

TEST(ProbeJob, torchrun_environment_one_rank_per_node_rank_from_the_completion_index) {
  const ProbeRequest r = a_request();
  const ProbeObjects o = build_probe(r, {});
  const std::string name = probe_job_name(r.pool);
  EXPECT_EQ(env_named(o, "MASTER_ADDR")["value"], name + "-0." + name);
  EXPECT_EQ(env_named(o, "MASTER_PORT")["value"], "29501");
  EXPECT_EQ(env_named(o, "WORLD_SIZE")["value"], "3");  // nodes, not nodes x procs
  EXPECT_EQ(env_named(o, "RANK")["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  EXPECT_FALSE(env_named(o, "RANK").contains("value"));
  // Every env value is a string (the API server rejects numbers).
  for (const auto& e : container_of(o)["env"]) {
    if (e.contains("value")) {
      EXPECT_TRUE(e["value"].is_string()) << e.dump();
    }
  }
}

TEST(ProbeJob, args_carry_the_jobs_model_and_the_policys_sweep) {
  const ProbeObjects o = build_probe(a_request(), {});
  const std::vector<std::string> want = {
      "--backend",        "auto", "--params",          "340M",
      "--batch-size",     "16",   "--optimizer",       "adamw",
      "--gradient-dtype", "bf16",  // what DDP all-reduces: the DDP step compresses to it
      "--min-bytes",      "8Ki",  "--max-bytes",       "256Mi",
      "--warmup",         "5",    "--iters",           "20",
      "--timeout",        "120",  "--termination-log", "/dev/termination-log"};
  EXPECT_EQ(args_of(o), want);
  // The quantities read back as the numbers they stand for.
  EXPECT_EQ(parse_quantity("340M", nullptr), 340e6);
  EXPECT_EQ(parse_quantity("256Mi", nullptr), 256 * 1048576.0);
}

TEST(ProbeJob, threads_from_the_operators_flag) {
  ProbeLaunchSettings settings;
  EXPECT_FALSE(flag_value(args_of(build_probe(a_request(), settings)), "--threads"))
      << "0: the probe's own default";
  settings.threads = 6;
  EXPECT_EQ(flag_value(args_of(build_probe(a_request(), settings)), "--threads"), "6");
}

// --- fit_probe_to_pool (issue #20 defect 3) ---

PoolNode pool_node(const std::string& name, double gpus, bool ready = true) {
  PoolNode n = commgate::testing::a_pool_node(
      name, {{"pool", "a100"}, {"topology.kubernetes.io/zone", "eu-1a"}}, gpus);
  n.ready = ready;
  n.taints = {{"nvidia.com/gpu", "present", "NoSchedule"}};
  return n;
}

struct FitCase {
  std::string name;
  std::vector<PoolNode> nodes;
  std::string backend;  // the policy's
  int want_nodes;
  std::string want_backend;
};

TEST(FitProbeToPool, auto_is_gloo_without_gpus_and_the_probe_fits_the_pool) {
  const std::vector<FitCase> cases = {
      {"gpu_pool_keeps_auto",
       {pool_node("a", 8), pool_node("b", 8), pool_node("c", 8)},
       "auto",
       3,
       "auto"},
      {"cpu_pool_is_gloo_and_asks_no_gpu",
       {pool_node("a", 0), pool_node("b", 0), pool_node("c", 0)},
       "auto",
       3,
       "gloo"},
      {"two_of_three_fit",
       {pool_node("a", 8), pool_node("b", 8), pool_node("c", 8, false)},
       "auto",
       2,
       "auto"},
      {"nodes_with_too_few_gpus_do_not_count",
       {pool_node("a", 8), pool_node("b", 4)},
       "auto",
       1,
       "auto"},
      {"an_explicit_nccl_stays", {pool_node("a", 0), pool_node("b", 0)}, "nccl", 0, "nccl"},
      {"an_explicit_gloo_asks_no_gpu", {pool_node("a", 0), pool_node("b", 0)}, "gloo", 2, "gloo"},
      {"no_node_yet_keeps_auto", {}, "auto", 0, "auto"},  // an autoscaled pool from zero
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ProbeRequest r = a_request();  // 3 nodes, 8 processes a node, tolerates nvidia.com/gpu
    r.policy_probe.backend = c.backend;
    const ProbePoolFit fit = fit_probe_to_pool(r, c.nodes);
    EXPECT_EQ(fit.nodes, c.want_nodes);
    EXPECT_EQ(fit.backend, c.want_backend);
  }
}

// A pool of named hosts (a Kueue Workload's topology assignment): the probe fits the named
// hosts only, and its pods are held to them; a pool without names has no node affinity.
TEST(FitProbeToPool, a_pool_of_hosts_counts_and_pins_only_those_hosts) {
  std::vector<PoolNode> nodes;
  for (const char* name : {"a", "b", "c", "d"}) {
    nodes.push_back(pool_node(name, 8));
    nodes.back().labels[kHostnameLabel] = std::string("host-") + name;
  }
  ProbeRequest r = a_request();  // 3 nodes
  EXPECT_EQ(fit_probe_to_pool(r, nodes).nodes, 3);
  EXPECT_FALSE(
      build_probe(r, {}).job["spec"]["template"]["spec"]["affinity"].contains("nodeAffinity"));
  r.hostnames = {"host-b", "host-d", "host-x"};
  const ProbePoolFit fit = fit_probe_to_pool(r, nodes);
  EXPECT_EQ(fit.nodes, 2) << "host-x is no node of the pool";
  EXPECT_EQ(fit.count.selected, 2);
  const json affinity = build_probe(r, {}).job["spec"]["template"]["spec"]["affinity"];
  EXPECT_EQ(affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                    ["nodeSelectorTerms"],
            json::parse(R"([{"matchExpressions":[{"key":"kubernetes.io/hostname",
                "operator":"In","values":["host-b","host-d","host-x"]}]}])"));
  EXPECT_TRUE(affinity.contains("podAntiAffinity")) << "still one probe pod per host";
}

TEST(ProbeJob, args_round_trip_odd_parameter_counts_exactly) {
  ProbeRequest r = a_request();
  r.model.parameters = 1234567;
  const auto params = flag_value(args_of(build_probe(r, {})), "--params");
  ASSERT_TRUE(params);
  EXPECT_EQ(parse_quantity(*params, nullptr), 1234567.0) << *params;
}

TEST(ProbeJob, a_torchscript_model_is_timed_with_its_input_shape) {
  ProbeRequest r = a_request();
  r.model.torch_script = "/models/resnet50.pt";
  r.model.input_shape = {32, 3, 224, 224};
  const auto args = args_of(build_probe(r, {}));
  EXPECT_EQ(flag_value(args, "--torchscript"), "/models/resnet50.pt");
  EXPECT_EQ(flag_value(args, "--input-shape"), "32,3,224,224");
}

TEST(ProbeJob, a_synthetic_model_has_no_torchscript_flags) {
  const auto args = args_of(build_probe(a_request(), {}));
  EXPECT_FALSE(flag_value(args, "--torchscript"));
  EXPECT_FALSE(flag_value(args, "--input-shape"));
}

struct ImageCase {
  std::string name;
  std::string policy_image;
  std::string want;
};

void PrintTo(const ImageCase& c, std::ostream* os) {
  *os << c.name;
}

class ProbeImage : public ::testing::TestWithParam<ImageCase> {};

TEST_P(ProbeImage, policy_image_wins_over_the_operators_flag) {
  const auto& c = GetParam();
  ProbeRequest r = a_request();
  r.policy_probe.image = c.policy_image;
  ProbeLaunchSettings s;
  s.image = "registry.local/commgate-probe:flag";
  s.command = {"/opt/probe", "--"};
  const ProbeObjects o = build_probe(r, s);
  EXPECT_EQ(container_of(o)["image"], c.want);
  EXPECT_EQ(container_of(o)["command"], json::array({"/opt/probe", "--"}));
}

INSTANTIATE_TEST_SUITE_P(ProbeJob, ProbeImage,
                         ::testing::Values(ImageCase{"operator_flag_when_the_policy_names_none", "",
                                                     "registry.local/commgate-probe:flag"},
                                           ImageCase{"the_policys_image_when_set",
                                                     "mirror.example/probe:0.2",
                                                     "mirror.example/probe:0.2"}),
                         [](const ::testing::TestParamInfo<ImageCase>& p) { return p.param.name; });

// --- GPUs by backend ---

struct GpuCase {
  std::string name;
  std::string backend;
  int procs_per_node;
  std::optional<std::string> want_gpus;  // nullopt: no GPU resource (memory only)
};

void PrintTo(const GpuCase& c, std::ostream* os) {
  *os << c.name;
}

class ProbeGpus : public ::testing::TestWithParam<GpuCase> {};

TEST_P(ProbeGpus, requests_the_nodes_gpus_unless_the_probe_runs_on_cpu) {
  const auto& c = GetParam();
  ProbeRequest r = a_request();
  r.policy_probe.backend = c.backend;
  r.procs_per_node = c.procs_per_node;
  const ProbeObjects o = build_probe(r, {});
  const json& c0 = container_of(o);
  EXPECT_EQ(flag_value(args_of(o), "--backend"), c.backend);
  if (!c.want_gpus) {
    EXPECT_FALSE(c0["resources"]["limits"].contains("nvidia.com/gpu")) << c0["resources"].dump();
    EXPECT_FALSE(c0["resources"]["requests"].contains("nvidia.com/gpu")) << c0["resources"].dump();
    return;
  }
  EXPECT_EQ(c0["resources"]["limits"]["nvidia.com/gpu"], *c.want_gpus);
  EXPECT_EQ(c0["resources"]["requests"]["nvidia.com/gpu"], *c.want_gpus);
}

INSTANTIATE_TEST_SUITE_P(
    ProbeJob, ProbeGpus,
    ::testing::Values(GpuCase{"gloo_on_a_cpu_pool_asks_for_no_gpu", "gloo", 8, std::nullopt},
                      GpuCase{"nccl_takes_the_nodes_gpus_as_the_training_will", "nccl", 8, "8"},
                      GpuCase{"auto_takes_them_too", "auto", 4, "4"},
                      GpuCase{"one_proc_per_node_takes_one_gpu", "nccl", 1, "1"}),
    [](const ::testing::TestParamInfo<GpuCase>& p) { return p.param.name; });

// --- memory (user trial: a 1P-parameter probe grew each rank toward the node's OOM) ---

struct MemoryCase {
  std::string name;
  std::string backend;
  double parameters;
  std::optional<double> step_time_hint_ms;
  std::string want_memory;  // request = limit
  bool want_link_only;      // --no-compute
};

void PrintTo(const MemoryCase& c, std::ostream* os) {
  *os << c.name;
}

class ProbeMemory : public ::testing::TestWithParam<MemoryCase> {};

TEST_P(ProbeMemory, pods_request_and_are_limited_to_what_the_model_needs) {
  const auto& c = GetParam();
  ProbeRequest r = a_request();
  r.policy_probe.backend = c.backend;
  r.model.parameters = c.parameters;
  r.model.step_time_hint_ms = c.step_time_hint_ms;
  const ProbeObjects o = build_probe(r, {});
  const json& resources = container_of(o)["resources"];
  EXPECT_EQ(resources["requests"]["memory"], c.want_memory) << resources.dump();
  EXPECT_EQ(resources["limits"]["memory"], c.want_memory) << resources.dump();
  const auto args = args_of(o);
  EXPECT_EQ(std::find(args.begin(), args.end(), "--no-compute") != args.end(), c.want_link_only);
}

INSTANTIATE_TEST_SUITE_P(
    ProbeJob, ProbeMemory,
    ::testing::Values(
        // 340M adamw at batch 16: 6.8 GB + 512 MiB runtime, and a quarter more.
        MemoryCase{"a_cpu_probe_gets_its_estimate_and_a_quarter", "gloo", 340e6, std::nullopt,
                   "8761Mi", false},
        MemoryCase{"a_small_model_gets_the_floor", "gloo", 1e6, std::nullopt, "2Gi", false},
        MemoryCase{"a_gpu_probe_gets_at_least_8Gi_for_cudas_host_side", "nccl", 1e6, std::nullopt,
                   "8Gi", false},
        // The user trial's model: a pod that schedules, where the probe refuses clearly.
        MemoryCase{"a_1P_model_is_capped_and_the_probe_in_it_refuses", "gloo", 1e15, std::nullopt,
                   "64Gi", false},
        MemoryCase{"a_1P_model_with_a_step_time_hint_measures_the_link_only", "gloo", 1e15, 2500.0,
                   "64Gi", true},
        MemoryCase{"a_hint_does_not_skip_a_model_that_fits", "gloo", 340e6, 2500.0, "8761Mi",
                   false},
        MemoryCase{"on_gpus_the_model_is_in_gpu_memory_so_the_hint_skips_nothing", "nccl", 1e15,
                   2500.0, "64Gi", false}),
    [](const ::testing::TestParamInfo<MemoryCase>& p) { return p.param.name; });

// --- deterministic ---

TEST(ProbeJob, the_same_request_builds_byte_identical_objects) {
  // Two replicas (or one restarted) create the same object; AlreadyExists then means
  // "the probe is running", never "a different probe is running".
  const ProbeObjects a = build_probe(a_request(), {});
  const ProbeObjects b = build_probe(a_request(), {});
  EXPECT_EQ(a.job.dump(), b.job.dump());
  EXPECT_EQ(a.service.dump(), b.service.dump());
}

TEST(ProbeJob, the_selectors_key_order_does_not_change_the_objects) {
  ProbeRequest a = a_request();
  ProbeRequest b = a_request();
  b.node_selector.clear();
  b.node_selector.emplace("topology.kubernetes.io/zone", "eu-1a");
  b.node_selector.emplace("pool", "a100");
  EXPECT_EQ(build_probe(a, {}).job.dump(), build_probe(b, {}).job.dump());
}

// Issue #19 item 7: the probe runs in commgate's namespace, so it takes only the job's
// tolerations of taints the policy lists (spec.probe.tolerationKeys).
TEST(ProbeJob, takes_only_the_tolerations_of_the_policys_taint_keys) {
  const json gpu = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
  const json control_plane = {{"key", "node-role.kubernetes.io/control-plane"},
                              {"operator", "Exists"},
                              {"effect", "NoSchedule"}};
  const json everything = {{"operator", "Exists"}};
  const json pool = {{"key", "pool"}, {"operator", "Equal"}, {"value", "a100"}};
  const auto t = probe_tolerations(json::array({gpu, control_plane, everything, pool}),
                                   {"nvidia.com/gpu", "pool"});
  EXPECT_EQ(t.kept, json::array({gpu, pool}));
  EXPECT_EQ(t.dropped, (std::vector<std::string>{"node-role.kubernetes.io/control-plane:NoSchedule",
                                                 "the one of every taint (no key)"}));
  // No keys listed: none taken; not a list: none, nothing to say.
  EXPECT_EQ(probe_tolerations(json::array({gpu}), {}).kept, json::array());
  EXPECT_EQ(probe_tolerations(json::array({gpu}), {}).dropped,
            std::vector<std::string>{"nvidia.com/gpu:NoSchedule"});
  EXPECT_TRUE(probe_tolerations(nullptr, {"nvidia.com/gpu"}).dropped.empty());
}

// Issue #19 item 7: ten jobs with ten nodeSelectors made ten probes. Probes are bounded in
// all and per namespace of the jobs that ask; a pool's own probe is never refused.
TEST(ProbeJob, probe_slots_are_bounded_in_all_and_per_namespace) {
  auto probe = [](const std::string& pool, const std::string& for_job, bool finished = false) {
    json j = {
        {"metadata",
         {{"labels", {{kPoolLabel, pool}}}, {"annotations", {{kProbeForAnnotation, for_job}}}}}};
    if (finished)
      j["status"]["conditions"] = json::array({{{"type", "Complete"}, {"status", "True"}}});
    return j;
  };
  ProbeLaunchSettings s;
  s.max_concurrent = 3;
  s.max_per_namespace = 2;
  const std::vector<json> two_of_alice = {probe("pool-a", "alice/j1"), probe("pool-b", "alice/j2")};
  EXPECT_EQ(probe_slot_refusal(two_of_alice, "pool-c", "alice", s),
            "waiting for a probe slot: 2 probes run for jobs of namespace alice, at most 2 at "
            "once (the operator's --max-probes-per-namespace)");
  EXPECT_EQ(probe_slot_refusal(two_of_alice, "pool-c", "bob", s), "");
  EXPECT_EQ(probe_slot_refusal(two_of_alice, "pool-a", "alice", s), "") << "its own pool's";
  std::vector<json> three = two_of_alice;
  three.push_back(probe("pool-d", "carol/j"));
  EXPECT_NE(probe_slot_refusal(three, "pool-e", "bob", s).find("3 probes run, at most 3"),
            std::string::npos);
  three[0] = probe("pool-a", "alice/j1", true);  // finished: not counted
  EXPECT_EQ(probe_slot_refusal(three, "pool-e", "bob", s), "");
  s.max_concurrent = s.max_per_namespace = 0;  // no bound
  EXPECT_EQ(probe_slot_refusal(two_of_alice, "pool-c", "alice", s), "");
}

TEST(ProbeJob, tolerations_that_are_not_a_list_become_none) {
  ProbeRequest r = a_request();
  r.tolerations = nullptr;
  const ProbeObjects o = build_probe(r, {});
  EXPECT_EQ(o.job["spec"]["template"]["spec"]["tolerations"], json::array());
}

// Issue #21: one probe times the models of every job waiting on its pool.
ModelSpec a_model(double parameters, int batch = 32, const std::string& optimizer = "sgd") {
  ModelSpec m;
  m.parameters = parameters;
  m.batch_size = batch;
  m.optimizer = optimizer;
  return m;
}

TEST(ProbeJob, other_models_are_timed_after_the_first_and_named_in_the_annotation) {
  ProbeRequest r = a_request();
  r.also_models = {a_model(5e6, 64), a_model(1.5e9, 8, "adam")};
  const ProbeObjects o = build_probe(r, {});
  const std::vector<std::string> args = args_of(o);
  std::vector<std::string> also;
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--also-model") also.push_back(args[i + 1]);
  EXPECT_EQ(also, (std::vector<std::string>{"params=5M,batch=64,optimizer=sgd,dtype=fp32",
                                            "params=1.5G,batch=8,optimizer=adam,dtype=fp32"}));
  const std::string annotation = o.job["metadata"]["annotations"]["commgate.io/probe-model"];
  const json models = json::parse(annotation);
  ASSERT_TRUE(models.is_array()) << annotation;
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0], json::parse(probe_model_annotation(r.model)));
  for (const ModelSpec& m : {r.model, r.also_models[0], r.also_models[1]})
    EXPECT_TRUE(probe_times_model(annotation, m)) << m.parameters;
  EXPECT_FALSE(probe_times_model(annotation, a_model(5e6, 32)));
  // A probe written before (one model, one object) still says which model it times.
  const std::string one = probe_models_annotation({r.model});
  EXPECT_TRUE(probe_times_model(one, r.model));
  EXPECT_FALSE(probe_times_model(one, a_model(5e6, 64)));
  EXPECT_FALSE(probe_times_model("not json", r.model));
}

TEST(ProbeJob, a_probe_of_several_models_gets_each_ones_time_and_the_largest_ones_memory) {
  ProbeRequest r = a_request();
  r.policy_probe.backend = "gloo";  // memory sized for the CPU
  r.model = a_model(25e6);
  const ProbeObjects one = build_probe(r, {});
  r.also_models = {a_model(5e6), a_model(400e6, 32, "adam")};
  const ProbeObjects three = build_probe(r, {});
  EXPECT_EQ(flag_value(args_of(three), "--timeout"), "360") << "120 s for each model";
  EXPECT_EQ(three.job["spec"]["activeDeadlineSeconds"], 360 + kProbeStartupMarginSeconds);
  EXPECT_EQ(container_of(three)["resources"]["limits"]["memory"],
            format_byte_quantity(probe_pod_memory_bytes(400e6, 32, "adam", false)));
  EXPECT_NE(container_of(three)["resources"], container_of(one)["resources"]);
}

TEST(ProbeJob, models_the_probe_cannot_time_beside_the_first_wait_for_their_own_probe) {
  ProbeRequest r = a_request();
  r.policy_probe.backend = "gloo";
  r.model = a_model(25e6);
  ModelSpec scripted = a_model(25e6);
  scripted.torch_script = "/models/vit.pt";
  scripted.input_shape = {32, 3, 224, 224};
  ModelSpec too_large_for_a_cpu_pod = a_model(30e9, 32, "adam");
  r.also_models = {scripted, too_large_for_a_cpu_pod, a_model(5e6), a_model(6e6), a_model(7e6)};
  const std::vector<ModelSpec> models = probe_models(r);
  ASSERT_EQ(models.size(), static_cast<size_t>(kMaxModelsPerProbe));
  EXPECT_EQ(models[1].parameters, 5e6);
  EXPECT_EQ(models[2].parameters, 6e6);
  // A link-only probe (the first model is too large for a CPU pod; its job gave a step
  // time) times no model: the others wait.
  r.model = too_large_for_a_cpu_pod;
  r.model.step_time_hint_ms = 900;
  EXPECT_EQ(probe_models(r).size(), 1u);
  EXPECT_FALSE(flag_value(args_of(build_probe(r, {})), "--also-model"));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
