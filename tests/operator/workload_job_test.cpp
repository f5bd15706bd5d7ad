// The training workload's objects (operator/workload_job.h): the headless Service and the
// Indexed Job built from a TrainingJob's template, checked where a wrong value would break
// the training (torchrun's rendezvous, ranks, placement, GPUs, ownership). Jobs go through
// the real parser (tests/support/builders.h).
#include "operator/workload_job.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tests/support/builders.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using testing::a_training_job;

constexpr const char* kUid = "0b5c7a9e-0000-4000-8000-00000000b0b0";
constexpr const char* kIndexRef =
    "metadata.annotations['batch.kubernetes.io/job-completion-index']";

// "bert" in namespace "research": 3 nodes x 4 processes, one trainer container.
testing::TrainingJobBuilder bert() {
  return a_training_job("bert").nodes(3).procs_per_node(4);
}

json trainer(json extra = json::object()) {
  json c = {{"name", "trainer"}, {"image", "train:1"}, {"command", {"torchrun", "train.py"}}};
  c.merge_patch(extra);
  return c;
}

WorkloadObjects build(const TrainingJob& job, const std::map<std::string, std::string>& nccl = {},
                      PoolDevice device = PoolDevice::kNotMeasured, int port = 29500) {
  WorkloadSettings settings;
  settings.master_port = port;
  return build_workload(job, kUid, nccl, settings, device);
}

const json& pod_spec(const WorkloadObjects& o) {
  return o.job["spec"]["template"]["spec"];
}

// The env entry named `name` of container `index`; nullopt when absent. Fails the test
// when the name appears twice (the kubelet would take the last one silently).
std::optional<json> env_entry(const WorkloadObjects& o, const std::string& name, int index = 0) {
  std::optional<json> found;
  for (const auto& e : pod_spec(o)["containers"][index]["env"]) {
    if (e["name"] != name) continue;
    EXPECT_FALSE(found) << name << " appears twice in container " << index;
    found = e;
  }
  return found;
}

std::string env_value(const WorkloadObjects& o, const std::string& name, int index = 0) {
  const auto e = env_entry(o, name, index);
  return e && e->contains("value") ? (*e)["value"].get<std::string>() : "<absent>";
}

std::vector<std::string> env_names(const WorkloadObjects& o, int index = 0) {
  std::vector<std::string> names;
  for (const auto& e : pod_spec(o)["containers"][index]["env"]) names.push_back(e["name"]);
  return names;
}

// --- The torchrun environment ---

struct EnvCase {
  std::string name;
  std::string var;
  std::string want_value;  // "<fieldRef>": the completion index
};

void PrintTo(const EnvCase& c, std::ostream* os) {
  *os << c.name;
}

class TorchrunEnv : public ::testing::TestWithParam<EnvCase> {};

TEST_P(TorchrunEnv, is_injected_into_every_container) {
  const auto& tc = GetParam();
  const auto o = build(bert()
                           .set("/spec/template/spec/containers",
                                json::array({trainer(), trainer({{"name", "sidecar"}})}))
                           .build(),
                       {}, PoolDevice::kNotMeasured, 29612);
  for (int c = 0; c < 2; ++c) {
    SCOPED_TRACE("container " + std::to_string(c));
    const auto e = env_entry(o, tc.var, c);
    ASSERT_TRUE(e) << tc.var << " missing";
    if (tc.want_value == "<fieldRef>") {
      EXPECT_FALSE(e->contains("value"));
      EXPECT_EQ((*e)["valueFrom"]["fieldRef"]["fieldPath"], kIndexRef);
      EXPECT_EQ((*e)["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    } else {
      EXPECT_EQ((*e)["value"], tc.want_value);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    WorkloadJob, TorchrunEnv,
    ::testing::Values(EnvCase{"master_addr_is_pod_zero_under_the_service", "MASTER_ADDR",
                              "bert-0.bert"},
                      EnvCase{"master_port_is_the_settings_port", "MASTER_PORT", "29612"},
                      EnvCase{"nnodes_is_num_nodes", "NNODES", "3"},
                      EnvCase{"node_rank_is_the_completion_index", "NODE_RANK", "<fieldRef>"},
                      EnvCase{"nproc_per_node_is_num_proc_per_node", "NPROC_PER_NODE", "4"},
                      EnvCase{"world_size_is_nodes_times_procs", "WORLD_SIZE", "12"},
                      EnvCase{"torchrun_nnodes_default", "PET_NNODES", "3"},
                      EnvCase{"torchrun_node_rank_default", "PET_NODE_RANK", "<fieldRef>"},
                      EnvCase{"torchrun_master_addr_default", "PET_MASTER_ADDR", "bert-0.bert"},
                      EnvCase{"torchrun_master_port_default", "PET_MASTER_PORT", "29612"},
                      EnvCase{"torchrun_nproc_per_node_default", "PET_NPROC_PER_NODE", "4"}),
    [](const ::testing::TestParamInfo<EnvCase>& p) { return p.param.name; });

TEST(WorkloadJob, a_failed_containers_log_tail_is_its_termination_message_unless_chosen) {
  // The TrainingJob's message quotes a failed rank's error line from it (pod_failure.h).
  const auto o = build(
      bert()
          .set("/spec/template/spec/containers",
               json::array({trainer(),
                            trainer({{"name", "sidecar"}, {"terminationMessagePolicy", "File"}})}))
          .build());
  EXPECT_EQ(pod_spec(o)["containers"][0]["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_EQ(pod_spec(o)["containers"][1]["terminationMessagePolicy"], "File")
      << "the template's own choice stands";
}

TEST(WorkloadJob, researchers_torchrun_values_are_replaced_and_their_other_env_kept_after_ours) {
  const auto job =
      bert()
          .set("/spec/template/spec/containers",
               json::array({trainer({{"env",
                                      {{{"name", "MASTER_ADDR"}, {"value", "10.0.0.9"}},
                                       {{"name", "LR"}, {"value", "0.1"}},
                                       {{"name", "NNODES"}, {"value", "4"}},
                                       {{"name", "RUN"}, {"value", "r$(NODE_RANK)"}}}}})}))
          .build();
  const auto o = build(job);
  EXPECT_EQ(env_value(o, "MASTER_ADDR"), "bert-0.bert");
  EXPECT_EQ(env_value(o, "NNODES"), "3");
  const auto names = env_names(o);
  ASSERT_EQ(names.size(), 13u);
  // The researcher's own entries come last, in their order, so $(NODE_RANK) expands.
  EXPECT_EQ(names[11], "LR");
  EXPECT_EQ(names[12], "RUN");
  EXPECT_EQ(env_value(o, "RUN"), "r$(NODE_RANK)");
  EXPECT_EQ(replaced_template_env(job),
            (std::vector<std::string>{"trainer/MASTER_ADDR", "trainer/NNODES"}));
}

TEST(WorkloadJob, nccl_settings_are_added_unless_the_researcher_set_them) {
  const auto job =
      bert()
          .set("/spec/template/spec/containers",
               json::array(
                   {trainer({{"env", {{{"name", "NCCL_SOCKET_IFNAME"}, {"value", "ib0"}}}}})}))
          .build();
  const auto o = build(job, {{"NCCL_IB_DISABLE", "1"}, {"NCCL_SOCKET_IFNAME", "eth0"}});
  EXPECT_EQ(env_value(o, "NCCL_IB_DISABLE"), "1");
  EXPECT_EQ(env_value(o, "NCCL_SOCKET_IFNAME"), "ib0");
  EXPECT_TRUE(replaced_template_env(job).empty());
}

TEST(WorkloadJob, a_template_without_torchrun_variables_replaces_nothing) {
  EXPECT_TRUE(replaced_template_env(bert().build()).empty());
  EXPECT_TRUE(replaced_template_env(bert()
                                        .set("/spec/template/spec/containers/0/env",
                                             json::array({{{"name", "LR"}, {"value", "1"}}}))
                                        .build())
                  .empty());
}

// --- GPUs: asked for only where the pool's probe ran on CUDA ---

struct GpuCase {
  std::string name;
  PoolDevice device;
  json containers;
  // Per container: the nvidia.com/gpu limit as built ("" = none).
  std::vector<std::string> want_limits;
};

void PrintTo(const GpuCase& c, std::ostream* os) {
  *os << c.name;
}

class WorkloadGpus : public ::testing::TestWithParam<GpuCase> {};

TEST_P(WorkloadGpus, follow_the_rule) {
  const auto& tc = GetParam();
  const auto o =
      // As the operator reads a stored job: the webhook's check that a template's own GPUs
      // equal numProcPerNode (core/training_job.cpp) is not what is tested here.
      build(parse_training_job(bert().set("/spec/template/spec/containers", tc.containers).json(),
                               ObjectSource::kStored),
            {}, tc.device);
  const json& containers = pod_spec(o)["containers"];
  ASSERT_EQ(containers.size(), tc.want_limits.size());
  for (size_t i = 0; i < containers.size(); ++i) {
    const json limits =
        containers[i].value("resources", json::object()).value("limits", json::object());
    const std::string got =
        limits.contains("nvidia.com/gpu") ? limits["nvidia.com/gpu"].dump() : "";
    EXPECT_EQ(got, tc.want_limits[i]) << "container " << i;
  }
}

const json kGpuLimit2 = {{"resources", {{"limits", {{"nvidia.com/gpu", 2}}}}}};
json with_name(const std::string& name, json extra) {
  extra["name"] = name;
  return extra;
}
const json kGpuRequest1 = {{"resources", {{"requests", {{"nvidia.com/gpu", 1}}}}}};

INSTANTIATE_TEST_SUITE_P(
    WorkloadJob, WorkloadGpus,
    ::testing::Values(
        GpuCase{"cuda_pool_template_without_gpus_gets_one_per_process_on_the_first_container",
                PoolDevice::kCuda,
                json::array({trainer(), trainer({{"name", "sidecar"}})}),
                {"\"4\"", ""}},
        GpuCase{"cuda_pool_template_with_its_own_limit_is_kept",
                PoolDevice::kCuda,
                json::array({trainer(kGpuLimit2)}),
                {"2"}},
        GpuCase{"cuda_pool_gpus_named_by_another_container_add_none",
                PoolDevice::kCuda,
                json::array({trainer(), trainer(with_name("sidecar", kGpuLimit2)),
                             trainer({{"name", "x"}})}),
                {"", "2", ""}},
        GpuCase{"cuda_pool_a_gpu_request_without_limit_counts_as_named",
                PoolDevice::kCuda,
                json::array({trainer(kGpuRequest1)}),
                {""}},
        GpuCase{"cpu_pool_schedules_on_nodes_without_gpus",
                PoolDevice::kCpu,
                json::array({trainer()}),
                {""}},
        GpuCase{"unknown_device_adds_nothing",
                PoolDevice::kNotMeasured,
                json::array({trainer()}),
                {""}}),
    [](const ::testing::TestParamInfo<GpuCase>& p) { return p.param.name; });

TEST(WorkloadJob, gpu_limit_keeps_the_containers_other_resources) {
  const auto o = build(
      bert()
          .set("/spec/template/spec/containers",
               json::array(
                   {trainer({{"resources",
                              {{"limits", {{"memory", "8Gi"}}}, {"requests", {{"cpu", "2"}}}}}})}))
          .build(),
      {}, PoolDevice::kCuda);
  const json& resources = pod_spec(o)["containers"][0]["resources"];
  EXPECT_EQ(resources["limits"], json({{"memory", "8Gi"}, {"nvidia.com/gpu", "4"}}));
  EXPECT_EQ(resources["requests"], json({{"cpu", "2"}}));
}

TEST(WorkloadJob, pool_device_reads_the_profiles_device) {
  CommProfileStatus s;
  EXPECT_EQ(pool_device_of(s), PoolDevice::kNotMeasured);
  s.device = "cuda";
  EXPECT_EQ(pool_device_of(s), PoolDevice::kCuda);
  s.device = "cpu";
  EXPECT_EQ(pool_device_of(s), PoolDevice::kCpu);
  s.device = "tpu";
  EXPECT_EQ(pool_device_of(s), PoolDevice::kNotMeasured);
}

// --- Placement ---

TEST(WorkloadJob, jobs_node_selector_wins_a_clash_and_the_templates_other_keys_stay) {
  const auto o =
      build(bert()
                .set("/spec/nodeSelector", {{"pool", "a100"}, {"zone", "eu-1a"}})
                .set("/spec/template/spec/nodeSelector", {{"pool", "h100"}, {"disk", "ssd"}})
                .build());
  EXPECT_EQ(pod_spec(o)["nodeSelector"],
            json({{"disk", "ssd"}, {"pool", "a100"}, {"zone", "eu-1a"}}));
}

TEST(WorkloadJob, no_selector_anywhere_adds_none) {
  EXPECT_FALSE(pod_spec(build(bert().build())).contains("nodeSelector"));
  EXPECT_FALSE(pod_spec(build(bert().build())).contains("tolerations"));
}

TEST(WorkloadJob, tolerations_are_the_templates_then_the_jobs_without_repeats) {
  const json gpu = {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}};
  const json spot = {{"key", "spot"}, {"operator", "Equal"}, {"value", "true"}};
  const json dedicated = {{"key", "dedicated"}, {"operator", "Exists"}};
  const auto o = build(bert()
                           .set("/spec/tolerations", json::array({gpu, dedicated}))
                           .set("/spec/template/spec/tolerations", json::array({spot, gpu}))
                           .build());
  EXPECT_EQ(pod_spec(o)["tolerations"], json::array({spot, gpu, dedicated}));
}

TEST(WorkloadJob, one_pod_per_node_is_added_to_the_templates_own_anti_affinity) {
  const json own = {{"topologyKey", "topology.kubernetes.io/zone"},
                    {"labelSelector", {{"matchLabels", {{"team", "nlp"}}}}}};
  const json preferred = json::array({{{"weight", 1}, {"podAffinityTerm", own}}});
  const auto o =
      build(bert()
                .set("/spec/template/spec/affinity",
                     {{"podAntiAffinity",
                       {{"requiredDuringSchedulingIgnoredDuringExecution", {own}},
                        {"preferredDuringSchedulingIgnoredDuringExecution", preferred}}}})
                .build());
  const json& anti = pod_spec(o)["affinity"]["podAntiAffinity"];
  EXPECT_EQ(anti["preferredDuringSchedulingIgnoredDuringExecution"], preferred);
  const json& required = anti["requiredDuringSchedulingIgnoredDuringExecution"];
  ASSERT_EQ(required.size(), 2u);
  EXPECT_EQ(required[0], own);
  EXPECT_EQ(required[1]["topologyKey"], "kubernetes.io/hostname");
  EXPECT_EQ(required[1]["labelSelector"]["matchLabels"],
            json({{"commgate.io/role", "workload"}, {"commgate.io/trainingjob", "bert"}}));
}

// --- The Job and the Service ---

TEST(WorkloadJob, job_is_indexed_with_one_pod_per_node_and_the_run_policy) {
  const auto o = build(bert()
                           .set("/spec/runPolicy", {{"backoffLimit", 2},
                                                    {"activeDeadlineSeconds", 7200},
                                                    {"ttlSecondsAfterFinished", 3600}})
                           .build());
  const json& j = o.job;
  EXPECT_EQ(j["apiVersion"], "batch/v1");
  EXPECT_EQ(j["kind"], "Job");
  EXPECT_EQ(j["metadata"]["name"], "bert");
  EXPECT_EQ(j["metadata"]["namespace"], "research");
  EXPECT_EQ(j["spec"]["completionMode"], "Indexed");
  EXPECT_EQ(j["spec"]["completions"], 3);
  EXPECT_EQ(j["spec"]["parallelism"], 3);
  EXPECT_EQ(j["spec"]["backoffLimit"], 2);
  EXPECT_EQ(j["spec"]["activeDeadlineSeconds"], 7200);
  EXPECT_EQ(j["spec"]["ttlSecondsAfterFinished"], 3600);
  EXPECT_EQ(pod_spec(o)["subdomain"], "bert");
  EXPECT_EQ(pod_spec(o)["restartPolicy"], "Never");
}

TEST(WorkloadJob, an_absent_run_policy_leaves_the_apiservers_defaults) {
  const json spec = build(bert().build()).job["spec"];
  EXPECT_FALSE(spec.contains("backoffLimit"));
  EXPECT_FALSE(spec.contains("activeDeadlineSeconds"));
  EXPECT_FALSE(spec.contains("ttlSecondsAfterFinished"));
}

TEST(WorkloadJob, the_templates_other_fields_are_kept_verbatim) {
  const json volumes = json::array({{{"name", "data"}, {"emptyDir", json::object()}}});
  const auto o = build(bert()
                           .set("/spec/template/metadata",
                                {{"labels", {{"team", "nlp"}, {"commgate.io/role", "mine"}}},
                                 {"annotations", {{"a", "b"}}}})
                           .set("/spec/template/spec/restartPolicy", "OnFailure")
                           .set("/spec/template/spec/serviceAccountName", "trainer")
                           .set("/spec/template/spec/volumes", volumes)
                           .set("/spec/template/spec/containers/0/args", json::array({"--lr", "1"}))
                           .build());
  const json& t = o.job["spec"]["template"];
  EXPECT_EQ(t["metadata"]["annotations"], json({{"a", "b"}}));
  EXPECT_EQ(t["metadata"]["labels"]["team"], "nlp");
  EXPECT_EQ(t["metadata"]["labels"]["commgate.io/role"], "workload");  // ours win
  EXPECT_EQ(t["spec"]["restartPolicy"], "OnFailure");
  EXPECT_EQ(t["spec"]["serviceAccountName"], "trainer");
  EXPECT_EQ(t["spec"]["volumes"], volumes);
  EXPECT_EQ(t["spec"]["containers"][0]["image"], "train:1");
  EXPECT_EQ(t["spec"]["containers"][0]["args"], json::array({"--lr", "1"}));
}

TEST(WorkloadJob, service_is_headless_on_the_master_port_and_selects_the_pods) {
  const auto o = build(bert().build(), {}, PoolDevice::kNotMeasured, 29612);
  const json& s = o.service;
  EXPECT_EQ(s["apiVersion"], "v1");
  EXPECT_EQ(s["kind"], "Service");
  EXPECT_EQ(s["metadata"]["name"], "bert");  // = the pods' subdomain
  EXPECT_EQ(s["metadata"]["namespace"], "research");
  EXPECT_EQ(s["spec"]["clusterIP"], "None");
  EXPECT_EQ(s["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(
      s["spec"]["ports"],
      json::array(
          {{{"name", "master"}, {"port", 29612}, {"targetPort", 29612}, {"protocol", "TCP"}}}));
  // The selector matches the pod template's labels.
  const json& pod_labels = o.job["spec"]["template"]["metadata"]["labels"];
  for (const auto& [k, v] : s["spec"]["selector"].items()) EXPECT_EQ(pod_labels[k], v) << k;
}

TEST(WorkloadJob, both_objects_carry_the_labels_and_are_owned_by_the_training_job) {
  const auto o = build(bert().build());
  const json want_labels = {{"app.kubernetes.io/managed-by", "commgate"},
                            {"commgate.io/role", "workload"},
                            {"commgate.io/trainingjob", "bert"}};
  const json want_owner = {{"apiVersion", "commgate.io/v1alpha1"},
                           {"kind", "TrainingJob"},
                           {"name", "bert"},
                           {"uid", kUid},
                           {"controller", true},
                           {"blockOwnerDeletion", true}};
  for (const json* obj : {&o.service, &o.job}) {
    EXPECT_EQ((*obj)["metadata"]["labels"], want_labels);
    EXPECT_EQ((*obj)["metadata"]["ownerReferences"], json::array({want_owner}));
  }
  for (const auto& [k, v] : want_labels.items())
    EXPECT_EQ(o.job["spec"]["template"]["metadata"]["labels"][k], v) << k;
}

TEST(WorkloadJob, is_deterministic) {
  const auto job = bert().set("/spec/nodeSelector", {{"pool", "a100"}, {"zone", "b"}}).build();
  const std::map<std::string, std::string> nccl = {{"NCCL_SOCKET_IFNAME", "eth0"},
                                                   {"NCCL_IB_DISABLE", "1"}};
  const auto a = build(job, nccl, PoolDevice::kCuda);
  const auto b = build(job, nccl, PoolDevice::kCuda);
  EXPECT_EQ(a.job.dump(), b.job.dump());
  EXPECT_EQ(a.service.dump(), b.service.dump());
}

// --- NCCL settings from the pool's profile ---

struct NcclCase {
  std::string name;
  std::string backend, transport, interface_name;
  std::map<std::string, std::string> want;
};

void PrintTo(const NcclCase& c, std::ostream* os) {
  *os << c.name;
}

class NcclEnv : public ::testing::TestWithParam<NcclCase> {};

TEST_P(NcclEnv, from_the_profile) {
  const auto& tc = GetParam();
  CommProfileStatus s;
  s.backend = tc.backend;
  s.transport = tc.transport;
  s.interface_name = tc.interface_name;
  EXPECT_EQ(nccl_env_of(s), tc.want);
}

INSTANTIATE_TEST_SUITE_P(
    WorkloadJob, NcclEnv,
    ::testing::Values(
        NcclCase{"nccl_over_sockets_disables_ib_on_the_measured_interface",
                 "nccl",
                 "socket",
                 "eth0",
                 {{"NCCL_IB_DISABLE", "1"}, {"NCCL_SOCKET_IFNAME", "eth0"}}},
        NcclCase{"nccl_sockets_plus_nvlink_still_disables_ib",
                 "nccl",
                 "socket+p2p/nvlink",
                 "eth1",
                 {{"NCCL_IB_DISABLE", "1"}, {"NCCL_SOCKET_IFNAME", "eth1"}}},
        NcclCase{"nccl_over_sockets_without_interface_only_disables_ib",
                 "nccl",
                 "socket",
                 "",
                 {{"NCCL_IB_DISABLE", "1"}}},
        NcclCase{"nccl_over_infiniband_pins_nothing", "nccl", "ib+p2p/nvlink", "mlx5_0:1", {}},
        NcclCase{"nccl_one_rank_moved_nothing", "nccl", "none", "", {}},
        NcclCase{"gloo_over_sockets_binds_gloo_to_the_interface",
                 "gloo",
                 "socket",
                 "eth0",
                 {{"GLOO_SOCKET_IFNAME", "eth0"}}},
        NcclCase{"gloo_over_loopback_binds_lo",
                 "gloo",
                 "loopback",
                 "lo",
                 {{"GLOO_SOCKET_IFNAME", "lo"}}},
        NcclCase{"unknown_transport_invents_nothing", "nccl", "unknown", "eth0", {}},
        NcclCase{"no_probe_yet_invents_nothing", "", "", "", {}}),
    [](const ::testing::TestParamInfo<NcclCase>& p) { return p.param.name; });

TEST(WorkloadJob, size_drift_names_what_differs_from_the_admitted_count) {
  struct Case {
    json spec;
    std::string want;  // "" when the Job has the admitted size
  };
  const Case cases[] = {
      {{{"parallelism", 4}, {"completions", 4}}, ""},
      {{{"parallelism", 64}, {"completions", 64}},
       "Job ml/bert has parallelism 64 and completions 64, but commgate admitted 4 nodes"},
      {{{"parallelism", 8}, {"completions", 4}},
       "Job ml/bert has parallelism 8 and completions 4, but commgate admitted 4 nodes"},
      {{{"parallelism", 1}, {"completions", 4}},
       "Job ml/bert has parallelism 1 and completions 4, but commgate admitted 4 nodes"},
      {{{"completions", 4}},
       "Job ml/bert has parallelism unset and completions 4, but commgate admitted 4 nodes"},
  };
  for (const auto& c : cases) {
    const json job = {{"metadata", {{"name", "bert"}, {"namespace", "ml"}}}, {"spec", c.spec}};
    EXPECT_EQ(workload_size_drift(job, 4), c.want) << c.spec.dump();
  }
  EXPECT_EQ(workload_size_restore(4), json::parse(R"({"spec":{"completions":4,"parallelism":4}})"));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
