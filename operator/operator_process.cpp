#include "operator/operator_process.h"

#include <algorithm>
#include <random>
#include <stdexcept>

#include "core/prometheus_text.h"
#include "kube/api_adapters.h"
#include "kube/api_client.h"
#include "kube/cached_reader.h"
#include "kube/client.h"
#include "kube/event_recorder.h"
#include "kube/informer.h"
#include "kube/leader_election.h"
#include "kube/runner.h"
#include "kube/snapshot_cache.h"
#include "kube/watcher_event.h"
#include "kube/work_queue.h"
#include "operator/kueue_admission_check_status.h"
#include "operator/kueue_check_reconciler.h"
#include "operator/measurement_reconciler.h"
#include "operator/policy_status.h"
#include "operator/pool_index.h"
#include "operator/probe_job.h"
#include "operator/state_metrics.h"

namespace commgate::op {
namespace {

using nlohmann::json;

// The policy-status queue's keys: each pass of the first writes every CommPolicy that
// needs it; the second writes the decisions counted since its last pass (one write per
// policy), a second after a decision was counted (the queue holds the key once).
constexpr const char* kPolicyStatusKey = "commpolicies";
constexpr const char* kDecisionCountsKey = "decision-counts";
constexpr auto kDecisionCountsDelay = std::chrono::seconds(1);
// With --kueue, a pass of the same queue writes every AdmissionCheck of ours that needs
// its Active condition (operator/kueue_admission_check_status.h).
constexpr const char* kAdmissionChecksKey = "admissionchecks";

std::string label(const json& object, const char* key) {
  const json::json_pointer p("/metadata/labels");
  if (!object.contains(p) || !object.at(p).is_object()) return "";
  const json& labels = object.at(p);
  auto it = labels.find(key);
  return it != labels.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string random_suffix() {
  std::random_device device;
  std::uniform_int_distribution<uint32_t> hex(0, 0xffffffff);
  char out[9];
  std::snprintf(out, sizeof out, "%08x", hex(device));
  return out;
}

}  // namespace

ManagedRef managed_ref_of(const json& object) {
  ManagedRef ref;
  const std::string ns = object.value(json::json_pointer("/metadata/namespace"), std::string());
  if (const std::string tj = label(object, kTrainingJobLabel); !tj.empty() && !ns.empty())
    ref.trainingjob = ns + "/" + tj;
  ref.pool = label(object, kPoolLabel);
  return ref;
}

std::string decision_inputs_of(const Snapshot& snapshot) {
  std::string out;
  for (const auto& p : snapshot.policies)
    out += "policy " + p.metadata.name + " " + std::to_string(p.metadata.generation) + "\n";
  // An invalid policy's errors too: fixed, or broken another way, its jobs are told again.
  for (const auto& [name, why] : snapshot.invalid_policies)
    out += "invalid policy " + name + " " + why + "\n";
  for (const auto& [name, why] : snapshot.stale_policies)
    out += "stale policy " + name + " " + why + "\n";
  for (const auto& [name, profile] : snapshot.profiles)
    out += "profile " + name + " " + profile.metadata.resource_version + "\n";
  // A node's summary that changed (the pool check reads them): a new generation.
  out += "nodes " + std::to_string(snapshot.nodes_generation) + "\n";
  for (const auto& [ns, labels] : snapshot.namespace_labels) {
    out += "namespace " + ns;
    for (const auto& [k, v] : labels) out += " " + k + "=" + v;
    out += "\n";
  }
  return out;
}

void keep_what_the_reconciler_reads_of_a_job(json& job) {
  kube::strip_unread_metadata(job);
  if (job.contains("spec") && job["spec"].is_object()) job["spec"].erase("template");
}

void keep_what_the_reconciler_reads_of_a_pod(json& pod) {
  kube::strip_unread_metadata(pod);
  if (!pod.contains("spec") || !pod["spec"].is_object()) return;
  json kept = json::object();
  if (pod["spec"].contains("nodeName")) kept["nodeName"] = pod["spec"]["nodeName"];
  pod["spec"] = std::move(kept);
}

std::string leader_identity(const std::string& pod_name, const std::string& suffix) {
  return (pod_name.empty() ? std::string("commgate-operator") : pod_name) + "_" + suffix;
}

// Declared in the order they are built; each reference member outlives its users.
struct OperatorProcess::Parts {
  explicit Parts(const OperatorOptions& o)
      : api(o.cluster, api_options(o, [this] { return !elector || elector->is_leader(); })),
        http(api),
        lease_api(o.cluster, lease_api_options(o)),
        lease_http(lease_api),
        snapshots(api, snapshot_options(o)),
        trainingjobs(api, watch_options(o, kTrainingJobsPath, "")),
        jobs(api, watch_options(o, kJobsPath, kManagedSelector,
                                keep_what_the_reconciler_reads_of_a_job)),
        pods(api, watch_options(o, kPodsPath, kManagedSelector,
                                keep_what_the_reconciler_reads_of_a_pod)),
        reader(reader_sources(), http),
        events(std::make_shared<kube::ApiEventSink>(http), recorder_options(o)),
        reconciler(
            reader, http, http, http, [this] { return snapshots.snapshot(); }, events,
            [] { return std::chrono::system_clock::now(); }, reconciler_settings(o)),
        measurement(
            reader, http, http, http, [this] { return snapshots.snapshot(); }, events,
            [] { return std::chrono::system_clock::now(); },
            [this](const std::string& pool) { return waiting_on(pool); }, measurement_settings(o)),
        queue(std::make_shared<kube::WorkQueue>(kube::steady_clock())),
        runner(queue, kube::steady_clock(),
               // Every failed reconcile is logged (controller-runtime's "Reconciler
               // error"): the metric counts them, the log says which job and why.
               [this, log = o.log.with({{"component", "reconcile"}})](const std::string& key) {
                 kube::ReconcileResult result = reconciler.reconcile(key);
                 if (!result.ok())
                   log.warning(
                       "reconcile of " + key + " failed" +
                           (result.error().is_terminal ? " (not retried)" : ", will retry") + ": " +
                           result.error().message,
                       {{"trainingjob", key}});
                 return result;
               },
               {o.concurrency, std::string(kMetricsPrefix) + "_controller"}),
        // One worker: pools are few, each reconcile is a few requests, and the probe slots
        // (--max-concurrent-probes) are counted by one reconcile at a time.
        measurement_queue(std::make_shared<kube::WorkQueue>(kube::steady_clock())),
        measurement_runner(
            measurement_queue, kube::steady_clock(),
            [this, log = o.log.with({{"component", "measurement"}})](const std::string& pool) {
              kube::ReconcileResult result = measurement.reconcile(pool);
              if (!result.ok())
                log.warning(
                    "measurement of " + pool + " failed, will retry: " + result.error().message,
                    {{"pool", pool}});
              return result;
            },
            {1, std::string(kMetricsPrefix) + "_measurement"}),
        policy_status_queue(std::make_shared<kube::WorkQueue>(kube::steady_clock())),
        policy_status_runner(
            policy_status_queue, kube::steady_clock(),
            [this, log = o.log.with({{"component", "policy-status"}})](const std::string& key) {
              if (key == kAdmissionChecksKey) return write_admission_check_status(log);
              return key == kDecisionCountsKey ? write_decision_counts(log)
                                               : write_policy_status(log);
            },
            {1, std::string(kMetricsPrefix) + "_policy_status"}) {
    if (o.kueue) kueue = std::make_unique<KueueParts>(o, *this);
  }

  // The Kueue check's parts (operator/kueue_check_reconciler.h), with --kueue only.
  struct KueueParts {
    KueueParts(const OperatorOptions& o, Parts& p)
        : workloads(p.api, watch_options(o, kueue::kWorkloads, "")),
          admission_checks(p.api, watch_options(o, kueue::kAdmissionChecks, "")),
          flavors(p.api, watch_options(o, kueue::kResourceFlavors, "")),
          // Not the process's reader: its Jobs store holds only commgate's own Jobs, and a
          // Workload's owner Job (or PyTorchJob, TrainJob, JobSet) is read from the API
          // server, one get per reconcile.
          reader(sources(p), p.http),
          check(
              reader, p.http, records, [&p] { return p.snapshots.snapshot(); }, p.events,
              [] { return std::chrono::system_clock::now(); }, check_settings(o)),
          queue(std::make_shared<kube::WorkQueue>(kube::steady_clock())),
          runner(queue, kube::steady_clock(),
                 [this, log = o.log.with({{"component", "kueue-check"}})](const std::string& key) {
                   kube::ReconcileResult result = check.reconcile(key);
                   if (!result.ok())
                     log.warning(
                         "check of workload " + key + " failed" +
                             (result.error().is_terminal ? " (not retried)" : ", will retry") +
                             ": " + result.error().message,
                         {{"workload", key}});
                   return result;
                 },
                 {o.concurrency, std::string(kMetricsPrefix) + "_kueue_check"}) {}

    std::vector<kube::CachedReader::Source> sources(const Parts& p) const {
      std::vector<kube::CachedReader::Source> out = {
          {kueue::kWorkloads, &workloads.store()},
          {kueue::kAdmissionChecks, &admission_checks.store()},
          {kueue::kResourceFlavors, &flavors.store()}};
      for (auto& source : p.snapshot_sources()) out.push_back(std::move(source));
      return out;
    }
    static kueue::CheckReconcilerSettings check_settings(const OperatorOptions& o) {
      kueue::CheckReconcilerSettings c;
      c.log = o.log.with({{"component", "kueue-check"}});
      return c;
    }
    bool synced() const {
      return workloads.has_synced() && admission_checks.has_synced() && flavors.has_synced();
    }

    kube::Informer workloads, admission_checks, flavors;
    kube::CachedReader reader;
    kueue::CheckDecisionRecords records;
    kueue::KueueCheckReconciler check;
    PoolIndex waiting;  // Workloads (kWorkloadDemandPrefix + "namespace/name") by pool
    std::shared_ptr<kube::WorkQueue> queue;
    kube::Runner runner;
  };

  // The consumers that wait on `pool`: the suspended TrainingJobs, and with --kueue the
  // Workloads whose check of ours waits (their demand keys).
  std::vector<std::string> waiting_on(const std::string& pool) const {
    std::vector<std::string> keys = waiting.waiting_on(pool);
    if (kueue)
      for (std::string& key : kueue->waiting.waiting_on(pool)) keys.push_back(std::move(key));
    return keys;
  }

  // One pass over every AdmissionCheck (the key is always kAdmissionChecksKey): the Active
  // condition of each of ours, given the CommPolicies the snapshot holds.
  kube::ReconcileResult write_admission_check_status(const Logger& log) {
    const auto snapshot = snapshots.snapshot();
    if (!kueue || !snapshot) return kube::Action::await_change();
    std::set<std::string> policies;
    for (const auto& p : snapshot->policies) policies.insert(p.metadata.name);
    for (const auto& [name, why] : snapshot->invalid_policies) policies.insert(name);
    for (const auto& [name, why] : snapshot->stale_policies) policies.insert(name);
    std::vector<json> checks;
    for (const auto& object : kueue->admission_checks.store().list("")) checks.push_back(*object);
    try {
      const size_t written = kueue::write_admission_check_statuses(
          checks, policies, http, std::chrono::system_clock::now());
      if (written > 0)
        log.info("wrote the Active condition of " + std::to_string(written) + " AdmissionCheck" +
                 (written == 1 ? "" : "s"));
    } catch (const std::exception& e) {
      log.warning(std::string("writing AdmissionCheck status failed, will retry: ") + e.what());
      return kube::ReconcileError::retryable(e.what());
    }
    return kube::Action::await_change();
  }

  // The decisions counted since the last pass, on their CommPolicies' status; retried
  // with backoff while a write fails (the increments stay pending).
  kube::ReconcileResult write_decision_counts(const Logger& log) {
    try {
      reconciler.flush_counters();
    } catch (const std::exception& e) {
      log.warning(std::string("writing CommPolicy decision counts failed, will retry: ") +
                  e.what());
      return kube::ReconcileError::retryable(e.what());
    }
    return kube::Action::await_change();
  }

  // One pass over every CommPolicy (the key is always kPolicyStatusKey): the status says
  // what the current snapshot says of each (operator/policy_status.h).
  kube::ReconcileResult write_policy_status(const Logger& log) {
    const auto snapshot = snapshots.snapshot();
    if (!snapshot) return kube::Action::await_change();
    const auto objects = snapshots.informers()[0]->store().snapshot();
    try {
      const size_t written =
          write_policy_statuses(*objects, *snapshot, http, std::chrono::system_clock::now());
      if (written > 0)
        log.info("wrote the status of " + std::to_string(written) + " CommPolic" +
                 (written == 1 ? "y" : "ies"));
    } catch (const std::exception& e) {
      log.warning(std::string("writing CommPolicy status failed, will retry: ") + e.what());
      return kube::ReconcileError::retryable(e.what());
    }
    return kube::Action::await_change();
  }

  // The reconciles' client writes only while this replica is sure it leads (`may_write`:
  // no elector, or its last renewal younger than the renew deadline), as a write sent
  // after that may land while another replica leads (issue #19 item 9). `elector` is read
  // when a write is about to go, long after it is set.
  static kube::ApiClient::Options api_options(const OperatorOptions& o,
                                              std::function<bool()> may_write) {
    kube::ApiClient::Options a;
    a.qps = o.kube_api_qps;
    a.burst = o.kube_api_burst;
    a.may_write = std::move(may_write);
    return a;
  }
  // The Lease's own client, as client-go's leader election has: no client-side rate limit
  // shared with the reconciles and no Retry-After retries (a renew that waited behind them
  // or for 30 s of Retry-After never reached the renew deadline, and the old leader kept
  // reconciling), and a timeout under the renew deadline (issue #19 item 9).
  static kube::ApiClient::Options lease_api_options(const OperatorOptions& o) {
    kube::ApiClient::Options a;
    a.qps = 0;
    a.max_retries = 0;
    a.request_timeout = std::max(std::chrono::seconds(1), o.renew_deadline / 2);
    return a;
  }
  ReconcilerSettings reconciler_settings(const OperatorOptions& o) {
    ReconcilerSettings r = o.reconciler;
    r.log = o.log.with({{"component", "reconcile"}});
    // policy_status_queue is built after the reconciler, and only used once it runs.
    r.counted = [this] {
      policy_status_queue->add_after(kDecisionCountsKey, kDecisionCountsDelay);
    };
    return r;
  }
  MeasurementSettings measurement_settings(const OperatorOptions& o) {
    MeasurementSettings m;
    // `kueue` is built after the measurement reconciler, and only asked once it runs.
    if (o.kueue)
      m.workload_demand = [this](const std::string& key, const Snapshot& snapshot, TimePoint now) {
        return kueue::workload_measurement_demand(kueue->reader, kueue->records, key, snapshot,
                                                  now);
      };
    m.probe = o.reconciler.probe;
    m.probe_poll = o.reconciler.probe_poll;
    m.records = o.reconciler.records;
    m.log = o.log.with({{"component", "measurement"}});
    return m;
  }
  static kube::SnapshotCache::Options snapshot_options(const OperatorOptions& o) {
    kube::SnapshotCache::Options s;
    s.log = o.log.with({{"component", "policy-watch"}});
    return s;
  }
  static kube::Watcher::Options watch_options(
      const OperatorOptions& o, const char* path, const char* selector,
      std::function<void(json&)> transform = kube::strip_unread_metadata) {
    kube::Watcher::Options w;
    w.path = path;
    w.label_selector = selector;
    w.transform = std::move(transform);
    w.log = o.log.with({{"component", "watch"}});
    return w;
  }
  static kube::EventRecorderOptions recorder_options(const OperatorOptions& o) {
    kube::EventRecorderOptions e;
    e.reporting_controller = kReportingController;
    e.reporting_instance = o.pod_name;
    e.log = o.log.with({{"component", "events"}});
    return e;
  }
  std::vector<kube::CachedReader::Source> reader_sources() const {
    std::vector<kube::CachedReader::Source> out = {{kTrainingJobsPath, &trainingjobs.store()},
                                                   {kJobsPath, &jobs.store()},
                                                   {kPodsPath, &pods.store()}};
    for (auto& source : snapshot_sources()) out.push_back(std::move(source));
    return out;
  }
  // The snapshot's collections (CommPolicies, CommProfiles, Namespaces) as reader sources.
  // Not the Nodes: their store holds only what the pool check reads (a transform), which a
  // reader of Node objects must not take for the objects.
  std::vector<kube::CachedReader::Source> snapshot_sources() const {
    std::vector<kube::CachedReader::Source> out;
    for (const kube::Informer* informer : snapshots.informers())
      if (informer->path() != kube::kNodesPath)
        out.push_back({informer->path(), &informer->store()});
    return out;
  }
  std::vector<const kube::Informer*> informers() const {
    std::vector<const kube::Informer*> out = {&trainingjobs, &jobs, &pods};
    for (const auto* i : snapshots.informers()) out.push_back(i);
    if (kueue)
      for (const kube::Informer* i : {&kueue->workloads, &kueue->admission_checks, &kueue->flavors})
        out.push_back(i);
    return out;
  }
  bool synced() const {
    return snapshots.has_synced() && trainingjobs.has_synced() && jobs.has_synced() &&
           pods.has_synced() && (!kueue || kueue->synced());
  }

  kube::ApiClient api;
  kube::HttpClient http;
  kube::ApiClient lease_api;
  kube::HttpClient lease_http;
  kube::SnapshotCache snapshots;
  kube::Informer trainingjobs, jobs, pods;
  kube::CachedReader reader;
  kube::EventRecorder events;
  PoolIndex waiting;  // the suspended TrainingJobs by pool
  TrainingJobReconciler reconciler;
  MeasurementReconciler measurement;
  std::shared_ptr<kube::WorkQueue> queue;
  kube::Runner runner;
  std::shared_ptr<kube::WorkQueue> measurement_queue;
  kube::Runner measurement_runner;
  std::shared_ptr<kube::WorkQueue> policy_status_queue;
  kube::Runner policy_status_runner;
  std::unique_ptr<KueueParts> kueue;             // with --kueue only
  std::unique_ptr<kube::LeaderElector> elector;  // with leader election only
  std::unique_ptr<server::Server> server;
};

OperatorProcess::OperatorProcess(OperatorOptions options) : options_(std::move(options)) {
  if (options_.identity.empty())
    options_.identity = leader_identity(options_.pod_name, random_suffix());
  parts_ = std::make_unique<Parts>(options_);
  wire_handlers();
  if (options_.leader_elect) {
    kube::LeaderElectionOptions le;
    le.lease_namespace = options_.ns;
    le.lease_name = options_.lease_name;
    le.identity = options_.identity;
    le.lease_duration = options_.lease_duration;
    le.renew_deadline = options_.renew_deadline;
    le.retry_period = options_.retry_period;
    le.on_started_leading = [this] { start_leading(); };
    le.on_stopped_leading = [this] { stop_leading(); };
    le.on_new_leader = [this](const std::string& holder) {
      options_.log.info("the Lease is held by " + (holder.empty() ? "nobody" : holder),
                        {{"lease", options_.lease_name}, {"holder", holder}});
    };
    le.log = options_.log.with({{"component", "leader-election"}});
    kube::validate(le);
    parts_->elector = std::make_unique<kube::LeaderElector>(
        std::make_shared<kube::ApiLeaseClient>(parts_->lease_http, parts_->lease_http),
        std::move(le));
  }

  server::Router router;
  router.get("/healthz",
             [](const server::Request&) { return server::Response::text(200, "ok\n"); });
  router.get("/readyz", [this](const server::Request&) {
    return ready() ? server::Response::text(200, "ok\n")
                   : server::Response::text(503, "caches not yet listed\n");
  });
  router.get("/metrics", [this](const server::Request&) {
    server::Response m = server::Response::text(200, metrics_text());
    m.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return m;
  });
  options_.server.log = options_.log.with({{"component", "server"}});
  parts_->server = std::make_unique<server::Server>(options_.server, std::move(router));
}

OperatorProcess::~OperatorProcess() {
  shutdown();
}

void OperatorProcess::wire_handlers() {
  // The reconcile lists a workload Job's pods by this label (pods_of_job): by index, not
  // by a scan of every managed pod (issue #27).
  parts_->pods.index_label(kJobNameLabel);
  auto& queue = *parts_->queue;
  parts_->trainingjobs.on_change([this, &queue](const std::vector<kube::StoreChange>& changes) {
    const kube::Store& store = parts_->trainingjobs.store();
    for (const auto& c : changes) {
      queue.add(c.key);
      const auto object = c.type == kube::StoreChange::Type::kDeleted ? nullptr : store.get(c.key);
      for (const std::string& pool : parts_->waiting.update(c.key, object.get()))
        parts_->measurement_queue->add(pool);
    }
  });
  parts_->jobs.on_change([this](const std::vector<kube::StoreChange>& changes) {
    on_managed_change(parts_->jobs.store(), jobs_index_, jobs_index_mu_, changes);
  });
  parts_->pods.on_change([this](const std::vector<kube::StoreChange>& changes) {
    on_managed_change(parts_->pods.store(), pods_index_, pods_index_mu_, changes);
  });
  parts_->snapshots.on_rebuild([this] { on_snapshot(); });
  if (auto* k = parts_->kueue.get()) {
    k->workloads.on_change([this](const std::vector<kube::StoreChange>& changes) {
      for (const auto& c : changes) on_workload_change(c.key);
    });
    // Which Workloads the check acts on, and their pools, follow from the checks and the
    // flavors; their Active condition from the checks.
    k->admission_checks.on_change([this](const std::vector<kube::StoreChange>&) {
      parts_->policy_status_queue->add(kAdmissionChecksKey);
      on_every_workload();
    });
    k->flavors.on_change([this](const std::vector<kube::StoreChange>&) { on_every_workload(); });
  }
}

void OperatorProcess::on_workload_change(const std::string& key) {
  auto& k = *parts_->kueue;
  k.queue->add(key);
  const auto object = k.workloads.store().get(key);
  const auto pool = object ? kueue::workload_waiting_pool(k.reader, *object) : std::nullopt;
  for (const std::string& p : k.waiting.update_pool(workload_demand_key(key), pool))
    parts_->measurement_queue->add(p);
}

void OperatorProcess::on_every_workload() {
  for (const auto& object : parts_->kueue->workloads.store().list(""))
    on_workload_change(kube::object_key(*object));
}

// A deleted object is gone from the store: its labels come from the index of what was
// seen, so a deleted workload Job still wakes its TrainingJob.
void OperatorProcess::on_managed_change(const kube::Store& store,
                                        std::map<std::string, ManagedRef>& index,
                                        std::mutex& index_mu,
                                        const std::vector<kube::StoreChange>& changes) {
  std::set<std::string> keys, pools;
  {
    std::lock_guard lock(index_mu);
    for (const auto& c : changes) {
      ManagedRef ref;
      const auto object = c.type == kube::StoreChange::Type::kDeleted ? nullptr : store.get(c.key);
      if (object) {
        ref = managed_ref_of(*object);
        index[c.key] = ref;
      } else if (auto it = index.find(c.key); it != index.end()) {
        ref = it->second;
        index.erase(it);
      }
      if (!ref.trainingjob.empty()) keys.insert(ref.trainingjob);
      if (!ref.pool.empty()) pools.insert(ref.pool);
    }
  }
  for (const std::string& pool : pools) {
    parts_->measurement_queue->add(pool);
    for (std::string& key : parts_->waiting.waiting_on(pool)) keys.insert(std::move(key));
    if (parts_->kueue)
      for (const std::string& key : parts_->kueue->waiting.waiting_on(pool))
        parts_->kueue->queue->add(workload_key_of_demand(key));
  }
  for (const std::string& key : keys) parts_->queue->add(key);
}

void OperatorProcess::on_snapshot() {
  const auto snapshot = parts_->snapshots.snapshot();
  if (!snapshot) return;
  std::string inputs = decision_inputs_of(*snapshot);
  {
    std::lock_guard lock(inputs_mu_);
    if (inputs == decision_inputs_) return;
    decision_inputs_ = std::move(inputs);
  }
  enqueue_suspended();
  // What waits on a pool follows from the same inputs (a policy's probe.maxNodes, a
  // profile gone stale).
  for (const std::string& pool : parts_->waiting.pools()) parts_->measurement_queue->add(pool);
  // What a policy governs follows from the policies and namespaces, which the decision
  // inputs include: a rebuild for a status write alone (each decision's counter) needs no
  // pass over every policy.
  parts_->policy_status_queue->add(kPolicyStatusKey);
  if (auto* k = parts_->kueue.get()) {
    // A CommPolicy created or deleted: the checks whose parameters name it.
    parts_->policy_status_queue->add(kAdmissionChecksKey);
    for (const std::string& key : k->waiting.waiting()) k->queue->add(workload_key_of_demand(key));
  }
}

void OperatorProcess::enqueue_suspended() {
  for (const std::string& key : parts_->waiting.waiting()) parts_->queue->add(key);
}

void OperatorProcess::start() {
  {
    std::lock_guard lock(mu_);
    if (started_) throw std::logic_error("OperatorProcess::start called twice");
    started_ = true;
  }
  parts_->server->start();
  options_.log.info("serving /healthz /readyz /metrics on " + options_.server.address + ":" +
                        std::to_string(parts_->server->port()) + " (https)",
                    {{"address", options_.server.address}, {"port", parts_->server->port()}});
  options_.log.info(
      "watching through " + parts_->api.config().server + " (" + parts_->api.config().source + ")",
      {{"server", parts_->api.config().server}});
  parts_->snapshots.start();
  parts_->trainingjobs.start();
  parts_->jobs.start();
  parts_->pods.start();
  if (auto* k = parts_->kueue.get()) {
    warn_if_kueue_is_not_served();
    k->workloads.start();
    k->admission_checks.start();
    k->flavors.start();
  }
  control_ = std::thread([this] { control_loop(); });
}

// The Workloads' watch would only log 404s, and the process would stay not ready with
// nothing saying why (a trial of docs/kueue.md met exactly that).
void OperatorProcess::warn_if_kueue_is_not_served() {
  const std::string group_version = "/apis/kueue.x-k8s.io/v1beta2";
  try {
    parts_->http.get(group_version);
  } catch (const kube::ApiError& e) {
    if (!e.not_found()) return;  // another failure: the watches say it
    options_.log.error(
        "--kueue: the API server does not serve kueue.x-k8s.io/v1beta2 (" + group_version +
            " is 404): install Kueue v0.16 or later (its CRDs) first, or run without --kueue. "
            "Until Workloads, AdmissionChecks and ResourceFlavors list, this operator is not "
            "ready and reconciles nothing, TrainingJobs included; it starts by itself once "
            "they are served",
        {{"path", group_version}});
  } catch (const std::exception&) {
  }
}

bool OperatorProcess::wait_synced() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (parts_->synced()) return true;
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
  return false;
}

void OperatorProcess::control_loop() {
  if (!wait_synced()) return;
  options_.log.info("caches synced");
  if (!parts_->elector) {
    start_leading();
    return;
  }
  options_.log.info("waiting to lead: Lease " + options_.ns + "/" + options_.lease_name + " as " +
                        options_.identity,
                    {{"lease", options_.lease_name}, {"identity", options_.identity}});
  parts_->elector->run();
}

void OperatorProcess::start_leading() {
  std::lock_guard lock(mu_);
  if (stopping_ || lost_ || runner_started_) return;
  parts_->runner.start();
  parts_->measurement_runner.start();
  parts_->policy_status_runner.start();
  parts_->policy_status_queue->add(kPolicyStatusKey);
  if (parts_->kueue) {
    parts_->kueue->runner.start();
    parts_->policy_status_queue->add(kAdmissionChecksKey);
  }
  runner_started_ = true;
  leading_ = true;
  options_.log.info("started reconciling (" + std::to_string(options_.concurrency) + " workers)",
                    {{"identity", options_.identity}, {"concurrency", options_.concurrency}});
}

void OperatorProcess::stop_leading() {
  bool stopping;
  {
    std::lock_guard lock(mu_);
    stopping = stopping_;
  }
  leading_ = false;
  parts_->runner.stop();  // no new key; the reconciles in flight finish
  parts_->measurement_runner.stop();
  parts_->policy_status_runner.stop();
  if (parts_->kueue) parts_->kueue->runner.stop();
  if (stopping) return;
  options_.log.error(
      "leader election lost: stopped reconciling; exiting so that Kubernetes restarts this "
      "replica as a candidate",
      {{"lease", options_.lease_name}, {"identity", options_.identity}});
  lost_ = true;
  cv_.notify_all();
}

bool OperatorProcess::wait_lost(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return lost_.load() || stopping_; });
  return lost_;
}

void OperatorProcess::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (shut_down_ || !parts_) return;
    shut_down_ = true;
    stopping_ = true;
  }
  cv_.notify_all();
  // A leader stops its runner (in-flight reconciles finish) and releases the Lease.
  if (parts_->elector) parts_->elector->stop();
  if (control_.joinable()) control_.join();
  parts_->runner.stop();
  parts_->measurement_runner.stop();
  parts_->policy_status_runner.stop();
  if (parts_->kueue) parts_->kueue->runner.stop();
  // The decisions counted in the last second are written before the process exits.
  bool counted_here;
  {
    std::lock_guard lock(mu_);
    counted_here = runner_started_ && !lost_;
  }
  if (counted_here) {
    try {
      parts_->reconciler.flush_counters();
    } catch (const std::exception& e) {
      options_.log.warning(std::string("writing CommPolicy decision counts failed: ") + e.what());
    }
  }
  leading_ = false;
  if (auto* k = parts_->kueue.get()) {
    k->flavors.stop();
    k->admission_checks.stop();
    k->workloads.stop();
  }
  parts_->pods.stop();
  parts_->jobs.stop();
  parts_->trainingjobs.stop();
  parts_->snapshots.stop();
  parts_->server->stop();
}

uint16_t OperatorProcess::port() const {
  return parts_->server->port();
}

bool OperatorProcess::ready() const {
  return parts_->synced();
}

bool OperatorProcess::leading() const {
  // The elector says "not leader" from the instant its renew deadline passes, a moment
  // before its callback stops the runner.
  return leading_.load() && (!parts_->elector || parts_->elector->is_leader());
}

std::string OperatorProcess::metrics_text() const {
  const std::string p = kMetricsPrefix;
  std::string out;
  out += "# HELP " + p + "_build_info The commgate version running.\n";
  out += "# TYPE " + p + "_build_info gauge\n";
  out += p + "_build_info{version=\"" + prometheus_escape_label(options_.version) + "\"} 1\n";
  append_prometheus_sample(out, p + "_leader", "gauge",
                           "1 while this replica reconciles (holds the Lease, or runs without "
                           "leader election), else 0.",
                           leading() ? 1 : 0);
  append_prometheus_sample(out, p + "_caches_synced", "gauge",
                           "1 once every watched collection has completed its first list.",
                           ready() ? 1 : 0);
  out += parts_->runner.metrics_text();
  out += parts_->measurement_runner.metrics_text();
  out += parts_->policy_status_runner.metrics_text();
  if (parts_->kueue) {
    out += parts_->kueue->runner.metrics_text();
    append_prometheus_sample(out, p + "_kueue_decision_records", "gauge",
                             "Kueue check decisions held in memory (by job and counts).",
                             static_cast<double>(parts_->kueue->records.size()));
  }
  out += parts_->reconciler.metrics_text();
  out += parts_->measurement.metrics_text();
  out += kube::informer_metrics_text(parts_->informers(), p);
  out += state_metrics_text(parts_->trainingjobs.store().list(""), std::chrono::system_clock::now(),
                            p);
  append_prometheus_sample(out, p + "_rejected_objects", "gauge",
                           "CommPolicies and CommProfiles left out of the snapshot because they "
                           "do not parse.",
                           static_cast<double>(parts_->snapshots.rejected_objects()));
  const auto reads = parts_->reader.counters();
  out += "# HELP " + p +
         "_cache_reads_total Reads of the reconciler: from the watch caches, or "
         "from the API server (not cached).\n";
  out += "# TYPE " + p + "_cache_reads_total counter\n";
  out += p + "_cache_reads_total{source=\"cache\"} " +
         prometheus_number(static_cast<double>(reads.cache_reads)) + "\n";
  out += p + "_cache_reads_total{source=\"api\"} " +
         prometheus_number(static_cast<double>(reads.fallback_reads)) + "\n";
  out += server::server_stats_prometheus(parts_->server->stats(), p + "_http");
  return out;
}

}  // namespace commgate::op
