// The reflector's cache (kube-rs `reflector::Store`, client-go's Indexer): one writer (the
// watcher's consumer) and many readers. Readers get an immutable snapshot that stays valid
// as long as they hold it; it may already be stale when they read it, and is only
// complete once synced() (after the first full list). Each change bumps version(), and
// the change callback tells a reader (the webhook's KubePolicySource) to rebuild.
//
// Every write copies the map (copy-on-write), which suits the few hundred policies,
// profiles and namespaces this caches; a larger cache would want a persistent map.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "kube/watcher_event.h"

namespace commgate::kube {

class Store {
 public:
  using Objects = std::map<std::string, nlohmann::json>;  // by object_key()

  Store();

  // The one writer: applies an event in order. Applying an object with the
  // resourceVersion already held changes nothing (a relist that found nothing new).
  void apply(const WatcherEvent& event);

  bool synced() const;
  uint64_t version() const;  // bumps on every change; 0 before the first list
  std::shared_ptr<const Objects> snapshot() const;
  // nullptr when absent (or not yet listed).
  std::shared_ptr<const nlohmann::json> get(const std::string& key) const;

  // Called after every change, on the writer's thread, outside the store's lock (so it
  // may read the store). Set before the watcher starts.
  void on_change(std::function<void()> callback);

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Objects> objects_;
  bool synced_ = false;
  uint64_t version_ = 0;
  std::function<void()> on_change_;
};

}  // namespace commgate::kube
