// One admission decision end to end: parse a ~3 KB TrainingJob JSON (as the webhook
// receives it), then decide against a policy and a cached measurement.
// Goal (issue 2): <= 50 us per decision on this machine.
#include <benchmark/benchmark.h>

#include "core/comm_policy.h"
#include "core/decision.h"
#include "core/measurement.h"
#include "core/training_job.h"

namespace {

using commgate::Json;

// A realistic TrainingJob: a pod template with env, resources, volumes and probes,
// as researchers write them (about 3 KB serialized).
std::string realistic_job_json() {
  Json env = Json::array();
  for (const char* name :
       {"NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "TORCH_DISTRIBUTED_DEBUG", "OMP_NUM_THREADS", "HF_HOME",
        "WANDB_PROJECT", "WANDB_ENTITY", "PYTHONUNBUFFERED", "NCCL_IB_HCA", "NCCL_NET_GDR_LEVEL",
        "CUDA_DEVICE_MAX_CONNECTIONS", "TOKENIZERS_PARALLELISM", "DATASET_CACHE",
        "CHECKPOINT_EVERY_STEPS", "LOG_LEVEL", "SEED"}) {
    env.push_back({{"name", name}, {"value", "some-configured-value"}});
  }
  Json container = {
      {"name", "trainer"},
      {"image", "registry.example.org/nlp/bert-pretraining:2.3.1-cuda12.4-torch2.5"},
      {"command", {"torchrun", "--nnodes", "$(NNODES)", "--nproc-per-node", "8", "pretrain.py"}},
      {"args",
       {"--config", "configs/bert-large.yaml", "--data", "/data/wikipedia", "--bf16",
        "--grad-accum", "4"}},
      {"env", env},
      {"resources",
       {{"limits", {{"nvidia.com/gpu", 8}, {"memory", "900Gi"}, {"cpu", "96"}}},
        {"requests", {{"nvidia.com/gpu", 8}, {"memory", "800Gi"}, {"cpu", "90"}}}}},
      {"volumeMounts",
       {{{"name", "data"}, {"mountPath", "/data"}, {"readOnly", true}},
        {{"name", "checkpoints"}, {"mountPath", "/checkpoints"}},
        {{"name", "dshm"}, {"mountPath", "/dev/shm"}}}},
      {"securityContext",
       {{"allowPrivilegeEscalation", false},
        {"runAsNonRoot", true},
        {"capabilities", {{"drop", {"ALL"}}}}}}};
  Json job = {
      {"apiVersion", "commgate.io/v1alpha1"},
      {"kind", "TrainingJob"},
      {"metadata",
       {{"name", "bert-large-pretrain"},
        {"namespace", "nlp-research"},
        {"labels",
         {{"team", "nlp"}, {"project", "bert-pretraining"}, {"cost-center", "research-1234"}}},
        {"annotations", {{"owner", "researcher@example.org"}, {"experiment", "lr-sweep-7"}}}}},
      {"spec",
       {{"numNodes", 8},
        {"minNodes", 2},
        {"numProcPerNode", 8},
        {"nodeSelector",
         {{"node.kubernetes.io/instance-type", "gpu-8x-h100"},
          {"topology.example/fabric", "roce"}}},
        {"tolerations",
         {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
          {{"key", "dedicated"},
           {"operator", "Equal"},
           {"value", "training"},
           {"effect", "NoSchedule"}}}},
        {"model", {{"parameters", "340M"}, {"gradientDtype", "fp32"}, {"batchSize", 16}}},
        {"runPolicy",
         {{"backoffLimit", 3},
          {"activeDeadlineSeconds", 172800},
          {"ttlSecondsAfterFinished", 86400}}},
        {"template",
         {{"metadata", {{"labels", {{"app", "bert"}}}}},
          {"spec",
           {{"containers", {container}},
            {"volumes",
             {{{"name", "data"},
               {"persistentVolumeClaim", {{"claimName", "wikipedia-corpus"}, {"readOnly", true}}}},
              {{"name", "checkpoints"},
               {"persistentVolumeClaim", {{"claimName", "bert-checkpoints"}}}},
              {{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "64Gi"}}}}}},
            {"restartPolicy", "Never"},
            {"priorityClassName", "research-high"}}}}}}}};
  return job.dump();
}

commgate::Measurement cached_measurement() {
  commgate::Measurement m;
  m.source = "CommProfile pool-h100";
  m.measured_at = commgate::Clock::now();
  m.nodes_probed = 2;
  m.procs_per_node = 8;
  m.link.latency_s = 40e-6;
  m.link.busbw_bytes_per_s = 11.5e9;
  m.backend = "nccl";
  m.transport = "ib";
  m.compute = commgate::ComputeProfile{0.060, 0.120, 0.020};
  return m;
}

void BM_ParseAndDecide(benchmark::State& state) {
  const std::string body = realistic_job_json();
  const commgate::CommPolicy policy = commgate::default_comm_policy();
  const commgate::Measurement measurement = cached_measurement();
  const auto now = commgate::Clock::now();
  for (auto _ : state) {
    commgate::TrainingJob job =
        commgate::parse_training_job(Json::parse(body), commgate::ObjectSource::kAdmission);
    commgate::Decision d = commgate::decide({&job, &policy, &measurement, {}, now});
    benchmark::DoNotOptimize(d);
  }
  state.counters["job_bytes"] = static_cast<double>(body.size());
}
BENCHMARK(BM_ParseAndDecide)->Unit(benchmark::kMicrosecond);

void BM_ParseOnly(benchmark::State& state) {
  const std::string body = realistic_job_json();
  for (auto _ : state) {
    auto job = commgate::parse_training_job(Json::parse(body), commgate::ObjectSource::kAdmission);
    benchmark::DoNotOptimize(job);
  }
}
BENCHMARK(BM_ParseOnly)->Unit(benchmark::kMicrosecond);

// The JSON parse alone: the floor under BM_ParseOnly.
void BM_JsonParseOnly(benchmark::State& state) {
  const std::string body = realistic_job_json();
  for (auto _ : state) {
    auto doc = Json::parse(body);
    benchmark::DoNotOptimize(doc);
  }
}
BENCHMARK(BM_JsonParseOnly)->Unit(benchmark::kMicrosecond);

void BM_DecideOnly(benchmark::State& state) {
  const auto job = commgate::parse_training_job(Json::parse(realistic_job_json()));
  const commgate::CommPolicy policy = commgate::default_comm_policy();
  const commgate::Measurement measurement = cached_measurement();
  const auto now = commgate::Clock::now();
  for (auto _ : state) {
    commgate::Decision d = commgate::decide({&job, &policy, &measurement, {}, now});
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_DecideOnly)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
