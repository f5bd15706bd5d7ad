// Server-side apply and the field ownership of every write, as kube-apiserver's field
// manager keeps it in metadata.managedFields. Modelled on structured-merge-diff
// merge/update.go (Updater.Apply, Updater.Update, update(): conflicts and force, prune),
// merge/conflict.go, typed/tofieldset.go, typed/compare.go, typed/merge.go,
// typed/remove.go; and on apimachinery's util/managedfields/internal/: fieldmanager.go
// (decodeLiveOrNew: a request's own managedFields, [] resets), structuredmerge.go,
// managedfieldsupdater.go (an Update takes the fields it changed as "current-operation",
// merged into the manager's entry; times move only on a change), stripmeta.go (apiVersion,
// kind, metadata and its server-set fields never owned), skipnonapplied.go (an existing
// object without managedFields is not tracked by an Update), buildmanagerinfo.go and
// managedfields.go (the manager identifier, entry order), conflict.go (the 409 Status);
// apiserver's handlers/patch.go (the manager from the User-Agent), and the reset fields
// of the status strategies (a write to the main resource owns no .status, one to
// /status only .status).
//
// Modelled: list types from the CRD's openAPIV3Schema (x-kubernetes-list-type map with
// x-kubernetes-list-map-keys, set, atomic by default), x-kubernetes-map-type atomic,
// properties as struct fields and additionalProperties as map entries; the "before-first-apply"
// manager that owns every field of an object first applied without managedFields.
// Shortcut: built-in kinds have no schema here: their objects are structs, their lists
// atomic except containers, initContainers, ephemeralContainers, env and volumes (map by
// name), volumeMounts (by mountPath), metadata.finalizers (set) and
// metadata.ownerReferences (by uid); a map-list whose items lack a key, or a set of
// non-scalars, is taken as atomic (upstream refuses it). Items new to a map-list are
// appended after the live ones (upstream orders the merge by the applied list). A map or
// list emptied by a prune is dropped (upstream leaves null, which typed built-ins and
// non-nullable CR fields drop too). No cap on update managers (capmanagers.go), no
// last-applied-configuration upgrade (lastappliedmanager.go), one API version per kind.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/resource.h"

namespace commgate::sim {

struct ManagedFieldsContext {
  const nlohmann::json* schema = nullptr;  // a CR's openAPIV3Schema; null for built-ins
  std::string api_version;                 // the entries' apiVersion ("v1", "g/v1")
  std::string subresource;                 // "" or "status"
  bool status_subresource = false;         // main writes own no .status
  std::string now;                         // RFC 3339, for the entries' time
};

// The context of a write to `r` now: its schema (custom resources), apiVersion, and
// whether `subresource` ("" or "status") is its status. The API handlers and the sim's
// own controllers (the Kueue stand-in) write through it alike.
ManagedFieldsContext managed_fields_context(const ResourceInfo& r, const std::string& subresource);

// The field manager of a write: ?fieldManager=, else the User-Agent up to its first '/'.
std::string field_manager_name(const std::string& field_manager, const std::string& user_agent);

// An Update (create, PUT, non-apply PATCH) by `manager`: `next` with its
// metadata.managedFields as the write leaves them (the key removed where none are kept).
// `live` is null for a create.
nlohmann::json track_update(const nlohmann::json& live, nlohmann::json next,
                            const std::string& manager, const ManagedFieldsContext& ctx);

// Applies `config` over `live` (null: the object is created) as `manager`: the merged
// object with its managedFields. Throws ApiError 409 (reason Conflict, causes of type
// FieldManagerConflict) when it changes fields other managers own and !force.
nlohmann::json apply_configuration(const nlohmann::json& live, const nlohmann::json& config,
                                   const std::string& manager, bool force,
                                   const ManagedFieldsContext& ctx);

}  // namespace commgate::sim
