// Small readers of the metadata of objects as JSON, for the reconciler's files (pure; a
// missing or mistyped field reads as empty, 0 or -1, never throws).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace commgate::op::detail {

// resourceVersions are opaque to clients, but the API servers commgate runs against
// (etcd's revisions, the sim's counter) give integers; anything else reads as -1.
long long version_number(const std::string& rv);
// metadata.generation, or 0.
int64_t generation_of(const nlohmann::json& object);
// metadata.<key> when it is a string, else "".
std::string meta_string(const nlohmann::json& object, const std::string& key);
// The uid of an object's controller (ownerReferences[] with controller: true), or "".
std::string controller_uid_of(const nlohmann::json& object);
// metadata.annotations.<key> when it is a string, else "".
std::string annotation_of(const nlohmann::json& object, const std::string& key);
// object.<key> when it is an integer, else 0.
int int_field(const nlohmann::json& object, const std::string& key);
// A pod's completion index (its batch.kubernetes.io/job-completion-index label, else
// annotation): an Indexed Job's rank; INT_MAX when it has none.
int completion_index(const nlohmann::json& pod);

}  // namespace commgate::op::detail
