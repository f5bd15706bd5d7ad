// Discovery documents (/version, /api, /api/v1, /apis, /apis/<group>/<version>) in the
// plain (non-aggregated) form, and the minimal OpenAPI v3 kubectl reads: for each
// group-version, one PATCH operation per kind that declares the fieldValidation
// parameter, so kubectl's default --validate=strict leaves validation to the server
// instead of downloading schemas (see docs/testing.md for what that does not model).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/resource_registry.h"

namespace commgate::sim {

nlohmann::json version_document();
nlohmann::json core_versions_document(const std::string& server_address);
nlohmann::json group_list_document(const ResourceRegistry& registry);
// nullopt-like: an empty json (null) when the group-version is not served.
nlohmann::json resource_list_document(const ResourceRegistry& registry, const std::string& group,
                                      const std::string& version);
nlohmann::json openapi_v3_root(const ResourceRegistry& registry);
nlohmann::json openapi_v3_group_version(const ResourceRegistry& registry, const std::string& group,
                                        const std::string& version);

}  // namespace commgate::sim
