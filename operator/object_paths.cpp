#include "operator/object_paths.h"

#include "kube/api_error.h"
#include "operator/object_fields.h"
#include "operator/probe_job.h"

namespace commgate::op::detail {

using kube::ApiError;
using nlohmann::json;

std::string trainingjob_path(const std::string& ns, const std::string& name) {
  return std::string(kTrainingJobs) + ns + "/trainingjobs/" + name;
}
std::optional<NamespacedName> parse_key(const std::string& key) {
  const auto slash = key.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == key.size() ||
      key.find('/', slash + 1) != std::string::npos)
    return std::nullopt;
  return NamespacedName{key.substr(0, slash), key.substr(slash + 1)};
}

std::string jobs_collection(const std::string& ns) {
  return "/apis/batch/v1/namespaces/" + ns + "/jobs";
}
std::string services_collection(const std::string& ns) {
  return "/api/v1/namespaces/" + ns + "/services";
}
std::string pods_collection(const std::string& ns) {
  return "/api/v1/namespaces/" + ns + "/pods";
}
std::string profile_path(const std::string& pool) {
  return std::string(kProfiles) + "/" + pool;
}

std::optional<json> get_or_null(const kube::Reader& reader, const std::string& path) {
  try {
    return reader.get(path);
  } catch (const ApiError& e) {
    if (e.not_found()) return std::nullopt;
    throw;
  }
}

std::optional<json> create_if_absent(kube::Writer& writer, const std::string& collection,
                                     const json& object) {
  try {
    return writer.create(collection, object);
  } catch (const ApiError& e) {
    if (e.already_exists()) return std::nullopt;
    throw;
  }
}

void remove_if_present(kube::Writer& writer, const std::string& path,
                       const kube::DeleteOptions& options) {
  try {
    writer.remove(path, options);
  } catch (const ApiError& e) {
    if (!e.not_found()) throw;
  }
}

std::vector<json> pods_of_job(const kube::Reader& reader, const json& job, const std::string& ns) {
  const std::string uid = meta_string(job, "uid");
  kube::ListOptions selected;
  selected.label_selector = std::string(kJobNameLabel) + "=" + meta_string(job, "name");
  std::vector<json> pods = reader.list(pods_collection(ns), selected).items;
  // Pods of an earlier Job of the same name (deleted, its pods not yet collected) carry
  // another controller-uid: they are not this Job's.
  std::erase_if(pods, [&](const json& pod) {
    const json meta = pod.value("metadata", json::object());
    const json labels = meta.is_object() ? meta.value("labels", json::object()) : json();
    const json& owner = labels.is_object() ? labels.value(kControllerUidLabel, json()) : json();
    return !uid.empty() && owner.is_string() && owner.get<std::string>() != uid;
  });
  return pods;
}

}  // namespace commgate::op::detail
