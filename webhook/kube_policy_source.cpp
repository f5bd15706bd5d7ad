#include "webhook/kube_policy_source.h"

#include <iostream>

#include "core/comm_policy.h"
#include "core/comm_profile.h"

namespace commgate::webhook {
using nlohmann::json;

KubePolicySource::KubePolicySource(const kube::ApiClient& client, Options options)
    : options_(std::move(options)) {
  auto make = [&](Feed& feed, const char* path) {
    kube::Watcher::Options o;
    o.path = path;
    o.watch_timeout_seconds = options_.watch_timeout_seconds;
    o.backoff_initial = options_.backoff_initial;
    o.backoff_max = options_.backoff_max;
    o.log = [this](const std::string& m) { log(server::LogLevel::kWarning, m); };
    feed.watcher = std::make_unique<kube::Watcher>(
        client, o, [&feed](const kube::WatcherEvent& e) { feed.store.apply(e); });
    feed.store.on_change([this] { rebuild(); });
  };
  make(policies_, kCommPoliciesPath);
  make(profiles_, kCommProfilesPath);
  make(namespaces_, kNamespacesPath);
}

KubePolicySource::~KubePolicySource() {
  stop();
}

void KubePolicySource::start() {
  for (Feed* f : {&policies_, &profiles_, &namespaces_}) f->watcher->start();
}

void KubePolicySource::stop() {
  for (Feed* f : {&policies_, &profiles_, &namespaces_}) f->watcher->stop();
}

std::shared_ptr<const Snapshot> KubePolicySource::snapshot() const {
  return std::atomic_load(&snapshot_);
}

std::vector<KubePolicySource::WatcherStatus> KubePolicySource::watchers() const {
  std::vector<WatcherStatus> out;
  for (const Feed* f : {&policies_, &profiles_, &namespaces_})
    out.push_back({kCommPoliciesPath, f->watcher->state(), f->watcher->counters()});
  out[1].path = kCommProfilesPath;
  out[2].path = kNamespacesPath;
  return out;
}

void KubePolicySource::log(server::LogLevel level, const std::string& message) const {
  if (options_.log) {
    options_.log(level, message);
  } else {
    std::cerr << "commgate webhook: " << message << std::endl;
  }
}

// Runs on whichever watcher's thread changed its store. Parsing a few hundred small
// objects takes well under a millisecond, so rebuilding everything is simpler than
// patching the last snapshot, and cannot drift from it.
void KubePolicySource::rebuild() {
  std::lock_guard lock(rebuild_mu_);
  if (!policies_.store.synced() || !profiles_.store.synced() || !namespaces_.store.synced()) return;
  auto snap = std::make_shared<Snapshot>();
  std::map<std::string, std::string> still_bad;
  uint64_t rejected = 0;
  // Logs a bad object once per resourceVersion, not on every rebuild.
  auto reject = [&](const std::string& kind, const std::string& key, const json& object,
                    const std::string& why) {
    ++rejected;
    const std::string id = kind + "/" + key;
    const std::string rv = kube::resource_version_of(object);
    still_bad[id] = rv;
    auto it = reported_.find(id);
    if (it == reported_.end() || it->second != rv)
      log(server::LogLevel::kError,
          kind + " " + key + " (resourceVersion " + rv + ") is left out: " + why);
  };

  for (const auto& [key, object] : *policies_.store.snapshot()) {
    try {
      snap->policies.push_back(parse_comm_policy(object));
    } catch (const std::exception& e) {
      reject("CommPolicy", key, object, e.what());
    }
  }
  for (const auto& [key, object] : *profiles_.store.snapshot()) {
    try {
      CommProfile p = parse_comm_profile(object);
      const std::string name = p.metadata.name;
      snap->profiles[name] = std::move(p);
    } catch (const std::exception& e) {
      reject("CommProfile", key, object, e.what());
    }
  }
  for (const auto& [key, object] : *namespaces_.store.snapshot()) {
    static const json::json_pointer kLabels("/metadata/labels");
    auto& out = snap->namespace_labels[key];
    if (!object.contains(kLabels) || !object.at(kLabels).is_object()) continue;
    for (const auto& [k, v] : object.at(kLabels).items())
      if (v.is_string()) out[k] = v.get<std::string>();
  }
  reported_ = std::move(still_bad);
  rejected_ = rejected;
  snap->loaded_at = options_.clock ? options_.clock() : std::chrono::system_clock::now();
  std::atomic_store(&snapshot_, std::shared_ptr<const Snapshot>(std::move(snap)));
  ++rebuilds_;
}

}  // namespace commgate::webhook
