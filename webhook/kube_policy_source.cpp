#include "webhook/kube_policy_source.h"

#include "core/comm_policy.h"
#include "core/comm_profile.h"
#include "server/metrics.h"

namespace commgate::webhook {
using nlohmann::json;

KubePolicySource::KubePolicySource(const kube::ApiClient& client, Options options)
    : options_(std::move(options)) {
  auto make = [&](const char* path) {
    kube::Watcher::Options o;
    o.path = path;
    o.watch_timeout_seconds = options_.watch_timeout_seconds;
    o.backoff_initial = options_.backoff_initial;
    o.backoff_max = options_.backoff_max;
    o.log = options_.log;
    auto informer = std::make_unique<kube::Informer>(client, o);
    informer->on_change([this](const std::vector<kube::StoreChange>&) { rebuild(); });
    return informer;
  };
  policies_ = make(kCommPoliciesPath);
  profiles_ = make(kCommProfilesPath);
  namespaces_ = make(kNamespacesPath);
}

KubePolicySource::~KubePolicySource() {
  stop();
}

void KubePolicySource::start() {
  for (const auto* f : {&policies_, &profiles_, &namespaces_}) (*f)->start();
}

void KubePolicySource::stop() {
  for (const auto* f : {&policies_, &profiles_, &namespaces_}) (*f)->stop();
}

std::shared_ptr<const Snapshot> KubePolicySource::snapshot() const {
  return std::atomic_load(&snapshot_);
}

std::vector<const kube::Informer*> KubePolicySource::informers() const {
  return {policies_.get(), profiles_.get(), namespaces_.get()};
}

std::string KubePolicySource::metrics_text() const {
  std::string out = kube::informer_metrics_text(informers(), "commgate_webhook");
  server::append_prometheus_sample(out, "commgate_webhook_rejected_objects", "gauge",
                                   "CommPolicies and CommProfiles left out of the snapshot "
                                   "because they do not parse.",
                                   static_cast<double>(rejected_objects()));
  return out;
}

// Runs on whichever watcher's thread changed its store. Parsing a few hundred small
// objects takes well under a millisecond, so rebuilding everything is simpler than
// patching the last snapshot, and cannot drift from it.
void KubePolicySource::rebuild() {
  std::lock_guard lock(rebuild_mu_);
  if (!policies_->has_synced() || !profiles_->has_synced() || !namespaces_->has_synced()) return;
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
      options_.log.error(kind + " " + key + " (resourceVersion " + rv + ") is left out: " + why,
                         {{"kind", kind}, {"name", key}, {"resourceVersion", rv}});
  };

  for (const auto& [key, object] : *policies_->store().snapshot()) {
    try {
      snap->policies.push_back(parse_comm_policy(object));
    } catch (const std::exception& e) {
      reject("CommPolicy", key, object, e.what());
    }
  }
  for (const auto& [key, object] : *profiles_->store().snapshot()) {
    try {
      CommProfile p = parse_comm_profile(
          object, options_.clock ? options_.clock() : std::chrono::system_clock::now());
      const std::string name = p.metadata.name;
      snap->profiles[name] = std::move(p);
    } catch (const std::exception& e) {
      reject("CommProfile", key, object, e.what());
    }
  }
  for (const auto& [key, object] : *namespaces_->store().snapshot()) {
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
