// /validate for workloads commgate did not create (webhook/validate_workload.h): the
// workload gate of CommPolicy spec.unmanagedWorkloads (issue #19 item 4) and the size of
// the Job the operator created for a TrainingJob (item 3), over real apiserver envelopes.
#include <gtest/gtest.h>

#include "tests/webhook/webhook_test_support.h"
#include "webhook/handlers.h"

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::a_policy;
using commgate::testing::test_now;
using nlohmann::json;
using namespace commgate::webhook::testing;

constexpr const char* kResearcher = "alice";
constexpr const char* kNamespace = "team-a";

json gpu_container(int gpus, json extra = json::object()) {
  json c = {{"name", "train"}, {"image", "trainer:1"}};
  if (gpus > 0) c["resources"]["limits"]["nvidia.com/gpu"] = std::to_string(gpus);
  c.update(extra);
  return c;
}

json pod_spec(int gpus, json extra = json::object()) {
  return {{"restartPolicy", "Never"}, {"containers", json::array({gpu_container(gpus, extra)})}};
}

json job_spec(int parallelism, int gpus) {
  return {{"parallelism", parallelism},
          {"completions", parallelism},
          {"completionMode", "Indexed"},
          {"template", {{"spec", pod_spec(gpus)}}}};
}

json object_of(const std::string& api_version, const std::string& kind, json spec,
               json owner = nullptr) {
  json o = {{"apiVersion", api_version},
            {"kind", kind},
            {"metadata", {{"name", "run"}, {"namespace", kNamespace}}},
            {"spec", std::move(spec)}};
  if (!owner.is_null()) o["metadata"]["ownerReferences"] = json::array({owner});
  return o;
}

json a_job(int parallelism, int gpus, json owner = nullptr) {
  return object_of("batch/v1", "Job", job_spec(parallelism, gpus), std::move(owner));
}

json owner(const std::string& api_version, const std::string& kind) {
  return {{"apiVersion", api_version}, {"kind", kind},       {"name", "parent"},
          {"uid", "0b5e0f36-1"},       {"controller", true}, {"blockOwnerDeletion", true}};
}

struct Resource {
  std::string group, version, resource, kind;
};
const Resource kJobs{"batch", "v1", "jobs", "Job"};
const Resource kCronJobs{"batch", "v1", "cronjobs", "CronJob"};
const Resource kPods{"", "v1", "pods", "Pod"};
const Resource kJobSets{"jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet"};
const Resource kPyTorchJobs{"kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"};

// A write of `object` to `r` by `user`, from the real minikube-user Pod CREATE envelope.
ReviewBuilder a_write(const Resource& r, const json& object, const std::string& user = kResearcher,
                      const json& old_object = nullptr) {
  ReviewBuilder b("request-v1-create-pod-minikube-user");
  b.set("/request/resource", {{"group", r.group}, {"version", r.version}, {"resource", r.resource}})
      .set("/request/kind", {{"group", r.group}, {"version", r.version}, {"kind", r.kind}})
      .set("/request/namespace", kNamespace)
      .set("/request/name", "run")
      .set("/request/userInfo", {{"username", user}, {"groups", {"system:authenticated"}}})
      .object(object);
  if (!old_object.is_null()) b.operation("UPDATE").old_object(old_object);
  return b;
}

CommPolicy gate_on() {
  return a_policy()
      .named("gpu-gate")
      .unmanaged_workloads(UnmanagedWorkloads::kDeny)
      .exempt_user("carol")
      .build();
}

struct GateCase {
  std::string name;
  Resource resource;
  json object;
  std::string user;
  std::vector<CommPolicy> policies;
  bool want_allowed;
  std::string want_decision;
  std::string want_message_part;  // "" : not checked
};

class WorkloadGate : public ::testing::TestWithParam<GateCase> {};

// The chart's webhook.workloadGate: on, with the JobSet controller listed.
WebhookConfig gate_config() {
  WebhookConfig config;
  config.workload_gate = true;
  config.workload_controllers = {"jobset-system/jobset-controller"};
  return config;
}

TEST_P(WorkloadGate, DecidesTheWrite) {
  const GateCase& c = GetParam();
  const auto request = a_write(c.resource, c.object, c.user).parse();
  const auto response =
      handle_validate(request, snapshot_of(c.policies, {}), test_now(), gate_config());
  EXPECT_EQ(response.allowed, c.want_allowed) << response.message;
  EXPECT_EQ(response.decision, c.want_decision) << response.message;
  if (!c.want_allowed) EXPECT_EQ(response.code, 403);
  EXPECT_NE(response.message.find(c.want_message_part), std::string::npos) << response.message;
  if (c.want_decision == "WouldRefuse") {
    ASSERT_EQ(response.warnings.size(), 1u);
    EXPECT_NE(response.warnings[0].find("commgate: would be refused: Job run asks for 4 nodes"),
              std::string::npos)
        << response.warnings[0];
  }
}

json jobset(int replicas, int parallelism, int gpus) {
  return object_of(
      "jobset.x-k8s.io/v1alpha2", "JobSet",
      {{"replicatedJobs",
        json::array(
            {{{"name", "leader"}, {"replicas", 1}, {"template", {{"spec", job_spec(1, 0)}}}},
             {{"name", "workers"},
              {"replicas", replicas},
              {"template", {{"spec", job_spec(parallelism, gpus)}}}}})}});
}

json pytorchjob(int workers, int gpus) {
  json replica = {{"replicas", 1}, {"template", {{"spec", pod_spec(gpus)}}}};
  json w = replica;
  w["replicas"] = workers;
  return object_of("kubeflow.org/v1", "PyTorchJob",
                   {{"pytorchReplicaSpecs", {{"Master", replica}, {"Worker", w}}}});
}

json a_pod(int gpus, json extra = json::object(), json pod_owner = nullptr) {
  return object_of("v1", "Pod", pod_spec(gpus, std::move(extra)), std::move(pod_owner));
}

const std::string kJobSetController = "system:serviceaccount:jobset-system:jobset-controller";
const std::string kOperatorUser = kOperator;

INSTANTIATE_TEST_SUITE_P(
    Cases, WorkloadGate,
    ::testing::Values(
        GateCase{"OffByDefault", kJobs, a_job(64, 8), kResearcher, {}, true, "Allow", ""},
        GateCase{"OffWherePoliciesLeaveItAtAllow", kJobs, a_job(64, 8), kResearcher,
                 {a_policy().named("loose").build()}, true, "Allow", ""},
        GateCase{"RefusesAMultiNodeGpuJob", kJobs, a_job(64, 8), kResearcher, {gate_on()}, false,
                 "Unmanaged",
                 "Job run asks for 64 nodes with 8 GPUs each at once (spec.parallelism): "
                 "CommPolicy gpu-gate (spec.unmanagedWorkloads: deny)"},
        GateCase{"ASingleNodeGpuJobPasses", kJobs, a_job(1, 8), kResearcher, {gate_on()}, true,
                 "SingleNode", ""},
        GateCase{"ACpuJobPasses", kJobs, a_job(64, 0), kResearcher, {gate_on()}, true,
                 "SingleNode", ""},
        GateCase{"TheOperatorsJobPasses", kJobs,
                 a_job(4, 8, owner("commgate.io/v1alpha1", "TrainingJob")), kOperatorUser,
                 {gate_on()}, true, "Managed", ""},
        GateCase{"AForgedTrainingJobOwnerDoesNotPass", kJobs,
                 a_job(4, 8, owner("commgate.io/v1alpha1", "TrainingJob")), kResearcher,
                 {gate_on()}, false, "Unmanaged", ""},
        GateCase{"AnExemptUserPasses", kJobs, a_job(4, 8), "carol", {gate_on()}, true, "Exempt",
                 ""},
        GateCase{"ExemptionsOfAnotherPolicyDoNotCount", kJobs, a_job(4, 8), "dave",
                 {gate_on(), a_policy().named("other").exempt_user("dave").build()}, false,
                 "Unmanaged", ""},
        GateCase{"APolicyOfAnotherNamespaceDoesNotApply", kJobs, a_job(4, 8), kResearcher,
                 {a_policy()
                      .named("nlp-only")
                      .namespace_selector("team", "nlp")
                      .unmanaged_workloads(UnmanagedWorkloads::kDeny)
                      .build()},
                 true, "Allow", ""},
        // A stricter-limit policy that leaves the switch at Allow does not switch it off.
        GateCase{"AnyApplicablePolicyMaySwitchItOn", kJobs, a_job(4, 8), kResearcher,
                 {gate_on(), a_policy().named("strict").max_comm_share(0.05).build()}, false,
                 "Unmanaged", "CommPolicy gpu-gate"},
        GateCase{"RefusesACronJob", kCronJobs,
                 object_of("batch/v1", "CronJob",
                           {{"schedule", "@daily"},
                            {"jobTemplate", {{"spec", job_spec(2, 1)}}}}),
                 kResearcher, {gate_on()}, false, "Unmanaged",
                 "(spec.jobTemplate.spec.parallelism)"},
        GateCase{"RefusesAJobSetCountingItsGpuReplicas", kJobSets, jobset(2, 1, 8), kResearcher,
                 {gate_on()}, false, "Unmanaged",
                 "JobSet run asks for 2 nodes with 8 GPUs each at once "
                 "(spec.replicatedJobs[1].replicas x "
                 "spec.replicatedJobs[1].template.spec.parallelism)"},
        GateCase{"ASingleGpuJobSetPasses", kJobSets, jobset(1, 1, 8), kResearcher, {gate_on()},
                 true, "SingleNode", ""},
        GateCase{"RefusesAPyTorchJob", kPyTorchJobs, pytorchjob(3, 8), kResearcher, {gate_on()},
                 false, "Unmanaged", "asks for 4 nodes"},
        GateCase{"ABarePodIsOneNode", kPods, a_pod(8), kResearcher, {gate_on()}, true,
                 "SingleNode", ""},
        GateCase{"ABarePodThatSaysItIsOneOfFourIsRefused", kPods,
                 a_pod(8, {{"command", {"torchrun", "--nnodes=4", "--nproc-per-node=8", "t.py"}}}),
                 kResearcher, {gate_on()}, false, "Unmanaged",
                 "asks for 4 nodes with 8 GPUs each at once (spec.containers[0].command[1])"},
        GateCase{"ABarePodWithPetNnodesIsRefused", kPods,
                 a_pod(1, {{"env", {{{"name", "PET_NNODES"}, {"value", "2:8"}}}}}), kResearcher,
                 {gate_on()}, false, "Unmanaged", "asks for 8 nodes"},
        GateCase{"APodTheJobControllerCreatesIsLeftToItsJob", kPods,
                 a_pod(8, {{"env", {{{"name", "PET_NNODES"}, {"value", "4"}}}}},
                       owner("batch/v1", "Job")),
                 "system:serviceaccount:kube-system:job-controller", {gate_on()}, true, "Child",
                 ""},
        GateCase{"AJobSetsJobCreatedByAListedControllerIsLeftToIt", kJobs,
                 a_job(4, 8, owner("jobset.x-k8s.io/v1alpha2", "JobSet")), kJobSetController,
                 {gate_on()}, true, "Child", ""},
        // Trial D2: a forged ownerReference switched the pod's --nnodes check off.
        GateCase{"AUsersPodWithAForgedOwnerIsStillRead", kPods,
                 a_pod(2, {{"env", {{{"name", "PET_NNODES"}, {"value", "4"}}}}},
                       owner("batch/v1", "Job")),
                 kResearcher, {gate_on()}, false, "Unmanaged", "asks for 4 nodes"},
        // Trial D1: a service account of another namespace (whoever has rights in two
        // namespaces can act as one) is no controller.
        GateCase{"AServiceAccountOfAnotherNamespaceIsNoController", kJobs,
                 a_job(4, 2, owner("batch/v1", "CronJob")),
                 "system:serviceaccount:bob-a:default", {gate_on()}, false, "Unmanaged", ""},
        // Trial D3: N one-pod Jobs whose pods each declare --nnodes=N.
        GateCase{"AOnePodJobWhosePodSaysItIsOneOfFourIsRefused", kJobs,
                 object_of("batch/v1", "Job",
                           {{"parallelism", 1},
                            {"template",
                             {{"spec", pod_spec(8, {{"command", {"torchrun"}},
                                                    {"args", {"--nnodes", "4", "t.py"}}})}}}}),
                 kResearcher, {gate_on()}, false, "Unmanaged",
                 "asks for 4 nodes with 8 GPUs each at once "
                 "(spec.template.spec.containers[0].args[1])"},
        // Trial D6: the hint parser's gaps.
        GateCase{"AnAbbreviatedFlagInSingleQuotes", kPods,
                 a_pod(1, {{"command", {"sh", "-c", "torchrun --nnode='4' t.py"}}}), kResearcher,
                 {gate_on()}, false, "Unmanaged", "asks for 4 nodes"},
        // Trial D7: NVIDIA's time-sliced GPUs.
        GateCase{"TimeSlicedGpusAreGpus", kJobs,
                 object_of("batch/v1", "Job",
                           {{"parallelism", 4},
                            {"template",
                             {{"spec", {{"containers",
                                         {{{"name", "c"},
                                           {"image", "i"},
                                           {"resources",
                                            {{"limits", {{"nvidia.com/gpu.shared", "1"}}}}}}}}}}}}}),
                 kResearcher, {gate_on()}, false, "Unmanaged", ""},
        GateCase{"WarnAdmitsWhatDenyWouldRefuse", kJobs, a_job(4, 8), kResearcher,
                 {a_policy().named("rollout").unmanaged_workloads(UnmanagedWorkloads::kWarn).build()},
                 true, "WouldRefuse", ""},
        GateCase{"AJobClaimingAJobSetParentIsCheckedWhenAUserWritesIt", kJobs,
                 a_job(4, 8, owner("jobset.x-k8s.io/v1alpha2", "JobSet")), kResearcher,
                 {gate_on()}, false, "Unmanaged", ""},
        // The built-in edit role may impersonate the namespace's own service accounts.
        GateCase{"AServiceAccountOfTheNamespaceIsNotAController", kJobs,
                 a_job(4, 8, owner("jobset.x-k8s.io/v1alpha2", "JobSet")),
                 "system:serviceaccount:team-a:default", {gate_on()}, false, "Unmanaged", ""},
        // TrainJob is not read: its JobSet is checked as any other (fails closed).
        GateCase{"ATrainJobsJobSetIsChecked", kJobSets,
                 [] {
                   json j = jobset(4, 1, 8);
                   j["metadata"]["ownerReferences"] =
                       json::array({owner("trainer.kubeflow.org/v1alpha1", "TrainJob")});
                   return j;
                 }(),
                 "system:serviceaccount:kubeflow-system:kubeflow-trainer-controller-manager",
                 {gate_on()}, false, "Unmanaged", ""}),
    [](const auto& info) { return info.param.name; });

TEST(WorkloadGate, AnUpdateIsRefusedOnlyWhenItGrowsTheWorkload) {
  const auto snapshot = snapshot_of({gate_on()}, {});
  // A Job created before the switch keeps working: a label change passes.
  json labelled = a_job(4, 8);
  labelled["metadata"]["labels"]["x"] = "y";
  auto r = handle_validate(a_write(kJobs, labelled, kResearcher, a_job(4, 8)).parse(), snapshot,
                           test_now());
  EXPECT_TRUE(r.allowed) << r.message;
  EXPECT_EQ(r.decision, "NotGrown");
  // parallelism 1 -> 16 on a GPU Job is refused.
  r = handle_validate(a_write(kJobs, a_job(16, 8), kResearcher, a_job(1, 8)).parse(), snapshot,
                      test_now());
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.decision, "Unmanaged");
  // So are more GPUs per pod on a multi-node Job.
  r = handle_validate(a_write(kJobs, a_job(4, 8), kResearcher, a_job(4, 1)).parse(), snapshot,
                      test_now());
  EXPECT_FALSE(r.allowed);
}

// Second review: `kubectl scale pytorchjob` (or a user's HorizontalPodAutoscaler, whose
// controller runs in kube-system) grew a one-worker PyTorchJob past the gate.
TEST(WorkloadGate, APyTorchJobScaleUpIsRefusedAndAScaleDownPasses) {
  auto scale = [](long long replicas) {
    return json{{"apiVersion", "autoscaling/v1"},
                {"kind", "Scale"},
                {"metadata", {{"name", "run"}, {"namespace", kNamespace}}},
                {"spec", {{"replicas", replicas}}}};
  };
  const Resource kScale{"autoscaling", "v1", "pytorchjobs", "Scale"};
  auto write = [&](long long from, long long to, const std::string& user) {
    ReviewBuilder b = a_write(kScale, scale(to), user, scale(from));
    b.set("/request/resource",
          {{"group", "kubeflow.org"}, {"version", "v1"}, {"resource", "pytorchjobs"}})
        .set("/request/subResource", "scale");
    return b.parse();
  };
  const auto snapshot = snapshot_of({gate_on()}, {});
  auto r = handle_validate(write(1, 16, kResearcher), snapshot, test_now(), gate_config());
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.decision, "Unmanaged");
  EXPECT_NE(r.message.find("PyTorchJob run scaled from 1 to 16 replicas"), std::string::npos)
      << r.message;
  r = handle_validate(write(1, 16, "system:serviceaccount:kube-system:horizontal-pod-autoscaler"),
                      snapshot, test_now(), gate_config());
  EXPECT_FALSE(r.allowed) << "the HPA scales as its user's HorizontalPodAutoscaler says";
  r = handle_validate(write(16, 1, kResearcher), snapshot, test_now(), gate_config());
  EXPECT_TRUE(r.allowed) << r.message;
  r = handle_validate(write(1, 16, "carol"), snapshot, test_now(), gate_config());
  EXPECT_TRUE(r.allowed);
  EXPECT_EQ(r.decision, "Exempt");
  r = handle_validate(write(1, 16, kResearcher), snapshot_of({}, {}), test_now(), gate_config());
  EXPECT_TRUE(r.allowed);
}

TEST(WorkloadGate, FailsClosedForANamespaceTheCacheHasNotSeen) {
  Snapshot snapshot = snapshot_of({gate_on()}, {});
  snapshot.namespaces_listed = true;  // and team-a is not among them
  auto r = handle_validate(a_write(kJobs, a_job(4, 8)).parse(), snapshot, test_now());
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.code, 503);
  EXPECT_EQ(r.decision, "NamespaceUnknown");
  EXPECT_NE(r.message.find("try again"), std::string::npos) << r.message;
  // Without a policy that switches the gate on anywhere, nothing is refused.
  snapshot.policies.clear();
  r = handle_validate(a_write(kJobs, a_job(4, 8)).parse(), snapshot, test_now());
  EXPECT_TRUE(r.allowed);
  // Once the namespace is known, its labels decide.
  snapshot = snapshot_of({gate_on()}, {});
  snapshot.namespaces_listed = true;
  snapshot.namespace_labels[kNamespace] = {};
  r = handle_validate(a_write(kJobs, a_job(4, 8)).parse(), snapshot, test_now());
  EXPECT_EQ(r.decision, "Unmanaged");
}

// Issue #19 item 3: an edit user patched the parallelism of the Job the operator created.
TEST(TrainingJobWorkload, OnlyTheOperatorChangesItsSize) {
  const json ours = a_job(4, 8, owner("commgate.io/v1alpha1", "TrainingJob"));
  json resized = ours;
  resized["spec"]["parallelism"] = 64;
  resized["spec"]["completions"] = 64;
  for (const auto& policies : {std::vector<CommPolicy>{}, std::vector<CommPolicy>{gate_on()}}) {
    const auto snapshot = snapshot_of(policies, {});
    auto r =
        handle_validate(a_write(kJobs, resized, kResearcher, ours).parse(), snapshot, test_now());
    EXPECT_FALSE(r.allowed);
    EXPECT_EQ(r.code, 422);
    EXPECT_EQ(r.decision, "WorkloadResize");
    ASSERT_FALSE(r.details.causes.empty());
    EXPECT_EQ(r.details.causes[0].field, "spec.parallelism");
    EXPECT_NE(r.message.find("runs TrainingJob parent at the size commgate admitted"),
              std::string::npos)
        << r.message;
    EXPECT_EQ(r.details.kind, "Job");
    // The operator restores or stops it.
    r = handle_validate(a_write(kJobs, resized, kOperatorUser, ours).parse(), snapshot, test_now());
    EXPECT_TRUE(r.allowed);
    // Other changes (a label) are the user's.
    json labelled = ours;
    labelled["metadata"]["labels"]["x"] = "y";
    r = handle_validate(a_write(kJobs, labelled, kResearcher, ours).parse(), snapshot, test_now());
    EXPECT_TRUE(r.allowed) << r.message;
    // Trial D4: detached first (its owner or commgate's labels removed), it would no
    // longer be held in a second write: refused.
    json detached = labelled;
    detached["metadata"].erase("ownerReferences");
    r = handle_validate(a_write(kJobs, detached, kResearcher, labelled).parse(), snapshot,
                        test_now());
    EXPECT_FALSE(r.allowed);
    EXPECT_EQ(r.details.causes.at(0).field, "metadata.ownerReferences");
    json held = labelled;
    held["metadata"]["labels"]["commgate.io/role"] = "workload";
    json unlabelled = held;
    unlabelled["metadata"]["labels"].erase("commgate.io/role");
    r = handle_validate(a_write(kJobs, unlabelled, kResearcher, held).parse(), snapshot,
                        test_now());
    EXPECT_FALSE(r.allowed);
    EXPECT_EQ(r.details.causes.at(0).field, "metadata.labels[commgate.io/role]");
    // Its controller reference re-pointed, the uid kept (second review): refused too.
    json repointed = labelled;
    repointed["metadata"]["ownerReferences"][0]["kind"] = "CronJob";
    repointed["metadata"]["ownerReferences"][0]["apiVersion"] = "batch/v1";
    r = handle_validate(a_write(kJobs, repointed, kResearcher, labelled).parse(), snapshot,
                        test_now());
    EXPECT_FALSE(r.allowed);
    // The garbage collector orphans it (the TrainingJob deleted with propagation Orphan).
    r = handle_validate(
        a_write(kJobs, detached, "system:serviceaccount:kube-system:generic-garbage-collector",
                labelled)
            .parse(),
        snapshot, test_now());
    EXPECT_TRUE(r.allowed) << r.message;
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::webhook

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

// `commgate webhook --kueue`: a multi-node job queued (suspended) to a LocalQueue whose
// ClusterQueue runs commgate's admission check passes the deny gate, since commgate decides
// it through its Workload before Kueue starts it; every other way is refused with why,
// and only Kueue's controller starts a suspended multi-node job.
TEST(WorkloadGateKueue, AQueuedJobPassesOnlyThroughACheckedQueueAndOnlyKueueStartsIt) {
  Snapshot snapshot = snapshot_of({gate_on()}, {});
  const json check = {{"metadata", {{"name", "comm"}}},
                      {"spec", {{"controllerName", kKueueCheckControllerName}}}};
  auto cluster_queue = [](const std::string& name, json rules) {
    return json{{"metadata", {{"name", name}}},
                {"spec",
                 {{"resourceGroups", {{{"flavors", {{{"name", "a100"}}, {{"name", "h100"}}}}}}},
                  {"admissionChecksStrategy", {{"admissionChecks", rules}}}}}};
  };
  auto local_queue = [](const std::string& name, const std::string& cq) {
    return json{{"metadata", {{"name", name}, {"namespace", kNamespace}}},
                {"spec", {{"clusterQueue", cq}}}};
  };
  snapshot.kueue_queues = std::make_shared<const KueueQueues>(kueue_queues(
      {local_queue("checked", "gpu"), local_queue("also-checked", "gpu"),
       local_queue("unchecked", "plain"), local_queue("partial", "some-flavors")},
      {cluster_queue("gpu", {{{"name", "comm"}}}), cluster_queue("plain", json::array()),
       cluster_queue("some-flavors", {{{"name", "comm"}, {"onFlavors", {"a100"}}}})},
      {check}));
  auto queued = [](const std::string& queue, bool suspend) {
    json j = a_job(4, 8);
    j["spec"]["suspend"] = suspend;
    if (!queue.empty()) j["metadata"]["labels"][kKueueQueueNameLabel] = queue;
    j["metadata"]["annotations"][kKueueParametersAnnotation] = "350M";
    return j;
  };
  json unnamed = queued("checked", true);
  unnamed["metadata"].erase("annotations");
  auto prebuilt = [&](bool suspend) {
    json j = queued("checked", suspend);
    j["metadata"]["labels"][kKueuePrebuiltWorkloadLabel] = "made-earlier";
    return j;
  };
  // Kueue reads the annotation of the same key first (WorkloadIdentifierAnnotations).
  json prebuilt_annotation = queued("checked", true);
  prebuilt_annotation["metadata"]["annotations"][kKueuePrebuiltWorkloadLabel] = "made-earlier";
  // A queued Job naming a running JobSet as its controller (the attacker review of
  // 2026-12-06, finding 1).
  auto with_owner = [](json j) {
    j["metadata"]["ownerReferences"] = json::array({{{"apiVersion", "jobset.x-k8s.io/v1alpha2"},
                                                     {"kind", "JobSet"},
                                                     {"name", "tiny"},
                                                     {"uid", "0d3c1e2a"},
                                                     {"controller", true}}});
    return j;
  };
  constexpr const char* kKueue = "system:serviceaccount:kueue-system:kueue-controller-manager";
  WebhookConfig config = gate_config();
  config.workload_controllers.push_back("kueue-system/kueue-controller-manager");
  struct Case {
    std::string name;
    json object, old_object;
    std::string user;
    bool want_allowed;
    std::string want_decision, want_message_part;
  };
  const Case cases[] = {
      {"suspended, queued to a checked queue", queued("checked", true), nullptr, kResearcher, true,
       "KueueChecked", ""},
      {"not suspended (no Kueue webhook suspended it)", queued("checked", false), nullptr,
       kResearcher, false, "Unmanaged",
       "it is queued to LocalQueue team-a/checked, but is not suspended (spec.suspend)"},
      {"a queue without commgate's check", queued("unchecked", true), nullptr, kResearcher, false,
       "Unmanaged",
       "its ClusterQueue plain has no AdmissionCheck with controllerName commgate.io/comm-check"},
      {"a check on some flavors only", queued("partial", true), nullptr, kResearcher, false,
       "Unmanaged", "AdmissionCheck comm runs on some of its flavors only"},
      {"no model named: the check would admit it unmeasured", unnamed, nullptr, kResearcher, false,
       "Unmanaged", "but names no model (annotation commgate.io/parameters"},
      {"a LocalQueue that does not exist", queued("nowhere", true), nullptr, kResearcher, false,
       "Unmanaged", "LocalQueue team-a/nowhere, which does not exist"},
      {"suspended without a queue", queued("", true), nullptr, kResearcher, false, "Unmanaged",
       "queued (suspended) to a Kueue LocalQueue whose ClusterQueue runs commgate's admission "
       "check"},
      {"Kueue starts it once admitted", queued("checked", false), queued("checked", true), kKueue,
       true, "ResumedByController", ""},
      {"the researcher starts it", queued("checked", false), queued("checked", true), kResearcher,
       false, "Unmanaged", "is started (spec.suspend false) by alice"},
      {"the researcher drops the queue and starts it", queued("", false), queued("checked", true),
       kResearcher, false, "Unmanaged", "is started (spec.suspend false) by alice"},
      {"an exempt user starts it", queued("", false), queued("", true), "carol", true, "Exempt",
       ""},
      // The attacker review of 2026-12-06: off the route while suspended, then started.
      {"moved to a queue without the check while suspended", queued("unchecked", true),
       queued("checked", true), kResearcher, false, "Unmanaged",
       "is changed while suspended (its kueue.x-k8s.io/queue-name or "
       "kueue.x-k8s.io/prebuilt-workload-name label, or its commgate.io/ annotations)"},
      // The attacker review of 2026-12-06, finding 5: a prebuilt Workload's own queue (its
      // spec.queueName) decides, and the webhook cannot see it.
      {"a researcher's job naming a prebuilt Workload", prebuilt(true), nullptr, kResearcher, false,
       "Unmanaged",
       "it names a prebuilt Kueue Workload team-a/made-earlier (label "
       "kueue.x-k8s.io/prebuilt-workload-name or annotation), whose queue commgate cannot see"},
      {"a prebuilt Workload's label added while suspended", prebuilt(true), queued("checked", true),
       kResearcher, false, "Unmanaged", "whose queue commgate cannot see"},
      {"Kueue's controller (MultiKueue on a worker) creates one", prebuilt(true), nullptr, kKueue,
       true, "KueueChecked", ""},
      {"and starts it once admitted", prebuilt(false), prebuilt(true), kKueue, true,
       "ResumedByController", ""},
      {"the prebuilt Workload named by annotation", prebuilt_annotation, nullptr, kResearcher,
       false, "Unmanaged", "(label kueue.x-k8s.io/prebuilt-workload-name or annotation)"},
      {"the annotation added while suspended", prebuilt_annotation, queued("checked", true),
       kResearcher, false, "Unmanaged", "whose queue commgate cannot see"},
      {"a researcher's queued job naming a JobSet as its controller",
       with_owner(queued("checked", true)), nullptr, kResearcher, false, "Unmanaged",
       "and names JobSet tiny as its controller (metadata.ownerReferences)"},
      {"a JobSet's controller reference added while suspended", with_owner(queued("checked", true)),
       queued("checked", true), kResearcher, false, "Unmanaged",
       "names JobSet tiny as its controller"},
      {"the same reference on a job that had it", with_owner(queued("checked", true)),
       with_owner(queued("checked", true)), kResearcher, true, "KueueChecked", ""},
      {"the JobSet's controller writes its child", with_owner(queued("", false)), nullptr, kKueue,
       true, "Child", ""},
      {"its model annotation taken off while suspended", unnamed, queued("checked", true),
       kResearcher, false, "Unmanaged", "names no model"},
      {"moved between two checked queues", queued("also-checked", true), queued("checked", true),
       kResearcher, true, "KueueChecked", ""},
      {"Kueue starts a job queued without the check", queued("unchecked", false),
       queued("unchecked", true), kKueue, false, "Unmanaged",
       "is started (spec.suspend false) by "
       "system:serviceaccount:kueue-system:kueue-controller-manager; it is queued to LocalQueue "
       "team-a/unchecked, but its ClusterQueue plain has no AdmissionCheck"},
      {"a controller starts a job of no queue", queued("", false), queued("", true), kKueue, false,
       "Unmanaged",
       "but it is not queued to a Kueue LocalQueue whose ClusterQueue runs commgate's admission "
       "check"},
  };
  for (const auto& c : cases) {
    const auto r = handle_validate(a_write(kJobs, c.object, c.user, c.old_object).parse(), snapshot,
                                   test_now(), config);
    EXPECT_EQ(r.allowed, c.want_allowed) << c.name << ": " << r.message;
    EXPECT_EQ(r.decision, c.want_decision) << c.name << ": " << r.message;
    EXPECT_NE(r.message.find(c.want_message_part), std::string::npos)
        << c.name << ": " << r.message;
  }

  // The Namespace names the model for its jobs (an admin's annotation, the jobs' default):
  // a queued job without its own passes.
  Snapshot with_defaults = snapshot;
  with_defaults.namespace_commgate_annotations[kNamespace] = {{kKueueParametersAnnotation, "350M"}};
  const auto by_default = handle_validate(a_write(kJobs, unnamed, kResearcher).parse(),
                                          with_defaults, test_now(), config);
  EXPECT_TRUE(by_default.allowed) << by_default.message;
  EXPECT_EQ(by_default.decision, "KueueChecked");
  const auto without =
      handle_validate(a_write(kJobs, unnamed, kResearcher).parse(), snapshot, test_now(), config);
  EXPECT_NE(without.message.find("on the job or, as a default, on Namespace team-a"),
            std::string::npos)
      << without.message;

  // A PyTorchJob's suspension is spec.runPolicy.suspend.
  json pytorch =
      object_of("kubeflow.org/v1", "PyTorchJob",
                {{"runPolicy", {{"suspend", true}}},
                 {"pytorchReplicaSpecs",
                  {{"Master", {{"replicas", 1}, {"template", {{"spec", pod_spec(8)}}}}},
                   {"Worker", {{"replicas", 3}, {"template", {{"spec", pod_spec(8)}}}}}}}});
  pytorch["metadata"]["labels"][kKueueQueueNameLabel] = "checked";
  pytorch["metadata"]["annotations"][kKueueParametersAnnotation] = "7G";
  auto r = handle_validate(a_write(kPyTorchJobs, pytorch).parse(), snapshot, test_now(), config);
  EXPECT_EQ(r.decision, "KueueChecked") << r.message;
  pytorch["spec"]["runPolicy"]["suspend"] = false;
  r = handle_validate(a_write(kPyTorchJobs, pytorch).parse(), snapshot, test_now(), config);
  EXPECT_FALSE(r.allowed);
  EXPECT_NE(r.message.find("(spec.runPolicy.suspend)"), std::string::npos) << r.message;

  // Where the webhook does not watch Kueue's queues, a queued job is refused and told why.
  snapshot.kueue_queues = nullptr;
  r = handle_validate(a_write(kJobs, queued("checked", true)).parse(), snapshot, test_now(),
                      config);
  EXPECT_FALSE(r.allowed);
  EXPECT_NE(r.message.find("does not watch Kueue's queues (commgate webhook --kueue"),
            std::string::npos)
      << r.message;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::webhook
