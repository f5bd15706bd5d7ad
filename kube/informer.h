// One watched collection held in memory (client-go's informer, kube-rs `reflector`): a
// Watcher (list + watch, relist after 410, backoff) feeding a Store (one writer, many
// readers), the store's change notifications with the keys of the objects that changed,
// and the watch's health as Prometheus text under a name prefix the caller chooses
// ("commgate_webhook", "commgate_operator"), so every binary reports its watches alike.
//
//   Watcher::Options o;
//   o.path = "/apis/commgate.io/v1alpha1/commpolicies";
//   Informer policies(client, o);
//   policies.on_change([&](const auto& changes) { for (auto& c : changes) queue.add(c.key); });
//   policies.start();
//   ... policies.has_synced(), policies.store().get("name") ...
//
// Threads: notifications run on the watcher's own thread, in the order the server sent
// the events; keep them short (put the key on a queue) since nothing else is applied
// while one runs. Everything else may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kube/api_client.h"
#include "kube/store.h"
#include "kube/watcher.h"

namespace commgate::kube {

class Informer {
 public:
  // `client` must outlive the informer. Watcher::Options::path names the collection.
  Informer(const ApiClient& client, Watcher::Options options);
  ~Informer();  // stop()
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Before start(): called after every change of the store (Store::subscribe).
  void on_change(Store::Handler handler);
  // Before start(): index the objects by a label's value (Store::index_label), so a
  // cache-backed list selecting on it reads only the objects that carry it.
  void index_label(const std::string& label);
  void start();
  // No notification runs after it returns.
  void stop();

  // True once the first complete list is in the store: before that, an absent object
  // may only be not yet listed.
  bool has_synced() const { return store_.synced(); }
  const Store& store() const { return store_; }
  const std::string& path() const { return path_; }
  WatcherState state() const { return watcher_->state(); }
  WatcherCounters counters() const { return watcher_->counters(); }

 private:
  const std::string path_;
  Store store_;
  std::unique_ptr<Watcher> watcher_;  // feeds store_; declared after it, stopped first
};

// Prometheus text for `informers`, one sample per collection (label `collection`):
//   <prefix>_watch_lists_total, _relists_total, _restarts_total, _errors_total,
//   _events_total (counters), <prefix>_watch_objects (objects held) and
//   <prefix>_watch_state (1 for the state each watcher is in).
std::string informer_metrics_text(const std::vector<const Informer*>& informers,
                                  std::string_view prefix);

}  // namespace commgate::kube
