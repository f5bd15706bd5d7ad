#include "kube/testing/fake_client.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace commgate::kube::testing {
namespace {

using nlohmann::json;

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '/'))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

ApiError status_error(int code, const std::string& reason, const std::string& message,
                      const std::string& call) {
  return ApiError(code, reason, message, call);
}

// Everything but metadata and status: what generation counts.
json spec_part(const json& object) {
  json out = object;
  if (out.is_object()) {
    out.erase("metadata");
    out.erase("status");
  }
  return out;
}

std::string resource_version_of(const json& object) {
  const auto& meta = object.value("metadata", json::object());
  auto it = meta.find("resourceVersion");
  return it != meta.end() && it->is_string() ? it->get<std::string>() : "";
}

// Equality terms ("a=b", "a==b", "a!=b") and existence ("a", "!a"), comma-separated.
bool matches(const std::string& selector, const json& object) {
  const json labels = object["metadata"].value("labels", json::object());
  std::stringstream in(selector);
  std::string term;
  while (std::getline(in, term, ',')) {
    term.erase(std::remove(term.begin(), term.end(), ' '), term.end());
    if (term.empty()) continue;
    if (term.find_first_of("()") != std::string::npos)
      throw std::invalid_argument("FakeClient: set-based label selectors are not supported: " +
                                  selector);
    const auto ne = term.find("!=");
    const auto eq = term.find('=');
    if (ne != std::string::npos) {
      const std::string k = term.substr(0, ne), v = term.substr(ne + 2);
      if (labels.contains(k) && labels[k] == v) return false;
    } else if (eq != std::string::npos) {
      const std::string k = term.substr(0, eq);
      const std::string v = term.substr(term.find_first_not_of('=', eq));
      if (!labels.contains(k) || labels[k] != v) return false;
    } else if (term[0] == '!') {
      if (labels.contains(term.substr(1))) return false;
    } else if (!labels.contains(term)) {
      return false;
    }
  }
  return true;
}

}  // namespace

// An API path taken apart: /api/v1[/namespaces/NS]/PLURAL[/NAME] or
// /apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME].
struct FakeClient::Ref {
  std::string collection, ns, plural, name;

  std::string path() const { return collection + "/" + name; }

  static Ref parse(const std::string& path, bool is_collection) {
    const auto parts = split(path.substr(0, path.find('?')));
    size_t i = 0;
    if (!parts.empty() && parts[0] == "api")
      i = 2;
    else if (!parts.empty() && parts[0] == "apis")
      i = 3;
    else
      throw std::invalid_argument("FakeClient: not an API path: " + path);
    Ref ref;
    std::string prefix;
    for (size_t k = 0; k < i && k < parts.size(); ++k) prefix += "/" + parts[k];
    if (parts.size() > i + 2 && parts[i] == "namespaces") {
      ref.ns = parts[i + 1];
      prefix += "/namespaces/" + ref.ns;
      i += 2;
    }
    if (parts.size() <= i) throw std::invalid_argument("FakeClient: no resource in " + path);
    ref.plural = parts[i];
    ref.collection = prefix + "/" + ref.plural;
    const size_t rest = parts.size() - i - 1;
    if (!is_collection && rest == 2)
      throw std::invalid_argument("FakeClient: subresource paths are not modelled (" + path +
                                  "): write status through StatusWriter with the object's "
                                  "path; test scale against the sim");
    if (is_collection ? rest != 0 : rest != 1)
      throw std::invalid_argument(std::string("FakeClient: not ") +
                                  (is_collection ? "a collection" : "an object") +
                                  " path: " + path);
    if (rest == 1) ref.name = parts[i + 1];
    return ref;
  }
};

ApiError FakeClient::conflict(const std::string& resource, const std::string& name) {
  return status_error(409, "Conflict",
                      "Operation cannot be fulfilled on " + resource + " \"" + name +
                          "\": the object has been modified; please apply your changes to the "
                          "latest version and try again",
                      "");
}

void FakeClient::enter(Method method) const {
  std::function<void()> hook;
  {
    std::lock_guard lock(mu_);
    ++calls_[method];
    auto& queue = failures_[method];
    if (!queue.empty()) {
      ApiError error = queue.front();
      queue.pop_front();
      throw error;
    }
    auto& hooks = hooks_[method];
    if (hooks.empty()) return;
    hook = std::move(hooks.front());
    hooks.pop_front();
  }
  hook();
}

void FakeClient::before_next(Method method, std::function<void()> hook) {
  std::lock_guard lock(mu_);
  hooks_[method].push_back(std::move(hook));
}

void FakeClient::fail_next(Method method, const ApiError& error, int times) {
  std::lock_guard lock(mu_);
  for (int i = 0; i < times; ++i) failures_[method].push_back(error);
}

int FakeClient::calls(Method method) const {
  std::lock_guard lock(mu_);
  auto it = calls_.find(method);
  return it == calls_.end() ? 0 : it->second;
}

std::vector<std::string> FakeClient::actions() const {
  std::lock_guard lock(mu_);
  return actions_;
}

int64_t FakeClient::resource_version() const {
  std::lock_guard lock(mu_);
  return version_;
}

json FakeClient::seed(const std::string& collection, const json& object) {
  const Ref ref = Ref::parse(collection, true);
  std::lock_guard lock(mu_);
  json stored = object;
  stored["metadata"]["resourceVersion"] = std::to_string(++version_);
  if (!ref.ns.empty()) stored["metadata"]["namespace"] = ref.ns;
  if (!stored["metadata"].contains("uid"))
    stored["metadata"]["uid"] = "fake-uid-" + std::to_string(++uids_);
  objects_[ref.collection][stored["metadata"].value("name", "")] = stored;
  return stored;
}

std::optional<json> FakeClient::peek(const std::string& path) const {
  const Ref ref = Ref::parse(path, false);
  std::lock_guard lock(mu_);
  auto c = objects_.find(ref.collection);
  if (c == objects_.end()) return std::nullopt;
  auto o = c->second.find(ref.name);
  if (o == c->second.end()) return std::nullopt;
  return o->second;
}

json FakeClient::get(const std::string& path) const {
  enter(Method::kGet);
  if (auto found = peek(path)) return *found;
  const Ref ref = Ref::parse(path, false);
  throw status_error(404, "NotFound", ref.plural + " \"" + ref.name + "\" not found",
                     "GET " + path);
}

ListPage FakeClient::list(const std::string& collection, const ListOptions& options) const {
  enter(Method::kList);
  const Ref ref = Ref::parse(collection, true);
  std::lock_guard lock(mu_);
  ListPage page;
  page.resource_version = std::to_string(version_);
  auto c = objects_.find(ref.collection);
  if (c == objects_.end()) return page;
  for (const auto& [name, object] : c->second)  // in name order, as the server lists
    if (matches(options.label_selector, object)) page.items.push_back(object);
  return page;
}

json FakeClient::create_locked(const Ref& ref, json object, const std::string& verb) {
  auto& objects = objects_[ref.collection];
  json& meta = object["metadata"];
  if (!meta.is_object()) throw status_error(422, "Invalid", "metadata must be an object", verb);
  std::string name = meta.value("name", "");
  if (name.empty() && meta.contains("generateName"))
    name = meta["generateName"].get<std::string>() + std::to_string(uids_ + 1);
  if (name.empty())
    throw status_error(422, "Invalid",
                       "metadata.name: Required value: name or generateName is required", verb);
  const std::string ns = meta.value("namespace", ref.ns);
  if (ns != ref.ns)
    throw status_error(400, "BadRequest",
                       "the namespace of the provided object does not match the namespace sent "
                       "on the request",
                       verb);
  if (objects.count(name))
    throw status_error(409, "AlreadyExists", ref.plural + " \"" + name + "\" already exists", verb);
  meta["name"] = name;
  if (!ref.ns.empty()) meta["namespace"] = ref.ns;
  meta["uid"] = "fake-uid-" + std::to_string(++uids_);
  meta["generation"] = 1;
  meta["resourceVersion"] = std::to_string(++version_);
  meta.erase("deletionTimestamp");
  object.erase("status");
  objects[name] = object;
  actions_.push_back("create " + ref.collection + "/" + name);
  return object;
}

json FakeClient::create(const std::string& collection, const json& object) {
  enter(Method::kCreate);
  const Ref ref = Ref::parse(collection, true);
  std::lock_guard lock(mu_);
  return create_locked(ref, object, "POST " + collection);
}

// With mu_ held. `next` is the whole object to store; `current` the stored one.
json FakeClient::write(const Ref& ref, json next, const json& current, const std::string& action,
                       const std::string& verb) {
  const std::string asked = resource_version_of(next);
  if (!asked.empty() && asked != resource_version_of(current)) {
    ApiError c = conflict(ref.plural, ref.name);
    throw status_error(c.code(), c.reason(), c.message(), verb);
  }
  // What the client may not change.
  json& meta = next["metadata"];
  for (const char* k : {"name", "namespace", "uid", "creationTimestamp", "generation",
                        "deletionTimestamp", "resourceVersion"}) {
    if (current["metadata"].contains(k))
      meta[k] = current["metadata"][k];
    else
      meta.erase(k);
  }
  if (spec_part(next) != spec_part(current))
    meta["generation"] = current["metadata"].value("generation", 0) + 1;
  const std::string path = ref.path();
  if (next == current) {
    actions_.push_back(action + " " + path);
    return current;
  }
  meta["resourceVersion"] = std::to_string(++version_);
  auto& objects = objects_[ref.collection];
  actions_.push_back(action + " " + path);
  if (meta.contains("deletionTimestamp") &&
      (!meta.contains("finalizers") || meta["finalizers"].empty())) {
    objects.erase(ref.name);  // the last finalizer went: the deletion completes
    return next;
  }
  objects[ref.name] = next;
  return next;
}

json FakeClient::update(const std::string& path, const json& object) {
  enter(Method::kUpdate);
  const Ref ref = Ref::parse(path, false);
  const std::string verb = "PUT " + path;
  std::lock_guard lock(mu_);
  auto& objects = objects_[ref.collection];
  auto it = objects.find(ref.name);
  if (it == objects.end())
    throw status_error(404, "NotFound", ref.plural + " \"" + ref.name + "\" not found", verb);
  const json current = it->second;
  json next = object;
  if (current.contains("status"))
    next["status"] = current["status"];
  else
    next.erase("status");
  return write(ref, std::move(next), current, "update", verb);
}

json FakeClient::update_status(const std::string& path, const json& object) {
  enter(Method::kUpdateStatus);
  const Ref ref = Ref::parse(path, false);
  const std::string verb = "PUT " + path + "/status";
  std::lock_guard lock(mu_);
  auto& objects = objects_[ref.collection];
  auto it = objects.find(ref.name);
  if (it == objects.end())
    throw status_error(404, "NotFound", ref.plural + " \"" + ref.name + "\" not found", verb);
  const json current = it->second;
  json next = current;
  next["metadata"]["resourceVersion"] = resource_version_of(object);
  if (object.contains("status"))
    next["status"] = object["status"];
  else
    next.erase("status");
  return write(ref, std::move(next), current, "update_status", verb);
}

json FakeClient::patch_part(Method method, const std::string& path, PatchType type,
                            const json& patch, const PatchOptions& options) {
  enter(method);
  const bool status = method == Method::kPatchStatus;
  const Ref ref = Ref::parse(path, false);
  const std::string verb = "PATCH " + path + (status ? "/status" : "");
  if (type == PatchType::kApply && options.field_manager.empty())
    throw status_error(422, "Invalid",
                       "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: "
                       "is required for apply patch",
                       verb);
  std::lock_guard lock(mu_);
  auto& objects = objects_[ref.collection];
  auto it = objects.find(ref.name);
  if (it == objects.end()) {
    if (type == PatchType::kApply && !status) {
      json object = patch;
      object["metadata"]["name"] = ref.name;
      return create_locked(ref, object, "apply");
    }
    throw status_error(404, "NotFound", ref.plural + " \"" + ref.name + "\" not found", verb);
  }
  const json current = it->second;
  json patched;
  if (type == PatchType::kJson) {
    if (!patch.is_array())
      throw status_error(400, "BadRequest", "a JSON patch must be an array", verb);
    try {
      patched = current.patch(patch);
    } catch (const nlohmann::json::exception& e) {
      throw status_error(422, "Invalid", std::string("the JSON patch failed: ") + e.what(), verb);
    }
  } else {
    if (!patch.is_object())
      throw status_error(400, "BadRequest", "a merge patch must be an object", verb);
    patched = current;
    patched.merge_patch(patch);
  }
  // A resourceVersion in the patch is a precondition; none means "whatever is current".
  json next = status ? current : patched;
  next["metadata"]["resourceVersion"] = resource_version_of(patched);
  if (status) {
    if (patched.contains("status"))
      next["status"] = patched["status"];
    else
      next.erase("status");
  } else if (current.contains("status")) {
    next["status"] = current["status"];
  } else {
    next.erase("status");
  }
  return write(ref, std::move(next), current, status ? "patch_status" : "patch", verb);
}

json FakeClient::patch(const std::string& path, PatchType type, const json& patch,
                       const PatchOptions& options) {
  return patch_part(Method::kPatch, path, type, patch, options);
}

json FakeClient::patch_status(const std::string& path, PatchType type, const json& patch,
                              const PatchOptions& options) {
  return patch_part(Method::kPatchStatus, path, type, patch, options);
}

json FakeClient::remove(const std::string& path, const DeleteOptions& options) {
  enter(Method::kRemove);
  const Ref ref = Ref::parse(path, false);
  const std::string verb = "DELETE " + path;
  const std::string& policy = options.propagation_policy;
  if (!policy.empty() && policy != "Background" && policy != "Foreground" && policy != "Orphan")
    throw status_error(422, "Invalid", "propagationPolicy: Unsupported value: \"" + policy + "\"",
                       verb);
  std::lock_guard lock(mu_);
  auto& objects = objects_[ref.collection];
  auto it = objects.find(ref.name);
  if (it == objects.end())
    throw status_error(404, "NotFound", ref.plural + " \"" + ref.name + "\" not found", verb);
  json object = it->second;
  if (!options.precondition_uid.empty() &&
      options.precondition_uid != object["metadata"].value("uid", ""))
    throw status_error(409, "Conflict",
                       "the UID in the precondition (" + options.precondition_uid +
                           ") does not match the UID in record (" +
                           object["metadata"].value("uid", "") +
                           "). The object might have been deleted and then recreated",
                       verb);
  actions_.push_back("remove " + ref.path());
  const json& finalizers = object["metadata"].value("finalizers", json::array());
  if (!finalizers.empty()) {
    if (!object["metadata"].contains("deletionTimestamp")) {
      object["metadata"]["deletionTimestamp"] = "1970-01-01T00:00:00Z";
      object["metadata"]["resourceVersion"] = std::to_string(++version_);
      it->second = object;
    }
    return object;
  }
  objects.erase(it);
  if (ref.plural == "pods" || ref.plural == "services") return object;
  return {
      {"kind", "Status"},
      {"apiVersion", "v1"},
      {"status", "Success"},
      {"details",
       {{"name", ref.name}, {"kind", ref.plural}, {"uid", object["metadata"].value("uid", "")}}}};
}

}  // namespace commgate::kube::testing
