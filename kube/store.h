// The reflector's cache (kube-rs `reflector::Store`, client-go's Indexer): one writer (the
// watcher's consumer) and many readers. Readers get an immutable snapshot that stays valid
// as long as they hold it; it may already be stale when they read it, and is only
// complete once synced() (after the first full list). Each change bumps version(), and
// the subscribers are told which keys changed: the webhook's KubePolicySource rebuilds its
// snapshot, a controller puts the keys on its work queue (requests carry only the key;
// reconcile reads the current object from the store).
//
// Every write copies the map (copy-on-write) but not the objects: the map holds shared,
// immutable objects, so a change costs one pointer per cached object, not a deep copy of
// every object (which made 1,000 TrainingJobs cost seconds per change in the operator's
// benchmark, docs/benchmarks.md). A much larger cache would want a persistent map.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/watcher_event.h"

namespace commgate::kube {

// One object that a change of the store added, modified or deleted, by object_key().
struct StoreChange {
  enum class Type { kAdded, kModified, kDeleted };
  Type type = Type::kAdded;
  std::string key;
  bool operator==(const StoreChange&) const = default;
};
const char* to_string(StoreChange::Type type);

class Store {
 public:
  // By object_key(); never null. Objects are immutable once stored.
  using Objects = std::map<std::string, std::shared_ptr<const nlohmann::json>>;

  Store();

  // The one writer: applies an event in order. Applying an object with the
  // resourceVersion already held changes nothing (a relist that found nothing new).
  void apply(const WatcherEvent& event);

  bool synced() const;
  uint64_t version() const;  // bumps on every change; 0 before the first list
  std::shared_ptr<const Objects> snapshot() const;
  // nullptr when absent (or not yet listed).
  std::shared_ptr<const nlohmann::json> get(const std::string& key) const;

  // Subscribers are called in the order added after every change, on the writer's
  // thread, outside the store's lock (so they may read the store), with the objects that
  // changed: one for an event, the difference for a relist (in key order). The first
  // complete list always notifies, since the store is synced from then on, even when it
  // found nothing (an empty list of changes). Add them before the watcher starts.
  using Handler = std::function<void(const std::vector<StoreChange>& changes)>;
  void subscribe(Handler handler);

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const Objects> objects_;
  bool synced_ = false;
  uint64_t version_ = 0;
  std::vector<Handler> handlers_;
};

// Store::Objects from plain values, by key (for building expected contents in tests).
Store::Objects stored_objects(const std::map<std::string, nlohmann::json>& objects);

}  // namespace commgate::kube
