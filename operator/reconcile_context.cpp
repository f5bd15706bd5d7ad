#include "operator/reconcile_context.h"

#include "kube/api_error.h"

namespace commgate::op::detail {

using kube::ApiError;
using nlohmann::json;

std::string trainingjob_path(const std::string& ns, const std::string& name) {
  return std::string(kTrainingJobs) + ns + "/trainingjobs/" + name;
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

bool create_if_absent(kube::Writer& writer, const std::string& collection, const json& object) {
  try {
    writer.create(collection, object);
    return true;
  } catch (const ApiError& e) {
    if (e.already_exists()) return false;
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

// resourceVersions are opaque to clients, but the API servers commgate runs against

}  // namespace commgate::op::detail
