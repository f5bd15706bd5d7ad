// The reflector's cache (kube-rs `reflector::Store`, client-go's thread-safe store with its
// Indexer): one writer (the watcher's consumer) and many readers. Readers get shared,
// immutable objects that stay valid as long as they hold them; what they read may already
// be stale, and is only complete once synced() (after the first full list). Each change
// bumps version(), and the subscribers are told which keys changed: the webhook's
// KubePolicySource rebuilds its snapshot, a controller puts the keys on its work queue
// (requests carry only the key; reconcile reads the current object from the store).
//
// Cost (issue #27): a watch event changes the map in place under a writer lock, O(log n),
// and never copies it; a get is O(log n); a namespace's objects are one key range
// (keys are "namespace/name"), O(log n + k); the objects with a label value that the store
// indexes (index_label) are O(log n + k) as well. Only snapshot() reads every object
// (O(n)), for the small collections that are read whole (policies, profiles).
//
// Memory: each object is held as MessagePack bytes, not as a parsed nlohmann::json, whose
// tree of maps costs about four times the object's text (a decided TrainingJob: 5 KB of
// JSON, 174 values, about 20 KB parsed). A read unpacks the object it returns (tens of
// microseconds for a TrainingJob; a reader copied it anyway). A list arrives as Init,
// InitApply..., InitDone (kube/watcher_event.h) and is packed as it arrives, into a map
// that replaces the current one at InitDone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <shared_mutex>
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
  // Never null; a reader's own copy.
  using Object = std::shared_ptr<const nlohmann::json>;
  // By object_key().
  using Objects = std::map<std::string, Object>;

  Store();

  // Before the first apply(): keep an index of the objects by the value of `label`, for
  // with_label(). Throws std::logic_error once objects are stored.
  void index_label(const std::string& label);

  // The one writer: applies an event in order. Applying an object with the
  // resourceVersion already held changes nothing (a relist that found nothing new).
  // InitApply and InitDone without an Init before them throw std::logic_error.
  void apply(const WatcherEvent& event);

  bool synced() const;
  uint64_t version() const;  // bumps on every change; 0 before the first list
  std::size_t size() const;
  // nullptr when absent (or not yet listed).
  Object get(const std::string& key) const;
  // The objects of namespace `ns` in key order; every object when `ns` is empty.
  std::vector<Object> list(const std::string& ns) const;
  // The objects of namespace `ns` (every namespace when empty) whose label `label` has
  // `value`, in key order; nullopt when `label` is not indexed (one lock for the question
  // and the answer).
  std::optional<std::vector<Object>> with_label(const std::string& ns, const std::string& label,
                                                const std::string& value) const;
  // Every object as it is now (O(n) unpacked), which the store's later changes leave as
  // it was. For small collections read whole.
  std::shared_ptr<const Objects> snapshot() const;

  // Subscribers are called in the order added after every change, on the writer's
  // thread, outside the store's lock (so they may read the store), with the objects that
  // changed: one for an event, the difference for a relist (in key order). The first
  // complete list always notifies, since the store is synced from then on, even when it
  // found nothing (an empty list of changes). Add them before the watcher starts.
  using Handler = std::function<void(const std::vector<StoreChange>& changes)>;
  void subscribe(Handler handler);

 private:
  struct Entry {
    std::string packed;  // the object as MessagePack
    std::string resource_version;
    bool operator==(const Entry&) const = default;
  };
  using Entries = std::map<std::string, Entry>;
  static Entry pack(const nlohmann::json& object);
  static Object unpack(const Entry& entry);
  static std::vector<StoreChange> difference(const Entries& before, const Entries& after);
  // label -> value -> keys of the objects that carry it; under mu_.
  using LabelIndex = std::map<std::string, std::map<std::string, std::set<std::string>>>;
  void index(const std::string& key, const nlohmann::json& object);
  void unindex(const std::string& key, const nlohmann::json& object);
  // Applies `event`; false when it changed nothing. Under mu_.
  bool apply_locked(const WatcherEvent& event, std::vector<StoreChange>& changes);
  bool replace_all(Entries fresh, std::vector<StoreChange>& changes);

  mutable std::shared_mutex mu_;
  Entries objects_;
  std::optional<Entries> listing_;  // between Init and InitDone
  LabelIndex labels_;
  bool synced_ = false;
  uint64_t version_ = 0;
  std::vector<Handler> handlers_;
};

// Store::Objects from plain values, by key (for building expected contents in tests).
Store::Objects stored_objects(const std::map<std::string, nlohmann::json>& objects);

}  // namespace commgate::kube
