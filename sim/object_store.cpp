#include "sim/object_store.h"

#include <algorithm>
#include <random>

#include "sim/api_status.h"
#include "sim/cel_rules.h"
#include "sim/uuid.h"

namespace commgate::sim {
namespace {

using nlohmann::json;

std::string object_key(const std::string& ns, const std::string& name) {
  return ns + "/" + name;
}

// A lowercase RFC 1123 subdomain, as metadata.name must be for most resources.
bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  for (char c : name)
    if (!alnum(c) && c != '-' && c != '.') return false;
  return true;
}

// rbac.authorization.k8s.io names are path segments (upstream's ValidateRBACName is
// path.IsValidPathSegmentName), so the bootstrap roles' `system:aggregate-to-edit` is one.
// "" when `name` is valid, else upstream's message.
std::string rbac_name_problem(const std::string& name) {
  if (name == "." || name == "..") return "may not be '" + name + "'";
  if (name.find('/') != std::string::npos) return "may not contain '/'";
  if (name.find('%') != std::string::npos) return "may not contain '%'";
  return "";
}

const ResourceInfo& namespaces_resource() {
  static const ResourceInfo r = [] {
    ResourceInfo n;
    n.version = "v1";
    n.plural = "namespaces";
    n.kind = "Namespace";
    n.namespaced = false;
    return n;
  }();
  return r;
}

bool matches(const WatchRequest& w, const json& obj) {
  if (!w.ns.empty() && obj["metadata"].value("namespace", "") != w.ns) return false;
  return w.labels.matches(obj) && w.fields.matches(obj);
}

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

std::string unhex(const std::string& s) {
  auto v = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (s.size() % 2 != 0) throw bad_request("invalid continue token");
  std::string out;
  for (size_t i = 0; i < s.size(); i += 2) {
    const int hi = v(s[i]), lo = v(s[i + 1]);
    if (hi < 0 || lo < 0) throw bad_request("invalid continue token");
    out += static_cast<char>(hi * 16 + lo);
  }
  return out;
}

}  // namespace

bool spec_changed(const json& before, const json& after) {
  json a = before, b = after;
  for (json* o : {&a, &b}) {
    if (!o->is_object()) continue;
    o->erase("metadata");
    o->erase("status");
  }
  return a != b;
}

ObjectStore::ObjectStore(Options options)
    : options_(std::move(options)), random_state_(std::random_device{}()) {
  for (const char* ns : {"default", "kube-system"})
    create(namespaces_resource(), "", {{"metadata", {{"name", ns}}}});
}

std::string ObjectStore::new_uid() {
  std::mt19937_64 gen(random_state_++ ^ (rv_ << 20) ^ std::random_device{}());
  const uint64_t hi = gen();
  return format_uuid_v4(hi, gen());
}

std::string ObjectStore::random_suffix() {
  // The alphabet of k8s.io/apimachinery/pkg/util/rand (no vowels, no confusable digits).
  static const std::string alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::mt19937_64 gen(random_state_++ ^ std::random_device{}());
  std::string s;
  for (int i = 0; i < 5; ++i) s += alphabet[gen() % alphabet.size()];
  return s;
}

const json* ObjectStore::find_locked(const ResourceInfo& r, const std::string& ns,
                                     const std::string& name) const {
  auto it = objects_.find(r.storage_key());
  if (it == objects_.end()) return nullptr;
  auto obj = it->second.find(object_key(r.namespaced ? ns : "", name));
  return obj == it->second.end() ? nullptr : &obj->second;
}

namespace {

// namespaceStrategy's PrepareForCreate and PrepareForUpdate (1.21+): every Namespace carries
// the label kubernetes.io/metadata.name with its own name, whatever the writer sent, so
// namespaceSelectors can pick a namespace by name.
void set_namespace_name_label(json& meta, const std::string& name) {
  if (!meta.contains("labels") || !meta["labels"].is_object()) meta["labels"] = json::object();
  meta["labels"]["kubernetes.io/metadata.name"] = name;
}

// The event a watch with selectors sees, as kube-apiserver's watch cache filters: an
// object that starts to match is ADDED, one that stops matching is DELETED.
std::optional<WatchEvent> event_for(const WatchRequest& w, const WatchEvent& e,
                                    const json& previous) {
  const bool now = matches(w, e.object);
  if (e.type != "MODIFIED" || previous.is_null()) {
    if (now) return e;
    return std::nullopt;
  }
  const bool before = matches(w, previous);
  if (now && before) return e;
  if (now) return WatchEvent{"ADDED", e.object};
  if (before) return WatchEvent{"DELETED", e.object};
  return std::nullopt;
}

}  // namespace

void ObjectStore::record_locked(const ResourceInfo& r, const std::string& type, const json& obj,
                                const json& previous) {
  history_.push_back({rv_, r.storage_key(), {type, obj}, previous});
  while (history_.size() > options_.history_limit) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
  const HistoryEntry& entry = history_.back();
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    const Watcher& w = it->second;
    std::optional<WatchEvent> e;
    if (w.storage_key == r.storage_key()) e = event_for(w.request, entry.event, entry.previous);
    if (e && !w.request.deliver(*e)) {
      it = watchers_.erase(it);
    } else {
      ++it;
    }
  }
}

json ObjectStore::create(const ResourceInfo& r, const std::string& ns, json object, bool dry_run) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!object.is_object()) throw bad_request("the body must be a JSON object");
  if (!object.contains("metadata") || !object["metadata"].is_object())
    object["metadata"] = json::object();
  json& meta = object["metadata"];
  std::string name = meta.value("name", "");
  if (name.empty() && meta.contains("generateName") && meta["generateName"].is_string())
    name = meta["generateName"].get<std::string>() + random_suffix();
  if (name.empty())
    throw invalid(r, "", "metadata.name", "FieldValueRequired",
                  "Required value: name or generateName is required");
  if (r.group == "rbac.authorization.k8s.io") {
    if (const std::string problem = rbac_name_problem(name); !problem.empty())
      throw invalid(r, name, "metadata.name", "FieldValueInvalid",
                    "Invalid value: \"" + name + "\": " + problem);
  } else if (!valid_name(name)) {
    throw invalid(r, name, "metadata.name", "FieldValueInvalid",
                  "Invalid value: \"" + name +
                      "\": a lowercase RFC 1123 subdomain must consist of lower case "
                      "alphanumeric characters, '-' or '.', and must start and end with an "
                      "alphanumeric character");
  }
  if (r.namespaced) {
    const std::string body_ns = meta.value("namespace", "");
    if (!body_ns.empty() && body_ns != ns)
      throw bad_request(
          "the namespace of the provided object does not match the namespace "
          "sent on the request");
    if (find_locked(namespaces_resource(), "", ns) == nullptr)
      throw not_found(namespaces_resource(), ns);
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  if (find_locked(r, ns, name) != nullptr) throw already_exists(r, name);

  meta["name"] = name;
  if (r.storage_key() == "/namespaces") set_namespace_name_label(meta, name);
  meta["uid"] = new_uid();
  meta["creationTimestamp"] = format_rfc3339(options_.clock());
  if (r.generation) {
    meta["generation"] = 1;
  } else {
    meta.erase("generation");
  }
  meta.erase("deletionTimestamp");
  object["apiVersion"] = r.api_version();
  object["kind"] = r.kind;
  // Where a status subresource exists, .status is not the creator's to set (the create
  // strategies of CRs, pods, jobs, CRDs reset it). Nodes keep theirs: a kubelet registers
  // its node with capacity and conditions in one create (nodeStrategy keeps .status).
  if (r.status_subresource && r.storage_key() != "/nodes") object.erase("status");
  if (r.storage_key() == "/namespaces") object["status"] = {{"phase", "Active"}};
  // SetDefaults_Secret: a Secret without a type is Opaque (`kubectl create secret generic`
  // sends none).
  if (r.storage_key() == "/secrets" &&
      (!object.contains("type") || !object["type"].is_string() || object["type"] == ""))
    object["type"] = "Opaque";
  if (r.storage_key() == "apiextensions.k8s.io/customresourcedefinitions")
    crd_written_locked(object, dry_run);
  // A dry run stores nothing, so the object has no resourceVersion yet (as upstream's
  // DryRunnableStorage returns it).
  if (dry_run) return object;

  meta["resourceVersion"] = std::to_string(++rv_);
  put_locked(r.storage_key(), object_key(r.namespaced ? ns : "", name), object);
  record_locked(r, "ADDED", object);
  // The garbage collector deletes a dependent whose owners are all gone. One created after
  // its owner's deletion (a controller acting on a stale cache) would otherwise stay here
  // forever, since this store collects dependents only when their owner goes.
  const auto owners = owner_uids(object);
  if (!owners.empty() && std::none_of(owners.begin(), owners.end(),
                                      [&](const std::string& uid) { return by_uid_.count(uid); }))
    remove_locked(r, ns, name, DeleteOptions{});
  return object;
}

json ObjectStore::get(const ResourceInfo& r, const std::string& ns, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  const json* obj = find_locked(r, ns, name);
  if (obj == nullptr) throw not_found(r, name);
  json out = *obj;
  out["apiVersion"] = r.api_version();
  return out;
}

ListResult ObjectStore::list(const ResourceInfo& r, const std::string& ns,
                             const ListOptions& options) const {
  std::lock_guard<std::mutex> lock(mu_);
  ListResult result;
  result.resource_version = rv_;
  auto it = objects_.find(r.storage_key());
  if (it == objects_.end()) return result;
  const std::string after = options.continue_token.empty() ? "" : unhex(options.continue_token);
  auto start = after.empty() ? it->second.begin() : it->second.upper_bound(after);
  int64_t remaining = 0;
  for (auto o = start; o != it->second.end(); ++o) {
    const json& obj = o->second;
    if (r.namespaced && !ns.empty() && obj["metadata"].value("namespace", "") != ns) continue;
    if (!options.labels.matches(obj) || !options.fields.matches(obj)) continue;
    if (!result.continue_token.empty()) {
      ++remaining;
      continue;
    }
    if (options.limit > 0 && result.items.size() == options.limit) {
      // More match: the token is the key of the last item returned. Not a snapshot: the
      // next page reads the objects as they are then (docs/testing.md).
      const json& last = result.items.back()["metadata"];
      result.continue_token =
          hex(object_key(r.namespaced ? last.value("namespace", "") : "", last.value("name", "")));
      // Without selectors, count the rest as upstream's remainingItemCount; with them
      // upstream cannot count, and neither do we.
      if (!options.labels.empty() || !options.fields.empty()) break;
      remaining = 1;
      continue;
    }
    result.items.push_back(obj);
    result.items.back()["apiVersion"] = r.api_version();
  }
  if (!result.continue_token.empty() && options.labels.empty() && options.fields.empty())
    result.remaining_item_count = remaining;
  return result;
}

json ObjectStore::update(const ResourceInfo& r, const std::string& ns, const std::string& name,
                         json object, WritePart part, bool dry_run) {
  std::lock_guard<std::mutex> lock(mu_);
  return write_locked(r, ns, name, std::move(object), part, true, dry_run);
}

json ObjectStore::mutate(const ResourceInfo& r, const std::string& ns, const std::string& name,
                         WritePart part, const std::function<json(const json&)>& change,
                         bool dry_run) {
  std::lock_guard<std::mutex> lock(mu_);
  const json* current = find_locked(r, ns, name);
  if (current == nullptr) throw not_found(r, name);
  json next = change(*current);
  // A patch that names a resourceVersion is a precondition, as upstream.
  return write_locked(r, ns, name, std::move(next), part, true, dry_run);
}

json ObjectStore::write_locked(const ResourceInfo& r, const std::string& ns,
                               const std::string& name, json object, WritePart part,
                               bool check_version, bool dry_run) {
  if (!object.is_object()) throw bad_request("the body must be a JSON object");
  const json* current_ptr = find_locked(r, ns, name);
  if (current_ptr == nullptr) throw not_found(r, name);
  const json& current = *current_ptr;
  if (!object.contains("metadata") || !object["metadata"].is_object())
    object["metadata"] = json::object();
  json& meta = object["metadata"];
  const std::string body_name = meta.value("name", name);
  if (body_name != name)
    throw bad_request("the name of the object (" + body_name +
                      ") does not match the name on the URL (" + name + ")");
  if (meta.contains("resourceVersion") && !meta["resourceVersion"].is_string() &&
      !meta["resourceVersion"].is_null())
    throw bad_request("metadata.resourceVersion must be a string");
  if (check_version && meta.contains("resourceVersion") && meta["resourceVersion"].is_string() &&
      !meta["resourceVersion"].get<std::string>().empty() &&
      meta["resourceVersion"] != current["metadata"]["resourceVersion"])
    throw conflict(r, name);

  json next;
  if (part == WritePart::kStatus) {
    // The status subresource changes .status only; everything else stays as stored.
    next = current;
    if (object.contains("status")) {
      next["status"] = object["status"];
    } else {
      next.erase("status");
    }
    // ... and metadata.managedFields, which record the status write's manager.
    if (object["metadata"].contains("managedFields"))
      next["metadata"]["managedFields"] = object["metadata"]["managedFields"];
  } else {
    next = object;
    const json& cm = current["metadata"];
    for (const char* k : {"uid", "creationTimestamp", "namespace", "name", "generation",
                          "deletionTimestamp", "deletionGracePeriodSeconds"}) {
      if (cm.contains(k)) {
        next["metadata"][k] = cm[k];
      } else {
        next["metadata"].erase(k);
      }
    }
    // The main resource cannot change .status where a status subresource exists.
    if (r.status_subresource) {
      if (current.contains("status")) {
        next["status"] = current["status"];
      } else {
        next.erase("status");
      }
    }
    if (r.storage_key() == "/namespaces") set_namespace_name_label(next["metadata"], name);
    if (r.generation && spec_changed(current, next))
      next["metadata"]["generation"] = cm.value("generation", 1) + 1;
  }
  next["apiVersion"] = r.api_version();
  next["kind"] = r.kind;
  if (r.storage_key() == "apiextensions.k8s.io/customresourcedefinitions")
    crd_written_locked(next, dry_run);
  json probe = next, before = current;
  probe["metadata"].erase("resourceVersion");
  before["metadata"].erase("resourceVersion");
  before["apiVersion"] = r.api_version();
  if (probe == before) {
    // A no-op write keeps the version and sends no event, as upstream.
    return current;
  }
  if (is_deleting(current)) {
    const auto added = added_finalizers(current, next);
    if (!added.empty()) {
      std::string list;
      for (const auto& f : added) list += (list.empty() ? "\"" : ", \"") + f + "\"";
      throw invalid(r, name, "metadata.finalizers", "FieldValueForbidden",
                    "Forbidden: no new finalizers can be added if the object is being deleted, "
                    "found new finalizers []string{" +
                        list + "}");
    }
  }
  // A dry run answers what would be stored, at the version it would replace.
  if (dry_run) return next;
  const std::string key = object_key(r.namespaced ? ns : "", name);
  json previous = current;  // `current` refers to the slot put_locked overwrites
  if (is_deleting(previous) && finalizers_of(next).empty()) {
    // The last finalizer is gone: the update turns into the deletion (one DELETED event).
    vanish_locked(r, key, next);
    return next;
  }
  next["metadata"]["resourceVersion"] = std::to_string(++rv_);
  put_locked(r.storage_key(), key, next);
  record_locked(r, "MODIFIED", next, previous);
  // A dependent that dropped its reference may be what a foreground deletion waits for.
  const auto now_owners = owner_uids(next);
  for (const auto& uid : owner_uids(previous))
    if (std::find(now_owners.begin(), now_owners.end(), uid) == now_owners.end())
      finish_foreground_locked(uid);
  return next;
}

json ObjectStore::remove(const ResourceInfo& r, const std::string& ns, const std::string& name,
                         const DeleteOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  return remove_locked(r, ns, name, options);
}

void ObjectStore::put_locked(const std::string& storage_key, const std::string& key,
                             const json& object) {
  Objects& objects = objects_[storage_key];
  auto it = objects.find(key);
  if (it != objects.end())
    for (const auto& owner : owner_uids(it->second)) dependents_[owner].erase({storage_key, key});
  objects[key] = object;
  by_uid_[object["metadata"].value("uid", "")] = {storage_key, key};
  for (const auto& owner : owner_uids(object)) dependents_[owner].insert({storage_key, key});
}

void ObjectStore::erase_locked(const std::string& storage_key, const std::string& key) {
  auto objects = objects_.find(storage_key);
  if (objects == objects_.end()) return;
  auto it = objects->second.find(key);
  if (it == objects->second.end()) return;
  for (const auto& owner : owner_uids(it->second)) {
    auto deps = dependents_.find(owner);
    if (deps == dependents_.end()) continue;
    deps->second.erase({storage_key, key});
    if (deps->second.empty()) dependents_.erase(deps);
  }
  by_uid_.erase(it->second["metadata"].value("uid", ""));
  objects->second.erase(it);
}

std::optional<ResourceInfo> ObjectStore::info_for_locked(const std::string& storage_key) const {
  const auto slash = storage_key.find('/');
  return registry_.find_any_version(storage_key.substr(0, slash), storage_key.substr(slash + 1));
}

json ObjectStore::remove_locked(const ResourceInfo& r, const std::string& ns,
                                const std::string& name, const DeleteOptions& options) {
  const json* current = find_locked(r, ns, name);
  if (current == nullptr) throw not_found(r, name);
  check_delete_preconditions(r, name, options, *current);  // again, atomically with the delete
  // Already deleting: kube-apiserver answers with the object as it is.
  if (is_deleting(*current)) return *current;
  const std::string key = object_key(r.namespaced ? ns : "", name);
  const std::string uid = (*current)["metadata"].value("uid", "");
  const Propagation policy = effective_propagation(r, options, *current);

  if (policy == Propagation::kOrphan) {
    auto deps = dependents_.find(uid);
    const std::set<Location> orphans =
        deps == dependents_.end() ? std::set<Location>{} : deps->second;
    for (const auto& [skey, dkey] : orphans) {
      auto info = info_for_locked(skey);
      const json previous = objects_[skey][dkey];
      json next = without_owner(previous, uid);
      next["metadata"]["resourceVersion"] = std::to_string(++rv_);
      put_locked(skey, dkey, next);
      if (info) record_locked(*info, "MODIFIED", next, previous);
    }
    current = find_locked(r, ns, name);
  }

  json obj = *current;
  auto deps = dependents_.find(uid);
  const bool foreground =
      policy == Propagation::kForeground && deps != dependents_.end() && !deps->second.empty();
  if (foreground) {
    const auto fin = finalizers_of(obj);
    if (std::find(fin.begin(), fin.end(), kForegroundFinalizer) == fin.end())
      obj["metadata"]["finalizers"].push_back(kForegroundFinalizer);
  }
  if (finalizers_of(obj).empty()) {
    vanish_locked(r, key, obj);
    return obj;
  }
  const json previous = *current;
  obj["metadata"]["deletionTimestamp"] = format_rfc3339(options_.clock());
  obj["metadata"]["deletionGracePeriodSeconds"] = 0;
  obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
  put_locked(r.storage_key(), key, obj);
  record_locked(r, "MODIFIED", obj, previous);
  if (foreground) {
    deps = dependents_.find(uid);
    const std::set<Location> dependents =
        deps == dependents_.end() ? std::set<Location>{} : deps->second;
    for (const auto& [skey, dkey] : dependents) {
      auto info = info_for_locked(skey);
      auto objects = objects_.find(skey);
      if (!info || objects == objects_.end()) continue;
      auto dep = objects->second.find(dkey);
      if (dep == objects->second.end() || is_deleting(dep->second)) continue;
      const auto slash = dkey.find('/');
      // As the GC does: foreground again where the dependent has dependents of its own.
      remove_locked(*info, dkey.substr(0, slash), dkey.substr(slash + 1),
                    {gc_propagation(dep->second, dependents_.count(dep->second["metadata"].value(
                                                     "uid", "")) > 0)});
    }
    finish_foreground_locked(uid);
  }
  return obj;
}

void ObjectStore::vanish_locked(const ResourceInfo& r, const std::string& key, json gone) {
  erase_locked(r.storage_key(), key);
  gone["metadata"]["resourceVersion"] = std::to_string(++rv_);
  record_locked(r, "DELETED", gone);
  const std::string name = gone["metadata"].value("name", "");
  if (r.storage_key() == "/namespaces") {
    // No namespace controller: the namespace's objects go with it at once, finalizers or
    // not.
    std::vector<std::pair<std::string, std::string>> doomed;
    for (const auto& [skey, objects] : objects_)
      for (const auto& [okey, obj] : objects)
        if (obj["metadata"].value("namespace", "") == name) doomed.emplace_back(skey, okey);
    for (const auto& [skey, okey] : doomed) {
      auto info = info_for_locked(skey);
      auto objects = objects_.find(skey);
      if (!info || objects == objects_.end()) continue;
      auto obj = objects->second.find(okey);
      if (obj == objects->second.end()) continue;  // collected meanwhile
      vanish_locked(*info, okey, obj->second);
    }
  }
  if (r.storage_key() == "apiextensions.k8s.io/customresourcedefinitions")
    on_crd_removed_locked(gone);
  collect_dependents_locked(gone);
  for (const auto& owner : owner_uids(gone)) finish_foreground_locked(owner);
}

void ObjectStore::collect_dependents_locked(const json& gone) {
  const std::string uid = gone["metadata"].value("uid", "");
  auto deps = dependents_.find(uid);
  if (deps == dependents_.end()) return;
  const std::set<Location> dependents = deps->second;
  for (const auto& [skey, dkey] : dependents) {
    auto info = info_for_locked(skey);
    auto objects = objects_.find(skey);
    if (!info || objects == objects_.end()) continue;
    auto dep = objects->second.find(dkey);
    if (dep == objects->second.end() || is_deleting(dep->second)) continue;
    bool other_owner = false;
    for (const auto& owner : owner_uids(dep->second))
      if (owner != uid && by_uid_.count(owner) > 0) other_owner = true;
    if (other_owner) {
      // Another owner still exists: the GC only drops the dangling reference.
      const json previous = dep->second;
      json next = without_owner(previous, uid);
      next["metadata"]["resourceVersion"] = std::to_string(++rv_);
      put_locked(skey, dkey, next);
      record_locked(*info, "MODIFIED", next, previous);
      continue;
    }
    const auto slash = dkey.find('/');
    remove_locked(*info, dkey.substr(0, slash), dkey.substr(slash + 1),
                  {gc_propagation(dep->second, false)});
  }
  deps = dependents_.find(uid);
  if (deps != dependents_.end() && deps->second.empty()) dependents_.erase(deps);
}

void ObjectStore::finish_foreground_locked(const std::string& owner_uid) {
  auto loc = by_uid_.find(owner_uid);
  if (loc == by_uid_.end()) return;
  const auto [skey, key] = loc->second;
  const json& owner = objects_[skey][key];
  const auto fin = finalizers_of(owner);
  if (!is_deleting(owner) || std::find(fin.begin(), fin.end(), kForegroundFinalizer) == fin.end())
    return;
  auto deps = dependents_.find(owner_uid);
  if (deps != dependents_.end())
    for (const auto& [dskey, dkey] : deps->second)
      if (blocks_owner_deletion(objects_[dskey][dkey], owner_uid)) return;
  auto info = info_for_locked(skey);
  if (!info) return;
  const json previous = owner;
  json next = previous;
  json kept = json::array();
  for (const auto& f : fin)
    if (f != kForegroundFinalizer) kept.push_back(f);
  next["metadata"]["finalizers"] = kept;
  if (kept.empty()) {
    next["metadata"].erase("finalizers");
    vanish_locked(*info, key, next);
    return;
  }
  next["metadata"]["resourceVersion"] = std::to_string(++rv_);
  put_locked(skey, key, next);
  record_locked(*info, "MODIFIED", next, previous);
}

void ObjectStore::crd_written_locked(json& crd, bool dry_run) {
  if (!dry_run) return on_crd_written_locked(crd);
  // Validated and given its status as for real, but the resources it would add are not
  // served: the registry is put back as it was.
  ResourceRegistry saved = registry_;
  try {
    on_crd_written_locked(crd);
  } catch (...) {
    registry_ = std::move(saved);
    throw;
  }
  registry_ = std::move(saved);
}

namespace {

// Refuses the CRD at the first x-kubernetes-validations rule under `schema` that does not
// compile, at its path (properties[spec].x-kubernetes-validations[0].rule, as upstream).
void check_cel_rules_compile(const ResourceInfo& crd_resource, const std::string& name,
                             const json& schema, const std::string& path) {
  if (!schema.is_object()) return;
  if (const auto rules = schema.find("x-kubernetes-validations");
      rules != schema.end() && rules->is_array()) {
    for (size_t i = 0; i < rules->size(); ++i) {
      const json& r = (*rules)[i];
      const std::string rule = r.is_object() ? r.value("rule", std::string()) : std::string();
      const std::string why = cel_rule_compile_error(rule);
      if (!why.empty())
        throw invalid(crd_resource, name,
                      path + ".x-kubernetes-validations[" + std::to_string(i) + "].rule",
                      "FieldValueInvalid",
                      "Invalid value: " + json(rule).dump() + ": compilation failed: " + why);
    }
  }
  if (const auto props = schema.find("properties"); props != schema.end() && props->is_object())
    for (const auto& [key, child] : props->items())
      check_cel_rules_compile(crd_resource, name, child, path + ".properties[" + key + "]");
  for (const char* nested : {"items", "additionalProperties"})
    if (const auto child = schema.find(nested); child != schema.end())
      check_cel_rules_compile(crd_resource, name, *child, path + "." + nested);
}

}  // namespace

void ObjectStore::on_crd_written_locked(json& crd) {
  const std::string name = crd["metadata"].value("name", "");
  std::vector<ResourceInfo> resources;
  ResourceInfo crd_resource =
      *registry_.find("apiextensions.k8s.io", "v1", "customresourcedefinitions");
  try {
    resources = resources_from_crd(crd);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    const auto colon = what.find(':');
    throw invalid(crd_resource, name, what.substr(0, colon), "FieldValueRequired",
                  what.substr(colon + 2));
  }
  if (resources.empty())
    throw invalid(crd_resource, name, "spec.versions", "FieldValueInvalid",
                  "Invalid value: must have at least one served version");
  const auto& spec = crd["spec"];
  if (name != resources[0].plural + "." + resources[0].group)
    throw invalid(crd_resource, name, "metadata.name", "FieldValueInvalid",
                  "Invalid value: \"" + name + "\": must be spec.names.plural+\".\"+spec.group");
  // Every rule compiles, as kube-apiserver checks when a CRD is written (sim/cel_rules.h).
  for (size_t v = 0; v < spec["versions"].size(); ++v) {
    const json& version = spec["versions"][v];
    if (!version.contains("schema") || !version["schema"].is_object()) continue;
    check_cel_rules_compile(crd_resource, name, version["schema"].value("openAPIV3Schema", json()),
                            "spec.versions[" + std::to_string(v) + "].schema.openAPIV3Schema");
  }
  registry_.set_crd(name, resources);
  // No CRD controller: names are accepted and the CRD is Established at once. Conditions
  // already there are kept, so that re-applying an unchanged CRD is a no-op.
  json stored_versions = json::array();
  for (const auto& v : spec["versions"])
    if (v.value("storage", false)) stored_versions.push_back(v.value("name", ""));
  if (!crd.contains("status") || !crd["status"].is_object()) crd["status"] = json::object();
  json& status = crd["status"];
  status["acceptedNames"] = spec["names"];
  status["storedVersions"] = stored_versions;
  if (!status.contains("conditions")) {
    const std::string now = format_rfc3339(options_.clock());
    status["conditions"] = {{{"type", "NamesAccepted"},
                             {"status", "True"},
                             {"reason", "NoConflicts"},
                             {"message", "no conflicts found"},
                             {"lastTransitionTime", now}},
                            {{"type", "Established"},
                             {"status", "True"},
                             {"reason", "InitialNamesAccepted"},
                             {"message", "the initial names have been accepted"},
                             {"lastTransitionTime", now}}};
  }
}

void ObjectStore::on_crd_removed_locked(const json& crd) {
  const std::string name = crd["metadata"].value("name", "");
  auto resources = resources_from_crd(crd);
  registry_.remove_crd(name);
  if (resources.empty()) return;
  const ResourceInfo& r = resources[0];
  auto it = objects_.find(r.storage_key());
  if (it == objects_.end()) return;
  std::vector<json> gone;
  std::vector<std::string> keys;
  for (const auto& [key, obj] : it->second) {
    gone.push_back(obj);
    keys.push_back(key);
  }
  for (const auto& key : keys) erase_locked(r.storage_key(), key);
  objects_.erase(r.storage_key());
  for (auto& obj : gone) {
    obj["metadata"]["resourceVersion"] = std::to_string(++rv_);
    record_locked(r, "DELETED", obj);
  }
}

void ObjectStore::compact_history() {
  std::lock_guard<std::mutex> lock(mu_);
  history_.clear();
  compacted_rv_ = rv_;
}

uint64_t ObjectStore::watch(const ResourceInfo& r, WatchRequest request) {
  std::lock_guard<std::mutex> lock(mu_);
  if (request.from) {
    if (*request.from < compacted_rv_)
      throw expired("too old resource version: " + std::to_string(*request.from) + " (" +
                    std::to_string(compacted_rv_ + 1) + ")");
    for (const auto& h : history_) {
      if (h.rv <= *request.from || h.storage_key != r.storage_key()) continue;
      const auto e = event_for(request, h.event, h.previous);
      if (e && !request.deliver(*e)) return 0;
    }
  } else {
    auto it = objects_.find(r.storage_key());
    if (it != objects_.end())
      for (const auto& [key, obj] : it->second)
        if (matches(request, obj) && !request.deliver({"ADDED", obj})) return 0;
    if (request.initial_events_end) {
      const json end = {{"metadata",
                         {{"resourceVersion", std::to_string(rv_)},
                          {"annotations", {{"k8s.io/initial-events-end", "true"}}}}}};
      if (!request.deliver({"BOOKMARK", end})) return 0;
    }
  }
  const uint64_t id = next_watch_id_++;
  watchers_[id] = Watcher{r.storage_key(), std::move(request)};
  return id;
}

void ObjectStore::unwatch(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.erase(id);
}

void ObjectStore::send_bookmarks(const std::vector<uint64_t>& ids) {
  std::lock_guard<std::mutex> lock(mu_);
  const json bookmark = {{"metadata", {{"resourceVersion", std::to_string(rv_)}}}};
  for (uint64_t id : ids) {
    auto it = watchers_.find(id);
    if (it != watchers_.end() && !it->second.request.deliver({"BOOKMARK", bookmark}))
      watchers_.erase(it);
  }
}

std::size_t ObjectStore::watch_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watchers_.size();
}

uint64_t ObjectStore::resource_version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rv_;
}

ResourceRegistry ObjectStore::registry() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_;
}

std::optional<ResourceInfo> ObjectStore::find_resource(const std::string& group,
                                                       const std::string& version,
                                                       const std::string& plural) const {
  std::lock_guard<std::mutex> lock(mu_);
  return registry_.find(group, version, plural);
}

}  // namespace commgate::sim
