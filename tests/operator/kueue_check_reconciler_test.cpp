// operator/kueue_check_reconciler.h: the Kueue admission check's reconcile of one Workload
// on the in-memory API server (kube/testing/fake_client.h), beside the measurement
// controller it shares with the TrainingJob reconcile: the state each situation writes,
// that only our own entry is applied, and that a Workload's wait is one more demand of the
// pool's single probe.
#include "operator/kueue_check_reconciler.h"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>

#include "core/comm_profile.h"
#include "kube/api_error.h"
#include "kube/testing/fake_client.h"
#include "operator/measurement_reconciler.h"
#include "operator/pool_index.h"
#include "operator/probe_history.h"
#include "operator/probe_job.h"
#include "tests/operator/kueue_test_workloads.h"
#include "tests/support/builders.h"

namespace commgate::op::kueue {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::a_training_job;
using commgate::testing::test_now;
using kube::testing::FakeClient;
using nlohmann::json;
using testing::a_pytorchjob_workload;
using testing::WorkloadBuilder;
using namespace std::chrono_literals;

const std::string kWorkloads = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml/workloads";
const std::string kPyTorchJobs = "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs";
const std::string kTrainingJobs = "/apis/commgate.io/v1alpha1/namespaces/ml/trainingjobs";
const std::string kPolicies = "/apis/commgate.io/v1alpha1/commpolicies";
const std::string kProfiles = "/apis/commgate.io/v1alpha1/commprofiles";
const std::string kProbeJobs = "/apis/batch/v1/namespaces/commgate-system/jobs";
const std::string kWorkloadName = "job-train-1a2b3";  // WorkloadBuilder's
// When WorkloadBuilder's entries became Pending and its quota was reserved.
const TimePoint kPendingSince = *parse_rfc3339("2026-11-30T17:00:00Z");

// Serves workloads/status applies as kube-apiserver does for the one list the check
// writes, status.admissionChecks (x-kubernetes-list-type: map, keyed by name): each applied
// entry merged into the entry of its name, the others untouched; the applied uid and
// resourceVersion are preconditions (409). The rest of server-side apply (managedFields,
// conflicts) is the sim's, tested there. Every call is kept.
class CheckStatusWriter : public kube::StatusWriter {
 public:
  struct Call {
    std::string path;
    kube::PatchType type;
    json body;
    kube::PatchOptions options;
  };
  explicit CheckStatusWriter(FakeClient& api) : api_(api) {}
  json update_status(const std::string& path, const json& object) override {
    return api_.update_status(path, object);
  }
  json patch_status(const std::string& path, kube::PatchType type, const json& body,
                    const kube::PatchOptions& options) override {
    calls.push_back({path, type, body, options});
    if (type != kube::PatchType::kApply) return api_.patch_status(path, type, body, options);
    json current = api_.get(path);
    const json& meta = body.at("metadata");
    for (const char* precondition : {"uid", "resourceVersion"})
      if (meta.value(precondition, "") != current["metadata"].value(precondition, ""))
        throw kube::ApiError(409, "Conflict", std::string("precondition ") + precondition,
                             "PATCH " + path);
    json& entries = current["status"]["admissionChecks"];
    if (!entries.is_array()) entries = json::array();
    for (const json& applied : body["status"]["admissionChecks"]) {
      auto it = std::find_if(entries.begin(), entries.end(),
                             [&](const json& e) { return e["name"] == applied["name"]; });
      if (it == entries.end())
        entries.push_back(applied);
      else
        for (const auto& [k, v] : applied.items()) (*it)[k] = v;
    }
    return api_.update_status(path, current);
  }
  std::vector<Call> calls;

 private:
  FakeClient& api_;
};

class CheckEventSink : public kube::EventSink {
 public:
  bool create(const json& event) override {
    std::lock_guard lock(mu_);
    events.push_back(event);
    return true;
  }
  bool patch(const std::string&, const std::string&, const json&) override { return true; }
  std::vector<json> events;

 private:
  std::mutex mu_;
};

// The test jobs' model, as the owner job's annotations name it and a probe records it.
constexpr double kParameters = 25e6;

json a_check_policy() {
  return {{"apiVersion", "commgate.io/v1alpha1"},
          {"kind", "CommPolicy"},
          {"metadata", {{"name", "team"}}},
          {"spec",
           {{"maxCommShare", 0.30},
            {"enforcementAction", "downsize"},
            {"retryStrategy",
             {{"backoffLimitCount", 2}, {"backoffBaseSeconds", 30}, {"backoffMaxSeconds", 600}}}}}};
}

json an_admission_check(const std::string& name, const std::string& controller,
                        const std::string& policy = "") {
  json check = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                {"kind", "AdmissionCheck"},
                {"metadata", {{"name", name}, {"generation", 1}}},
                {"spec", {{"controllerName", controller}}}};
  if (!policy.empty())
    check["spec"]["parameters"] = {
        {"apiGroup", "commgate.io"}, {"kind", "CommPolicy"}, {"name", policy}};
  return check;
}

struct CheckWorld {
  FakeClient api;
  CheckStatusWriter status_writer{api};
  std::shared_ptr<CheckEventSink> sink = std::make_shared<CheckEventSink>();
  kube::EventRecorder recorder{sink, kube::EventRecorderOptions{}};
  TimePoint now = test_now();
  CheckDecisionRecords records;
  KueueCheckReconciler check{api,
                             status_writer,
                             records,
                             [this] { return snapshot(); },
                             recorder,
                             [this] { return now; },
                             CheckReconcilerSettings{}};
  MeasurementReconciler measurement{api,
                                    api,
                                    api,
                                    api,
                                    [this] { return snapshot(); },
                                    recorder,
                                    [this] { return now; },
                                    [this](const std::string& pool) { return waiting_on(pool); },
                                    measurement_settings()};

  // The policy "team", our AdmissionCheck "comm" holding Workloads to it and another
  // controller's "prov", the flavor of pool=gpu-1g, and the PyTorchJob that owns the
  // Workload with `annotations`.
  explicit CheckWorld(json annotations = {{"commgate.io/parameters", "25M"}}) {
    api.seed(kPolicies, a_check_policy());
    api.seed(kAdmissionChecks, an_admission_check("comm", kControllerName, "team"));
    api.seed(kAdmissionChecks, an_admission_check("prov", "kueue.x-k8s.io/provisioning-request"));
    api.seed(kResourceFlavors, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                {"kind", "ResourceFlavor"},
                                {"metadata", {{"name", "gpu-a100"}}},
                                {"spec", {{"nodeLabels", {{"pool", "gpu-1g"}}}}}});
    api.seed(kPyTorchJobs, {{"apiVersion", "kubeflow.org/v1"},
                            {"kind", "PyTorchJob"},
                            {"metadata",
                             {{"name", "pytorch-simple"},
                              {"uid", "job-uid-1"},
                              {"annotations", std::move(annotations)}}},
                            {"spec", json::object()}});
  }

  MeasurementSettings measurement_settings() {
    MeasurementSettings m;
    m.probe.gather = 0s;
    m.workload_demand = [this](const std::string& key, const Snapshot& s, TimePoint t) {
      return workload_measurement_demand(api, records, key, s, t);
    };
    return m;
  }
  // The suspended TrainingJobs of `pool` (the process's PoolIndex) and every Workload (a
  // superset will do).
  std::vector<std::string> waiting_on(const std::string& pool) const {
    PoolIndex index;
    for (const json& tj : api.list(kTrainingJobs).items)
      index.update("ml/" + tj["metadata"]["name"].get<std::string>(), &tj);
    std::vector<std::string> keys = index.waiting_on(pool);
    for (const json& wl : api.list(kWorkloads).items)
      keys.push_back(std::string(kWorkloadDemandPrefix) + "ml/" +
                     wl["metadata"]["name"].get<std::string>());
    return keys;
  }
  std::shared_ptr<const Snapshot> snapshot() const {
    auto s = std::make_shared<Snapshot>();
    for (const json& p : api.list(kPolicies).items) s->add_policy(p);
    for (const json& p : api.list(kProfiles).items) {
      try {
        CommProfile profile = parse_comm_profile(p, now);
        s->profiles[profile.metadata.name] = profile;
      } catch (const ValidationError&) {
      }
    }
    if (!namespace_annotations.empty())
      s->namespace_commgate_annotations["ml"] = namespace_annotations;
    s->namespaces_listed = namespaces_listed;
    s->nodes = nodes;
    s->loaded_at = now;
    return s;
  }
  std::map<std::string, std::string> namespace_annotations;  // of the Namespace ml
  // The snapshot lists every Namespace, and ml is not among them (not seen yet).
  bool namespaces_listed = false;
  // The cluster's Nodes as the snapshot summarises them (null: not watched).
  std::shared_ptr<const std::vector<PoolNode>> nodes;
  // `count` one-GPU nodes of the pool pool=gpu-1g.
  void pool_of(int count) {
    auto list = std::make_shared<std::vector<PoolNode>>();
    for (int i = 0; i < count; ++i)
      list->push_back(
          commgate::testing::a_pool_node("gpu-" + std::to_string(i), {{"pool", "gpu-1g"}}, 1));
    nodes = list;
  }

  // A PyTorchJob's Workload of 1 master + 3 workers of one GPU (4 nodes), quota reserved on
  // flavor gpu-a100, our check and another controller's Pending.
  static WorkloadBuilder a_workload() {
    return a_pytorchjob_workload(1, 3)
        .reserved()
        .check("comm", "Pending")
        .check("prov", "Pending", "waiting for capacity");
  }
  json submit(const WorkloadBuilder& builder) { return api.seed(kWorkloads, builder.build()); }
  std::string pool() const { return pool_name({{"pool", "gpu-1g"}}); }
  std::string profile_path() const { return kProfiles + "/" + pool(); }

  // The pool measured at `busbw_gbps` (4 nodes probed) with the test model's 300 ms step;
  // with `hostnames`, the pool of those hosts, as the measurement controller makes it.
  void measured(double busbw_gbps, const std::vector<std::string>& hostnames = {}) {
    CommProfile profile;
    profile.metadata.name = pool_name({{"pool", "gpu-1g"}}, hostnames);
    if (!hostnames.empty()) profile.metadata.labels[kManagedByLabel] = kManagedByValue;
    profile.node_selector = {{"pool", "gpu-1g"}};
    profile.hostnames = hostnames;
    LinkRecord link;
    link.latency_us = 200;
    link.busbw_gbps = busbw_gbps;
    link.algbw_gbps = busbw_gbps / 1.5;
    link.nodes_probed = 4;
    link.measured_at = now;
    profile.status.link = link;
    ComputeStepRecord step;
    step.parameters = kParameters;
    step.batch_size = 32;
    step.optimizer = "adamw";
    step.step_time_ms = 300;
    step.forward_ms = 90;
    step.backward_ms = 180;
    step.optimizer_ms = 30;
    step.measured_at = now;
    profile.status.compute_steps.push_back(step);
    api.seed(kProfiles, to_json(profile));
  }
  // The pool's last probe failed: `attempts` in a row, the next one not before `next_in`.
  void probe_failed(int attempts, std::chrono::seconds next_in) {
    ProbeHistory history;
    history.failed_attempts = attempts;
    history.next_probe_time = now + next_in;
    history.last_failure_reason = "ProbeUnschedulable";
    history.last_failure_message = "0/8 nodes are available";
    history.last_failure_time = now;
    api.seed(kProfiles,
             {{"apiVersion", "commgate.io/v1alpha1"},
              {"kind", "CommProfile"},
              {"metadata", {{"name", pool()}}},
              {"spec", {{"nodeSelector", {{"pool", "gpu-1g"}}}}},
              {"status",
               {{"probe", to_json(history)},
                {"conditions", json::array({{{"type", kProbingCondition},
                                             {"status", "False"},
                                             {"reason", "ProbeUnschedulable"},
                                             {"message", "probe failed"},
                                             {"lastTransitionTime", format_rfc3339(now)}}})}}}});
  }

  // Sets the policy "team"'s spec.admissionCheck.
  void admission_check_settings(const json& settings) {
    json policy = *api.peek(kPolicies + "/team");
    policy["spec"]["admissionCheck"] = settings;
    api.update(kPolicies + "/team", policy);
  }

  json workload() const { return *api.peek(kWorkloads + "/" + kWorkloadName); }
  json entry(const std::string& name) const {
    const json stored = workload();
    for (const json& e : stored["status"]["admissionChecks"])
      if (e["name"] == name) return e;
    return nullptr;
  }
  kube::ReconcileResult reconcile() { return check.reconcile("ml/" + kWorkloadName); }
  int probes_created() const {
    int n = 0;
    for (const std::string& a : api.actions())
      n += a == "create " + kProbeJobs + "/" + probe_job_name(pool());
    return n;
  }
};

// ---- the state each situation writes (table) ----

struct StateCase {
  std::string name;
  std::optional<double> busbw_gbps = std::nullopt;  // the pool measured, else not
  int failed_attempts = 0;  // the pool's probe failed this many times (0: never)
  bool admitted = false;
  // How long our entry has been Pending, with the quota reserved (unset: test_now(), before
  // the builder's times).
  std::optional<std::chrono::seconds> pending_for = std::nullopt;
  json annotations = {{"commgate.io/parameters", "25M"}};
  // The commgate.io/ annotations of the Namespace ml: the defaults of the job's.
  std::map<std::string, std::string> namespace_annotations = {};
  std::string without_model;        // the policy's spec.admissionCheck.withoutModel ("": unset)
  std::string unmanaged_workloads;  // the policy's spec.unmanagedWorkloads ("": unset)
  std::string want_state;
  std::string want_message;  // a part of the entry's message
  std::optional<int> want_requeue_after = std::nullopt;
};

void PrintTo(const StateCase& c, std::ostream* os) {
  *os << c.name;
}

class KueueCheckStates : public ::testing::TestWithParam<StateCase> {};

TEST_P(KueueCheckStates, writes_our_entry_as_the_situation_says) {
  const StateCase& c = GetParam();
  CheckWorld w(c.annotations);
  w.namespace_annotations = c.namespace_annotations;
  if (c.pending_for) w.now = kPendingSince + *c.pending_for;
  if (!c.without_model.empty()) w.admission_check_settings({{"withoutModel", c.without_model}});
  if (!c.unmanaged_workloads.empty()) {
    json policy = *w.api.peek(kPolicies + "/team");
    policy["spec"]["unmanagedWorkloads"] = c.unmanaged_workloads;
    w.api.update(kPolicies + "/team", policy);
  }
  if (c.busbw_gbps) w.measured(*c.busbw_gbps);
  if (c.failed_attempts > 0) w.probe_failed(c.failed_attempts, 90s);
  WorkloadBuilder b = CheckWorld::a_workload();
  if (c.admitted) b.condition("Admitted", true);
  w.submit(b);

  const auto r = w.reconcile();
  ASSERT_TRUE(r.ok()) << r.error().message;

  const json entry = w.entry("comm");
  EXPECT_EQ(entry["state"], c.want_state) << entry.dump();
  EXPECT_NE(entry.value("message", "").find(c.want_message), std::string::npos) << entry.dump();
  if (c.want_requeue_after)
    EXPECT_EQ(entry.value("requeueAfterSeconds", -1), *c.want_requeue_after) << entry.dump();
  else
    EXPECT_EQ(entry.value("requeueAfterSeconds", 0), 0) << entry.dump();
  EXPECT_FALSE(entry.contains("retryCount")) << "Kueue's field, never ours";
  EXPECT_EQ(entry.value("message", "").find("spec.minNodes"), std::string::npos)
      << "a Workload has no spec.minNodes: " << entry.dump();
}

INSTANTIATE_TEST_SUITE_P(
    KueueCheck, KueueCheckStates,
    ::testing::Values(
        StateCase{.name = "pending_while_the_pool_is_unmeasured",
                  .want_state = "Pending",
                  .want_message = "CommProfile"},
        StateCase{.name = "ready_within_policy_with_the_numbers",
                  .busbw_gbps = 10.0,
                  .want_state = "Ready",
                  .want_message = "%"},
        StateCase{.name = "rejected_over_policy_with_the_count_that_passes",
                  .busbw_gbps = 0.1,
                  .want_state = "Rejected",
                  // Kueue admits a Workload at its count or not: no downsize is
                  // spoken of, only the count to resubmit at.
                  .want_message = "allows at most 30.0% communication; measured all-reduce "
                                  "busbw 0.1 GB/s (4 nodes probed), compute step 300 ms. The "
                                  "largest count that passes is"},
        StateCase{.name = "retry_after_a_failed_probe_for_its_backoff",
                  .failed_attempts = 1,
                  .want_state = "Retry",
                  .want_message = "0/8 nodes are available",
                  .want_requeue_after = 90},
        StateCase{.name = "never_retry_on_an_admitted_workload",
                  .failed_attempts = 1,
                  .admitted = true,
                  .want_state = "Pending",
                  .want_message = "a Retry would evict it"},
        StateCase{.name = "pending_naming_a_garbled_parameters_annotation",
                  .annotations = {{"commgate.io/parameters", "lots"}},
                  .want_state = "Pending",
                  .want_message = "metadata.annotations[commgate.io/parameters]"},
        StateCase{.name = "pending_naming_a_missing_parameters_annotation",
                  .annotations = {{"commgate.io/gradient-dtype", "bf16"}},
                  .want_state = "Pending",
                  .want_message = "metadata.annotations[commgate.io/parameters]"},
        StateCase{.name = "ready_saying_how_to_opt_in_without_a_model",
                  .annotations = json::object(),
                  .want_state = "Ready",
                  .want_message = "commgate.io/parameters"},
        StateCase{.name = "ready_without_a_model_when_the_policy_says_ready",
                  .annotations = json::object(),
                  .without_model = "Ready",
                  .want_state = "Ready",
                  .want_message = "To have it checked, annotate the job"},
        StateCase{.name = "rejected_without_a_model_when_the_policy_asks_for_one",
                  .annotations = json::object(),
                  .without_model = "Rejected",
                  .want_state = "Rejected",
                  .want_message = "CommPolicy team asks every job it checks to "
                                  "name one (spec.admissionCheck.withoutModel: "
                                  "Rejected). Annotate the job with "
                                  "commgate.io/parameters"},
        StateCase{.name = "the_namespaces_model_checks_a_job_without_one",
                  .busbw_gbps = 0.1,
                  .annotations = json::object(),
                  .namespace_annotations = {{"commgate.io/parameters", "25M"}},
                  .want_state = "Rejected",
                  .want_message = "The largest"},
        StateCase{.name = "pending_naming_the_namespaces_bad_default",
                  .namespace_annotations = {{"commgate.io/optimizer", "lion"}},
                  .want_state = "Pending",
                  .want_message = "Namespace ml metadata.annotations[commgate.io/optimizer]"},
        StateCase{.name = "rejected_without_a_model_under_the_workload_gate",
                  .annotations = json::object(),
                  .unmanaged_workloads = "deny",
                  .want_state = "Rejected",
                  .want_message = "gates every multi-node workload (spec.unmanagedWorkloads: "
                                  "deny)"},
        StateCase{.name = "pending_for_the_probe_within_the_bound",
                  .pending_for = 29min,
                  .want_state = "Pending",
                  .want_message = "CommProfile"},
        StateCase{.name = "retry_once_pending_for_the_probe_past_the_bound",
                  .pending_for = 31min,
                  .want_state = "Retry",
                  .want_message = "commgate waited 31m for the measurement of pool",
                  .want_requeue_after = 30},
        StateCase{.name = "never_retry_on_an_admitted_workload_past_the_bound",
                  .admitted = true,
                  .pending_for = 31min,
                  .want_state = "Pending",
                  .want_message = "a Retry would evict it"},
        StateCase{.name = "bad_annotations_past_the_bound_stay_pending",
                  .pending_for = 31min,
                  .annotations = {{"commgate.io/parameters", "lots"}},
                  .want_state = "Pending",
                  .want_message = "metadata.annotations[commgate.io/parameters]"}),
    [](const ::testing::TestParamInfo<StateCase>& p) { return p.param.name; });

// ---- the write ----

TEST(KueueCheckReconciler, applies_only_our_entry_as_our_field_manager_with_preconditions) {
  CheckWorld w;
  w.measured(10.0);
  const json stored = w.submit(CheckWorld::a_workload());
  ASSERT_TRUE(w.reconcile().ok());

  ASSERT_EQ(w.status_writer.calls.size(), 1u);
  const CheckStatusWriter::Call& call = w.status_writer.calls.front();
  EXPECT_EQ(call.path, kWorkloads + "/" + kWorkloadName);
  EXPECT_EQ(call.type, kube::PatchType::kApply);
  EXPECT_EQ(call.options.field_manager, "commgate.io/comm-check");
  EXPECT_TRUE(call.options.force);
  EXPECT_EQ(call.body["metadata"]["uid"], stored["metadata"]["uid"]);
  EXPECT_EQ(call.body["metadata"]["resourceVersion"], stored["metadata"]["resourceVersion"]);
  ASSERT_EQ(call.body["status"]["admissionChecks"].size(), 1u) << call.body.dump();
  const json& applied = call.body["status"]["admissionChecks"][0];
  EXPECT_EQ(applied["name"], "comm");
  EXPECT_FALSE(applied.contains("retryCount"));
  EXPECT_EQ(call.body["status"].size(), 1u) << "nothing but our entry: " << call.body.dump();
}

TEST(KueueCheckReconciler, leaves_another_controllers_entry_as_it_was) {
  CheckWorld w;
  w.measured(10.0);
  w.submit(CheckWorld::a_workload());
  const json before = w.entry("prov");
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Ready");
  EXPECT_EQ(w.entry("prov"), before);
}

TEST(KueueCheckReconciler, writes_nothing_again_when_the_entry_holds) {
  CheckWorld w;  // unmeasured: Pending with the gate's message, then the same again
  w.submit(CheckWorld::a_workload());
  ASSERT_TRUE(w.reconcile().ok());
  ASSERT_EQ(w.entry("comm")["state"], "Pending");
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.status_writer.calls.size(), 1u);
}

TEST(KueueCheckReconciler, keeps_lastTransitionTime_while_pending_and_records_an_event_per_change) {
  CheckWorld w;  // unmeasured: Pending, with a new message
  w.submit(CheckWorld::a_workload());
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Pending");
  EXPECT_EQ(w.entry("comm")["lastTransitionTime"], "2026-11-30T17:00:00Z")
      << "the state did not change";
  EXPECT_TRUE(w.sink->events.empty()) << "no state change, no Event";

  w.measured(10.0);
  w.now += 1min;
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Ready");
  EXPECT_EQ(w.entry("comm")["lastTransitionTime"], format_rfc3339(w.now));
  ASSERT_EQ(w.sink->events.size(), 1u);
  EXPECT_EQ(w.sink->events[0]["regarding"]["kind"], "Workload");
  EXPECT_NE(w.sink->events[0].value("note", "").find("from Pending to Ready"), std::string::npos)
      << w.sink->events[0].dump();
}

// The owner jobs are not watched: a Workload whose job's annotations do not parse is read
// again, so that the researcher's fix (`kubectl annotate`) is seen.
TEST(KueueCheckReconciler, reads_the_jobs_annotations_again_until_they_parse) {
  CheckWorld w(json{{"commgate.io/parameters", "lots"}});
  w.measured(10.0);
  w.submit(CheckWorld::a_workload());
  auto r = w.reconcile();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.entry("comm")["state"], "Pending");
  ASSERT_TRUE(r.action().requeue_delay()) << "looked at again";

  json job = *w.api.peek(kPyTorchJobs + "/pytorch-simple");
  job["metadata"]["annotations"]["commgate.io/parameters"] = "25M";
  w.api.update(kPyTorchJobs + "/pytorch-simple", job);
  r = w.reconcile();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.entry("comm")["state"], "Ready") << w.entry("comm").dump();
  EXPECT_FALSE(r.action().requeue_delay()) << "decided: nothing to look at again";
}

// ---- the bound on a Pending wait (spec.admissionCheck.maxPendingSeconds) ----

TEST(KueueCheckPendingBound, retry_says_how_long_for_which_pool_what_the_probe_does_and_why) {
  CheckWorld w;
  w.admission_check_settings({{"maxPendingSeconds", 600}});
  w.now = kPendingSince + 12min + 30s;
  w.submit(CheckWorld::a_workload());
  const auto r = w.reconcile();
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json entry = w.entry("comm");
  ASSERT_EQ(entry["state"], "Retry") << entry.dump();
  const std::string message = entry["message"];
  for (const std::string& want :
       {"commgate waited 12m for the measurement of pool " + w.pool(),
        std::string("longer than 10m (spec.admissionCheck.maxPendingSeconds of CommPolicy team)"),
        std::string("releases the workload's quota"), std::string("Waiting for: "),
        std::string("CommProfile")})
    EXPECT_NE(message.find(want), std::string::npos) << want << "\n in: " << message;
  EXPECT_EQ(entry["requeueAfterSeconds"], 30) << "the policy's backoffBaseSeconds";
  EXPECT_FALSE(r.action().requeue_delay()) << "Kueue's eviction brings it back";
  ASSERT_EQ(w.sink->events.size(), 1u);
  EXPECT_EQ(w.sink->events[0]["type"], "Warning");
}

// Kueue counts the requeues of a Workload in retryCount: each bound's Retry backs off
// further, as the policy's retryStrategy doubles a probe's.
TEST(KueueCheckPendingBound, backs_off_with_kueues_retry_count) {
  CheckWorld w;
  w.now = kPendingSince + 31min;
  json wl = CheckWorld::a_workload().build();
  for (json& e : wl["status"]["admissionChecks"])
    if (e["name"] == "comm") e["retryCount"] = 2;
  w.api.seed(kWorkloads, wl);
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Retry");
  EXPECT_EQ(w.entry("comm")["requeueAfterSeconds"], 120) << "30 s doubled twice";
}

// Kueue's reset to Pending after an eviction dates from before the Workload queued again
// for quota: the wait counts from the quota's reservation.
TEST(KueueCheckPendingBound, counts_the_wait_from_the_quota_reservation) {
  CheckWorld w;
  json wl = CheckWorld::a_workload().build();
  for (json& c : wl["status"]["conditions"])
    if (c["type"] == "QuotaReserved") c["lastTransitionTime"] = "2026-11-30T18:00:00Z";
  w.api.seed(kWorkloads, wl);
  w.now = kPendingSince + 1h + 20min;  // 80 min Pending, 20 min holding the quota
  auto r = w.reconcile();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.entry("comm")["state"], "Pending") << w.entry("comm").dump();
  w.now = kPendingSince + 1h + 30min;
  r = w.reconcile();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.entry("comm")["state"], "Retry") << w.entry("comm").dump();
}

TEST(KueueCheckPendingBound, looks_again_when_the_bound_ends) {
  CheckWorld w;  // the default bound, 1800 s
  w.submit(CheckWorld::a_workload());
  w.now = kPendingSince + 10min;
  auto r = w.reconcile();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.action().requeue_delay(), std::chrono::duration_cast<kube::Clock::duration>(5s))
      << "the poll, sooner than the bound";
  w.now = kPendingSince + 29min + 57s + 500ms;
  r = w.reconcile();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.entry("comm")["state"], "Pending");
  EXPECT_EQ(r.action().requeue_delay(), std::chrono::duration_cast<kube::Clock::duration>(2500ms))
      << "at the bound, not a poll later";
  w.now += 2500ms;
  r = w.reconcile();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.entry("comm")["state"], "Retry")
      << "the bound is reached: " << w.entry("comm").dump();
}

// The trial of 2026-12-07: Pending 3 minutes for nodes its pool lacked (not bounded), the
// Workload got Retry "waited 3m for the measurement" the moment the nodes came, before any
// probe ran. The bound counts from when the wait for the probe began.
TEST(KueueCheckPendingBound, counts_only_the_wait_for_the_probe) {
  CheckWorld w;
  w.pool_of(1);
  w.now = kPendingSince + 31min;
  w.submit(CheckWorld::a_workload());  // 4 nodes
  ASSERT_TRUE(w.reconcile().ok());
  ASSERT_EQ(w.entry("comm")["state"], "Pending");
  ASSERT_NE(w.entry("comm").value("message", "").find("has 1 usable node"), std::string::npos)
      << w.entry("comm").dump();

  w.pool_of(4);
  w.now += 1min;
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Pending") << "not Retry: " << w.entry("comm").dump();
  w.now += 31min;
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Retry") << w.entry("comm").dump();
  EXPECT_NE(w.entry("comm").value("message", "").find("commgate waited 32m"), std::string::npos)
      << w.entry("comm").dump();
}

TEST(KueueCheckPendingBound, never_retries_an_admitted_workload_nor_rewrites_it_at_each_look) {
  CheckWorld w;
  w.submit(CheckWorld::a_workload().condition("Admitted", true));
  w.now = kPendingSince + 31min;
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Pending");
  EXPECT_NE(w.entry("comm").value("message", "").find("a Retry would evict it"), std::string::npos)
      << w.entry("comm").dump();
  const size_t writes = w.status_writer.calls.size();
  w.now += 20s;
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.status_writer.calls.size(), writes) << "the same minute: nothing new to say";
}

// ---- the decision record ----

TEST(KueueCheckReconciler, gives_the_same_answer_to_a_recreated_workload_without_a_probe) {
  CheckWorld w;
  w.measured(10.0);
  w.submit(CheckWorld::a_workload());
  ASSERT_TRUE(w.reconcile().ok());
  ASSERT_EQ(w.entry("comm")["state"], "Ready");

  // The measurement is gone (expired, say) and the Workload is created again for the same
  // job and counts: Ready from the record, and no demand for the pool.
  w.api.remove(w.profile_path());
  w.api.remove(kWorkloads + "/" + kWorkloadName);
  w.submit(CheckWorld::a_workload());
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Ready");
  ASSERT_TRUE(w.measurement.reconcile(w.pool()).ok());
  EXPECT_EQ(w.probes_created(), 0);
}

// The attacker review of 2026-12-07: the record answered a Workload requeued onto another
// flavor, or re-created for a job whose model changed, with the first answer. Now each is
// decided again (here: Rejected on the slow flavor, Pending for the new model's probe).
TEST(KueueCheckReconciler, a_record_answers_only_the_same_pool_and_model) {
  CheckWorld w;
  w.api.seed(kResourceFlavors, {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                {"kind", "ResourceFlavor"},
                                {"metadata", {{"name", "gpu-slow"}}},
                                {"spec", {{"nodeLabels", {{"pool", "gpu-slow"}}}}}});
  w.measured(10.0);
  w.submit(CheckWorld::a_workload());
  ASSERT_TRUE(w.reconcile().ok());
  ASSERT_EQ(w.entry("comm")["state"], "Ready");
  CommProfile slow = parse_comm_profile(*w.api.peek(w.profile_path()), w.now);
  slow.metadata = {};
  slow.metadata.name = pool_name({{"pool", "gpu-slow"}});
  slow.node_selector = {{"pool", "gpu-slow"}};
  slow.status.link->busbw_gbps = 0.05;
  w.api.seed(kProfiles, to_json(slow));

  // Requeued onto the slow flavor: decided there.
  w.api.remove(kWorkloads + "/" + kWorkloadName);
  WorkloadBuilder requeued = CheckWorld::a_workload();
  for (const char* ps : {"master", "worker"})
    requeued.assignment(ps, "flavors", {{"cpu", "gpu-slow"}, {"nvidia.com/gpu", "gpu-slow"}});
  w.submit(requeued);
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Rejected") << w.entry("comm").dump();

  // The same flavor, but the job now names a 70G model: not the recorded question.
  json job = *w.api.peek(kPyTorchJobs + "/pytorch-simple");
  job["metadata"]["annotations"]["commgate.io/parameters"] = "70G";
  w.api.update(kPyTorchJobs + "/pytorch-simple", job);
  w.api.remove(kWorkloads + "/" + kWorkloadName);
  w.submit(CheckWorld::a_workload());
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Pending") << w.entry("comm").dump();
}

// The attacker review of 2026-12-07: a job without a model in a namespace the cache has not
// seen was Ready unmeasured (which policy governs it, and whether it asks for a model, is
// not known yet): it waits, as a TrainingJob does.
TEST(KueueCheckReconciler, a_job_without_a_model_waits_for_its_namespace_to_be_seen) {
  CheckWorld w(json::object());
  w.namespaces_listed = true;
  w.submit(CheckWorld::a_workload());
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Pending") << w.entry("comm").dump();
  EXPECT_NE(w.entry("comm").value("message", "").find("namespace ml is not in commgate's cache"),
            std::string::npos)
      << w.entry("comm").dump();
}

// The attacker review of 2026-12-07: a Master on a measured fast pool and Workers on a slow
// one were Ready at the fast pool's numbers. Pod sets on different pools are refused.
TEST(KueueCheckReconciler, training_pod_sets_on_different_pools_are_rejected) {
  CheckWorld w;
  w.measured(10.0);
  w.submit(
      CheckWorld::a_workload().set("/spec/podSets/1/template/spec/nodeSelector", {{"rack", "r2"}}));
  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Rejected") << w.entry("comm").dump();
  EXPECT_NE(w.entry("comm")
                .value("message", "")
                .find("its training pod sets run on different pools (master on nodeSelector "
                      "{pool=gpu-1g}, worker on {pool=gpu-1g,rack=r2}"),
            std::string::npos)
      << w.entry("comm").dump();
  ASSERT_TRUE(w.measurement.reconcile(w.pool()).ok());
  EXPECT_EQ(w.probes_created(), 0) << "nothing to measure";
}

// ---- the measurement demand ----

TEST(KueueCheckMeasurement, a_waiting_workload_and_a_gated_trainingjob_share_one_probe) {
  CheckWorld w;
  w.submit(CheckWorld::a_workload());  // 4 nodes
  json tj = a_training_job("bert")
                .namespace_("ml")
                .nodes(2)
                .params(kParameters)
                .set("/spec/model/batchSize", 32)
                .set("/spec/nodeSelector", {{"pool", "gpu-1g"}})
                .set("/spec/suspend", true)
                .policy_ref("team")
                .json();
  tj["metadata"]["generation"] = 1;
  w.api.seed(kTrainingJobs, tj);

  ASSERT_TRUE(w.measurement.reconcile(w.pool()).ok());
  ASSERT_TRUE(w.measurement.reconcile(w.pool()).ok());
  EXPECT_EQ(w.probes_created(), 1);
  const json probe = *w.api.peek(kProbeJobs + "/" + probe_job_name(w.pool()));
  EXPECT_EQ(probe["spec"].value("completions", 0), 4) << "the Workload's 4 nodes, not the job's 2";
  // Whom the probe serves, as a user reads it (not the internal demand key).
  const json probing = w.api.peek(w.profile_path())->at("status").at("conditions").at(0);
  EXPECT_NE(probing.value("message", "").find("Workload ml/" + kWorkloadName), std::string::npos)
      << probing.dump();
  EXPECT_EQ(probing.value("message", "").find("kueue-workload:"), std::string::npos)
      << probing.dump();

  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Pending");
  EXPECT_NE(w.entry("comm")
                .value("message", "")
                .find("waiting for the measurement of pool " + w.pool() +
                      " (nodeSelector {pool=gpu-1g})"),
            std::string::npos)
      << "the pool's hashed name and the nodes it stands for: " << w.entry("comm").dump();
}

// Topology-aware scheduling assigned the Workload's hosts: the probe measures exactly those
// (a pool of its own, named after the selector and the hosts, its pods held to them by a
// required node affinity), not the flavor's other nodes.
TEST(KueueCheckMeasurement, a_topology_assignment_is_probed_on_its_hosts) {
  CheckWorld w;
  w.submit(CheckWorld::a_workload()
               .assignment("master", "topologyAssignment",
                           testing::hostname_assignment("gpu-node-", {"7"}))
               .assignment("worker", "topologyAssignment",
                           testing::hostname_assignment("gpu-node-", {"3", "12", "5"})));
  const std::vector<std::string> hosts = {"gpu-node-12", "gpu-node-3", "gpu-node-5", "gpu-node-7"};
  const std::string pool = pool_name({{"pool", "gpu-1g"}}, hosts);
  ASSERT_NE(pool, w.pool());
  EXPECT_EQ(workload_waiting_pool(w.api, w.workload()), pool);

  ASSERT_TRUE(w.measurement.reconcile(pool).ok());
  ASSERT_TRUE(w.measurement.reconcile(pool).ok());
  const auto profile = w.api.peek(kProfiles + "/" + pool);
  ASSERT_TRUE(profile) << "the hosts' pool gets its CommProfile";
  EXPECT_EQ((*profile)["spec"]["hostnames"], json(hosts));
  EXPECT_EQ((*profile)["spec"]["nodeSelector"], json({{"pool", "gpu-1g"}}));
  const auto probe = w.api.peek(kProbeJobs + "/" + probe_job_name(pool));
  ASSERT_TRUE(probe) << "one probe, of the hosts' pool";
  EXPECT_FALSE(w.api.peek(kProbeJobs + "/" + probe_job_name(w.pool())));
  EXPECT_EQ((*probe)["spec"].value("completions", 0), 4);
  const json term = (*probe)["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
                            [0]["matchExpressions"][0];
  EXPECT_EQ(term, json({{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", hosts}}));

  ASSERT_TRUE(w.reconcile().ok());
  EXPECT_EQ(w.entry("comm")["state"], "Pending");
  EXPECT_NE(w.entry("comm")
                .value("message", "")
                .find("waiting for the measurement of pool " + pool +
                      " (nodeSelector {pool=gpu-1g} on nodes gpu-node-12, gpu-node-3, gpu-node-5, "
                      "gpu-node-7)"),
            std::string::npos)
      << w.entry("comm").dump();
}

// Each topology assignment makes a pool: once nobody waits on it, its profile goes a day
// after its newest measurement (a pool of a nodeSelector stays).
TEST(KueueCheckMeasurement, a_pool_of_hosts_nobody_waits_on_goes_a_day_after_its_measurement) {
  CheckWorld w;
  const std::string pool = pool_name({{"pool", "gpu-1g"}}, {"gpu-node-1", "gpu-node-2"});
  w.measured(1.0, {"gpu-node-1", "gpu-node-2"});
  w.measured(1.0);
  w.now += 23h;
  const kube::ReconcileResult kept = w.measurement.reconcile(pool);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept.action().requeue_delay(), std::chrono::duration_cast<kube::Clock::duration>(1h))
      << "looked at again when the day is over";
  EXPECT_TRUE(w.api.peek(kProfiles + "/" + pool));
  w.now += 1h;
  ASSERT_TRUE(w.measurement.reconcile(pool).ok());
  EXPECT_FALSE(w.api.peek(kProfiles + "/" + pool)) << "deleted";
  w.now += 24h;
  ASSERT_TRUE(w.measurement.reconcile(w.pool()).ok());
  EXPECT_TRUE(w.api.peek(w.profile_path())) << "a nodeSelector's measured pool stays";
}

TEST(KueueCheckMeasurement, a_workload_the_check_does_not_act_on_asks_for_nothing) {
  CheckWorld w;
  // Quota reserved on the pool, but our entry is Retry: Kueue is about to evict it.
  w.submit(a_pytorchjob_workload(1, 3).reserved().check("comm", "Retry", "", 60));
  ASSERT_TRUE(w.measurement.reconcile(w.pool()).ok());
  EXPECT_EQ(w.probes_created(), 0);
  EXPECT_FALSE(w.api.peek(w.profile_path())) << "no demand, no CommProfile";
}

// ---- which pool a Workload waits on (the process's index of Workloads by pool) ----

TEST(WorkloadWaitingPool, is_the_flavors_pool_while_our_entry_is_pending) {
  CheckWorld w;
  const json pending = CheckWorld::a_workload().build();
  EXPECT_EQ(workload_waiting_pool(w.api, pending), w.pool());
  // Not while Kueue is about to evict it (Retry), nor once decided, nor without quota, nor
  // when only another controller's check is listed.
  EXPECT_EQ(workload_waiting_pool(
                w.api, a_pytorchjob_workload(1, 3).reserved().check("comm", "Retry").build()),
            std::nullopt);
  EXPECT_EQ(workload_waiting_pool(
                w.api, a_pytorchjob_workload(1, 3).reserved().check("comm", "Ready").build()),
            std::nullopt);
  EXPECT_EQ(
      workload_waiting_pool(w.api, a_pytorchjob_workload(1, 3).check("comm", "Pending").build()),
      std::nullopt);
  EXPECT_EQ(workload_waiting_pool(
                w.api, a_pytorchjob_workload(1, 3).reserved().check("prov", "Pending").build()),
            std::nullopt);
  EXPECT_EQ(workload_waiting_pool(w.api, json{{"kind", "Workload"}}), std::nullopt)
      << "an object that does not read as a Workload";
}

// ---- the decision records are bounded ----

TEST(CheckDecisionRecords, forget_the_oldest_past_their_capacity) {
  CheckDecisionRecords records(2);
  const CheckOutcome ready{.kind = CheckOutcome::Kind::kWithinPolicy, .message = "ok"};
  const TimePoint t = test_now();
  records.remember("a", ready, "v", t);
  records.remember("b", ready, "v", t);
  records.remember("a", ready, "v", t);  // again: still one record, still the oldest
  records.remember("c", ready, "v", t);
  EXPECT_EQ(records.size(), 2u);
  EXPECT_FALSE(records.find("a", "v", t));
  EXPECT_TRUE(records.find("b", "v", t));
  EXPECT_TRUE(records.find("c", "v", t));
  // A wait is no decision: never kept.
  records.remember("d", CheckOutcome{.kind = CheckOutcome::Kind::kProbePending}, "v", t);
  EXPECT_FALSE(records.find("d", "v", t));
  EXPECT_EQ(records.size(), 2u);
}

// A record answers under the policy version it was made under, while the measurement
// it came from is fresh (the attacker review of 2026-12-07: a tightened policy, or a
// requeue days later, got the first answer).
TEST(CheckDecisionRecords, hold_only_under_the_same_policy_and_while_fresh) {
  CheckDecisionRecords records;
  const CheckOutcome ready{.kind = CheckOutcome::Kind::kWithinPolicy, .message = "ok"};
  const TimePoint t = test_now();
  records.remember("a", ready, "team/u1/7", t);
  EXPECT_TRUE(records.find("a", "team/u1/7", t - 1h));
  EXPECT_FALSE(records.find("a", "team/u1/8", t - 1h)) << "the policy changed";
  EXPECT_FALSE(records.find("a", "team/u1/7", t + 1s)) << "older than the TTL allows";
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op::kueue
