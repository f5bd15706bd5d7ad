// The resources the server serves: the built-in ones and those of the CRDs present.
// Not thread-safe; the ObjectStore owns one and guards it with its lock.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/resource.h"

namespace commgate::sim {

class ResourceRegistry {
 public:
  // With the built-in resources (core/v1, batch/v1, coordination, events, apiextensions,
  // admissionregistration).
  ResourceRegistry();

  std::optional<ResourceInfo> find(const std::string& group, const std::string& version,
                                   const std::string& plural) const;
  // Any served version of (group, plural): for storage-level questions.
  std::optional<ResourceInfo> find_any_version(const std::string& group,
                                               const std::string& plural) const;
  std::vector<ResourceInfo> in_group_version(const std::string& group,
                                             const std::string& version) const;
  // Groups (not the core group) in registration order, each with its versions in
  // Kubernetes' order of preference (sim/version_priority.h): the first is preferred.
  std::vector<std::pair<std::string, std::vector<std::string>>> groups() const;

  // Replaces the resources of the CRD named `crd_name` with those its spec describes.
  void set_crd(const std::string& crd_name, const std::vector<ResourceInfo>& resources);
  void remove_crd(const std::string& crd_name);

 private:
  void add(ResourceInfo info);
  std::vector<ResourceInfo> resources_;
  std::map<std::string, std::vector<ResourceInfo>> crds_;  // by CRD name
};

// The resources a CustomResourceDefinition object serves (one per served version).
// Throws std::invalid_argument naming the field when the spec lacks what is needed.
std::vector<ResourceInfo> resources_from_crd(const nlohmann::json& crd);

}  // namespace commgate::sim
