// core/workload_shape.h: how many GPU pods a workload runs at once, per kind.
#include "core/workload_shape.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/yaml_json.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json container(json resources, json extra = json::object()) {
  json c = {{"name", "c"}, {"image", "i"}, {"resources", std::move(resources)}};
  c.update(extra);
  return c;
}

json pod_spec(std::vector<json> containers, std::vector<json> init = {}) {
  json s = {{"containers", containers}};
  if (!init.empty()) s["initContainers"] = init;
  return s;
}

json gpus(const std::string& resource, json n) {
  return {{"limits", {{resource, std::move(n)}}}};
}

TEST(AcceleratorResource, NamesTheDevicePluginsResources) {
  for (const char* yes :
       {"nvidia.com/gpu", "amd.com/gpu", "nvidia.com/mig-1g.10gb", "gpu.intel.com/i915",
        "habana.ai/gaudi", "aws.amazon.com/neuroncore", "google.com/tpu", "nvidia.com/gpu.shared",
        "k8s.amazonaws.com/vgpu", "cloud-tpus.google.com/v3", "amd.com/cpx_nps4"})
    EXPECT_TRUE(is_accelerator_resource(yes)) << yes;
  for (const char* no : {"cpu", "memory", "gpu", "nvidia.com/gpus", "example.com/fpga",
                         "ephemeral-storage", "hugepages-2Mi"})
    EXPECT_FALSE(is_accelerator_resource(no)) << no;
}

struct PodCase {
  std::string name;
  json spec;
  long long want;
};

class PodAccelerators : public ::testing::TestWithParam<PodCase> {};

TEST_P(PodAccelerators, Counts) {
  EXPECT_EQ(pod_accelerators(GetParam().spec), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PodAccelerators,
    ::testing::Values(
        PodCase{"None", pod_spec({container(json::object())}), 0},
        PodCase{"AString", pod_spec({container(gpus("nvidia.com/gpu", "8"))}), 8},
        PodCase{"ANumber", pod_spec({container(gpus("nvidia.com/gpu", 4))}), 4},
        PodCase{"ContainersAddUp",
                pod_spec({container(gpus("nvidia.com/gpu", "2")),
                          container(gpus("nvidia.com/gpu", "2"))}),
                4},
        PodCase{"ARequestWithoutALimit",
                pod_spec({container({{"requests", {{"amd.com/gpu", "2"}}}})}), 2},
        PodCase{"ARequestAndItsLimitCountOnce",
                pod_spec({container({{"requests", {{"nvidia.com/gpu", "2"}}},
                                     {"limits", {{"nvidia.com/gpu", "2"}}}})}),
                2},
        PodCase{"ALargerInitContainer",
                pod_spec({container(gpus("nvidia.com/gpu", "1"))},
                         {container(gpus("nvidia.com/gpu", "4"))}),
                4},
        // Sidecars (restartPolicy Always) run beside the containers: they add up.
        PodCase{"ASidecarAddsToTheContainers",
                pod_spec({container(gpus("nvidia.com/gpu", "1"))},
                         {container(gpus("nvidia.com/gpu", "1"), {{"restartPolicy", "Always"}})}),
                2},
        // An init container after a sidecar runs beside it: 1 + 4 > the 1 + 1 later.
        PodCase{"AnInitContainerRunsBesideTheSidecarsBeforeIt",
                pod_spec({container(gpus("nvidia.com/gpu", "1"))},
                         {container(gpus("nvidia.com/gpu", "1"), {{"restartPolicy", "Always"}}),
                          container(gpus("nvidia.com/gpu", "4"))}),
                5},
        // Before the sidecar starts, the init container runs alone.
        PodCase{"AnInitContainerBeforeTheSidecarRunsAlone",
                pod_spec({container(gpus("nvidia.com/gpu", "1"))},
                         {container(gpus("nvidia.com/gpu", "3")),
                          container(gpus("nvidia.com/gpu", "1"), {{"restartPolicy", "Always"}})}),
                3},
        PodCase{"MigSlices", pod_spec({container(gpus("nvidia.com/mig-1g.10gb", "3"))}), 3},
        PodCase{"NotAQuantity", pod_spec({container(gpus("nvidia.com/gpu", "lots"))}), 0},
        PodCase{"NotAnObject", json("x"), 0}),
    [](const auto& info) { return info.param.name; });

struct ShapeCase {
  std::string name;
  WorkloadKind kind;
  json object;
  long long want_pods;
  std::string want_from;
};

class Shape : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(Shape, CountsThePodsThatRunAtOnce) {
  const ShapeCase& c = GetParam();
  const WorkloadShape s = workload_shape(c.kind, c.object);
  EXPECT_EQ(s.accelerated_pods, c.want_pods);
  EXPECT_EQ(s.count_from, c.want_from);
}

json gpu_pod(json extra = json::object()) {
  return pod_spec({container(gpus("nvidia.com/gpu", "8"), std::move(extra))});
}

json job(json spec_extra) {
  json spec = {{"template", {{"spec", gpu_pod()}}}};
  spec.update(spec_extra);
  return {{"spec", spec}};
}

json pod(json extra) {
  return {{"spec", gpu_pod(std::move(extra))}};
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Shape,
    ::testing::Values(
        ShapeCase{"AJobRunsOnePodByDefault", WorkloadKind::kJob, job(json::object()), 1,
                  "spec.parallelism"},
        ShapeCase{"AJobsParallelism", WorkloadKind::kJob, job({{"parallelism", 16}}), 16,
                  "spec.parallelism"},
        ShapeCase{"FewerCompletionsThanParallelism", WorkloadKind::kJob,
                  job({{"parallelism", 16}, {"completions", 2}}), 2, "spec.completions"},
        ShapeCase{"AnIllTypedParallelismReadsAsTheDefault", WorkloadKind::kJob,
                  job({{"parallelism", "16"}}), 1, "spec.parallelism"},
        ShapeCase{"ACronJobsTemplate",
                  WorkloadKind::kCronJob,
                  {{"spec", {{"jobTemplate", job({{"parallelism", 3}})}}}},
                  3,
                  "spec.jobTemplate.spec.parallelism"},
        ShapeCase{"APyTorchJobsElasticWorkers",
                  WorkloadKind::kPyTorchJob,
                  {{"spec",
                    {{"elasticPolicy", {{"maxReplicas", 8}}},
                     {"pytorchReplicaSpecs",
                      {{"Worker", {{"replicas", 2}, {"template", {{"spec", gpu_pod()}}}}}}}}}},
                  8,
                  "spec.elasticPolicy.maxReplicas"},
        ShapeCase{"ABarePod", WorkloadKind::kPod, pod(json::object()), 1, "a bare pod is one node"},
        // Kueue's pod groups: one pod of a group of 4 (the attacker review of 2026-12-06).
        ShapeCase{"OnePodOfAKueuePodGroup", WorkloadKind::kPod,
                  [] {
                    json p = pod(json::object());
                    p["metadata"] = {
                        {"labels", {{"kueue.x-k8s.io/pod-group-name", "g1"}}},
                        {"annotations", {{"kueue.x-k8s.io/pod-group-total-count", "4"}}}};
                    return p;
                  }(),
                  4, "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]"},
        ShapeCase{
            "AGroupSizeWithoutTheGroupLabelIsNotRead", WorkloadKind::kPod,
            [] {
              json p = pod(json::object());
              p["metadata"] = {{"annotations", {{"kueue.x-k8s.io/pod-group-total-count", "4"}}}};
              return p;
            }(),
            1, "a bare pod is one node"},
        ShapeCase{"NnodesAsTheNextWord", WorkloadKind::kPod,
                  pod({{"args", {"--nnodes", "3", "train.py"}}}), 3, "spec.containers[0].args[1]"},
        ShapeCase{"NnodesInsideAShellCommand", WorkloadKind::kPod,
                  pod({{"command", {"bash", "-c", "torchrun --nnodes 6 --nproc-per-node 8 t.py"}}}),
                  6, "spec.containers[0].command[2]"},
        ShapeCase{"NnodesOfOneIsOneNode", WorkloadKind::kPod,
                  pod({{"command", {"torchrun", "--nnodes=1", "t.py"}}}), 1,
                  "a bare pod is one node"},
        // The second review: values torchrun reads with Python's int().
        ShapeCase{"APlusSign", WorkloadKind::kPod, pod({{"args", {"--nnodes=+4"}}}), 4,
                  "spec.containers[0].args[0]"},
        ShapeCase{"LeadingZeros", WorkloadKind::kPod, pod({{"args", {"--nnodes=0000000004"}}}), 4,
                  "spec.containers[0].args[0]"},
        ShapeCase{"Underscores", WorkloadKind::kPod, pod({{"args", {"--nnodes=1_6"}}}), 16,
                  "spec.containers[0].args[0]"},
        ShapeCase{"FullWidthDigits", WorkloadKind::kPod,
                  pod({{"args", {"--nnodes=\xef\xbc\x91\xef\xbc\x96"}}}), 16,
                  "spec.containers[0].args[0]"},
        ShapeCase{"ACarriageReturn", WorkloadKind::kPod, pod({{"args", {"--nnodes=4\r"}}}), 4,
                  "spec.containers[0].args[0]"},
        ShapeCase{"ASignedMaximum", WorkloadKind::kPod, pod({{"args", {"--nnodes=1:+8"}}}), 8,
                  "spec.containers[0].args[0]"},
        ShapeCase{"ABlankInsideQuotes", WorkloadKind::kPod,
                  pod({{"command", {"sh", "-c", "torchrun --nnodes=' 4' t.py"}}}), 4,
                  "spec.containers[0].command[2]"},
        ShapeCase{"ANegativeCountIsNone", WorkloadKind::kPod, pod({{"args", {"--nnodes=-4"}}}), 1,
                  "a bare pod is one node"},
        ShapeCase{"AcceleratesNumMachines", WorkloadKind::kPod,
                  pod({{"command", {"accelerate", "launch", "--num_machines", "3", "t.py"}}}), 3,
                  "spec.containers[0].command[3]"},
        ShapeCase{"DeepspeedsNumNodes", WorkloadKind::kPod,
                  pod({{"command", {"deepspeed", "--num_nodes=2", "t.py"}}}), 2,
                  "spec.containers[0].command[1]"},
        ShapeCase{"PetNnodesWithAPlus", WorkloadKind::kPod,
                  pod({{"env", {{{"name", "PET_NNODES"}, {"value", "+4"}}}}}), 4,
                  "spec.containers[0].env[0] (PET_NNODES)"},
        ShapeCase{"ALowercaseWorkerTypeIsElastic",
                  WorkloadKind::kPyTorchJob,
                  {{"spec",
                    {{"elasticPolicy", {{"maxReplicas", 16}}},
                     {"pytorchReplicaSpecs",
                      {{"worker", {{"replicas", 1}, {"template", {{"spec", gpu_pod()}}}}}}}}}},
                  16,
                  "spec.elasticPolicy.maxReplicas"},
        ShapeCase{"NnodesFromTheEnvironmentIsNotRead", WorkloadKind::kPod,
                  pod({{"command", {"torchrun", "--nnodes=$N", "t.py"}}}), 1,
                  "a bare pod is one node"}),
    [](const auto& info) { return info.param.name; });

TEST(Shape, ACpuWorkloadIsNotMultiNode) {
  json cpu = {
      {"spec",
       {{"parallelism", 64}, {"template", {{"spec", pod_spec({container(json::object())})}}}}}};
  const WorkloadShape s = workload_shape(WorkloadKind::kJob, cpu);
  EXPECT_EQ(s.accelerated_pods, 0);
  EXPECT_FALSE(s.multi_node());
}

// The upstream examples at their pinned tags (../shared/fixtures/ecosystem/), each of whose
// containers is given one GPU: the counts their controllers would run.
json upstream_example(const std::string& relative) {
  std::ifstream in(std::filesystem::path(COMMGATE_SOURCE_DIR) / "../shared/fixtures/ecosystem" /
                   relative);
  std::stringstream text;
  text << in.rdbuf();
  const auto docs = yaml_documents_to_json(text.str());
  if (docs.empty()) return nullptr;
  json doc = docs.front();
  // Every PodSpec in it: the object under each "containers" list.
  std::function<void(json&)> give_gpus = [&](json& node) {
    if (node.is_object()) {
      if (auto c = node.find("containers"); c != node.end() && c->is_array())
        for (json& container : *c) container["resources"]["limits"]["nvidia.com/gpu"] = "1";
      for (auto& [_, child] : node.items()) give_gpus(child);
    } else if (node.is_array()) {
      for (json& child : node) give_gpus(child);
    }
  };
  give_gpus(doc);
  return doc;
}

TEST(Shape, UpstreamExamplesAsTheirControllersRunThem) {
  const json jobset = upstream_example("jobset-v0.12.0/example-pytorch-mnist.yaml");
  ASSERT_TRUE(jobset.is_object()) << "fixture missing";
  WorkloadShape s = workload_shape(WorkloadKind::kJobSet, jobset);
  EXPECT_EQ(s.accelerated_pods, 4);
  EXPECT_EQ(s.count_from,
            "spec.replicatedJobs[0].replicas x "
            "spec.replicatedJobs[0].template.spec.parallelism");
  s = workload_shape(WorkloadKind::kPyTorchJob,
                     upstream_example("training-operator-v1.9.4/example-simple.yaml"));
  EXPECT_EQ(s.accelerated_pods, 2);  // Master 1 + Worker 1
  s = workload_shape(WorkloadKind::kPyTorchJob,
                     upstream_example("training-operator-v1.9.4/example-elastic-imagenet.yaml"));
  EXPECT_EQ(s.accelerated_pods, 3);  // elasticPolicy.maxReplicas over Worker's 2
  EXPECT_EQ(s.count_from, "spec.elasticPolicy.maxReplicas");
  // The JobSet's pods declare --nnodes=4 inside `bash -xc`: each is one node of four.
  json pod = {
      {"spec", jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]}};
  s = workload_shape(WorkloadKind::kPod, pod);
  EXPECT_EQ(s.accelerated_pods, 4);
  EXPECT_EQ(s.count_from, "spec.containers[0].command[2]");
}

TEST(Shape, KindsAreReadByGroupAndKind) {
  EXPECT_EQ(workload_kind_of("batch", "Job"), WorkloadKind::kJob);
  EXPECT_EQ(workload_kind_of("", "Pod"), WorkloadKind::kPod);
  EXPECT_EQ(workload_kind_of("jobset.x-k8s.io", "JobSet"), WorkloadKind::kJobSet);
  EXPECT_EQ(workload_kind_of("kubeflow.org", "PyTorchJob"), WorkloadKind::kPyTorchJob);
  EXPECT_EQ(workload_kind_of("example.com", "Job"), std::nullopt);
  EXPECT_EQ(workload_kind_of("apps", "Deployment"), std::nullopt);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
