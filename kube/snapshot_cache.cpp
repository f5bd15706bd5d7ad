#include "kube/snapshot_cache.h"

#include <optional>

#include "core/comm_policy.h"
#include "core/comm_profile.h"
#include "core/prometheus_text.h"

namespace commgate::kube {
using nlohmann::json;

namespace {

// status.lastValid (operator/policy_status.h) as a policy: the stored object with that
// spec, at the resourceVersion it was read at; nullopt when absent or not parsing.
std::optional<ValidPolicy> recorded_last_valid(const json& object, const std::string& uid) {
  static const json::json_pointer kSpec("/status/lastValid/spec");
  if (!object.contains(kSpec) || !object.at(kSpec).is_object()) return std::nullopt;
  json copy = object;
  copy["spec"] = object.at(kSpec);
  copy["metadata"]["resourceVersion"] =
      object["status"]["lastValid"].value("resourceVersion", std::string());
  try {
    return ValidPolicy{uid, parse_comm_policy(copy)};
  } catch (const std::exception&) {
    return std::nullopt;  // why the recorded spec fails is not news: the stored one fails too
  }
}

}  // namespace

SnapshotBuild build_snapshot(const Store::Objects& policies, const Store::Objects& profiles,
                             const Store::Objects& namespaces, TimePoint now,
                             const LastValidPolicies& last_valid) {
  SnapshotBuild out;
  out.snapshot = std::make_shared<Snapshot>();
  Snapshot& snap = *out.snapshot;
  auto reject = [&](const char* kind, const std::string& key, const json& object,
                    const std::string& why) {
    out.rejected.push_back({kind, key, resource_version_of(object), why, ""});
  };
  static const json::json_pointer kUid("/metadata/uid");
  for (const auto& [key, stored] : policies) {
    const json& object = *stored;
    const std::string uid = object.contains(kUid) && object.at(kUid).is_string()
                                ? object.at(kUid).get<std::string>()
                                : "";
    // An invalid one is kept by name, so a policyRef to it is not told "not found".
    const std::string why = snap.add_policy(object, key);
    if (why.empty()) {
      out.valid[snap.policies.back().metadata.name] = {uid, snap.policies.back()};
      continue;
    }
    reject("CommPolicy", key, object, why);
    // The same object's last valid version governs in its place: dropped, a milder
    // policy (or the built-in default) would govern its namespaces. This process's own
    // copy first, else the one the operator recorded in its status (after a restart).
    const auto kept_here = last_valid.find(key);
    std::optional<ValidPolicy> kept;
    if (kept_here != last_valid.end() && kept_here->second.uid == uid)
      kept = kept_here->second;
    else
      kept = recorded_last_valid(object, uid);
    if (!kept) continue;
    const CommPolicy& policy = kept->policy;
    snap.invalid_policies.erase(key);
    snap.stale_policies[key] = why + " (its last valid version, resourceVersion " +
                               policy.metadata.resource_version + ", stays in force)";
    snap.policies.push_back(policy);
    out.valid[key] = *kept;
    out.rejected.back().kept_resource_version = policy.metadata.resource_version;
  }
  for (const auto& [key, stored] : profiles) {
    const json& object = *stored;
    try {
      CommProfile p = parse_comm_profile(object, now);
      const std::string name = p.metadata.name;
      snap.profiles[name] = std::move(p);
    } catch (const std::exception& e) {
      reject("CommProfile", key, object, e.what());
    }
  }
  static const json::json_pointer kLabels("/metadata/labels");
  for (const auto& [key, stored] : namespaces) {
    const json& object = *stored;
    auto& labels = snap.namespace_labels[key];
    if (auto defaults = commgate_annotations_of_object(object); !defaults.empty())
      snap.namespace_commgate_annotations[key] = std::move(defaults);
    if (!object.contains(kLabels) || !object.at(kLabels).is_object()) continue;
    for (const auto& [k, v] : object.at(kLabels).items())
      if (v.is_string()) labels[k] = v.get<std::string>();
  }
  snap.namespaces_listed = true;
  snap.loaded_at = now;
  return out;
}

SnapshotCache::SnapshotCache(const ApiClient& client, Options options)
    : options_(std::move(options)) {
  auto watch_of = [&](const char* path) {
    Watcher::Options o;
    o.path = path;
    o.watch_timeout_seconds = options_.watch_timeout_seconds;
    o.backoff_initial = options_.backoff_initial;
    o.backoff_max = options_.backoff_max;
    o.log = options_.log;
    return o;
  };
  auto make = [&](const char* path) {
    auto informer = std::make_unique<Informer>(client, watch_of(path));
    informer->on_change([this](const std::vector<StoreChange>&) { rebuild(); });
    return informer;
  };
  policies_ = make(kCommPoliciesPath);
  profiles_ = make(kCommProfilesPath);
  namespaces_ = make(kNamespacesPath);
  if (options_.watch_nodes) {
    Watcher::Options o = watch_of(kNodesPath);
    o.transform = keep_pool_node_fields;
    nodes_informer_ = std::make_unique<Informer>(client, o);
    nodes_informer_->on_change([this](const std::vector<StoreChange>& changes) {
      if (update_nodes(changes)) rebuild();
    });
  }
  if (options_.watch_kueue_queues) {
    auto make_kueue = [&](const char* path) {
      Watcher::Options o = watch_of(path);
      o.transform = keep_kueue_queue_fields;
      auto informer = std::make_unique<Informer>(client, o);
      // Kueue writes its queues' status often (pending counts): only a change of what the
      // gate reads rebuilds the snapshot.
      informer->on_change([this](const std::vector<StoreChange>&) {
        if (update_kueue_queues()) rebuild();
      });
      return informer;
    };
    local_queues_ = make_kueue(kLocalQueuesPath);
    cluster_queues_ = make_kueue(kClusterQueuesPath);
    admission_checks_ = make_kueue(kAdmissionChecksPath);
  }
}

SnapshotCache::~SnapshotCache() {
  stop();
}

void SnapshotCache::on_rebuild(std::function<void()> handler) {
  handlers_.push_back(std::move(handler));
}

void SnapshotCache::start() {
  for (const auto* f : {&policies_, &profiles_, &namespaces_, &nodes_informer_, &local_queues_,
                        &cluster_queues_, &admission_checks_})
    if (*f) (*f)->start();
}

void SnapshotCache::stop() {
  for (const auto* f : {&policies_, &profiles_, &namespaces_, &nodes_informer_, &local_queues_,
                        &cluster_queues_, &admission_checks_})
    if (*f) (*f)->stop();
}

bool SnapshotCache::update_nodes(const std::vector<StoreChange>& changes) {
  std::lock_guard lock(rebuild_mu_);
  bool changed = !nodes_;  // the first list makes the vector, even of no nodes
  for (const StoreChange& c : changes) {
    const Store::Object object = nodes_informer_->store().get(c.key);
    if (!object) {
      changed = node_summaries_.erase(c.key) > 0 || changed;
      continue;
    }
    PoolNode summary = pool_node_of(*object);
    auto it = node_summaries_.find(c.key);
    if (it != node_summaries_.end() && it->second == summary) continue;
    node_summaries_[c.key] = std::move(summary);
    changed = true;
  }
  if (!changed || !nodes_informer_->has_synced()) return false;
  auto nodes = std::make_shared<std::vector<PoolNode>>();
  nodes->reserve(node_summaries_.size());
  for (const auto& [name, node] : node_summaries_) nodes->push_back(node);
  nodes_ = std::move(nodes);
  ++nodes_generation_;
  return true;
}

bool SnapshotCache::update_kueue_queues() {
  std::lock_guard lock(rebuild_mu_);
  if (!local_queues_->has_synced() || !cluster_queues_->has_synced() ||
      !admission_checks_->has_synced())
    return false;
  auto values = [](const Informer& informer) {
    std::vector<nlohmann::json> out;
    const auto objects = informer.store().snapshot();  // held: the loop reads into it
    for (const auto& [key, object] : *objects)
      if (object) out.push_back(*object);
    return out;
  };
  auto queues = std::make_shared<const KueueQueues>(
      kueue_queues(values(*local_queues_), values(*cluster_queues_), values(*admission_checks_)));
  if (kueue_queues_ && *kueue_queues_ == *queues) return false;
  kueue_queues_ = std::move(queues);
  return true;
}

std::shared_ptr<const Snapshot> SnapshotCache::snapshot() const {
  return std::atomic_load(&snapshot_);
}

bool SnapshotCache::has_synced() const {
  return policies_->has_synced() && profiles_->has_synced() && namespaces_->has_synced() &&
         (!nodes_informer_ || nodes_informer_->has_synced());
}

std::vector<const Informer*> SnapshotCache::informers() const {
  std::vector<const Informer*> out = {policies_.get(), profiles_.get(), namespaces_.get()};
  if (nodes_informer_) out.push_back(nodes_informer_.get());
  for (const auto* f : {&local_queues_, &cluster_queues_, &admission_checks_})
    if (*f) out.push_back(f->get());
  return out;
}

std::string SnapshotCache::metrics_text(std::string_view prefix) const {
  std::string out = informer_metrics_text(informers(), prefix);
  append_prometheus_sample(out, std::string(prefix) + "_rejected_objects", "gauge",
                           "CommPolicies and CommProfiles left out of the snapshot because "
                           "they do not parse.",
                           static_cast<double>(rejected_objects()));
  append_prometheus_sample(out, std::string(prefix) + "_policies_kept_last_valid", "gauge",
                           "CommPolicies that no longer parse and govern as their last valid "
                           "version (fix them: the stored object is not what is enforced).",
                           static_cast<double>(policies_kept_last_valid()));
  return out;
}

// Parsing a few hundred small objects takes well under a millisecond, so rebuilding
// everything is simpler than patching the last snapshot, and cannot drift from it.
void SnapshotCache::rebuild() {
  {
    std::lock_guard lock(rebuild_mu_);
    if (!has_synced()) return;
    const TimePoint now = options_.clock ? options_.clock() : std::chrono::system_clock::now();
    SnapshotBuild built =
        build_snapshot(*policies_->store().snapshot(), *profiles_->store().snapshot(),
                       *namespaces_->store().snapshot(), now, last_valid_);
    last_valid_ = std::move(built.valid);
    built.snapshot->nodes = nodes_;
    built.snapshot->nodes_generation = nodes_generation_;
    built.snapshot->kueue_queues = kueue_queues_;
    // Logs a bad object once per resourceVersion, not on every rebuild.
    std::map<std::string, std::string> still_bad;
    for (const RejectedObject& r : built.rejected) {
      const std::string id = r.kind + "/" + r.key;
      still_bad[id] = r.resource_version;
      auto it = reported_.find(id);
      if (it == reported_.end() || it->second != r.resource_version)
        options_.log.error(
            r.kind + " " + r.key + " (resourceVersion " + r.resource_version + ") " +
                (r.kept_resource_version.empty()
                     ? "is left out: "
                     : "does not parse, and its last valid version (resourceVersion " +
                           r.kept_resource_version + ") stays in force: ") +
                r.why,
            {{"kind", r.kind}, {"name", r.key}, {"resourceVersion", r.resource_version}});
    }
    reported_ = std::move(still_bad);
    rejected_ = built.rejected.size();
    kept_ = built.snapshot->stale_policies.size();
    std::atomic_store(&snapshot_, std::shared_ptr<const Snapshot>(std::move(built.snapshot)));
    ++rebuilds_;
  }
  for (const auto& handler : handlers_) handler();
}

}  // namespace commgate::kube
