// What a Watcher tells its consumer (kube-rs `watcher::Event`): a (re)list streamed as Init,
// one InitApply per listed object and InitDone once the list is complete (kube-rs 0.92's
// shape: the objects go to the consumer page by page, so a list of 10,000 objects is never
// held twice, issue #27), then one object applied or deleted at a time. Restarted carries a
// whole list at once (the same as Init, its objects, InitDone; tests build it). A consumer
// that applies these in order has the server's state as of the last event; an Init whose
// InitDone never comes (the list failed half way) replaces nothing.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate::kube {

struct WatcherEvent {
  enum class Type { kRestarted, kInit, kInitApply, kInitDone, kApplied, kDeleted };
  Type type = Type::kApplied;
  std::vector<nlohmann::json> objects;  // kRestarted: every object, replacing what was known
  nlohmann::json object;                // kInitApply, kApplied (added or modified), kDeleted

  static WatcherEvent restarted(std::vector<nlohmann::json> objects) {
    return {Type::kRestarted, std::move(objects), nullptr};
  }
  static WatcherEvent init() { return {Type::kInit, {}, nullptr}; }
  static WatcherEvent init_apply(nlohmann::json object) {
    return {Type::kInitApply, {}, std::move(object)};
  }
  static WatcherEvent init_done() { return {Type::kInitDone, {}, nullptr}; }
  static WatcherEvent applied(nlohmann::json object) {
    return {Type::kApplied, {}, std::move(object)};
  }
  static WatcherEvent deleted(nlohmann::json object) {
    return {Type::kDeleted, {}, std::move(object)};
  }
};

// "namespace/name", or "name" for a cluster-scoped object: the key stores and queues use.
std::string object_key(const nlohmann::json& object);
// metadata.resourceVersion, or "" when the object has none.
std::string resource_version_of(const nlohmann::json& object);

}  // namespace commgate::kube
