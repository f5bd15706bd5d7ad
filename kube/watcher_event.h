// What a Watcher tells its consumer (kube-rs `watcher::Event`): the complete current list
// after a (re)list, or one object applied or deleted since. A consumer that applies these
// in order has the server's state as of the last event.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate::kube {

struct WatcherEvent {
  enum class Type { kRestarted, kApplied, kDeleted };
  Type type = Type::kApplied;
  std::vector<nlohmann::json> objects;  // kRestarted: every object, replacing what was known
  nlohmann::json object;                // kApplied (added or modified), kDeleted

  static WatcherEvent restarted(std::vector<nlohmann::json> objects) {
    return {Type::kRestarted, std::move(objects), nullptr};
  }
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
