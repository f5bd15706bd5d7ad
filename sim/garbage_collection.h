// The rules of kube-apiserver's deletion and of the garbage collector, as pure functions
// over objects: which propagation policy a DELETE gets, who owns whom (ownerReferences by
// uid), and what a dependent looks like once its owner is orphaned. ObjectStore applies
// them (sim/object_store.cpp); they are separate so they can be tested as tables.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/resource.h"

namespace commgate::sim {

enum class Propagation { kOrphan, kBackground, kForeground };

// The finalizers the garbage collector owns (metav1.FinalizerOrphanDependents,
// metav1.FinalizerDeleteDependents).
inline constexpr const char* kOrphanFinalizer = "orphan";
inline constexpr const char* kForegroundFinalizer = "foregroundDeletion";

// DeleteOptions as the DELETE request gave them (query or body); nullopt: not given.
struct DeleteOptions {
  std::optional<Propagation> propagation;
  // DeleteOptions.preconditions (body only): delete only the object with this UID /
  // resourceVersion, else 409 Conflict (check_delete_preconditions).
  std::optional<std::string> precondition_uid{}, precondition_resource_version{};
};

// kube-apiserver's check of a delete's preconditions (rest.BeforeDelete): throws the 409
// Conflict upstream answers ("Operation cannot be fulfilled on Job.batch \"x\": the UID
// in the precondition (a) does not match the UID in record (b). The object might have
// been deleted and then recreated"). The store checks again under its lock.
void check_delete_preconditions(const ResourceInfo& r, const std::string& name,
                                const DeleteOptions& options, const nlohmann::json& object);

// Parses DeleteOptions.propagationPolicy ("Orphan", "Background", "Foreground") and the
// legacy orphanDependents. Throws ApiError 422 as kube-apiserver's ValidateDeleteOptions.
DeleteOptions parse_delete_options(const std::string& propagation_policy,
                                   const std::optional<bool>& orphan_dependents);

// The policy a delete of `object` of resource `r` runs with. Unset: the object's own
// orphan/foregroundDeletion finalizer decides, else the resource's default: Orphan for
// batch/v1 Jobs (and the other legacy workload kinds; their REST strategies keep
// OrphanDependents for v1 compatibility) and Background for everything else.
Propagation effective_propagation(const ResourceInfo& r, const DeleteOptions& options,
                                  const nlohmann::json& object);

// The policy the garbage collector deletes a dependent with: the dependent's own
// orphan/foregroundDeletion finalizer, else Foreground when its owner is being deleted in
// the foreground and the dependent has dependents itself, else Background (never the
// resource's default: the GC always names a policy).
Propagation gc_propagation(const nlohmann::json& dependent, bool foreground_with_dependents);

// The uids in metadata.ownerReferences.
std::vector<std::string> owner_uids(const nlohmann::json& object);
// Whether `object` names `owner_uid` with blockOwnerDeletion: true.
bool blocks_owner_deletion(const nlohmann::json& object, const std::string& owner_uid);
// `object` without its ownerReferences to `owner_uid` (the field goes when it empties).
nlohmann::json without_owner(nlohmann::json object, const std::string& owner_uid);

std::vector<std::string> finalizers_of(const nlohmann::json& object);
// Finalizers in `after` that `before` did not have: forbidden once an object is deleting.
std::vector<std::string> added_finalizers(const nlohmann::json& before,
                                          const nlohmann::json& after);
bool is_deleting(const nlohmann::json& object);

}  // namespace commgate::sim
