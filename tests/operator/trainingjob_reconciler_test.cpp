// The TrainingJob reconcile, step by step, against the in-memory API server
// (kube/testing/fake_client.h): every phase transition, exactly-once probe creation,
// invalid probe results, bounded retries, 409s and 404s mid-reconcile, and the decision
// record /validate holds the patched object to.
#include "operator/trainingjob_reconciler.h"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>

#include "core/annotations.h"
#include "core/decision_record.h"
#include "core/field_errors.h"
#include "core/profile_recording.h"
#include "kube/api_error.h"
#include "kube/testing/fake_client.h"
#include "operator/conditions.h"
#include "operator/measurement_reconciler.h"
#include "operator/pool_index.h"
#include "operator/probe_history.h"
#include "server/record_signer.h"
#include "tests/crds/schema_check.h"
#include "tests/support/builders.h"

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::a_training_job;
using commgate::testing::test_now;
using kube::testing::FakeClient;
using kube::testing::Method;
using nlohmann::json;
using namespace std::chrono_literals;

const std::string kJobs = "/apis/commgate.io/v1alpha1/namespaces/ml/trainingjobs";
const std::string kPolicies = "/apis/commgate.io/v1alpha1/commpolicies";
const std::string kProfiles = "/apis/commgate.io/v1alpha1/commprofiles";
const std::string kProbeJobs = "/apis/batch/v1/namespaces/commgate-system/jobs";
const std::string kProbeServices = "/api/v1/namespaces/commgate-system/services";
const std::string kProbePods = "/api/v1/namespaces/commgate-system/pods";
const std::string kWorkloadJobs = "/apis/batch/v1/namespaces/ml/jobs";
const std::string kWorkloadServices = "/api/v1/namespaces/ml/services";

// Keeps every Event the recorder writes.
class RecordingSink : public kube::EventSink {
 public:
  bool create(const json& event) override {
    std::lock_guard lock(mu_);
    events_.push_back(event);
    return true;
  }
  bool patch(const std::string&, const std::string&, const json&) override {
    std::lock_guard lock(mu_);
    ++patches_;
    return true;
  }
  // Series updates: the same Event again (kubectl describe shows "x2").
  int patches() const {
    std::lock_guard lock(mu_);
    return patches_;
  }
  std::vector<json> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<json> events_;
  int patches_ = 0;
};

// A Reader that answers 404 for one path a number of times, as an informer's cache that
// has not seen an object yet.
class LaggingReader : public kube::Reader {
 public:
  explicit LaggingReader(const kube::Reader& inner) : inner_(inner) {}
  json get(const std::string& path) const override {
    if (path == hidden_ && misses_ > 0) {
      --misses_;
      throw kube::ApiError(404, "NotFound", "not in the cache yet", "GET " + path);
    }
    if (auto it = frozen_.find(path); it != frozen_.end()) return it->second;
    if (path == hooked_ && hook_) {
      const auto hook = std::exchange(hook_, nullptr);
      hook();  // once, before answering
    }
    return inner_.get(path);
  }
  // Runs `hook` once, just before the first get of `path` is answered: another reconcile
  // interleaved between two reads of this one, as a concurrent worker can.
  void before_get(const std::string& path, std::function<void()> hook) {
    hooked_ = path;
    hook_ = std::move(hook);
  }
  kube::ListPage list(const std::string& collection,
                      const kube::ListOptions& options = {}) const override {
    if (collection == unlisted_) return {};
    return inner_.list(collection, options);
  }
  // Lists of `collection` come back empty (a watch of it behind the others).
  void unlist(const std::string& collection) { unlisted_ = collection; }
  void hide(const std::string& path, int times) {
    hidden_ = path;
    misses_ = times;
  }
  // Answers `path` with the object as it is now until thaw().
  void freeze(const std::string& path) { frozen_[path] = inner_.get(path); }
  void thaw() { frozen_.clear(); }

 private:
  const kube::Reader& inner_;
  std::string hidden_;
  mutable int misses_ = 0;
  std::map<std::string, json> frozen_;
  std::string hooked_;
  mutable std::function<void()> hook_;
  std::string unlisted_;
};

// A probe result as commgate-probe writes it: `busbw_gbps` over 4 nodes (the probe of a
// 4-node job under the default probe.maxNodes), and a 300 ms compute step of the test
// jobs' model (25M fp32 parameters, batch 32, adamw).
ProbeResult a_probe_result(double busbw_gbps, TimePoint at, int nodes = 4) {
  ProbeResult r;
  r.start_time = at;
  r.duration_seconds = 20;
  r.nodes = nodes;
  r.backend = "gloo";
  r.transport = "socket";
  r.interface_name = "eth0";
  r.device = "cpu";
  for (int i = 0; i < nodes; ++i) r.hostnames.push_back("node-" + std::to_string(i));
  r.warmup_iterations = 5;
  r.iterations = 20;
  r.allreduce = {{8192, 300, 0.027, 0.027, true},
                 {100e6, 1e6 * 100e6 / (busbw_gbps * 1e9), 0, 0, true}};
  r.fit.ranks = nodes;
  r.fit.latency_s = 200e-6;
  r.fit.busbw_bytes_per_s = busbw_gbps * 1e9;
  ComputeResult c;
  c.parameters = 25e6;
  c.gradient_dtype = "fp32";
  c.model = "synthetic-mlp";
  c.precision = "fp32";
  c.batch_size = 32;
  c.optimizer = "adamw";
  c.iterations = 10;
  c.step_time_ms = 300;
  c.forward_ms = 90;
  c.backward_ms = 180;
  c.optimizer_ms = 30;
  c.p10_ms = 290;
  c.p90_ms = 310;
  r.compute = c;
  return r;
}

// The test jobs: 25M fp32 parameters (100 MB of gradients), batch 32, in namespace ml.
commgate::testing::TrainingJobBuilder a_job(const std::string& name, int nodes = 4) {
  return a_training_job(name)
      .namespace_("ml")
      .nodes(nodes)
      .params(25e6)
      .set("/spec/model/batchSize", 32)
      .set("/spec/nodeSelector", {{"pool", "gpu-1g"}})
      .policy_ref("team");
}

// A record for `job`'s spec as a decider other than this operator would write it, at `at`,
// for all its nodes; the caller adds what its case needs (policy, message, requester).
DecisionRecord a_record_for(const TrainingJob& job, commgate::Action action, const char* why,
                            TimePoint at) {
  DecisionRecord r;
  r.action = action;
  r.reason = why;
  r.requested_nodes = r.admitted_nodes = job.spec.num_nodes;
  r.decided_at = at;
  r.spec_hash = decision_spec_hash(job.spec);
  return r;
}

// `record`'s annotations written on the job document.
void annotate(json& doc, const DecisionRecord& record) {
  for (const auto& [k, v] : decision_annotations(record)) doc["metadata"]["annotations"][k] = v;
}

json a_policy(EnforcementAction action = EnforcementAction::kDownsize, int retries = 2) {
  return {{"apiVersion", "commgate.io/v1alpha1"},
          {"kind", "CommPolicy"},
          {"metadata", {{"name", "team"}}},
          {"spec",
           {{"maxCommShare", 0.30},
            {"enforcementAction", to_string(action)},
            {"retryStrategy",
             {{"backoffLimitCount", retries},
              {"backoffBaseSeconds", 30},
              {"backoffMaxSeconds", 600}}}}}};
}

struct World {
  FakeClient api;
  LaggingReader reader{api};
  std::shared_ptr<RecordingSink> sink = std::make_shared<RecordingSink>();
  kube::EventRecorder recorder{sink, kube::EventRecorderOptions{}};
  TimePoint now = test_now();
  bool cache_lags = false;  // the snapshot misses every CommProfile (an informer behind)
  // The namespaces the cache has listed (namespaces_listed); nullopt: none listed.
  std::optional<std::vector<std::string>> namespaces;
  // The Nodes the cache holds (the pool check, the probe's size); nullopt: not watched.
  std::optional<std::vector<PoolNode>> nodes;
  std::vector<std::string> logged;  // the reconcilers' log lines
  ReconcilerSettings settings = [this] {
    ReconcilerSettings s;
    s.probe_poll = 2s;
    s.probe.gather = 0s;  // probes at once; the gather window has its own test
    s.log = Logger([this](const LogRecord& r) { logged.push_back(format_log_text(r, "")); });
    return s;
  }();
  TrainingJobReconciler reconciler{
      reader,  api, api, api, [this] { return snapshot(); }, recorder, [this] { return now; },
      settings};
  MeasurementReconciler measurement{reader,
                                    api,
                                    api,
                                    api,
                                    [this] { return snapshot(); },
                                    recorder,
                                    [this] { return now; },
                                    [this](const std::string& pool) { return waiting_on(pool); },
                                    measurement_settings(settings)};

  explicit World(EnforcementAction action = EnforcementAction::kDownsize, int retries = 2) {
    api.seed(kPolicies, a_policy(action, retries));
  }
  explicit World(const json& policy) { api.seed(kPolicies, policy); }

  // A reconciler over this world with other settings (a decision key).
  std::unique_ptr<TrainingJobReconciler> reconciler_with(ReconcilerSettings other) {
    return std::make_unique<TrainingJobReconciler>(
        reader, api, api, api, [this] { return snapshot(); }, recorder, [this] { return now; },
        std::move(other));
  }
  // A measurement controller over this world with other settings (probe slots, a key).
  std::unique_ptr<MeasurementReconciler> measurement_with(MeasurementSettings other) {
    return std::make_unique<MeasurementReconciler>(
        reader, api, api, api, [this] { return snapshot(); }, recorder, [this] { return now; },
        [this](const std::string& pool) { return waiting_on(pool); }, std::move(other));
  }
  static MeasurementSettings measurement_settings(const ReconcilerSettings& s) {
    MeasurementSettings m;
    m.probe = s.probe;
    m.probe_poll = s.probe_poll;
    m.records = s.records;
    return m;
  }
  // What the process's PoolIndex would say: the suspended jobs of `pool`.
  std::vector<std::string> waiting_on(const std::string& pool) const {
    PoolIndex index;
    for (const json& tj : api.list(kJobs).items)
      index.update("ml/" + tj["metadata"]["name"].get<std::string>(), &tj);
    return index.waiting_on(pool);
  }

  // What the informers would hold: every policy and profile as stored.
  std::shared_ptr<const Snapshot> snapshot() const {
    auto s = std::make_shared<Snapshot>();
    // As kube/snapshot_cache.cpp builds it: a policy that does not parse is kept by name.
    for (const json& p : api.list(kPolicies).items) s->add_policy(p);
    if (!cache_lags) {
      for (const json& p : api.list(kProfiles).items) {
        try {
          CommProfile profile = parse_comm_profile(p, now);
          s->profiles[profile.metadata.name] = profile;
        } catch (const ValidationError&) {
        }
      }
    }
    if (namespaces) {
      s->namespaces_listed = true;
      for (const std::string& ns : *namespaces) s->namespace_labels[ns];
    }
    if (nodes) s->nodes = std::make_shared<const std::vector<PoolNode>>(*nodes);
    s->loaded_at = now;
    return s;
  }

  // Stores a job as the webhook's /mutate would have left it: decided with what the
  // cluster holds now (suspended with a Gate record when the pool is not measured).
  json submit(const commgate::testing::TrainingJobBuilder& builder) {
    json doc = builder.json();
    doc["metadata"]["generation"] = 1;
    TrainingJob job = parse_training_job(doc);
    const JobDecision jd = decide_for_job(job, *snapshot(), Requester{"alice", {}}, now);
    switch (jd.decision.action) {
      case commgate::Action::kGate:
        doc["spec"]["suspend"] = true;
        break;
      case commgate::Action::kDownsize:
        doc["spec"]["numNodes"] = jd.decision.admitted_nodes;
        break;
      default:
        break;
    }
    annotate(doc, record_of(jd, job, now));
    return api.seed(kJobs, doc);
  }
  // Stores a job that no webhook saw.
  json submit_raw(json doc) {
    doc["metadata"]["generation"] = 1;
    return api.seed(kJobs, doc);
  }

  // As the process runs them on the changes each makes: the job's reconcile, then its
  // pool's measurement (the job's status write wakes the pool), then the job's again (the
  // CommProfile's or the probe's change wakes the job). The last result; the first when
  // it failed.
  kube::ReconcileResult reconcile(const std::string& name) {
    kube::ReconcileResult first = reconcile_job(name);
    if (!first.ok()) return first;
    // The pool's again while it asks to be looked at again at once (a probe collected:
    // the next one for the jobs still waiting), as the runner does.
    for (int i = 0; i < 3; ++i) {
      const kube::ReconcileResult m = measure();
      EXPECT_TRUE(m.ok()) << m.error().message;
      if (!m.ok() || !m.action().requeue_delay() ||
          *m.action().requeue_delay() > std::chrono::milliseconds(1))
        break;
    }
    return reconcile_job(name);
  }
  // The pool's measurement alone, checking that the CommProfile's status fits its CRD.
  kube::ReconcileResult measure() {
    kube::ReconcileResult r = measurement.reconcile(pool());
    expect_status_fits("commprofiles.commgate.io.yaml", kProfiles + "/" + pool());
    return r;
  }
  // The job's reconcile alone, checking that the status written fits the CRD: a field the
  // schema does not name would be pruned by the API server without a word.
  // The decisions it counted are written at once (the operator writes them a second
  // later, from its policy-status queue).
  kube::ReconcileResult reconcile_job(const std::string& name) {
    kube::ReconcileResult r = reconciler.reconcile("ml/" + name);
    expect_status_fits("trainingjobs.commgate.io.yaml", kJobs + "/" + name);
    reconciler.flush_counters();
    return r;
  }
  void expect_status_fits(const std::string& crd_file, const std::string& path) const {
    const auto stored = api.peek(path);
    if (!stored || !stored->contains("status")) return;
    const auto issues =
        commgate::testing::validate(status_schema(crd_file), (*stored)["status"], "status");
    EXPECT_TRUE(issues.empty()) << path << ": " << commgate::testing::to_string(issues);
  }
  static const json& status_schema(const std::string& crd_file = "trainingjobs.commgate.io.yaml") {
    static std::map<std::string, json> crds;
    static std::mutex mu;
    std::lock_guard lock(mu);
    auto it = crds.find(crd_file);
    if (it == crds.end()) it = crds.emplace(crd_file, commgate::testing::load_crd(crd_file)).first;
    return *commgate::testing::schema_at(commgate::testing::crd_schema(it->second), "status");
  }
  json job(const std::string& name) const { return *api.peek(kJobs + "/" + name); }
  // The pool's probing as the measurement controller keeps it (CommProfile status.probe).
  ProbeHistory history() const {
    const auto profile = api.peek(kProfiles + "/" + pool());
    return profile ? probe_history_of(*profile) : ProbeHistory{};
  }
  json status(const std::string& name) const { return job(name).value("status", json::object()); }
  std::string pool() const { return pool_name({{"pool", "gpu-1g"}}); }
  std::string probe() const { return probe_job_name(pool()); }
  std::optional<json> probe_job() const { return api.peek(kProbeJobs + "/" + probe()); }
  int creates_of(const std::string& path) const {
    int n = 0;
    for (const std::string& a : api.actions()) n += a == "create " + path;
    return n;
  }

  // Another replica records `result` in the pool's profile while this process's caches
  // lag: the reader keeps the profile as it was, the snapshot misses it.
  void record_behind_this_cache(const ProbeResult& result) {
    const std::string profile = kProfiles + "/" + pool();
    reader.freeze(profile);
    cache_lags = true;
    CommProfile recorded = parse_comm_profile(*api.peek(profile), now);
    record_probe_result(recorded, result);
    json stored = *api.peek(profile);
    stored["status"] = to_json(recorded)["status"];
    // As the measurement controller records it: the probe's outcome, by its uid.
    if (const auto probe = probe_job())
      stored["status"]["probe"] = {{"lastProbeUID", (*probe)["metadata"]["uid"]}};
    api.update_status(profile, stored);
  }

  // The probe's pods as the Job controller and kubelet leave them.
  void probe_pods(const std::vector<json>& container_states, const json& pod_conditions = nullptr) {
    for (size_t i = 0; i < container_states.size(); ++i) {
      json pod = {{"apiVersion", "v1"},
                  {"kind", "Pod"},
                  {"metadata",
                   {{"name", probe() + "-" + std::to_string(i) + "-x"},
                    {"labels",
                     {{kJobNameLabel, probe()},
                      {"batch.kubernetes.io/controller-uid", (*probe_job())["metadata"]["uid"]},
                      {kCompletionIndexKey, std::to_string(i)},
                      {kPoolLabel, pool()}}}}},
                  {"status", {{"phase", "Running"}}}};
      if (!container_states[i].is_null())
        pod["status"]["containerStatuses"] = {{{"name", "probe"}, {"state", container_states[i]}}};
      if (!pod_conditions.is_null()) pod["status"]["conditions"] = pod_conditions;
      api.seed(kProbePods, pod);
    }
  }
  void probe_job_status(const json& status) {
    json j = *probe_job();
    j["status"] = status;
    api.update_status(kProbeJobs + "/" + probe(), j);
  }
  int probe_nodes() const { return (*probe_job())["spec"].value("completions", 2); }
  // Rank 0 ends with `message` as its termination message, the Job completes.
  void finish_probe(const std::string& message) {
    std::vector<json> states(probe_nodes(),
                             {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}});
    states[0]["terminated"]["message"] = message;
    probe_pods(states);
    probe_job_status({{"succeeded", probe_nodes()},
                      {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}});
  }
  void finish_probe(const ProbeResult& result) { finish_probe(compact_probe_result(result)); }
  void fail_probe() {
    std::vector<json> states(probe_nodes(),
                             {{"terminated", {{"exitCode", 3}, {"reason", "Error"}}}});
    states[0]["terminated"]["message"] =
        R"({"error":{"stage":"rendezvous","message":"timed out"}})";
    probe_pods(states);
    probe_job_status({{"failed", probe_nodes()},
                      {"conditions",
                       {{{"type", "Failed"},
                         {"status", "True"},
                         {"reason", "BackoffLimitExceeded"},
                         {"message", "Job has reached the specified backoff limit"}}}}});
  }
  void remove_probe_pods() {
    for (const json& p : api.list(kProbePods).items)
      api.remove(kProbePods + "/" + p["metadata"]["name"].get<std::string>());
  }

  std::vector<std::string> event_reasons() const {
    std::vector<std::string> out;
    for (const json& e : sink->events()) out.push_back(e.value("reason", ""));
    return out;
  }
  int events_of(const std::string& reason) const {
    int n = 0;
    for (const std::string& r : event_reasons()) n += r == reason;
    return n;
  }
  std::optional<json> event(const std::string& reason) const {
    for (const json& e : sink->events())
      if (e.value("reason", "") == reason) return e;
    return std::nullopt;
  }
};

// A field of the condition of `type` in `status`, "" when there is none.
std::string condition_field(const json& status, const std::string& type, const char* field) {
  const json conditions = status.value("conditions", json::array());
  const json* c = find_condition(conditions, type);
  return c ? c->value(field, "") : "";
}
std::string condition_reason(const json& status, const std::string& type) {
  return condition_field(status, type, "reason");
}
std::string condition_status(const json& status, const std::string& type) {
  return condition_field(status, type, "status");
}
std::string condition_message(const json& status, const std::string& type) {
  return condition_field(status, type, "message");
}

std::optional<std::chrono::seconds> requeue_of(const kube::ReconcileResult& r) {
  if (!r.ok() || !r.action().requeue_delay()) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::seconds>(*r.action().requeue_delay());
}

// Reconciles a freshly gated job until its probe runs.
void reconcile_to_probing(World& w, const std::string& name) {
  const auto r = w.reconcile(name);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(w.status(name).value("phase", ""), phase::kProbing) << w.status(name).dump(2);
  ASSERT_TRUE(w.probe_job());
}

TEST(Reconcile, the_crd_check_catches_a_status_field_the_schema_does_not_name) {
  EXPECT_FALSE(
      commgate::testing::validate(World::status_schema(), {{"probeAttemps", 1}}, "status").empty());
  EXPECT_TRUE(commgate::testing::validate(World::status_schema(), {{"probeAttempts", 1}}, "status")
                  .empty());
}

// ---------------------------------------------------------------------------------------
// Gated -> Probing

TEST(Reconcile, gated_job_gets_the_pools_profile_and_one_probe) {
  World w;
  w.submit(a_job("bert"));
  ASSERT_EQ(w.job("bert")["metadata"]["annotations"][annotation::kDecision], "Gate");

  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(requeue_of(r), 2s);

  const auto profile = w.api.peek(kProfiles + "/" + w.pool());
  ASSERT_TRUE(profile) << "the CommProfile of the pool is created";
  EXPECT_EQ((*profile)["spec"]["nodeSelector"], json({{"pool", "gpu-1g"}}));
  const auto probe = w.probe_job();
  ASSERT_TRUE(probe);
  EXPECT_EQ((*probe)["metadata"]["annotations"][kProbeForAnnotation], "ml/bert");
  EXPECT_TRUE(w.api.peek(kProbeServices + "/" + w.probe()));

  const json status = w.status("bert");
  EXPECT_EQ(status["phase"], phase::kProbing);
  EXPECT_EQ(condition_status(status, condition::kProbed), kFalse);
  EXPECT_EQ(condition_reason(status, condition::kProbed), kReasonProbeRunning);
  EXPECT_EQ(condition_reason(status, condition::kAdmitted), reason::kNoMeasurement);
  EXPECT_EQ(status["observedGeneration"], 1);
  EXPECT_EQ(status["decision"]["action"], "Gate");
  EXPECT_FALSE(status.contains("admittedNodes"));
  EXPECT_EQ(w.event_reasons(), std::vector<std::string>{"ProbeCreated"});
  EXPECT_EQ(w.job("bert")["spec"]["suspend"], true);
}

// Issue #19 item 6: a job in a namespace the operator's cache has not listed yet is not
// decided (its policy is unknown) and not probed; once the namespace is listed it is.
TEST(Reconcile, a_job_whose_namespace_the_cache_has_not_seen_is_gated_without_a_probe) {
  World w;
  w.namespaces = std::vector<std::string>{"other"};
  w.submit_raw(a_job("bert").json());  // no webhook saw it: not suspended
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(requeue_of(r), 10s);
  EXPECT_EQ(w.job("bert")["spec"]["suspend"], true);
  const json status = w.status("bert");
  EXPECT_EQ(status["phase"], phase::kGated);
  EXPECT_EQ(condition_reason(status, condition::kAdmitted), reason::kNamespaceUnknown);
  EXPECT_NE(condition_message(status, condition::kAdmitted)
                .find("namespace ml is not in commgate's cache of Namespaces yet"),
            std::string::npos)
      << status.dump(2);
  EXPECT_FALSE(w.probe_job());
  EXPECT_FALSE(w.api.peek(kProfiles + "/" + w.pool()));
  EXPECT_FALSE(w.api.peek(kWorkloadJobs + "/bert"));

  w.namespaces->push_back("ml");
  reconcile_to_probing(w, "bert");
  EXPECT_EQ(condition_reason(w.status("bert"), condition::kAdmitted), reason::kNoMeasurement);
}

// Issue #19 item 7: a researcher's toleration of the control plane does not follow the
// probe into commgate's namespace; the GPU taint's (the policy's default key) does.
TEST(Reconcile, the_probe_takes_only_the_tolerations_the_policy_lists) {
  World w;
  w.submit(a_job("bert").set("/spec/tolerations",
                             json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}},
                                          {{"key", "node-role.kubernetes.io/control-plane"},
                                           {"operator", "Exists"},
                                           {"effect", "NoSchedule"}}})));
  reconcile_to_probing(w, "bert");
  EXPECT_EQ((*w.probe_job())["spec"]["template"]["spec"]["tolerations"],
            json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}}));
  const auto created = w.event("ProbeCreated");
  ASSERT_TRUE(created);
  EXPECT_NE((*created)["note"].get<std::string>().find(
                "not given to the probe, of the job's tolerations: "
                "node-role.kubernetes.io/control-plane:NoSchedule (CommPolicy team's "
                "probe.tolerationKeys: nvidia.com/gpu)"),
            std::string::npos)
      << created->dump();
}

// Issue #19 item 7: a job whose pool's probe would exceed the namespace's probe slots
// waits (polled), with the reason in its Probed condition; then it probes.
TEST(Reconcile, a_probe_waits_for_a_slot_when_its_namespace_has_its_share) {
  World w;
  MeasurementSettings one_slot = World::measurement_settings(w.settings);
  one_slot.probe.max_per_namespace = 1;
  const auto measurement = w.measurement_with(one_slot);
  w.submit(a_job("bert"));
  ASSERT_TRUE(w.reconcile_job("bert").ok());
  ASSERT_TRUE(measurement->reconcile(w.pool()).ok());
  ASSERT_TRUE(w.reconcile_job("bert").ok());
  ASSERT_EQ(w.status("bert").value("phase", ""), phase::kProbing);
  w.submit(a_job("gpt").set("/spec/nodeSelector", {{"pool", "other"}}));
  ASSERT_TRUE(w.reconcile_job("gpt").ok());
  const std::string other = pool_name({{"pool", "other"}});
  const auto r = measurement->reconcile(other);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(requeue_of(r), 15s);
  ASSERT_TRUE(w.reconcile_job("gpt").ok());
  const json status = w.status("gpt");
  EXPECT_EQ(status["phase"], phase::kGated);
  EXPECT_EQ(condition_reason(status, condition::kProbed), kReasonProbeQueued);
  EXPECT_NE(condition_message(status, condition::kProbed)
                .find("1 probe runs for jobs of namespace ml, at most 1 at once"),
            std::string::npos)
      << status.dump(2);
  EXPECT_EQ(w.api.list(kProbeJobs).items.size(), 1u) << "only bert's pool's probe";
}

TEST(Reconcile, a_suspended_job_no_webhook_saw_is_gated_by_the_operator) {
  World w;
  w.submit_raw(a_job("bert").set("/spec/suspend", true).json());
  reconcile_to_probing(w, "bert");
  const json job = w.job("bert");
  EXPECT_EQ(job["metadata"]["annotations"][annotation::kDecision], "Gate");
  const auto record = decision_record_of(parse_training_job(job));
  ASSERT_TRUE(record);
  EXPECT_EQ(check_against_record(*record, parse_training_job(job).spec), RecordVerdict::kHolds);
  EXPECT_TRUE(w.event("Gated"));
}

TEST(Reconcile, probe_is_created_exactly_once_over_many_reconciles) {
  World w;
  w.submit(a_job("bert"));
  for (int i = 0; i < 3; ++i) {
    const auto r = w.reconcile("bert");
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
  EXPECT_EQ(w.creates_of(kProbeServices + "/" + w.probe()), 1);
  // Written when the job was gated (waiting for the measurement), when the probe was
  // created and when its pods' state first showed; after that nothing changed, so nothing
  // is written.
  int status_writes = 0;
  for (const std::string& a : w.api.actions())
    status_writes += a == "update_status " + kJobs + "/bert";
  EXPECT_EQ(status_writes, 3);
}

// Issue #21: the operator restarted mid-probe. The new process (a new measurement
// controller: nothing in memory) finds the probe in its cache and waits for it; when its
// cache has not listed the probe yet, the create under the pool's deterministic name
// answers AlreadyExists: still one probe, and the running one is not disturbed.
TEST(Reconcile, an_operator_restarted_mid_probe_does_not_probe_the_pool_again) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  const std::string uid = (*w.probe_job())["metadata"]["uid"];
  const auto restarted = w.measurement_with(World::measurement_settings(w.settings));
  const auto r = restarted->reconcile(w.pool());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(requeue_of(r), 2s);
  w.reader.hide(kProbeJobs + "/" + w.probe(), 1);
  const auto unlisted = w.measurement_with(World::measurement_settings(w.settings));
  ASSERT_TRUE(unlisted->reconcile(w.pool()).ok());
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
  EXPECT_EQ((*w.probe_job())["metadata"]["uid"], uid) << "the running probe is kept";
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.status("bert")["phase"], phase::kProbing);
  EXPECT_NE(restarted->metrics_text().find("commgate_operator_probes_created_total 0"),
            std::string::npos);
}

PoolNode a_node(const std::string& name) {
  return commgate::testing::a_pool_node(name, {{"pool", "gpu-1g"}});
}

// Issue #20 defects 2 and 3: on a pool of one node no probe starts (none can measure a
// link) and the job waits PoolTooSmall; on two nodes without GPUs the 4-node job's probe
// takes both with Gloo (`auto`), its pods asking for no GPU; the job, which the policy
// admits at 4 (and, enforcing by deny, does not downsize to the pool), then waits
// PoolTooSmall with no workload holding a node, and runs once the pool has 4 nodes.
TEST(Reconcile, the_probe_fits_the_pool_and_a_job_larger_than_its_pool_waits_for_nodes) {
  World w(EnforcementAction::kDeny);
  w.nodes = std::vector<PoolNode>{a_node("n1")};
  w.submit(a_job("bert"));
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_FALSE(w.probe_job()) << "one node measures no link";
  EXPECT_FALSE(w.api.peek(kProfiles + "/" + w.pool())) << "nothing to measure";
  EXPECT_EQ(condition_reason(w.status("bert"), condition::kAdmitted), reason::kPoolTooSmall);
  EXPECT_NE(condition_message(w.status("bert"), condition::kAdmitted)
                .find("has 1 usable node (all that match the nodeSelector), fewer than the 2 "
                      "nodes a measurement of its link needs"),
            std::string::npos)
      << w.status("bert").dump(2);

  w.nodes->push_back(a_node("n2"));
  reconcile_to_probing(w, "bert");
  EXPECT_EQ(w.probe_nodes(), 2);
  const json pod = (*w.probe_job())["spec"]["template"]["spec"];
  EXPECT_EQ(pod["containers"][0]["args"][1], "gloo") << pod["containers"][0]["args"].dump();
  EXPECT_FALSE(pod["containers"][0]
                   .value("/resources/limits"_json_pointer, json::object())
                   .contains("nvidia.com/gpu"))
      << pod.dump();

  w.finish_probe(a_probe_result(50.0, w.now - 1min, 2));
  ASSERT_TRUE(w.reconcile("bert").ok());
  const json status = w.status("bert");
  EXPECT_EQ(status["phase"], phase::kGated) << status.dump(2);
  EXPECT_EQ(condition_reason(status, condition::kAdmitted), reason::kPoolTooSmall);
  EXPECT_EQ(condition_reason(status, condition::kProbed), kReasonProbeSucceeded);
  EXPECT_NE(condition_message(status, condition::kAdmitted)
                .find("has 2 usable nodes (all that match the nodeSelector), fewer than the 4 "
                      "nodes this job would run"),
            std::string::npos)
      << status.dump(2);
  EXPECT_FALSE(w.api.peek(kWorkloadJobs + "/bert"));
  EXPECT_EQ(w.job("bert")["spec"]["suspend"], true);
  // Issue #20 trial: the reason annotation (kubectl's REASON column) and an Event follow the
  // operator's new gate, not the measurement gate the job was held to before.
  EXPECT_EQ(w.job("bert")["metadata"]["annotations"][annotation::kReason], reason::kPoolTooSmall);
  const auto gated = w.event("Gated");
  ASSERT_TRUE(gated) << ::testing::PrintToString(w.event_reasons());
  bool told = false;
  for (const json& e : w.sink->events())
    told = told || (e.value("reason", "") == "Gated" &&
                    e.value("note", "").find("fewer than the 4 nodes this job would run") !=
                        std::string::npos);
  EXPECT_TRUE(told) << ::testing::PrintToString(w.event_reasons());

  w.nodes->push_back(a_node("n3"));
  w.nodes->push_back(a_node("n4"));
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted) << w.status("bert").dump(2);
  EXPECT_TRUE(w.api.peek(kWorkloadJobs + "/bert"));
  // Issue #20: the operator logged no decisions; each one it makes is a line at info.
  bool logged = false;
  for (const std::string& line : w.logged)
    logged = logged || (line.find("info: decided Admit (WithinPolicy)") != std::string::npos &&
                        line.find("admittedNodes=4") != std::string::npos);
  EXPECT_TRUE(logged) << ::testing::PrintToString(w.logged);
}

// The trial of 2026-12-05 (#20): a 4-node job with minNodes 1 on a 2-node pool waited
// PoolTooSmall for ever, though the researcher accepted fewer nodes and 2 passed the
// policy. Under a downsizing policy it runs on the pool's 2 nodes, the reason and
// message saying why.
TEST(Reconcile, a_job_that_accepts_fewer_nodes_is_downsized_to_its_pool) {
  World w;
  w.nodes = std::vector<PoolNode>{a_node("n1"), a_node("n2")};
  w.submit(a_job("bert").min_nodes(1));
  reconcile_to_probing(w, "bert");
  EXPECT_EQ(w.probe_nodes(), 2);
  w.finish_probe(a_probe_result(50.0, w.now - 1min, 2));
  ASSERT_TRUE(w.reconcile("bert").ok());
  const json status = w.status("bert");
  EXPECT_EQ(status["phase"], phase::kDownsized) << status.dump(2);
  EXPECT_EQ(status["admittedNodes"], 2);
  EXPECT_EQ(condition_reason(status, condition::kAdmitted), reason::kPoolTooSmall);
  EXPECT_NE(condition_message(status, condition::kAdmitted)
                .find("the pool of nodeSelector {pool=gpu-1g} has 2 usable nodes (all that match "
                      "the nodeSelector), fewer than the 4 nodes asked for; spec.minNodes (1) "
                      "allows fewer and CommPolicy team downsizes, so it runs on 2 nodes. At 2 "
                      "nodes"),
            std::string::npos)
      << status.dump(2);
  // The trial: the Event said only "downsized from 4 to 2 nodes (... busbw ...)", and
  // COMMSHARE was blank (no prediction at the requested count).
  const auto downsized = w.event("Downsized");
  ASSERT_TRUE(downsized) << ::testing::PrintToString(w.event_reasons());
  EXPECT_NE((*downsized)["note"].get<std::string>().find("fewer than the 4 nodes asked for"),
            std::string::npos)
      << (*downsized)["note"];
  EXPECT_TRUE(status["decision"].value("predictedCommShare", json()).is_number())
      << status["decision"].dump(2);
  const auto workload = w.api.peek(kWorkloadJobs + "/bert");
  ASSERT_TRUE(workload) << "it runs now, on the pool's nodes";
  EXPECT_EQ((*workload)["spec"]["completions"], 2);
  EXPECT_EQ((*workload)["spec"]["parallelism"], 2);
}

TEST(Reconcile, two_jobs_on_one_pool_share_one_probe) {
  World w;
  w.submit(a_job("bert"));
  w.submit(a_job("gpt", 3));
  reconcile_to_probing(w, "bert");
  reconcile_to_probing(w, "gpt");
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);

  w.finish_probe(a_probe_result(5.0, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  ASSERT_TRUE(w.reconcile("gpt").ok());
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted);
  EXPECT_EQ(w.status("gpt")["phase"], phase::kAdmitted);
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "gpt was decided from bert's probe";
}

// Issue #21: the pool's one probe is sized for the largest count that waits (within each
// job's policy), and times every waiting job's model: the oldest waiting job's first, the
// others after it (--also-model). Exactly one probe, covering all three jobs.
TEST(Reconcile, one_probe_per_pool_for_every_model_and_the_largest_count_that_waits) {
  World w;
  w.submit(a_job("bert", 2));
  w.submit(a_job("gpt", 3));
  w.submit(a_job("vit", 3).params(80e6));
  ASSERT_TRUE(w.reconcile_job("bert").ok());
  ASSERT_TRUE(w.reconcile_job("gpt").ok());
  ASSERT_TRUE(w.reconcile_job("vit").ok());
  ASSERT_TRUE(w.measure().ok());
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
  EXPECT_EQ(w.probe_nodes(), 3) << "gpt's and vit's count, not bert's";
  const json annotations = (*w.probe_job())["metadata"]["annotations"];
  EXPECT_EQ(annotations[kProbeForAnnotation], "ml/bert");
  const json models = json::parse(annotations[kProbeModelAnnotation].get<std::string>());
  ASSERT_TRUE(models.is_array()) << models.dump();
  ASSERT_EQ(models.size(), 2u) << models.dump();
  EXPECT_EQ(models[0]["parameters"], 25e6);
  EXPECT_EQ(models[1]["parameters"], 80e6);
  const json args = (*w.probe_job())["spec"]["template"]["spec"]["containers"][0]["args"];
  const auto also = std::find(args.begin(), args.end(), json("--also-model"));
  ASSERT_NE(also, args.end()) << args.dump();
  EXPECT_EQ(*std::next(also), "params=80M,batch=32,optimizer=adamw,dtype=fp32") << args.dump();
  const json profile = *w.api.peek(kProfiles + "/" + w.pool());
  const json* probing = find_condition(profile["status"]["conditions"], kProbingCondition);
  ASSERT_TRUE(probing) << profile.dump(2);
  EXPECT_NE((*probing)["message"].get<std::string>().find("for ml/bert, ml/gpt, ml/vit"),
            std::string::npos)
      << probing->dump();
  ASSERT_TRUE(w.reconcile_job("vit").ok());
  EXPECT_EQ(w.status("vit")["phase"], phase::kProbing) << "its model is timed by this probe";

  ProbeResult three = a_probe_result(50.0, w.now - 1min, 3);
  ComputeResult vit = *three.compute;
  vit.parameters = 80e6;
  vit.step_time_ms = 900;
  vit.forward_ms = 270;
  vit.backward_ms = 540;
  vit.optimizer_ms = 90;
  three.additional_models.push_back(ModelResult{vit, std::nullopt});
  w.finish_probe(three);
  ASSERT_TRUE(w.reconcile("bert").ok());
  ASSERT_TRUE(w.reconcile("gpt").ok());
  ASSERT_TRUE(w.reconcile("vit").ok());
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted) << w.status("bert").dump(2);
  EXPECT_EQ(w.status("gpt")["phase"], phase::kAdmitted) << w.status("gpt").dump(2);
  EXPECT_EQ(w.status("vit")["phase"], phase::kAdmitted) << w.status("vit").dump(2);
  EXPECT_EQ(w.status("vit")["measurement"].value("computeStepMs", 0.0), 900)
      << w.status("vit")["measurement"].dump(2);
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "one probe served all three";
}

// Jobs submitted together share the probe (the trial of 2026-12-06: one `kubectl apply` of
// four jobs gave the first a probe of its own): the pool's first demand waits the gather
// window, and a job that arrives in it is timed by the same probe.
TEST(Reconcile, jobs_submitted_within_the_gather_window_share_one_probe) {
  World w;
  MeasurementSettings gathering = World::measurement_settings(w.settings);
  gathering.probe.gather = 2s;
  auto measurement = w.measurement_with(gathering);
  w.submit(a_job("bert"));
  ASSERT_TRUE(w.reconcile_job("bert").ok());
  auto r = measurement->reconcile(w.pool());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(w.probe_job()) << "gathering";
  EXPECT_EQ(requeue_of(r), 2s);
  w.now += 1s;
  w.submit(a_job("vit").params(80e6));
  ASSERT_TRUE(w.reconcile_job("vit").ok());
  r = measurement->reconcile(w.pool());
  EXPECT_FALSE(w.probe_job());
  EXPECT_EQ(requeue_of(r), 1s) << "the window runs from the first demand";
  w.now += 1s;
  ASSERT_TRUE(measurement->reconcile(w.pool()).ok());
  ASSERT_TRUE(w.probe_job());
  const json models = json::parse(
      (*w.probe_job())["metadata"]["annotations"][kProbeModelAnnotation].get<std::string>());
  EXPECT_EQ(models.size(), 2u) << models.dump();
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
}

// More models than one probe times (kMaxModelsPerProbe): the oldest jobs' models first;
// the job of the model left out waits for the pool's next probe, which times it.
TEST(Reconcile, a_model_beyond_what_one_probe_times_gets_the_next_probe) {
  World w;
  // The same age: the oldest by key first (m1, m2, m3; m4 is left out).
  const std::vector<std::pair<std::string, double>> jobs = {
      {"m1", 25e6}, {"m2", 50e6}, {"m3", 80e6}, {"m4", 120e6}};
  for (const auto& [name, params] : jobs) w.submit(a_job(name).params(params));
  for (const auto& [name, params] : jobs) ASSERT_TRUE(w.reconcile_job(name).ok());
  ASSERT_TRUE(w.measure().ok());
  const json models = json::parse(
      (*w.probe_job())["metadata"]["annotations"][kProbeModelAnnotation].get<std::string>());
  ASSERT_EQ(models.size(), static_cast<size_t>(kMaxModelsPerProbe)) << models.dump();
  ASSERT_TRUE(w.reconcile_job("m4").ok());
  EXPECT_EQ(condition_reason(w.status("m4"), condition::kProbed), op_reason::kWaitingForPoolProbe);
  // Why, and what comes next (the trial saw "another model ... probed next" for each).
  const std::string why = condition_message(w.status("m4"), condition::kProbed);
  EXPECT_NE(why.find("it times 3 models for the jobs that waited first (ml/m1 the oldest), not "
                     "this job's: one probe times at most 3 models; the pool's next probe times "
                     "the models still waiting"),
            std::string::npos)
      << why;

  ProbeResult r = a_probe_result(50.0, w.now - 1min);
  for (double params : {50e6, 80e6}) {
    ComputeResult c = *r.compute;
    c.parameters = params;
    r.additional_models.push_back(ModelResult{c, std::nullopt});
  }
  w.finish_probe(r);
  for (const char* job : {"m1", "m2", "m3"}) {
    ASSERT_TRUE(w.reconcile(job).ok());
    EXPECT_EQ(w.status(job)["phase"], phase::kAdmitted) << job << w.status(job).dump(2);
  }
  ASSERT_TRUE(w.measure().ok());
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 2) << "m4's model next";
  EXPECT_EQ((*w.probe_job())["metadata"]["annotations"][kProbeForAnnotation], "ml/m4");
}

// The CommProfile was created a moment ago and the cache has not shown it yet, while the
// probe it owns runs: the probe is not taken for an orphan and deleted.
TEST(Reconcile, a_probe_whose_profile_the_cache_has_not_shown_yet_is_kept) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  const std::string uid = (*w.probe_job())["metadata"]["uid"];
  w.reader.hide(kProfiles + "/" + w.pool(), 1);
  const auto r = w.measure();
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(w.probe_job());
  EXPECT_EQ((*w.probe_job())["metadata"]["uid"], uid);
  // Gone for real (an admin deleted it): its probe goes too.
  w.api.remove(kProfiles + "/" + w.pool());
  ASSERT_TRUE(w.measure().ok());
  EXPECT_FALSE(w.probe_job());
}

// A gated job deleted while its pool is probed: the probe runs on, and its result is
// recorded for whoever asks next (a trial saw it left running and its result lost).
TEST(Reconcile, a_probe_whose_job_was_deleted_is_still_recorded) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.api.remove(kJobs + "/bert");
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  ASSERT_TRUE(w.measure().ok());
  EXPECT_FALSE(w.probe_job()) << "collected";
  const json profile = *w.api.peek(kProfiles + "/" + w.pool());
  EXPECT_NEAR(profile["status"]["link"]["busbwGBps"].get<double>(), 50.0, 1e-9);
  w.remove_probe_pods();
  ASSERT_TRUE(w.measure().ok());
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "nobody waits: no probe";
}

// A nodeSelector with a typo: the probe cannot be scheduled, the researcher deletes the
// job. The probe's failure is recorded, the probe goes, and the CommProfile that never held
// a measurement goes too (a trial saw it stay for ever); a measured pool's stays.
TEST(Reconcile, an_empty_profile_nobody_waits_on_is_deleted) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.probe_pods({nullptr, nullptr},
               {{{"type", "PodScheduled"},
                 {"status", "False"},
                 {"reason", "Unschedulable"},
                 {"message", "0/3 nodes are available: 3 node(s) didn't match node selector."}}});
  w.api.remove(kJobs + "/bert");
  ASSERT_TRUE(w.measure().ok());
  EXPECT_FALSE(w.probe_job());
  EXPECT_FALSE(w.api.peek(kProbeServices + "/" + w.probe()));
  w.remove_probe_pods();
  ASSERT_TRUE(w.measure().ok());
  EXPECT_FALSE(w.api.peek(kProfiles + "/" + w.pool())) << "deleted";
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
}

// A job of another model submitted while the pool's probe runs: that probe does not time
// its model, so it waits for the next one.
TEST(Reconcile, a_job_of_another_model_waits_for_the_pools_probe) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.submit(a_job("vit").params(80e6));
  const auto r = w.reconcile("vit");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(requeue_of(r), 2s);
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
  EXPECT_EQ(condition_reason(w.status("vit"), condition::kProbed), op_reason::kWaitingForPoolProbe);
  EXPECT_EQ(w.status("vit")["phase"], phase::kGated);
}

// A job waiting for another model's probe, then decided from the pool's measurement that
// another job collected: its Probed condition says measured, not still waiting (a trial
// saw Admitted=True beside Probed=False WaitingForPoolProbe).
TEST(Reconcile, a_job_decided_from_a_probe_another_job_collected_is_probed) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.submit(a_job("vit").params(80e6).step_time_hint_ms(400));
  ASSERT_TRUE(w.reconcile("vit").ok());
  ASSERT_EQ(condition_reason(w.status("vit"), condition::kProbed), op_reason::kWaitingForPoolProbe);

  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  const auto r = w.reconcile("vit");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.status("vit")["phase"], phase::kAdmitted) << w.status("vit").dump(2);
  EXPECT_EQ(condition_status(w.status("vit"), condition::kProbed), kTrue)
      << w.status("vit").dump(2);
  EXPECT_EQ(condition_reason(w.status("vit"), condition::kProbed), kReasonProbeSucceeded);
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
}

TEST(Reconcile, a_running_probe_requeues_after_the_poll) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  {
    json created = *w.probe_job();  // as an API server stamps it (the fake does not)
    created["metadata"]["creationTimestamp"] = format_rfc3339(w.now);
    w.api.seed(kProbeJobs, created);
  }
  w.probe_pods({{{"running", json::object()}}, {{"running", json::object()}}});
  w.probe_job_status({{"active", 2}});
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(requeue_of(r), 2s);
  EXPECT_EQ(w.status("bert")["phase"], phase::kProbing);
  // The pool's condition names the attempt (a trial found it missing) and the jobs served;
  // the job's Probed condition says the same.
  const json profile = *w.api.peek(kProfiles + "/" + w.pool());
  const json* probing = find_condition(profile["status"]["conditions"], kProbingCondition);
  ASSERT_TRUE(probing);
  EXPECT_NE(
      (*probing)["message"].get<std::string>().find("on 4 nodes (attempt 1 of 3) for ml/bert: 4 "
                                                    "probe pods: 2 measuring, 2 not created yet"),
      std::string::npos)
      << probing->dump();
  EXPECT_EQ(condition_message(w.status("bert"), condition::kProbed), (*probing)["message"]);
  // How far it is (#20: a long probe read as stuck), in whole minutes of its deadline
  // (the policy's probe timeout, 300 s here, and a minute to start).
  EXPECT_NE((*probing)["message"].get<std::string>().find("; running under 1m of its 6m deadline"),
            std::string::npos)
      << probing->dump();
  w.now += 3min + 10s;
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_NE(condition_message(w.status("bert"), condition::kProbed)
                .find("; running 3m of its 6m deadline"),
            std::string::npos)
      << w.status("bert").dump(2);
}

// ---------------------------------------------------------------------------------------
// measured -> decided: the table of decisions

struct DecisionCase {
  std::string name;
  EnforcementAction enforcement;
  double busbw_gbps;
  std::string want_action;
  std::string want_phase;
  int want_nodes;     // spec.numNodes after the patch
  bool want_suspend;  // spec.suspend after the patch
  std::string want_event;
  std::string want_counter;  // CommPolicy status.decisionCounts
};

void PrintTo(const DecisionCase& c, std::ostream* os) {
  *os << c.name;
}

class DecideAfterProbe : public ::testing::TestWithParam<DecisionCase> {};

TEST_P(DecideAfterProbe, patches_spec_and_annotations_once_and_records_it) {
  const DecisionCase& c = GetParam();
  World w(c.enforcement);
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(c.busbw_gbps, w.now - 1min));

  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json job = w.job("bert");
  const json status = job["status"];
  EXPECT_EQ(status["decision"]["action"], c.want_action) << status.dump(2);
  EXPECT_EQ(status["phase"], c.want_phase);
  EXPECT_EQ(job["spec"]["numNodes"], c.want_nodes);
  EXPECT_EQ(job["spec"]["suspend"], c.want_suspend);
  EXPECT_EQ(status["observedGeneration"], job["metadata"]["generation"]);
  for (const json& cond : status["conditions"])
    EXPECT_EQ(cond["observedGeneration"], job["metadata"]["generation"]) << cond.dump();
  EXPECT_EQ(condition_status(status, condition::kProbed), kTrue);
  EXPECT_EQ(status["measurement"]["nodesProbed"], 4);
  EXPECT_NEAR(status["measurement"]["busbwGBps"].get<double>(), c.busbw_gbps, 1e-9);

  // What /validate does with the operator's update: hold the object to its record.
  const TrainingJob patched = parse_training_job(job);
  const auto record = decision_record_of(patched);
  ASSERT_TRUE(record);
  const RecordVerdict want_verdict =
      c.want_action == "Deny" ? RecordVerdict::kDenied : RecordVerdict::kHolds;
  EXPECT_EQ(check_against_record(*record, patched.spec), want_verdict);
  const auto& a = patched.metadata.annotations;
  EXPECT_EQ(a.at(annotation::kDecision), c.want_action);
  EXPECT_EQ(a.at(annotation::kRequestedNodes), "4");
  EXPECT_EQ(a.at(annotation::kReason), record->reason);

  // One patch of the TrainingJob for the gate? no: the webhook gated it; one for the decision.
  int patches = 0;
  for (const std::string& action : w.api.actions()) patches += action == "patch " + kJobs + "/bert";
  EXPECT_EQ(patches, 1);
  EXPECT_FALSE(w.probe_job()) << "the probe Job is deleted once its result is recorded";
  EXPECT_FALSE(w.api.peek(kProbeServices + "/" + w.probe()));
  const json profile = *w.api.peek(kProfiles + "/" + w.pool());
  EXPECT_NEAR(profile["status"]["link"]["busbwGBps"].get<double>(), c.busbw_gbps, 1e-9);
  ASSERT_TRUE(w.event(c.want_event)) << ::testing::PrintToString(w.event_reasons());
  const json policy = *w.api.peek(kPolicies + "/team");
  EXPECT_EQ(policy["status"]["decisionCounts"][c.want_counter], 1) << policy.dump(2);
  EXPECT_EQ(policy["status"]["decisionCounts"]["gated"], 1);
  EXPECT_NE(w.reconciler.metrics_text().find("commgate_operator_decisions_total{action=\"" +
                                             c.want_action + "\"} 1"),
            std::string::npos);

  // The next reconcile follows the record: nothing is decided or counted again.
  const auto again = w.reconcile("bert");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(w.job("bert")["metadata"]["annotations"], job["metadata"]["annotations"]);
  EXPECT_EQ((*w.api.peek(kPolicies + "/team"))["status"]["decisionCounts"][c.want_counter], 1);
}

INSTANTIATE_TEST_SUITE_P(
    Reconcile, DecideAfterProbe,
    ::testing::Values(
        DecisionCase{"fast_link_admits_as_requested", EnforcementAction::kDownsize, 50.0, "Admit",
                     phase::kAdmitted, 4, false, "Admitted", "admitted"},
        DecisionCase{"slow_link_downsizes", EnforcementAction::kDownsize, 0.4, "Downsize",
                     phase::kDownsized, 2, false, "Downsized", "downsized"},
        DecisionCase{"slow_link_under_deny_rejects", EnforcementAction::kDeny, 0.4, "Deny",
                     phase::kRejected, 4, true, "Denied", "denied"},
        DecisionCase{"slow_link_under_dryrun_admits_and_counts_the_would_be_downsize",
                     EnforcementAction::kDryRun, 0.4, "Admit", phase::kAdmitted, 4, false,
                     "Admitted", "dryRunWouldDownsize"},
        DecisionCase{"slow_link_under_warn_admits_with_a_warning", EnforcementAction::kWarn, 0.4,
                     "Warn", phase::kAdmitted, 4, false, "AdmittedOverPolicy", "warned"}),
    [](const ::testing::TestParamInfo<DecisionCase>& param_info) { return param_info.param.name; });

TEST(Reconcile, downsize_event_and_rejection_carry_the_numbers) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(0.4, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  const auto e = w.event("Downsized");
  ASSERT_TRUE(e);
  const std::string note = (*e)["note"];
  EXPECT_EQ(note.rfind("downsized from 4 to 2 nodes: predicted communication share ", 0), 0u)
      << note;
  EXPECT_NE(note.find("> 0.30 at 4 nodes"), std::string::npos) << note;
  EXPECT_NE(note.find("CommPolicy team"), std::string::npos) << note;

  World d(EnforcementAction::kDeny);
  d.submit(a_job("bert"));
  reconcile_to_probing(d, "bert");
  d.finish_probe(a_probe_result(0.4, d.now - 1min));
  ASSERT_TRUE(d.reconcile("bert").ok());
  const json status = d.status("bert");
  EXPECT_EQ(status["admittedNodes"], 0);
  EXPECT_EQ(condition_status(status, condition::kAdmitted), kFalse);
  const std::string message = status["decision"]["message"];
  EXPECT_NE(message.find("%"), std::string::npos) << "the researcher sees the numbers: " << message;
  EXPECT_FALSE(d.api.peek(kWorkloadJobs + "/bert")) << "nothing runs";
}

// ---------------------------------------------------------------------------------------
// Admitted -> Running -> Succeeded | Failed

TEST(Reconcile, admitted_job_runs_its_workload_and_follows_it_to_the_end) {
  struct Case {
    std::string name;
    json job_status;
    std::string want_phase;
    std::string want_condition;  // True at the end
  };
  const std::vector<Case> cases = {
      {"succeeds",
       {{"succeeded", 2}, {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}},
       phase::kSucceeded,
       condition::kComplete},
      {"fails",
       {{"failed", 3},
        {"conditions",
         {{{"type", "Failed"},
           {"status", "True"},
           {"reason", "BackoffLimitExceeded"},
           {"message", "Job has reached the specified backoff limit"}}}}},
       phase::kFailed,
       condition::kFailed},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    World w;
    w.submit(a_job("bert"));
    reconcile_to_probing(w, "bert");
    w.finish_probe(a_probe_result(0.4, w.now - 1min));
    ASSERT_TRUE(w.reconcile("bert").ok());
    const auto workload = w.api.peek(kWorkloadJobs + "/bert");
    ASSERT_TRUE(workload) << "the training Job is created with the decision";
    EXPECT_TRUE(w.api.peek(kWorkloadServices + "/bert"));
    EXPECT_EQ((*workload)["spec"]["completions"], 2) << "downsized to 2 nodes";
    EXPECT_EQ(w.status("bert")["phase"], phase::kDownsized);
    EXPECT_EQ(w.status("bert")["admittedNodes"], 2);
    // One process per node, in the singular (user trial, #9: "2 nodes x 1 processes").
    const auto created = w.event("WorkloadCreated");
    ASSERT_TRUE(created);
    EXPECT_EQ((*created)["note"], "created Job ml/bert with 2 nodes x 1 process");

    json running = *workload;
    running["status"] = {{"active", 2}};
    w.api.update_status(kWorkloadJobs + "/bert", running);
    ASSERT_TRUE(w.reconcile("bert").ok());
    EXPECT_EQ(w.status("bert")["phase"], phase::kRunning);
    EXPECT_EQ(condition_status(w.status("bert"), condition::kRunning), kTrue);

    json done = *w.api.peek(kWorkloadJobs + "/bert");
    done["status"] = c.job_status;
    w.api.update_status(kWorkloadJobs + "/bert", done);
    ASSERT_TRUE(w.reconcile("bert").ok());
    EXPECT_EQ(w.status("bert")["phase"], c.want_phase);
    EXPECT_EQ(condition_status(w.status("bert"), c.want_condition), kTrue);
    EXPECT_EQ(condition_status(w.status("bert"), condition::kRunning), kFalse);
    EXPECT_EQ(w.creates_of(kWorkloadJobs + "/bert"), 1);

    // The finished Job goes (ttlSecondsAfterFinished): the training is not run again.
    w.api.remove(kWorkloadJobs + "/bert");
    ASSERT_TRUE(w.reconcile("bert").ok());
    EXPECT_EQ(w.creates_of(kWorkloadJobs + "/bert"), 1);
    EXPECT_EQ(w.status("bert")["phase"], c.want_phase);
  }
}

// Newcomer trial C1: numNodes or the model changed after the training Job was created
// (no webhook, or failurePolicy Ignore, let the edit through). Decided again, the job
// showed 4 nodes Admit, or Gated/ComputeMeasurementMissing, while the Job ran its 2 pods.
// The change is not applied and the status says so; the Job keeps its admitted size.
TEST(Reconcile, a_spec_change_after_the_workload_exists_is_not_applied_and_said) {
  struct Change {
    std::string name;
    std::string pointer;
    json value;
    std::string want_in_message;
  } const changes[] = {
      {"more nodes", "/spec/numNodes", 4, "to change spec.numNodes"},
      {"another model", "/spec/model/parameters", 7e9, "to change its spec"},
  };
  for (const Change& c : changes) {
    SCOPED_TRACE(c.name);
    World w;
    w.submit(a_job("bert"));
    reconcile_to_probing(w, "bert");
    w.finish_probe(a_probe_result(0.4, w.now - 1min));
    ASSERT_TRUE(w.reconcile("bert").ok());
    json workload = *w.api.peek(kWorkloadJobs + "/bert");
    workload["status"] = {{"active", 2}};
    w.api.update_status(kWorkloadJobs + "/bert", workload);
    ASSERT_TRUE(w.reconcile("bert").ok());
    ASSERT_EQ(w.status("bert")["phase"], phase::kRunning);
    const json decision_before = w.status("bert")["decision"];
    const json measurement_before = w.status("bert")["measurement"];
    const json stored_before = w.job("bert");
    // The pool is probed again meanwhile (another job's probe): a faster link now.
    {
      const std::string profile = kProfiles + "/" + w.pool();
      CommProfile newer = parse_comm_profile(*w.api.peek(profile), w.now);
      record_probe_result(newer, a_probe_result(9.0, w.now));
      json stored = *w.api.peek(profile);
      stored["status"] = to_json(newer)["status"];
      w.api.update_status(profile, stored);
    }

    json edited = w.job("bert");
    edited[json::json_pointer(c.pointer)] = c.value;
    edited["metadata"]["generation"] = 2;
    w.api.update(kJobs + "/bert", edited);
    for (int i = 0; i < 2; ++i) {
      const auto r = w.reconcile("bert");
      ASSERT_TRUE(r.ok()) << r.error().message;
    }
    const json status = w.status("bert");
    EXPECT_EQ(status["phase"], phase::kRunning) << status.dump();
    EXPECT_EQ(status["admittedNodes"], 2);
    // A job that ran keeps describing the decision it ran under, not one re-derived from
    // the newer probe (a trial saw its decision and measurement rewritten beside a
    // record whose decidedAt stayed).
    EXPECT_EQ(status["decision"], decision_before) << status.dump();
    EXPECT_EQ(status["measurement"], measurement_before) << status.dump();
    EXPECT_EQ(condition_status(status, condition::kAdmitted), kTrue);
    EXPECT_EQ(condition_status(status, condition::kSpecApplied), kFalse) << status.dump();
    EXPECT_EQ(condition_reason(status, condition::kSpecApplied), op_reason::kSpecChangeNotApplied);
    const std::string message =
        find_condition(status["conditions"], condition::kSpecApplied)->value("message", "");
    EXPECT_NE(message.find("the training Job already runs with 2 nodes; delete and resubmit "
                           "the TrainingJob " +
                           c.want_in_message),
              std::string::npos)
        << message;
    EXPECT_EQ(w.events_of(op_reason::kSpecChangeNotApplied), 1) << "once, not per reconcile";
    EXPECT_EQ(w.creates_of(kWorkloadJobs + "/bert"), 1);
    EXPECT_EQ((*w.api.peek(kWorkloadJobs + "/bert"))["spec"]["completions"], 2);

    // Back to the spec decided: the condition goes.
    json restored = w.job("bert");
    restored[json::json_pointer(c.pointer)] = stored_before[json::json_pointer(c.pointer)];
    restored["metadata"]["generation"] = 3;
    w.api.update(kJobs + "/bert", restored);
    ASSERT_TRUE(w.reconcile("bert").ok());
    EXPECT_EQ(condition_status(w.status("bert"), condition::kSpecApplied), "");
    EXPECT_EQ(w.status("bert")["phase"], phase::kRunning);
  }
}

// Admitted at more nodes than the scheduler can place (a 4-node job on a pool where one
// node is cordoned): the workload Job has pods running and one Pending as Unschedulable.
// The job is not Running (torchrun waits for every node): Running=False with the
// scheduler's message, and one Warning however often it is reconciled.
// Issue #20 defect 4: a failed training said only "Job has reached the specified backoff
// limit"; the researcher had to find the pods and their logs. The message now names the
// rank that failed first and its error line (from the termination message the kubelet
// keeps under FallbackToLogsOnError, which the operator sets on the workload's containers).
TEST(Reconcile, a_failed_workload_says_which_rank_failed_first_and_why) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(0.4, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  json workload = *w.api.peek(kWorkloadJobs + "/bert");
  EXPECT_EQ(workload["spec"]["template"]["spec"]["containers"][0]["terminationMessagePolicy"],
            "FallbackToLogsOnError");
  const std::string uid = workload["metadata"]["uid"];
  const char* const logs[] = {
      "RuntimeError: Connection closed by peer\n",
      "Traceback (most recent call last):\n  File \"train.py\", line 9\n"
      "RuntimeError: The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
      "already in use).\nERROR:torch.distributed.elastic.multiprocessing.api:failed\n"};
  for (int i = 0; i < 2; ++i) {
    json terminated = {{"exitCode", 1},
                       {"reason", "Error"},
                       {"finishedAt", i == 1 ? "2026-12-05T10:00:01Z" : "2026-12-05T10:00:04Z"},
                       {"message", logs[i]}};
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", "bert-" + std::to_string(i) + "-x"},
                  {"labels",
                   {{kJobNameLabel, "bert"},
                    {"batch.kubernetes.io/controller-uid", uid},
                    {"batch.kubernetes.io/job-completion-index", std::to_string(i)}}}}},
                {"status",
                 {{"phase", "Failed"},
                  {"containerStatuses",
                   {{{"name", "trainer"}, {"state", {{"terminated", terminated}}}}}}}}};
    w.api.seed("/api/v1/namespaces/ml/pods", pod);
  }
  workload["status"] = {{"failed", 2},
                        {"conditions",
                         {{{"type", "Failed"},
                           {"status", "True"},
                           {"reason", "BackoffLimitExceeded"},
                           {"message", "Job has reached the specified backoff limit"}}}}};
  w.api.update_status(kWorkloadJobs + "/bert", workload);
  ASSERT_TRUE(w.reconcile("bert").ok());
  const json status = w.status("bert");
  EXPECT_EQ(status["phase"], phase::kFailed);
  const json* failed = find_condition(status["conditions"], condition::kFailed);
  ASSERT_TRUE(failed);
  EXPECT_EQ((*failed)["reason"], "BackoffLimitExceeded");
  EXPECT_NE((*failed)["message"].get<std::string>().find(
                "Job has reached the specified backoff limit; pod bert-1-x (node rank 1) exited "
                "with code 1: RuntimeError: The server socket has failed to bind to [::]:29500"),
            std::string::npos)
      << (*failed)["message"];
}

TEST(Reconcile, a_workload_pod_the_scheduler_cannot_place_is_said_not_running) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(0.4, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  json workload = *w.api.peek(kWorkloadJobs + "/bert");
  workload["status"] = {{"active", 2}, {"ready", 1}};
  w.api.update_status(kWorkloadJobs + "/bert", workload);
  const std::string uid = workload["metadata"]["uid"];
  for (int i = 0; i < 2; ++i) {
    json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", "bert-" + std::to_string(i) + "-x"},
          {"labels", {{kJobNameLabel, "bert"}, {"batch.kubernetes.io/controller-uid", uid}}}}},
        {"status", {{"phase", i == 0 ? "Running" : "Pending"}}}};
    if (i == 1)
      pod["status"]["conditions"] = {
          {{"type", "PodScheduled"},
           {"status", "False"},
           {"reason", "Unschedulable"},
           {"message", "0/2 nodes are available: 1 node(s) were unschedulable."}}};
    w.api.seed("/api/v1/namespaces/ml/pods", pod);
  }
  for (int i = 0; i < 2; ++i) {
    const auto r = w.reconcile("bert");
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  const json status = w.status("bert");
  EXPECT_EQ(status["phase"], phase::kDownsized) << "decided, not running";
  EXPECT_EQ(condition_status(status, condition::kRunning), kFalse);
  EXPECT_EQ(condition_reason(status, condition::kRunning), op_reason::kPodsUnschedulable);
  const std::string message =
      find_condition(status["conditions"], condition::kRunning)->value("message", "");
  EXPECT_NE(message.find("1 node(s) were unschedulable"), std::string::npos) << message;
  int warnings = 0;
  for (const std::string& r : w.event_reasons()) warnings += r == op_reason::kPodsUnschedulable;
  EXPECT_EQ(warnings, 1);
}

// Issue #20 defect 2: a 6-node job on a 2-node pool held its 2 nodes for ever. A workload
// pod the scheduler has not placed for --workload-unschedulable-timeout (10 min) stops the
// training: the workload Job is deleted (its pods with it) and the job fails with why.
TEST(Reconcile, a_workload_unschedulable_past_the_timeout_is_stopped_and_fails) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(0.4, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  json workload = *w.api.peek(kWorkloadJobs + "/bert");
  workload["status"] = {{"active", 2}, {"ready", 1}};
  w.api.update_status(kWorkloadJobs + "/bert", workload);
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", "bert-1-x"},
                {"labels",
                 {{kJobNameLabel, "bert"},
                  {"batch.kubernetes.io/controller-uid", workload["metadata"]["uid"]}}}}},
              {"status",
               {{"phase", "Pending"},
                {"conditions",
                 {{{"type", "PodScheduled"},
                   {"status", "False"},
                   {"reason", "Unschedulable"},
                   {"lastTransitionTime", format_rfc3339(w.now - 4min)},
                   {"message", "0/2 nodes are available: 2 node(s) were in use."}}}}}}};
  w.api.seed("/api/v1/namespaces/ml/pods", pod);

  auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(requeue_of(r), 6min) << "looked at again when the 10 minutes are up";
  EXPECT_TRUE(w.api.peek(kWorkloadJobs + "/bert"));

  w.now += 6min;
  r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(w.api.peek(kWorkloadJobs + "/bert")) << "deleted: its pods free their nodes";
  const json status = w.status("bert");
  EXPECT_EQ(status["phase"], phase::kFailed);
  EXPECT_EQ(condition_reason(status, condition::kFailed), op_reason::kWorkloadUnschedulable);
  const std::string message = condition_message(status, condition::kFailed);
  EXPECT_NE(message.find("stopped after 10m: 1 of 1 pod(s) cannot be scheduled: 0/2 nodes are "
                         "available: 2 node(s) were in use."),
            std::string::npos)
      << message;
  EXPECT_TRUE(w.event(op_reason::kWorkloadUnschedulable));
  // Not started again.
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_FALSE(w.api.peek(kWorkloadJobs + "/bert"));
  EXPECT_EQ(w.status("bert")["phase"], phase::kFailed);
}

TEST(Reconcile, a_job_being_deleted_is_left_to_the_garbage_collector) {
  World w;
  json doc = a_job("bert").json();
  doc["metadata"]["deletionTimestamp"] = "2026-11-30T11:59:00Z";
  doc["metadata"]["finalizers"] = {"example.com/keep"};
  w.submit_raw(doc);
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.action(), kube::Action::await_change());
  EXPECT_TRUE(w.api.actions().empty()) << ::testing::PrintToString(w.api.actions());
}

TEST(Reconcile, probe_duration_is_measured_from_the_probe_jobs_creation) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  json created = *w.probe_job();  // the API server sets creationTimestamp; the fake does not
  created["metadata"]["creationTimestamp"] = "2026-11-30T11:59:00Z";
  w.api.seed(kProbeJobs, created);
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  const std::string text = w.measurement.metrics_text();
  EXPECT_NE(text.find("commgate_operator_probe_duration_seconds_sum 60\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("commgate_operator_probe_duration_seconds_count 1\n"), std::string::npos);
  EXPECT_NE(text.find("commgate_operator_probe_duration_seconds_bucket{le=\"30\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("commgate_operator_probe_duration_seconds_bucket{le=\"60\"} 1\n"),
            std::string::npos);
  // The pool's gauges, from the measurement recorded.
  EXPECT_NE(text.find("commgate_operator_pool_busbw_gbps{pool=\"" + w.pool() + "\"} 50\n"),
            std::string::npos)
      << text;
}

TEST(Reconcile, resubmission_to_a_freshly_measured_pool_is_decided_without_a_probe) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  const int probes = w.creates_of(kProbeJobs + "/" + w.probe());

  // The webhook admits the resubmission from the fresh CommProfile: a record that holds.
  w.now += 10min;
  w.submit(a_job("bert-2"));
  ASSERT_EQ(w.job("bert-2")["metadata"]["annotations"][annotation::kDecision], "Admit");
  const auto r = w.reconcile("bert-2");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), probes) << "no new probe";
  EXPECT_TRUE(w.api.peek(kWorkloadJobs + "/bert-2"));
  const json status = w.status("bert-2");
  EXPECT_EQ(status["phase"], phase::kAdmitted);
  EXPECT_EQ(status["decision"]["action"], "Admit");
  EXPECT_FALSE(status["decision"]["predictions"].empty()) << "the webhook's decision, shown";
  EXPECT_EQ((*w.api.peek(kPolicies + "/team"))["status"]["decisionCounts"]["admitted"], 2);
}

// A researcher edits an admitted job (3 nodes instead of 4) and the webhook decides the
// update again: status.decision shows the new decision (requested 3, its predictions),
// not the one made for the old spec (a user trial saw the old one stay).
TEST(Reconcile, a_decision_the_webhook_made_again_after_an_edit_replaces_the_shown_one) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  w.submit(a_job("bert-2"));
  ASSERT_TRUE(w.reconcile("bert-2").ok());
  const json before = w.status("bert-2")["decision"];
  ASSERT_EQ(before["action"], "Admit");
  ASSERT_EQ(before["requestedNodes"], 4);

  json doc = w.job("bert-2");
  doc["spec"]["numNodes"] = 3;
  doc["metadata"]["generation"] = 2;
  const JobDecision jd =
      decide_for_job(parse_training_job(doc), *w.snapshot(), Requester{"alice", {}}, w.now);
  ASSERT_EQ(jd.decision.action, commgate::Action::kAdmit) << jd.decision.message;
  annotate(doc, record_of(jd, parse_training_job(doc), w.now));
  w.api.seed(kJobs, doc);

  const auto r = w.reconcile("bert-2");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json after = w.status("bert-2")["decision"];
  EXPECT_EQ(after["requestedNodes"], 3);
  EXPECT_EQ(after["predictedCommShare"], decision_to_json(jd.decision)["predictedCommShare"]);
  EXPECT_NE(after["predictedCommShare"], before["predictedCommShare"]);
  EXPECT_EQ(w.status("bert-2")["observedGeneration"], 2);
}

// The measurement controller recorded a probe's result and deleted the probe; its cache
// of CommProfiles has not shown that write yet. It waits for the cache instead of reading
// the stale profile's "not measured" as a demand for a second probe; the job is decided
// once the cache (its snapshot) shows the measurement.
TEST(Reconcile, a_measurement_the_cache_has_not_shown_yet_is_waited_for_not_probed_again) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.reader.freeze(kProfiles + "/" + w.pool());
  w.cache_lags = true;  // the snapshot misses the CommProfile's new status too
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  ASSERT_TRUE(w.measure().ok());
  EXPECT_FALSE(w.probe_job()) << "collected";
  w.remove_probe_pods();
  const auto stale = w.measure();
  ASSERT_TRUE(stale.ok()) << stale.error().message;
  EXPECT_EQ(stale.action().requeue_delay(), std::optional<kube::Clock::duration>(100ms));
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.status("bert")["phase"], phase::kGated) << "not decided from a stale cache";
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "no second probe";

  w.reader.thaw();
  w.cache_lags = false;
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted) << w.status("bert").dump(2);
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
}

// ---------------------------------------------------------------------------------------
// Probe failures, retries, the final state

struct BadResultCase {
  std::string name;
  std::function<std::string(const ProbeResult&)> message;
};

class InvalidProbeResult : public ::testing::TestWithParam<BadResultCase> {};

TEST_P(InvalidProbeResult, is_a_condition_and_a_retry_after_backoff) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(GetParam().message(a_probe_result(5.0, w.now - 1min)));
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(requeue_of(w.measure()), 30s) << "backoffBaseSeconds";
  const json status = w.status("bert");
  EXPECT_EQ(condition_reason(status, condition::kProbed), kReasonProbeResultInvalid)
      << status.dump(2);
  EXPECT_EQ(status["phase"], phase::kGated);
  EXPECT_EQ(w.history().failed_attempts, 1);
  EXPECT_EQ(w.history().last_failure_reason, kReasonProbeResultInvalid);
  ASSERT_TRUE(w.history().next_probe_time);
  EXPECT_EQ(format_rfc3339(*w.history().next_probe_time), "2026-11-30T12:00:30Z");
  EXPECT_FALSE(w.probe_job()) << "the failed probe is deleted, so a retry can run";
  const auto e = w.event(kReasonProbeResultInvalid);
  ASSERT_TRUE(e);
  EXPECT_EQ((*e)["type"], "Warning");
  EXPECT_EQ(w.job("bert")["spec"]["suspend"], true);
}

INSTANTIATE_TEST_SUITE_P(
    Reconcile, InvalidProbeResult,
    ::testing::Values(BadResultCase{"garbage",
                                    [](const ProbeResult&) { return std::string("not json {"); }},
                      BadResultCase{"truncated",
                                    [](const ProbeResult& r) {
                                      const std::string m = compact_probe_result(r);
                                      return m.substr(0, m.size() / 2);
                                    }},
                      BadResultCase{"another_schema_version",
                                    [](const ProbeResult& r) {
                                      json j = json::parse(compact_probe_result(r));
                                      j["apiVersion"] = "commgate.io/v2";
                                      return j.dump();
                                    }},
                      BadResultCase{"out_of_range_bandwidth",
                                    [](const ProbeResult& r) {
                                      json j = json::parse(compact_probe_result(r));
                                      j["allReduce"]["fit"]["busbwGBps"] = -1;
                                      return j.dump();
                                    }}),
    [](const ::testing::TestParamInfo<BadResultCase>& param_info) {
      return param_info.param.name;
    });

// The probe failed; the reconcile recorded attempt 1 and its nextProbeTime in the status and
// deleted the probe Job. The deletion wakes the job again before the cache shows that
// status write: the older copy has no nextProbeTime and must not start a second probe at
// once, nor count the failure twice (seen trying it on the sim: "attempt 1 of 4", then
// "attempt 2 of 4" 0.04 s later).
TEST(Reconcile, a_cached_copy_older_than_this_processs_own_write_waits_for_the_cache) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.fail_probe();
  ASSERT_TRUE(w.measure().ok());
  w.remove_probe_pods();
  w.reader.freeze(kJobs + "/bert");           // the cache stops before the job's next status write
  ASSERT_TRUE(w.reconcile_job("bert").ok());  // Probed: the failure, with its retry time
  ASSERT_EQ(condition_reason(w.status("bert"), condition::kProbed), kReasonProbeFailed);
  // The copy before that write comes back from the cache (the probe's deletion woke the
  // job before the status write's own event): it is not acted on.
  const auto stale = w.reconcile_job("bert");
  ASSERT_TRUE(stale.ok()) << stale.error().message;
  EXPECT_EQ(stale.action().requeue_delay(), std::optional<kube::Clock::duration>(100ms));
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "no probe from the stale copy";
  EXPECT_EQ(w.history().failed_attempts, 1) << "one failure, counted once";
}

TEST(Reconcile, retry_waits_for_its_backoff_then_probes_again) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.fail_probe();
  ASSERT_TRUE(w.reconcile("bert").ok());
  const json leftover = *w.api.peek(kProbePods + "/" + w.probe() + "-0-x");
  w.remove_probe_pods();
  EXPECT_EQ(w.history().failed_attempts, 1);
  EXPECT_EQ(condition_reason(w.status("bert"), condition::kProbed), kReasonProbeFailed);
  EXPECT_NE(condition_message(w.status("bert"), condition::kProbed).find("retrying in 30 s"),
            std::string::npos)
      << w.status("bert").dump(2);

  w.now += 10s;
  const auto early = w.measure();
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(requeue_of(early), 20s);
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "not before nextProbeTime";

  w.now += 21s;
  reconcile_to_probing(w, "bert");
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 2);
  EXPECT_FALSE(w.history().next_probe_time);

  // The first attempt's failed pods are still there (the garbage collector is slow): they
  // carry the deleted Job's controller-uid, so they are not this attempt's.
  w.api.seed(kProbePods, leftover);
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.status("bert")["phase"], phase::kProbing) << w.status("bert").dump(2);
  EXPECT_EQ(w.history().failed_attempts, 1);
  // ... nor is a rank 0 of the first attempt that wrote something else.
  json old_rank0 = leftover;
  old_rank0["metadata"]["name"] = w.probe() + "-0-a";
  old_rank0["status"]["containerStatuses"][0]["state"] = {
      {"terminated", {{"exitCode", 0}, {"message", "not this attempt's result"}}}};
  w.api.seed(kProbePods, old_rank0);
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  const auto measured = w.reconcile("bert");
  ASSERT_TRUE(measured.ok()) << measured.error().message;
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted) << w.status("bert").dump(2);
}

// Issue #19 item 10: the failure of a probe is recorded before the probe is deleted. When
// the status write of that failure fails (a 500 here, a 409 alike), the failed probe stays
// for the next reconcile to count: it was deleted first, the attempt was lost, and the
// next reconcile probed again at once, without backoff (unbounded GPU probes).
TEST(Reconcile, a_failed_probe_is_deleted_only_after_its_failure_is_recorded) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.fail_probe();
  w.api.fail_next(Method::kUpdateStatus,
                  kube::ApiError(500, "InternalError", "etcd timeout", "PUT"));
  const auto lost = w.measure();
  ASSERT_FALSE(lost.ok());
  EXPECT_FALSE(lost.error().is_terminal);
  EXPECT_TRUE(w.api.peek(kProbeJobs + "/" + w.probe()).has_value())
      << "the failed probe is kept until its failure is recorded";
  EXPECT_EQ(w.history().failed_attempts, 0);

  ASSERT_TRUE(w.measure().ok());
  EXPECT_EQ(w.history().failed_attempts, 1);
  EXPECT_TRUE(w.history().next_probe_time);
  EXPECT_FALSE(w.api.peek(kProbeJobs + "/" + w.probe()).has_value()) << "deleted once recorded";
  w.remove_probe_pods();
  // And the backoff holds: no new probe before nextProbeTime.
  w.now += 5s;
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
}

// Issue #21: the status write after a failed probe gets a 409 (another writer of the
// CommProfile came between): read again and written again, the attempt is counted, and
// the next probe waits for its backoff. Conflicts past the retries leave the probe for
// the next reconcile, which counts it once.
TEST(Reconcile, a_conflict_on_the_failures_write_still_counts_the_attempt_and_its_backoff) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.fail_probe();
  const std::string profile = kProfiles + "/" + w.pool();
  w.api.before_next(Method::kUpdateStatus, [&] {
    json p = *w.api.peek(profile);
    p["metadata"]["labels"]["touched"] = "yes";
    w.api.update(profile, p);  // the status write in flight now carries a stale version
  });
  ASSERT_TRUE(w.measure().ok());
  EXPECT_EQ(w.history().failed_attempts, 1);
  ASSERT_TRUE(w.history().next_probe_time);
  EXPECT_EQ(*w.history().next_probe_time, w.now + 30s);
  EXPECT_EQ((*w.api.peek(profile))["metadata"]["labels"]["touched"], "yes");
  EXPECT_FALSE(w.probe_job());
  w.remove_probe_pods();
  w.now += 29s;
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "the backoff holds";
  w.now += 2s;
  reconcile_to_probing(w, "bert");
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 2);

  // Conflicts on every try: the probe stays, and the next reconcile counts it, once.
  w.fail_probe();
  w.api.fail_next(Method::kUpdateStatus, FakeClient::conflict("commprofiles", w.pool()), 5);
  ASSERT_FALSE(w.measure().ok());
  EXPECT_TRUE(w.probe_job());
  EXPECT_EQ(w.history().failed_attempts, 1);
  ASSERT_TRUE(w.measure().ok());
  EXPECT_EQ(w.history().failed_attempts, 2);
  EXPECT_FALSE(w.probe_job());
  ASSERT_TRUE(w.measure().ok());
  EXPECT_EQ(w.history().failed_attempts, 2);
}

// The retry's Warning keeps one stop between the scheduler's sentence and "retrying" (a
// user trial saw "... nvidia.com/gpu.; retrying in 30 s").
TEST(Reconcile, an_unschedulable_probes_retry_event_has_one_stop) {
  World w(EnforcementAction::kDownsize, /*retries=*/2);
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.probe_pods({nullptr, nullptr},
               {{{"type", "PodScheduled"},
                 {"status", "False"},
                 {"reason", "Unschedulable"},
                 {"message", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}}});
  ASSERT_TRUE(w.reconcile("bert").ok());
  const auto e = w.event(kReasonProbeUnschedulable);
  ASSERT_TRUE(e) << ::testing::PrintToString(w.event_reasons());
  const std::string note = e->value("note", e->value("message", ""));
  EXPECT_NE(note.find("Insufficient nvidia.com/gpu; retrying in "), std::string::npos) << note;
  EXPECT_EQ(note.find(".;"), std::string::npos) << note;
}

TEST(Reconcile, retries_exhausted_fail_the_job_for_good) {
  World w(EnforcementAction::kDownsize, /*retries=*/1);
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.fail_probe();
  ASSERT_TRUE(w.reconcile("bert").ok());
  w.remove_probe_pods();
  w.now += 31s;
  reconcile_to_probing(w, "bert");
  // The second attempt: the scheduler cannot place the pods.
  w.probe_pods({nullptr, nullptr},
               {{{"type", "PodScheduled"},
                 {"status", "False"},
                 {"reason", "Unschedulable"},
                 {"message", "0/3 nodes are available: 3 node(s) didn't match node selector."}}});
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.action(), kube::Action::await_change());
  const json status = w.status("bert");
  EXPECT_EQ(status["phase"], phase::kFailed) << status.dump(2);
  EXPECT_EQ(condition_status(status, condition::kFailed), kTrue);
  EXPECT_EQ(condition_reason(status, condition::kFailed), op_reason::kProbeFailed);
  EXPECT_EQ(condition_reason(status, condition::kProbed), kReasonProbeUnschedulable);
  const std::string message =
      find_condition(status["conditions"], condition::kFailed)->value("message", "");
  EXPECT_NE(message.find("didn't match node selector; commgate cannot decide"), std::string::npos)
      << message;
  EXPECT_TRUE(w.event(op_reason::kProbeFailed));

  // Never stuck, never looping: later reconciles create nothing.
  w.remove_probe_pods();
  w.now += 1h;
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 2);
  EXPECT_EQ(w.status("bert")["phase"], phase::kFailed);
  // Admitted still says why (a user trial saw MeasurementMissing come back here).
  EXPECT_EQ(condition_reason(w.status("bert"), condition::kAdmitted), op_reason::kProbeFailed);
  EXPECT_EQ(
      find_condition(w.status("bert")["conditions"], condition::kAdmitted)->value("message", ""),
      message);
}

// A request no probe the policy allows can decide is probed as far as the policy allows
// and then decided as over the policy, as the webhook and `commgate evaluate` say at
// admission (user trial, #9: it was gated "until a probe of at least N nodes" that
// probe.maxNodes forbids, then failed here).
TEST(Reconcile, a_request_no_allowed_probe_can_decide_is_downsized_to_what_one_can) {
  // probe.maxNodes 2 and maxExtrapolation 1: no probe decides 4 nodes, a 2-node one 2.
  json policy = a_policy();
  policy["spec"]["probe"] = {{"maxNodes", 2}};
  policy["spec"]["maxExtrapolation"] = 1;
  World w(policy);
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  EXPECT_EQ(w.probe_nodes(), 2);
  w.finish_probe(a_probe_result(50.0, w.now - 1min, 2));
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  json status = w.status("bert");
  EXPECT_EQ(status["phase"], phase::kDownsized) << status.dump(2);
  EXPECT_EQ(status["decision"]["admittedNodes"], 2) << status.dump(2);
  const std::string message = status["decision"].value("message", "");
  EXPECT_NE(message.find("spec.numNodes 4 is more than any probe CommPolicy"), std::string::npos)
      << message;
  EXPECT_NE(message.find("maxExtrapolation 1 x probe.maxNodes 2 = 2 nodes"), std::string::npos)
      << message;

  // The same pool, measured and fresh: the next such job is decided without a probe.
  w.submit(a_job("bert-2"));
  ASSERT_TRUE(w.reconcile("bert-2").ok());
  EXPECT_EQ(w.status("bert-2")["phase"], phase::kDownsized);
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
}

TEST(Reconcile, another_models_finished_probe_is_recorded_and_frees_the_pool) {
  World w;
  w.submit(a_job("bert"));
  w.submit(a_job("vit").params(80e6));
  reconcile_to_probing(w, "bert");
  ASSERT_TRUE(w.reconcile("vit").ok());
  w.finish_probe(a_probe_result(50.0, w.now - 1min));

  // vit sees bert's probe finished first: it records bert's result and starts its own.
  const auto r = w.reconcile("vit");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.status("vit")["phase"], phase::kProbing);
  ASSERT_TRUE(w.probe_job());
  EXPECT_EQ((*w.probe_job())["metadata"]["annotations"][kProbeForAnnotation], "ml/vit");
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 2);

  // bert finds its model measured in the profile: decided without probing again.
  const auto b = w.reconcile("bert");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted) << w.status("bert").dump(2);
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 2);
}

// A Job named `bert` whose controller reference names a TrainingJob `bert` of uid `owner`.
json a_job_controlled_by(const std::string& owner) {
  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"name", "bert"},
            {"ownerReferences",
             {{{"apiVersion", "commgate.io/v1alpha1"},
               {"kind", "TrainingJob"},
               {"name", "bert"},
               {"uid", owner},
               {"controller", true}}}}}},
          {"spec", json::object()}};
}

TEST(Reconcile, the_job_of_an_earlier_trainingjob_of_the_same_name_is_waited_for) {
  World w;
  json old_workload = a_job_controlled_by("uid-of-the-deleted-one");
  old_workload["status"] = {{"succeeded", 4}};
  w.api.seed(kWorkloadJobs, old_workload);
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(requeue_of(r), 2s);
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted) << "not the old Job's Succeeded";
  EXPECT_EQ(condition_reason(w.status("bert"), condition::kRunning),
            op_reason::kPreviousWorkloadExists);

  w.api.remove(kWorkloadJobs + "/bert");  // the garbage collector catches up
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.creates_of(kWorkloadJobs + "/bert"), 1);
}

// A researcher's own Job of the job's name, made before the TrainingJob (issue #19 review):
// never adopted, never resized to the admitted count, and said so. Found both ways: in the
// cache, and (a Job without commgate's label is outside the operator's watch) only when
// creating the workload meets AlreadyExists.
TEST(Reconcile, a_job_of_the_same_name_that_commgate_did_not_create_is_not_adopted) {
  for (const bool in_cache : {true, false}) {
    SCOPED_TRACE(in_cache ? "the cache holds it" : "only the API server holds it");
    World w;
    json theirs = {{"apiVersion", "batch/v1"},
                   {"kind", "Job"},
                   {"metadata", {{"name", "bert"}}},
                   {"spec", {{"parallelism", 1}, {"completions", 1}}}};
    w.api.seed(kWorkloadJobs, theirs);
    w.submit(a_job("bert"));
    reconcile_to_probing(w, "bert");
    w.finish_probe(a_probe_result(50.0, w.now - 1min));
    if (!in_cache) w.reader.hide(kWorkloadJobs + "/bert", 100);
    const auto r = w.reconcile("bert");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(requeue_of(r), 2s);
    const json status = w.status("bert");
    EXPECT_EQ(condition_reason(status, condition::kRunning), op_reason::kWorkloadNameTaken)
        << status.dump(2);
    EXPECT_TRUE(w.event(op_reason::kWorkloadNameTaken));
    EXPECT_FALSE(w.event(op_reason::kWorkloadCreated));
    const json job = *w.api.peek(kWorkloadJobs + "/bert");
    EXPECT_EQ(job["spec"]["parallelism"], 1) << "not held to the admitted count";
    EXPECT_FALSE(job["metadata"].contains("ownerReferences"));

    w.api.remove(kWorkloadJobs + "/bert");  // the researcher deletes it
    w.reader.hide("", 0);
    ASSERT_TRUE(w.reconcile("bert").ok());
    EXPECT_TRUE(w.event(op_reason::kWorkloadCreated));
  }
}

// The attacker review of 2026-12-06: a 1-pod Job of 8 GPUs that names the waiting
// TrainingJob its controller (anyone with `edit` can write the reference) was taken for the
// workload and grown to the admitted count. Only the Job whose uid commgate recorded when it
// created it is the workload: another is deleted (that uid only) and commgate's own made.
TEST(Reconcile, a_job_that_forges_a_controller_reference_is_deleted_not_adopted) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  const std::string tj_uid = (*w.api.peek(kJobs + "/bert"))["metadata"]["uid"];
  json forged = a_job_controlled_by(tj_uid);
  forged["spec"] = {{"parallelism", 1}, {"completions", 1}};
  w.api.seed(kWorkloadJobs, forged);
  const std::string forged_uid = (*w.api.peek(kWorkloadJobs + "/bert"))["metadata"]["uid"];
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  json status = w.status("bert");
  EXPECT_EQ(condition_reason(status, condition::kRunning), op_reason::kWorkloadReplaced)
      << status.dump(2);
  EXPECT_TRUE(w.event(op_reason::kWorkloadReplaced));
  EXPECT_FALSE(w.event(op_reason::kWorkloadResized)) << "the forged Job was not grown";
  EXPECT_FALSE(w.api.peek(kWorkloadJobs + "/bert")) << "the forged Job is deleted";

  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_TRUE(w.event(op_reason::kWorkloadCreated));
  const json ours = *w.api.peek(kWorkloadJobs + "/bert");
  EXPECT_NE(ours["metadata"]["uid"], forged_uid);
  status = w.status("bert");
  EXPECT_EQ(status.value("workloadUID", ""), ours["metadata"]["uid"]) << status.dump(2);

  // Deleted and forged again once commgate's runs: not the recorded uid, so deleted too,
  // and commgate's own created again.
  w.api.remove(kWorkloadJobs + "/bert");
  forged["metadata"]["uid"] = "forged-again";
  w.api.seed(kWorkloadJobs, forged);
  w.reconcile("bert");
  w.reconcile("bert");
  const std::optional<json> now_running = w.api.peek(kWorkloadJobs + "/bert");
  ASSERT_TRUE(now_running);
  EXPECT_NE((*now_running)["metadata"]["uid"], "forged-again");
  EXPECT_EQ(w.status("bert").value("workloadUID", ""), (*now_running)["metadata"]["uid"]);
  EXPECT_EQ((*now_running)["spec"].value("parallelism", 0), 4) << "commgate's own Job";
}

// ---------------------------------------------------------------------------------------
// Errors mid-reconcile

TEST(Reconcile, status_write_conflict_is_retryable_and_the_next_reconcile_recovers) {
  World w;
  w.submit(a_job("bert"));
  w.api.fail_next(Method::kUpdateStatus, FakeClient::conflict("trainingjobs", "bert"));
  const auto r = w.reconcile("bert");
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error().is_terminal);
  EXPECT_NE(r.error().message.find("status"), std::string::npos) << r.error().message;
  EXPECT_NE(w.reconciler.metrics_text().find(
                "commgate_operator_reconcile_errors_total{step=\"status\"} 1"),
            std::string::npos);
  reconcile_to_probing(w, "bert");
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
}

TEST(Reconcile, decision_patch_conflict_is_retryable_and_decides_once) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(0.4, w.now - 1min));
  // The user edits a label between our read and our patch: the patch's resourceVersion
  // precondition makes it a 409.
  w.api.before_next(Method::kPatch, [&] {
    json edited = w.job("bert");
    edited["metadata"]["labels"]["team"] = "nlp";
    w.api.update(kJobs + "/bert", edited);
  });
  const auto r = w.reconcile("bert");
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error().is_terminal);
  const auto again = w.reconcile("bert");
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(w.status("bert")["phase"], phase::kDownsized);
  EXPECT_EQ(w.job("bert")["metadata"]["labels"]["team"], "nlp");
}

TEST(Reconcile, job_deleted_mid_reconcile_is_done) {
  World w;
  w.submit(a_job("bert"));
  w.api.before_next(Method::kUpdateStatus, [&] { w.api.remove(kJobs + "/bert"); });
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.action(), kube::Action::await_change());
  const auto gone = w.reconcile("bert");
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone.action(), kube::Action::await_change());
}

TEST(Reconcile, job_deleted_before_the_decision_patch_is_done) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(0.4, w.now - 1min));
  w.api.before_next(Method::kPatch, [&] { w.api.remove(kJobs + "/bert"); });
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.action(), kube::Action::await_change());
  EXPECT_FALSE(w.api.peek(kWorkloadJobs + "/bert")) << "nothing is launched for a deleted job";
}

TEST(Reconcile, profile_status_conflict_is_retried_keeping_the_other_writers_change) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  // Another writer updates the CommProfile between our read and our status write.
  const std::string profile = kProfiles + "/" + w.pool();
  w.api.before_next(Method::kUpdateStatus, [&] {
    json p = *w.api.peek(profile);
    p["metadata"]["labels"]["touched"] = "yes";
    w.api.update(profile, p);
  });
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json stored = *w.api.peek(profile);
  EXPECT_EQ(stored["metadata"]["labels"]["touched"], "yes");
  EXPECT_NEAR(stored["status"]["link"]["busbwGBps"].get<double>(), 50.0, 1e-9);
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted);
}

// The measurement is recorded (the measurement controller) and the decision's patch of the
// TrainingJob after it is a 409 (a user edited the job meanwhile), while the cache is
// behind the CommProfile's write: no second probe, and the job is decided once the cache
// shows the measurement.
TEST(Reconcile, a_measurement_recorded_before_a_failed_decision_is_not_probed_again) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.reader.freeze(kProfiles + "/" + w.pool());
  w.cache_lags = true;
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_FALSE(w.probe_job()) << "the probe was collected and deleted";
  w.remove_probe_pods();
  EXPECT_EQ(w.status("bert")["phase"], phase::kGated) << "the cache does not show it yet";

  w.reader.thaw();
  w.cache_lags = false;
  w.api.fail_next(Method::kPatch, FakeClient::conflict("trainingjobs", "bert"));
  const auto failed = w.reconcile_job("bert");
  ASSERT_FALSE(failed.ok());
  const auto r = w.reconcile("bert");  // the retry
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "no second probe";
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted) << w.status("bert").dump(2);
}

// Another replica (a leader handing over: both reconcile for a moment) collects the probe
// between this replica's read of the profile and its read of the probe: the probe is gone
// and this replica's profile has no measurement. It must not start a second probe (seen
// with operator_faults_test's dropped watches): the profile is read from the API server
// before a probe is created, and the cache waited for.
TEST(Reconcile, a_probe_collected_by_another_replica_between_two_reads_is_not_started_again) {
  World w;
  w.submit(a_job("bert"));
  w.submit(a_job("gpt"));
  reconcile_to_probing(w, "bert");
  reconcile_to_probing(w, "gpt");
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  const auto other_replica = w.measurement_with(World::measurement_settings(w.settings));
  w.reader.before_get(kProbeJobs + "/" + w.probe(), [&] {
    const auto collected = other_replica->reconcile(w.pool());
    ASSERT_TRUE(collected.ok()) << collected.error().message;
  });
  w.reader.freeze(kProfiles + "/" + w.pool());  // as this replica read it, before
  const auto r = w.measure();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "no second probe";
  w.reader.thaw();
  ASSERT_TRUE(w.reconcile("bert").ok());
  ASSERT_TRUE(w.reconcile("gpt").ok());
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted) << w.status("bert").dump(2);
  EXPECT_EQ(w.status("gpt")["phase"], phase::kAdmitted) << w.status("gpt").dump(2);
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "no second probe";
}

// A failover: the replica that led before recorded the probe's result in the profile and
// deleted the probe Job; this replica's cache shows the Job gone but not yet the profile's
// new status (its CommProfile watch lags). It must not probe the pool again (seen with
// operator_faults_test's dropped watches): the profile is read from the API server before
// a probe is created, and the cache waited for.
TEST(Reconcile, a_probe_another_replica_collected_while_this_cache_lags_is_not_started_again) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.record_behind_this_cache(a_probe_result(50.0, w.now - 1min));
  w.api.remove(kProbeJobs + "/" + w.probe());

  const auto waits = w.measure();
  ASSERT_TRUE(waits.ok()) << waits.error().message;
  EXPECT_EQ(waits.action().requeue_delay(), std::optional<kube::Clock::duration>(100ms));
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "no second probe";

  w.reader.thaw();
  w.cache_lags = false;
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted) << w.status("bert").dump(2);
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1) << "no second probe";
}

// The same, but this cache still shows the probe Job, Complete, while its pods are gone
// from it (deleted with the Job): read alone, "rank 0's pod is gone" is an invalid result.
// The profile from the API server says that probe's outcome is recorded
// (status.probe.lastProbeUID): no failure counted, no second probe.
TEST(Reconcile, a_collected_probe_a_lagging_cache_still_shows_is_not_a_failure) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  const std::string probe = kProbeJobs + "/" + w.probe();
  w.probe_job_status(
      {{"succeeded", 4}, {"conditions", {{{"type", "Complete"}, {"status", "True"}}}}});
  w.reader.freeze(probe);
  w.record_behind_this_cache(a_probe_result(50.0, w.now - 1min));
  w.api.remove(probe);

  ASSERT_TRUE(w.measure().ok());
  EXPECT_EQ(w.history().failed_attempts, 0) << "no failure counted";
  EXPECT_FALSE(w.event(kReasonProbeResultInvalid));
  w.reader.thaw();
  w.cache_lags = false;
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.status("bert")["phase"], phase::kAdmitted) << w.status("bert").dump(2);
  EXPECT_EQ(w.creates_of(probe), 1) << "no second probe";
}

// This cache still shows a failed probe that another replica has already handled: it
// deleted it and a new probe of the pool, under the same name, runs now. Deleting "the
// probe" by name would kill the new one; the delete names the UID it read.
TEST(Reconcile, a_stale_copy_of_a_failed_probe_never_deletes_the_newer_probe_of_its_name) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  const std::string probe = kProbeJobs + "/" + w.probe();
  w.fail_probe();
  w.reader.freeze(probe);
  json newer = *w.api.peek(probe);
  w.api.remove(probe);
  newer["metadata"].erase("uid");
  newer["metadata"].erase("resourceVersion");
  newer.erase("status");
  const std::string newer_uid = w.api.create(kProbeJobs, newer)["metadata"]["uid"];

  ASSERT_TRUE(w.reconcile("bert").ok());
  ASSERT_TRUE(w.probe_job()) << "the running probe stays";
  EXPECT_EQ((*w.probe_job())["metadata"]["uid"], newer_uid);
}

// A probe of milliseconds: the Job's Complete reaches this cache before its pods do. The
// pods are read from the API server before the result counts as missing: collected, not
// a failure and a second probe (seen in operator_faults_test, 6 probe runs for 4).
TEST(Reconcile, a_completed_probe_whose_pods_the_cache_has_not_seen_is_read_from_the_server) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  w.reader.unlist(kProbePods);
  const auto r = w.reconcile("bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(condition_reason(w.status("bert"), condition::kProbed), kReasonProbeSucceeded)
      << w.status("bert").dump(2);
  EXPECT_FALSE(w.status("bert").contains("probeAttempts")) << "no failure counted";
  EXPECT_EQ(w.creates_of(kProbeJobs + "/" + w.probe()), 1);
}

// Each outcome is written by a read-modify-write of the API server's copy: a cache behind
// the first result's write does not lose it when the second is recorded.
TEST(Reconcile, two_results_recorded_before_the_cache_shows_the_first_are_both_kept) {
  World w;
  w.submit(a_job("bert"));
  w.submit(a_job("vit").params(80e6));
  reconcile_to_probing(w, "bert");
  w.reader.freeze(kProfiles + "/" + w.pool());  // the cache stops here
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  ASSERT_TRUE(w.measure().ok());
  w.remove_probe_pods();
  w.reader.thaw();

  reconcile_to_probing(w, "vit");
  ProbeResult vit = a_probe_result(50.0, w.now - 1min);
  vit.compute->parameters = 80e6;
  w.finish_probe(vit);
  const auto r = w.reconcile("vit");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.status("vit")["phase"], phase::kAdmitted) << w.status("vit").dump(2);
  const json profile = *w.api.peek(kProfiles + "/" + w.pool());
  EXPECT_EQ(profile["status"]["computeSteps"].size(), 2u) << profile["status"].dump(2);
}

TEST(Reconcile, a_gate_the_webhook_wrote_past_its_deadline_is_decided_by_the_operator) {
  World w;
  json doc = a_job("bert").json();
  doc["spec"]["suspend"] = true;
  const TrainingJob job = parse_training_job(doc);
  // As webhook/mutate.cpp gate_past_deadline writes it.
  DecisionRecord timeout =
      a_record_for(job, commgate::Action::kGate, reason::kDecisionTimeout, w.now);
  timeout.message = "commgate could not decide within its 2000 ms deadline";
  annotate(doc, timeout);
  w.submit_raw(doc);
  reconcile_to_probing(w, "bert");
  w.finish_probe(a_probe_result(0.4, w.now - 1min));
  ASSERT_TRUE(w.reconcile("bert").ok());
  EXPECT_EQ(w.status("bert")["phase"], phase::kDownsized);
  EXPECT_EQ(w.job("bert")["spec"]["numNodes"], 2);
}

// Issue #19 item 2: the operator followed any record whose spec hash matched, and the hash
// is one anyone can compute. With a key, a record without a valid signature (here written
// by hand on a job the webhook never saw) is decided again, and the operator's own record
// is signed.
TEST(Reconcile, with_a_key_a_record_without_a_valid_signature_is_decided_again) {
  World w;
  // The pool measured: at 4 nodes a job is over the policy, 2 pass.
  w.submit(a_job("first"));
  reconcile_to_probing(w, "first");
  w.finish_probe(a_probe_result(0.4, w.now - 1min));
  ASSERT_TRUE(w.reconcile("first").ok());
  ASSERT_EQ(w.status("first")["phase"], phase::kDownsized);

  json doc = a_job("bert").json();
  const TrainingJob job = parse_training_job(doc);
  DecisionRecord forged = a_record_for(job, commgate::Action::kAdmit, reason::kWithinPolicy, w.now);
  forged.policy = {"team", ""};
  annotate(doc, forged);
  w.submit_raw(doc);

  const auto signer = std::make_shared<server::RecordSigner>(std::string(32, 'k'));
  ReconcilerSettings keyed = w.settings;
  keyed.records = signer;
  const auto reconciler = w.reconciler_with(keyed);
  const auto r = reconciler->reconcile("ml/bert");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(w.status("bert")["phase"], phase::kDownsized) << w.status("bert").dump(2);
  EXPECT_EQ(w.job("bert")["spec"]["numNodes"], 2);
  EXPECT_EQ(w.events_of(op_reason::kRecordNotTrusted), 1);
  const auto record = decision_record_of(parse_training_job(w.job("bert")));
  ASSERT_TRUE(record);
  EXPECT_TRUE(signer->verifies(*record, "ml/bert"));
  // From then on the operator's own record is followed: no second warning.
  ASSERT_TRUE(reconciler->reconcile("ml/bert").ok());
  EXPECT_EQ(w.events_of(op_reason::kRecordNotTrusted), 1);
}

// Issue #19: an exempt user's job gated NamespaceUnknown (or past the webhook's deadline)
// lost the exemption: the operator, which decides it later, did not know who asked. The
// signed gate record carries the requester; an unsigned one is not believed.
TEST(Reconcile, a_signed_gate_keeps_the_requesters_exemption_for_the_operators_decision) {
  json policy = a_policy();
  policy["spec"]["exemptions"]["users"] = {"carol"};
  World w(policy);
  json doc = a_job("bert").set("/spec/suspend", true).json();
  const TrainingJob job = parse_training_job(doc);
  DecisionRecord gate =
      a_record_for(job, commgate::Action::kGate, reason::kNamespaceUnknown, w.now);
  gate.message = "namespace ml is not in commgate's cache of Namespaces yet";
  gate.requester = Requester{"carol", {"system:authenticated"}};
  const auto signer = std::make_shared<server::RecordSigner>(std::string(32, 'k'));
  ReconcilerSettings keyed = w.settings;
  keyed.records = signer;

  // Unsigned: carol's name in it is anyone's to write; the job is decided as nobody's.
  json unsigned_doc = doc;
  annotate(unsigned_doc, gate);
  w.submit_raw(unsigned_doc);
  ASSERT_TRUE(w.reconciler_with(keyed)->reconcile("ml/bert").ok());
  EXPECT_NE(w.status("bert")["decision"].value("reason", ""), reason::kExempt)
      << w.status("bert").dump(2);
  w.api.remove(kJobs + "/bert");

  signer->sign(gate, "ml/bert");
  annotate(doc, gate);
  w.submit_raw(doc);
  ASSERT_TRUE(w.reconciler_with(keyed)->reconcile("ml/bert").ok());
  const json status = w.status("bert");
  EXPECT_EQ(status["decision"]["action"], "Admit") << status.dump(2);
  EXPECT_EQ(status["decision"]["reason"], reason::kExempt);
  EXPECT_EQ(w.job("bert")["spec"]["suspend"], false);
}

TEST(Reconcile, transient_api_errors_are_retryable_with_the_step) {
  World w;
  w.submit(a_job("bert"));
  w.api.fail_next(Method::kUpdateStatus,
                  kube::ApiError(500, "InternalError", "etcd timeout", "PUT"));
  const auto r = w.reconcile_job("bert");
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(r.error().is_terminal);
  EXPECT_EQ(r.error().message.rfind("status: ", 0), 0u) << r.error().message;
  // The pool's measurement names its pool.
  w.api.fail_next(Method::kCreate, kube::ApiError(500, "InternalError", "etcd timeout", "POST"));
  const auto m = w.measurement.reconcile(w.pool());
  ASSERT_FALSE(m.ok());
  EXPECT_FALSE(m.error().is_terminal);
  EXPECT_EQ(m.error().message.rfind("pool " + w.pool() + ": ", 0), 0u) << m.error().message;
}

TEST(Reconcile, invalid_spec_is_a_condition_and_a_terminal_error) {
  World w;
  w.submit_raw(a_job("bert").set("/spec/numNodes", "many").json());
  const auto r = w.reconcile("bert");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.error().is_terminal);
  EXPECT_NE(r.error().message.find("spec.numNodes"), std::string::npos) << r.error().message;
  EXPECT_EQ(condition_reason(w.status("bert"), condition::kSpecValid), op_reason::kInvalidSpec);
  EXPECT_FALSE(w.probe_job());
}

// A policyRef to a stored CommPolicy that does not parse (created without the webhook or
// the CRD's validation): Admitted=False PolicyInvalid with the policy's field error, and
// one Warning Event, not "not found" (user trial).
TEST(Reconcile, a_policy_ref_to_an_invalid_stored_policy_says_it_is_invalid) {
  json broken = a_policy();
  broken["metadata"]["name"] = "broken";
  broken["spec"]["maxCommShare"] = 1.5;
  World w;
  w.api.seed(kPolicies, broken);
  w.submit_raw(a_job("bert").policy_ref("broken").set("/spec/suspend", true).json());
  for (int i = 0; i < 2; ++i) {  // the status write brings the job back
    const auto r = w.reconcile("bert");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("exists but is invalid"), std::string::npos)
        << r.error().message;
  }
  EXPECT_EQ(condition_reason(w.status("bert"), condition::kAdmitted), op_reason::kPolicyInvalid);
  const json conditions = w.status("bert").value("conditions", json::array());
  const std::string message =
      find_condition(conditions, condition::kAdmitted)->value("message", "");
  EXPECT_EQ(message.find("not found"), std::string::npos) << message;
  EXPECT_NE(message.find("CommPolicy \"broken\" exists but is invalid"), std::string::npos)
      << message;
  EXPECT_NE(message.find("spec.maxCommShare: must be <= 1, got 1.5"), std::string::npos) << message;
  EXPECT_EQ(w.events_of(op_reason::kPolicyInvalid), 1);
  EXPECT_EQ(w.sink->patches(), 0);
  EXPECT_NE(w.event(op_reason::kPolicyInvalid)->value("note", "").find("spec.maxCommShare"),
            std::string::npos);
  EXPECT_FALSE(w.probe_job());
}

// One invalid TrainingJob, one InvalidSpec Event: the reconcile that follows its own status
// write (the same spec, the same message) recorded it again, a series of 2 (user trial).
TEST(Reconcile, invalid_spec_is_one_event_per_message) {
  World w;
  w.submit_raw(a_job("bert").set("/spec/numNodes", "many").json());
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(w.reconcile("bert").ok());
  EXPECT_EQ(w.events_of(op_reason::kInvalidSpec), 1);
  EXPECT_EQ(w.sink->patches(), 0) << "a series update is the Event again";

  // Another mistake is another message: one more Event.
  json edited = w.job("bert");
  edited["spec"]["numNodes"] = "several";
  edited["metadata"]["generation"] = 2;
  w.api.update(kJobs + "/bert", edited);
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(w.reconcile("bert").ok());
  EXPECT_EQ(w.events_of(op_reason::kInvalidSpec), 2);
  EXPECT_EQ(w.sink->patches(), 0);
}

TEST(Reconcile, a_name_the_workload_cannot_take_fails_before_anything_is_probed) {
  World w;
  const std::string name(62, 'b');  // pod hostnames <name>-<index> would pass 63 characters
  // The webhook refuses such a name (metadata.name); stored without it (none installed, or
  // created before it checked).
  w.submit_raw(a_job(name).json());
  const auto r = w.reconcile(name);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.action(), kube::Action::await_change());
  EXPECT_EQ(w.status(name)["phase"], phase::kFailed);
  EXPECT_EQ(condition_reason(w.status(name), condition::kFailed), op_reason::kInvalidWorkloadName);
  EXPECT_FALSE(w.probe_job());
  EXPECT_TRUE(w.event(op_reason::kInvalidWorkloadName));
}

TEST(Reconcile, a_bad_key_is_terminal) {
  World w;
  for (const std::string key : {"", "no-namespace", "/x", "x/", "a/b/c"}) {
    const auto r = w.reconciler.reconcile(key);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_TRUE(r.error().is_terminal) << key;
  }
}

// ---------------------------------------------------------------------------------------
// What the process uses

TEST(Reconcile, metrics_name_every_step) {
  World w;
  w.submit(a_job("bert"));
  reconcile_to_probing(w, "bert");
  const std::string text = w.reconciler.metrics_text();
  for (const char* want : {"commgate_operator_reconciles_total{step=\"read\"} 2",
                           "commgate_operator_reconciles_total{step=\"decide\"} 2",
                           "commgate_operator_reconciles_total{step=\"wait\"} 2",
                           "commgate_operator_status_writes_total 2"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  // Every series from the first scrape, at 0 until it counts.
  for (const char* zero : {"commgate_operator_decisions_total{action=\"Deny\"} 0",
                           "commgate_operator_reconcile_errors_total{step=\"wait\"} 0"})
    EXPECT_NE(text.find(zero), std::string::npos) << zero << "\n" << text;
  // A reconcile that decides counts the decide step once (issue #21: it was up to four).
  w.finish_probe(a_probe_result(50.0, w.now - 1min));
  ASSERT_TRUE(w.measure().ok());
  ASSERT_TRUE(w.reconcile_job("bert").ok());
  ASSERT_EQ(w.status("bert")["phase"], phase::kAdmitted);
  EXPECT_NE(
      w.reconciler.metrics_text().find("commgate_operator_reconciles_total{step=\"decide\"} 3\n"),
      std::string::npos)
      << w.reconciler.metrics_text();
  const std::string measured = w.measurement.metrics_text();
  for (const char* want : {"commgate_operator_probes_created_total 1",
                           "commgate_operator_probe_failures_total{reason=\"ProbeFailed\"} 0",
                           "# TYPE commgate_operator_probe_duration_seconds histogram"}) {
    EXPECT_NE(measured.find(want), std::string::npos) << want << "\n" << measured;
  }
}

TEST(Reconcile, the_pool_index_holds_the_suspended_jobs_of_each_pool) {
  auto tj = [](json selector, bool suspend) {
    return json{{"spec", {{"nodeSelector", selector}, {"suspend", suspend}}}};
  };
  const std::string a = pool_name({{"pool", "a"}}), b = pool_name({{"pool", "b"}});
  PoolIndex index;
  const json waits = tj({{"pool", "a"}}, true);
  EXPECT_EQ(index.update("ml/waits", &waits), std::vector<std::string>{a});
  const json waits_too = tj({{"pool", "a"}}, true), runs = tj({{"pool", "a"}}, false);
  const json garbage = "garbage";
  index.update("cv/waits-too", &waits_too);
  EXPECT_EQ(index.update("ml/runs", &runs), std::vector<std::string>{});
  EXPECT_EQ(index.update("ml/garbage", &garbage), std::vector<std::string>{});
  EXPECT_EQ(index.waiting_on(a), (std::vector<std::string>{"cv/waits-too", "ml/waits"}));
  // Moved to another pool: both pools are looked at again.
  const json moved = tj({{"pool", "b"}}, true);
  EXPECT_EQ(index.update("ml/waits", &moved), (std::vector<std::string>{a, b}));
  EXPECT_EQ(index.waiting_on(a), std::vector<std::string>{"cv/waits-too"});
  // Admitted (unsuspended), then deleted: its pool once, then nothing.
  EXPECT_EQ(index.update("cv/waits-too", &runs), std::vector<std::string>{a});
  EXPECT_EQ(index.update("cv/waits-too", nullptr), std::vector<std::string>{});
  EXPECT_EQ(index.pools(), std::vector<std::string>{b});
  EXPECT_EQ(index.waiting_on(pool_name({})), std::vector<std::string>{});
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
