// One kind of object the simulated API server serves: what discovery lists for it and what
// the handlers need to know (scope, subresources, printer columns).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace commgate::sim {

struct ScaleSubresource {
  std::string spec_replicas_path;    // ".spec.numNodes"
  std::string status_replicas_path;  // ".status.admittedNodes"
};

struct ResourceInfo {
  std::string group;  // "" for the core group
  std::string version;
  std::string plural;
  std::string singular;
  std::string kind;
  bool namespaced = true;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> verbs;
  bool status_subresource = false;
  std::optional<ScaleSubresource> scale;
  // True for resources that came from a CRD: they follow the CR rules (status dropped on
  // create when there is a status subresource, Table columns from the CRD).
  bool custom = false;
  // Whether objects carry metadata.generation (bumped when the spec changes): custom
  // resources and the built-ins whose strategy keeps one (jobs, CRDs, webhook
  // configurations here). ConfigMaps, pods (before 1.33), service accounts... have none.
  bool generation = false;
  // Upstream's ReturnDeletedObject: a DELETE that removes the object at once answers with
  // the object (pods, services, service accounts, namespaces, CRDs) instead of a Success
  // Status naming it (custom resources, jobs, leases, events, config maps, ...).
  bool returns_deleted_object = false;
  // Custom resources: the served version's schema.openAPIV3Schema (sim/crd_schema.h), applied
  // on every write; null when the CRD gives none. Shared: ResourceInfo is copied per request.
  std::shared_ptr<const nlohmann::json> schema;
  // additionalPrinterColumns for CRs; a few upstream-like columns for some built-ins.
  nlohmann::json printer_columns = nlohmann::json::array();

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  // "trainingjobs.commgate.io", "pods": how messages name the resource.
  std::string qualified_plural() const { return group.empty() ? plural : plural + "." + group; }
  std::string qualified_kind() const { return group.empty() ? kind : kind + "." + group; }
  // The storage key: objects are kept once per group and plural, whatever the version.
  std::string storage_key() const { return group + "/" + plural; }
};

}  // namespace commgate::sim
