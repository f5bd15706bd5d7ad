// What a decision reads besides the job (core/snapshot.h: CommPolicies, CommProfiles,
// namespace labels and the Nodes' summaries), kept current from the API: four informers
// (kube/informer.h) whose notifications rebuild one immutable Snapshot from the stores
// with core's parsers, swapped in atomically. The Nodes' store keeps only what
// core/pool_nodes.h reads (a watch transform), and a Node's change rebuilds only when its
// summary changed: a kubelet's status updates change nothing a decision reads. The webhook
// (webhook/kube_policy_source.h) and the operator both read it; neither includes the other
// (tests/layering).
//
// An object that does not parse is logged once per resourceVersion with its field paths
// and left out; it never stops the others. The snapshot stays null until all three stores
// have completed their first list, so a consumer can say "not ready" until it has seen
// the cluster's policies.
//
// Threads: a rebuild runs on whichever watcher's thread changed its store, one at a time;
// snapshot() and the counters may be read from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "core/snapshot.h"
#include "kube/api_client.h"
#include "kube/informer.h"
#include "kube/store.h"

namespace commgate::kube {

// The collections watched (crds/commpolicies.commgate.io.yaml and
// crds/commprofiles.commgate.io.yaml: both cluster-scoped, commgate.io/v1alpha1).
constexpr const char* kCommPoliciesPath = "/apis/commgate.io/v1alpha1/commpolicies";
constexpr const char* kCommProfilesPath = "/apis/commgate.io/v1alpha1/commprofiles";
constexpr const char* kNamespacesPath = "/api/v1/namespaces";
constexpr const char* kNodesPath = "/api/v1/nodes";
constexpr const char* kLocalQueuesPath = "/apis/kueue.x-k8s.io/v1beta2/localqueues";
constexpr const char* kClusterQueuesPath = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues";
constexpr const char* kAdmissionChecksPath = "/apis/kueue.x-k8s.io/v1beta2/admissionchecks";

// An object left out of a snapshot because it does not parse.
struct RejectedObject {
  std::string kind;  // "CommPolicy" or "CommProfile"
  std::string key;   // the store's key (the name: both are cluster-scoped)
  std::string resource_version;
  std::string why;  // the parser's message, with field paths
  // A CommPolicy whose last valid version stays in force instead (LastValidPolicies): its
  // resourceVersion; empty when nothing was kept.
  std::string kept_resource_version;
};

// The last version of each CommPolicy that parsed, by name, with the uid of the object
// it belonged to. A policy made invalid later (written while its validating webhook, which
// fails open, was down) keeps governing as that version instead of dropping out and
// letting a milder policy govern (issue #19 item 6). Kept by this process; after a
// restart, a policy invalid from the first list governs as the version the operator
// recorded in its status.lastValid (operator/policy_status.h), if any.
struct ValidPolicy {
  std::string uid;
  CommPolicy policy;
};
using LastValidPolicies = std::map<std::string, ValidPolicy>;

struct SnapshotBuild {
  std::shared_ptr<Snapshot> snapshot;  // never null
  std::vector<RejectedObject> rejected;
  // Every policy in the snapshot (parsed now, or kept), for the next build's `last_valid`.
  LastValidPolicies valid;
};

// The pure part: a Snapshot from the three collections' objects (by store key), with
// `now` as loaded_at and as the time profiles are checked against (a profile measured in
// the future is rejected by its parser). A CommPolicy that does not parse is replaced by
// its version in `last_valid` when that came from the same object (same uid), and said so
// in snapshot->stale_policies; otherwise it is left out (snapshot->invalid_policies).
SnapshotBuild build_snapshot(const Store::Objects& policies, const Store::Objects& profiles,
                             const Store::Objects& namespaces, TimePoint now,
                             const LastValidPolicies& last_valid = {});

class SnapshotCache {
 public:
  struct Options {
    Logger log;                        // default: stderr
    std::function<TimePoint()> clock;  // default: system clock
    int watch_timeout_seconds = 290;
    std::chrono::milliseconds backoff_initial{200};
    std::chrono::milliseconds backoff_max{30'000};
    // Watch the cluster's Nodes for the pool check (core/job_decision.h): the snapshot's
    // `nodes` stays null without it, and no job is checked against its pool's size.
    bool watch_nodes = true;
    // Watch Kueue's LocalQueues, ClusterQueues and AdmissionChecks (kueue.x-k8s.io/v1beta2)
    // for the workload gate (core/kueue_queues.h): the snapshot's `kueue_queues` stays null
    // without it. Not part of has_synced(): without Kueue's API the rest still serves.
    bool watch_kueue_queues = false;
  };

  // `client` must outlive the cache.
  SnapshotCache(const ApiClient& client, Options options);
  ~SnapshotCache();  // stop()
  SnapshotCache(const SnapshotCache&) = delete;
  SnapshotCache& operator=(const SnapshotCache&) = delete;

  // Before start(): called after every rebuild that swapped in a new snapshot (on the
  // watcher's thread that caused it; keep it short, e.g. put keys on a work queue).
  void on_rebuild(std::function<void()> handler);
  void start();
  // No rebuild and no handler runs after it returns.
  void stop();

  // Null until every collection watched has been listed.
  std::shared_ptr<const Snapshot> snapshot() const;
  bool has_synced() const;
  // Objects left out of the current snapshot because they do not parse.
  uint64_t rejected_objects() const { return rejected_.load(); }
  // CommPolicies that do not parse and govern as their last valid version.
  uint64_t policies_kept_last_valid() const { return kept_.load(); }
  uint64_t rebuilds() const { return rebuilds_.load(); }
  // The informers (policies, profiles, namespaces, then nodes where watched): for metrics,
  // for a cache-backed reader over their stores (kube/cached_reader.h), and for tests.
  std::vector<const Informer*> informers() const;
  // informer_metrics_text(informers(), prefix), <prefix>_rejected_objects and
  // <prefix>_policies_kept_last_valid (gauges).
  std::string metrics_text(std::string_view prefix) const;

 private:
  void rebuild();
  // After a change of the Nodes' store: true when a node's summary changed (then
  // nodes_ and nodes_generation_ are new).
  bool update_nodes(const std::vector<StoreChange>& changes);
  // After a change of Kueue's stores: true when the queues the gate reads changed (then
  // kueue_queues_ is new); false until all three have listed.
  bool update_kueue_queues();

  const Options options_;
  std::unique_ptr<Informer> policies_, profiles_, namespaces_;
  std::unique_ptr<Informer> nodes_informer_;  // null unless options_.watch_nodes
  // Null unless options_.watch_kueue_queues.
  std::unique_ptr<Informer> local_queues_, cluster_queues_, admission_checks_;
  std::shared_ptr<const Snapshot> snapshot_;  // std::atomic_load / atomic_store
  std::vector<std::function<void()>> handlers_;

  std::mutex rebuild_mu_;                        // one rebuild at a time; guards reported_
  std::map<std::string, std::string> reported_;  // "kind/key" -> resourceVersion logged
  LastValidPolicies last_valid_;                 // guarded by rebuild_mu_
  // Guarded by rebuild_mu_: each node's summary by name, and the vector the snapshots share.
  std::map<std::string, PoolNode> node_summaries_;
  std::shared_ptr<const std::vector<PoolNode>> nodes_;
  uint64_t nodes_generation_ = 0;
  std::shared_ptr<const KueueQueues> kueue_queues_;  // guarded by rebuild_mu_
  std::atomic<uint64_t> kept_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> rebuilds_{0};
};

}  // namespace commgate::kube
