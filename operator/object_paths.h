// The API paths of the objects the operator's reconcilers read and write, built in one
// place, and the small API-call helpers they share (issue #21).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"

namespace commgate::op {
namespace detail {

inline constexpr const char* kTrainingJobs = "/apis/commgate.io/v1alpha1/namespaces/";
inline constexpr const char* kProfiles = "/apis/commgate.io/v1alpha1/commprofiles";
// Set by the Job controller on a Job's pods: the Job's metadata.uid.
inline constexpr const char* kControllerUidLabel = "batch.kubernetes.io/controller-uid";

// The TrainingJob was deleted while it was being reconciled (a write answered 404).
struct JobGone {};

std::string trainingjob_path(const std::string& ns, const std::string& name);

// A queue key "namespace/name" (one slash, neither part empty) split in two; nullopt for
// anything else.
struct NamespacedName {
  std::string ns, name;
};
std::optional<NamespacedName> parse_key(const std::string& key);
std::string jobs_collection(const std::string& ns);
std::string services_collection(const std::string& ns);
std::string pods_collection(const std::string& ns);
std::string profile_path(const std::string& pool);

// The pods of batch/v1 Job `job` in `ns` as `reader` has them (by job-name label, and this
// Job's controller-uid: pods of an earlier Job of the same name are not its).
std::vector<nlohmann::json> pods_of_job(const kube::Reader& reader, const nlohmann::json& job,
                                        const std::string& ns);

// The object at `path`, or nullopt when it does not exist (404).
std::optional<nlohmann::json> get_or_null(const kube::Reader& reader, const std::string& path);
// Creates `object` unless it exists (409 AlreadyExists). Returns the object as the server
// stored it (its uid) when this call created it, nullopt when it existed.
std::optional<nlohmann::json> create_if_absent(kube::Writer& writer, const std::string& collection,
                                               const nlohmann::json& object);
// Deletes `path`; one that is gone already (404) is not an error.
void remove_if_present(kube::Writer& writer, const std::string& path,
                       const kube::DeleteOptions& options = {});

}  // namespace detail
}  // namespace commgate::op
