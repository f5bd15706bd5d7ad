// The simulated etcd + registry: every object of every resource, one global
// resourceVersion counter, a bounded history of changes for watches, and the write rules
// kube-apiserver applies (uid, creationTimestamp, generation, generateName, optimistic
// concurrency, status subresource isolation, CRDs that add and remove resources).
//
// Thread-safe: one lock around everything. Watch callbacks run under that lock, in
// resourceVersion order, so they must only queue (a StreamSink::write does).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/time_format.h"
#include "sim/garbage_collection.h"
#include "sim/resource.h"
#include "sim/resource_registry.h"
#include "sim/selectors.h"

namespace commgate::sim {

struct ListOptions {
  LabelSelectorQuery labels;
  FieldSelectorQuery fields;
  std::size_t limit = 0;       // 0: everything
  std::string continue_token;  // from a previous page
};

struct ListResult {
  std::vector<nlohmann::json> items;
  uint64_t resource_version = 0;
  std::string continue_token;  // "" on the last page
  // With a continue token and no selectors: how many objects the later pages hold
  // (upstream's etcd store counts keys, so it gives none when selectors filter).
  std::optional<int64_t> remaining_item_count;
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED
  nlohmann::json object;
};

struct WatchRequest {
  std::string ns;  // "" for all namespaces
  LabelSelectorQuery labels;
  FieldSelectorQuery fields;
  // nullopt: start with an ADDED event for every current object ("" or "0" on the wire);
  // N: replay every change after N from the history, then go on live.
  std::optional<uint64_t> from;
  // Watch-list (sendInitialEvents=true): after the ADDED events for the current objects, a
  // BOOKMARK at the current version annotated k8s.io/initial-events-end: "true".
  bool initial_events_end = false;
  // Called under the store's lock for each matching event; return false to stop.
  std::function<bool(const WatchEvent&)> deliver;
};

// Which part of an object a write may change.
enum class WritePart { kMain, kStatus };

class ObjectStore {
 public:
  struct Options {
    std::size_t history_limit = 10'000;  // events kept for watches from an old version
    std::function<TimePoint()> clock = [] { return Clock::now(); };
  };
  ObjectStore() : ObjectStore(Options{}) {}
  explicit ObjectStore(Options options);

  // Each throws ApiError with the Status kube-apiserver would answer. With `dry_run`
  // (?dryRun=All), create, update and mutate run every check and default and return the
  // object that would be stored, but store nothing: no resourceVersion bump, no watch
  // event, no resource served for a CRD.
  nlohmann::json create(const ResourceInfo& r, const std::string& ns, nlohmann::json object,
                        bool dry_run = false);
  nlohmann::json get(const ResourceInfo& r, const std::string& ns, const std::string& name) const;
  ListResult list(const ResourceInfo& r, const std::string& ns, const ListOptions& options) const;
  // PUT: 409 when object's metadata.resourceVersion is set and not the current one.
  nlohmann::json update(const ResourceInfo& r, const std::string& ns, const std::string& name,
                        nlohmann::json object, WritePart part, bool dry_run = false);
  // PATCH: `change` maps the current object to the new one, under the lock (no lost
  // updates). The result is then written as update() writes it.
  nlohmann::json mutate(const ResourceInfo& r, const std::string& ns, const std::string& name,
                        WritePart part,
                        const std::function<nlohmann::json(const nlohmann::json&)>& change,
                        bool dry_run = false);
  // DELETE as kube-apiserver and its garbage collector do it, synchronously under the
  // lock (no separate GC loop: tests see the end state as soon as the call returns, and
  // the order of watch events is the order the real GC produces):
  // - an object with metadata.finalizers gets deletionTimestamp (deletionGracePeriodSeconds
  //   0) and stays until updates remove the last finalizer, then it vanishes (DELETED);
  // - Orphan: ownerReferences to the object are removed from its dependents first;
  // - Background: once the object is gone, dependents with no other existing owner are
  //   deleted (Background), those with one lose the dangling reference;
  // - Foreground: the object gets the foregroundDeletion finalizer and deletionTimestamp,
  //   every dependent is deleted, and the object goes once no dependent with
  //   blockOwnerDeletion is left.
  // Returns the object as stored after the call (deleting) or as it was when it vanished.
  nlohmann::json remove(const ResourceInfo& r, const std::string& ns, const std::string& name,
                        const DeleteOptions& options = {});

  // Registers a watch; returns its id. Throws ApiError 410 when `from` is older than the
  // history kept.
  uint64_t watch(const ResourceInfo& r, WatchRequest request);
  void unwatch(uint64_t id);
  // Sends a BOOKMARK (an object with only metadata.resourceVersion, the current version) to
  // these watches, in order with their other events.
  void send_bookmarks(const std::vector<uint64_t>& ids);
  std::size_t watch_count() const;

  uint64_t resource_version() const;
  // Forgets every change kept for watches, as etcd compaction does: a watch from any
  // version older than the current one then gets 410 Expired (fault injection).
  void compact_history();
  // A copy: discovery reads it without holding the lock while it formats.
  ResourceRegistry registry() const;
  // Finds a resource by group, version and plural as the registry knows it now.
  std::optional<ResourceInfo> find_resource(const std::string& group, const std::string& version,
                                            const std::string& plural) const;

 private:
  struct Watcher {
    std::string storage_key;
    WatchRequest request;
  };
  struct HistoryEntry {
    uint64_t rv;
    std::string storage_key;
    WatchEvent event;
    nlohmann::json previous;  // MODIFIED: the object before; null otherwise
  };
  using Objects = std::map<std::string, nlohmann::json>;  // "ns/name" -> object

  nlohmann::json write_locked(const ResourceInfo& r, const std::string& ns, const std::string& name,
                              nlohmann::json object, WritePart part, bool check_version,
                              bool dry_run = false);
  nlohmann::json remove_locked(const ResourceInfo& r, const std::string& ns,
                               const std::string& name, const DeleteOptions& options);
  // Every change of objects_ goes through these two, which keep by_uid_ and dependents_.
  void put_locked(const std::string& storage_key, const std::string& key,
                  const nlohmann::json& object);
  void erase_locked(const std::string& storage_key, const std::string& key);
  // Erases the object for good: DELETED event, namespace and CRD cascades, then the GC of
  // its dependents and of owners waiting for it in foreground deletion.
  void vanish_locked(const ResourceInfo& r, const std::string& key, nlohmann::json gone);
  void collect_dependents_locked(const nlohmann::json& gone);
  void finish_foreground_locked(const std::string& owner_uid);
  std::optional<ResourceInfo> info_for_locked(const std::string& storage_key) const;
  void record_locked(const ResourceInfo& r, const std::string& type, const nlohmann::json& obj,
                     const nlohmann::json& previous = nullptr);
  // on_crd_written_locked, or for a dry run the same checks with the registry unchanged.
  void crd_written_locked(nlohmann::json& crd, bool dry_run);
  void on_crd_written_locked(nlohmann::json& crd);
  void on_crd_removed_locked(const nlohmann::json& crd);
  const nlohmann::json* find_locked(const ResourceInfo& r, const std::string& ns,
                                    const std::string& name) const;
  std::string new_uid();
  std::string random_suffix();

  Options options_;
  mutable std::mutex mu_;
  ResourceRegistry registry_;
  std::map<std::string, Objects> objects_;               // by ResourceInfo::storage_key()
  using Location = std::pair<std::string, std::string>;  // storage key, "ns/name"
  std::map<std::string, Location> by_uid_;
  std::map<std::string, std::set<Location>> dependents_;  // owner uid -> dependents
  uint64_t rv_ = 0;
  uint64_t compacted_rv_ = 0;  // the newest version no longer in history_
  std::deque<HistoryEntry> history_;
  std::map<uint64_t, Watcher> watchers_;
  uint64_t next_watch_id_ = 1;
  uint64_t random_state_;
};

// Whether two objects differ outside metadata and status (what bumps metadata.generation).
bool spec_changed(const nlohmann::json& before, const nlohmann::json& after);

}  // namespace commgate::sim
