#include "kube/watcher_event.h"

namespace commgate::kube {
namespace {

const nlohmann::json* metadata_of(const nlohmann::json& object) {
  if (!object.is_object()) return nullptr;
  auto meta = object.find("metadata");
  return meta != object.end() && meta->is_object() ? &*meta : nullptr;
}

}  // namespace

std::string object_key(const nlohmann::json& object) {
  const nlohmann::json* meta = metadata_of(object);
  if (!meta) return "";
  const std::string ns = meta->value("namespace", "");
  const std::string name = meta->value("name", "");
  return ns.empty() ? name : ns + "/" + name;
}

std::string resource_version_of(const nlohmann::json& object) {
  const nlohmann::json* meta = metadata_of(object);
  return meta ? meta->value("resourceVersion", "") : "";
}

}  // namespace commgate::kube
