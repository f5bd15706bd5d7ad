#include "webhook/kube_policy_source.h"

#include <iostream>

#include "core/comm_policy.h"
#include "core/comm_profile.h"
#include "server/metrics.h"

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
  for (const auto& [path, feed] :
       {std::pair{kCommPoliciesPath, &policies_}, std::pair{kCommProfilesPath, &profiles_},
        std::pair{kNamespacesPath, &namespaces_}})
    out.push_back({path, feed->watcher->state(), feed->watcher->counters()});
  return out;
}

std::string KubePolicySource::metrics_text() const {
  const auto status = watchers();
  std::string out;
  const auto family = [&](const char* name, const char* type, const char* help,
                          uint64_t kube::WatcherCounters::*field) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& w : status)
      out += std::string(name) + "{collection=\"" + server::prometheus_escape_label(w.path) +
             "\"} " + std::to_string(w.counters.*field) + "\n";
  };
  family("commgate_webhook_watch_lists_total", "counter",
         "Complete lists of a watched collection (the first and every relist).",
         &kube::WatcherCounters::lists);
  family("commgate_webhook_watch_relists_total", "counter",
         "Lists after the first: a 410 Expired or an ERROR event forced a relist.",
         &kube::WatcherCounters::relists);
  family("commgate_webhook_watch_restarts_total", "counter",
         "Watches started again from the last resourceVersion (ended or dropped).",
         &kube::WatcherCounters::restarts);
  family("commgate_webhook_watch_errors_total", "counter",
         "Failed lists, refused or broken watches and ERROR events.",
         &kube::WatcherCounters::errors);
  family("commgate_webhook_watch_events_total", "counter",
         "Added, modified and deleted objects received.", &kube::WatcherCounters::events);
  out +=
      "# HELP commgate_webhook_watch_state Current state of each watcher (1 for the state "
      "it is in).\n# TYPE commgate_webhook_watch_state gauge\n";
  for (const auto& w : status)
    out += "commgate_webhook_watch_state{collection=\"" + server::prometheus_escape_label(w.path) +
           "\",state=\"" + kube::to_string(w.state) + "\"} 1\n";
  server::append_prometheus_sample(out, "commgate_webhook_rejected_objects", "gauge",
                                   "CommPolicies and CommProfiles left out of the snapshot "
                                   "because they do not parse.",
                                   static_cast<double>(rejected_objects()));
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
      CommProfile p = parse_comm_profile(
          object, options_.clock ? options_.clock() : std::chrono::system_clock::now());
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
