#include "bench/realistic_job.h"

#include "core/training_job.h"

namespace commgate::bench {

std::string realistic_job_json() {
  using commgate::Json;
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

}  // namespace commgate::bench
