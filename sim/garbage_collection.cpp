#include "sim/garbage_collection.h"

#include <algorithm>

#include "sim/api_status.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

ApiError invalid_delete_options(const std::string& field, const std::string& message) {
  auto s = failure_status(422, "Invalid",
                          "DeleteOptions.meta.k8s.io \"\" is invalid: " + field + ": " + message);
  s["details"] = {
      {"group", "meta.k8s.io"},
      {"kind", "DeleteOptions"},
      {"causes", {{{"reason", "FieldValueNotSupported"}, {"message", message}, {"field", field}}}}};
  return ApiError(s);
}

}  // namespace

DeleteOptions parse_delete_options(const std::string& propagation_policy,
                                   const std::optional<bool>& orphan_dependents) {
  DeleteOptions o;
  if (!propagation_policy.empty() && orphan_dependents)
    throw invalid_delete_options("propagationPolicy",
                                 "Invalid value: \"" + propagation_policy +
                                     "\": orphanDependents and deletionPropagation cannot be "
                                     "both set");
  if (propagation_policy == "Orphan") {
    o.propagation = Propagation::kOrphan;
  } else if (propagation_policy == "Background") {
    o.propagation = Propagation::kBackground;
  } else if (propagation_policy == "Foreground") {
    o.propagation = Propagation::kForeground;
  } else if (!propagation_policy.empty()) {
    throw invalid_delete_options("propagationPolicy",
                                 "Unsupported value: \"" + propagation_policy +
                                     "\": supported values: \"Foreground\", \"Background\", "
                                     "\"Orphan\"");
  } else if (orphan_dependents) {
    o.propagation = *orphan_dependents ? Propagation::kOrphan : Propagation::kBackground;
  }
  return o;
}

std::vector<std::string> finalizers_of(const json& object) {
  std::vector<std::string> out;
  const json& meta = object.contains("metadata") ? object["metadata"] : json::object();
  if (!meta.is_object() || !meta.contains("finalizers") || !meta["finalizers"].is_array())
    return out;
  for (const auto& f : meta["finalizers"])
    if (f.is_string()) out.push_back(f.get<std::string>());
  return out;
}

Propagation effective_propagation(const ResourceInfo& r, const DeleteOptions& options,
                                  const json& object) {
  if (options.propagation) return *options.propagation;
  const auto fin = finalizers_of(object);
  if (std::find(fin.begin(), fin.end(), kOrphanFinalizer) != fin.end()) return Propagation::kOrphan;
  if (std::find(fin.begin(), fin.end(), kForegroundFinalizer) != fin.end())
    return Propagation::kForeground;
  // pkg/registry/batch/job/strategy.go DefaultGarbageCollectionPolicy: batch/v1 keeps
  // OrphanDependents; kubectl always sends propagationPolicy=Background, so only raw API
  // clients see this. (apps/v1 and the rest default to Background.)
  if (r.group == "batch" && r.version == "v1" && r.plural == "jobs") return Propagation::kOrphan;
  return Propagation::kBackground;
}

Propagation gc_propagation(const json& dependent, bool foreground_with_dependents) {
  const auto fin = finalizers_of(dependent);
  if (std::find(fin.begin(), fin.end(), kOrphanFinalizer) != fin.end()) return Propagation::kOrphan;
  if (foreground_with_dependents ||
      std::find(fin.begin(), fin.end(), kForegroundFinalizer) != fin.end())
    return Propagation::kForeground;
  return Propagation::kBackground;
}

std::vector<std::string> owner_uids(const json& object) {
  std::vector<std::string> out;
  const json& meta = object.contains("metadata") ? object["metadata"] : json::object();
  if (!meta.is_object() || !meta.contains("ownerReferences") || !meta["ownerReferences"].is_array())
    return out;
  for (const auto& ref : meta["ownerReferences"])
    if (ref.is_object() && ref.contains("uid") && ref["uid"].is_string())
      out.push_back(ref["uid"].get<std::string>());
  return out;
}

bool blocks_owner_deletion(const json& object, const std::string& owner_uid) {
  const json& meta = object.contains("metadata") ? object["metadata"] : json::object();
  if (!meta.is_object() || !meta.contains("ownerReferences") || !meta["ownerReferences"].is_array())
    return false;
  for (const auto& ref : meta["ownerReferences"])
    if (ref.is_object() && ref.value("uid", "") == owner_uid &&
        ref.value("blockOwnerDeletion", false))
      return true;
  return false;
}

json without_owner(json object, const std::string& owner_uid) {
  if (!object.contains("metadata") || !object["metadata"].contains("ownerReferences"))
    return object;
  json& refs = object["metadata"]["ownerReferences"];
  if (!refs.is_array()) return object;
  json kept = json::array();
  for (const auto& ref : refs)
    if (!ref.is_object() || ref.value("uid", "") != owner_uid) kept.push_back(ref);
  if (kept.empty()) {
    object["metadata"].erase("ownerReferences");
  } else {
    refs = kept;
  }
  return object;
}

std::vector<std::string> added_finalizers(const json& before, const json& after) {
  const auto old = finalizers_of(before);
  std::vector<std::string> added;
  for (const auto& f : finalizers_of(after))
    if (std::find(old.begin(), old.end(), f) == old.end()) added.push_back(f);
  return added;
}

bool is_deleting(const json& object) {
  return object.contains("metadata") && object["metadata"].is_object() &&
         object["metadata"].contains("deletionTimestamp") &&
         !object["metadata"]["deletionTimestamp"].is_null();
}

void check_delete_preconditions(const ResourceInfo& r, const std::string& name,
                                const DeleteOptions& options, const nlohmann::json& object) {
  const nlohmann::json meta = object.value("metadata", nlohmann::json::object());
  const std::string uid = meta.value("uid", "");
  const std::string rv = meta.value("resourceVersion", "");
  if (options.precondition_uid && *options.precondition_uid != uid)
    throw precondition_conflict(r, name,
                                "the UID in the precondition (" + *options.precondition_uid +
                                    ") does not match the UID in record (" + uid +
                                    "). The object might have been deleted and then recreated");
  if (options.precondition_resource_version && *options.precondition_resource_version != rv)
    throw precondition_conflict(r, name,
                                "the ResourceVersion in the precondition (" +
                                    *options.precondition_resource_version +
                                    ") does not match the ResourceVersion in record (" + rv +
                                    "). The object might have been modified");
}

}  // namespace commgate::sim
