#include "sim/api_handlers.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/json_access.h"
#include "core/yaml_json.h"
#include "sim/api_status.h"
#include "sim/crd_schema.h"
#include "sim/discovery.h"
#include "sim/event_views.h"
#include "sim/impersonation.h"
#include "sim/job_update_validation.h"
#include "sim/kubelet.h"
#include "sim/protobuf_body.h"
#include "sim/query_options.h"
#include "sim/server_side_apply.h"
#include "sim/table.h"
#include "sim/wire_times.h"

namespace commgate::sim {
namespace {

using nlohmann::json;
using server::Request;
using server::Response;

// kube-apiserver marks every API response (WithCacheControl) so no proxy caches it.
Response status_response(const json& status) {
  return Response::json(status.value("code", 500), status.dump())
      .with_header("Cache-Control", "no-cache, private");
}

Response object_response(int code, const json& object) {
  return Response::json(code, object.dump()).with_header("Cache-Control", "no-cache, private");
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '/'))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

ApiError path_not_found() {
  auto s = failure_status(404, "NotFound", "the server could not find the requested resource");
  s["details"] = json::object();
  return ApiError(s);
}

bool wants_table(const Request& request) {
  return request.header("Accept").find("as=Table") != std::string_view::npos;
}

// One watch event per chunk, "type" before "object" and a newline after, byte-for-byte
// the framing of the recorded kube-apiserver stream (fixtures/k8s/watch-list/).
std::string watch_line(const std::string& type, const json& object) {
  return "{\"type\":" + json(type).dump() + ",\"object\":" + object.dump() + "}\n";
}

const char* const kPatchTypes =
    "application/json-patch+json, application/merge-patch+json, "
    "application/strategic-merge-patch+json, application/apply-patch+yaml";
// Custom resources have no strategic-merge schema: kube-apiserver refuses that patch type.
const char* const kCustomPatchTypes =
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

std::string media_type(const Request& request) {
  const std::string type(request.header("Content-Type"));
  return type.substr(0, type.find(';'));
}

bool is_apply_patch(const Request& request) {
  return request.method == "PATCH" && media_type(request) == "application/apply-patch+yaml";
}

json parse_body(const Request& request) {
  const std::string_view type = request.header("Content-Type");
  // kubectl's typed clients (create namespace, create configmap, ...) send protobuf: the
  // kinds whose messages the sim knows are decoded, others answer 415 (protobuf_body.h).
  if (type.find("protobuf") != std::string_view::npos) return decode_protobuf_object(request.body);
  if (type.find("yaml") != std::string_view::npos) {
    try {
      auto docs = yaml_documents_to_json(request.body);
      if (docs.size() != 1) throw bad_request("expected exactly one YAML document");
      return docs[0];
    } catch (const std::runtime_error& e) {
      if (dynamic_cast<const ApiError*>(&e) != nullptr) throw;
      throw bad_request(std::string("the body could not be decoded: ") + e.what());
    }
  }
  try {
    return json::parse(request.body);
  } catch (const json::exception& e) {
    throw bad_request(std::string("the body could not be decoded as JSON: ") + e.what());
  }
}

uint64_t parse_rv(const std::string& text) {
  try {
    size_t used = 0;
    const uint64_t v = std::stoull(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw bad_request("invalid resourceVersion \"" + text + "\"");
}

json list_document(const ResourceInfo& r, const ListResult& result) {
  json meta = {{"resourceVersion", std::to_string(result.resource_version)}};
  if (!result.continue_token.empty()) meta["continue"] = result.continue_token;
  if (result.remaining_item_count) meta["remainingItemCount"] = *result.remaining_item_count;
  json items = result.items;
  // Built-in lists carry kind and apiVersion once, not per item (typed lists); custom
  // resources are stored unstructured and keep them on every item.
  if (!r.custom)
    for (auto& item : items) {
      item.erase("kind");
      item.erase("apiVersion");
    }
  return {{"kind", r.kind + "List"},
          {"apiVersion", r.api_version()},
          {"metadata", meta},
          {"items", std::move(items)}};
}

ListOptions list_options(const Request& request, const ListQuery& query) {
  ListOptions o;
  o.labels = LabelSelectorQuery::parse(request.query_param("labelSelector"));
  o.fields = FieldSelectorQuery::parse(request.query_param("fieldSelector"));
  if (query.limit > 0) o.limit = static_cast<std::size_t>(query.limit);
  o.continue_token = request.query_param("continue");
  return o;
}

std::string resource_version_of(const json& object) {
  if (!object.is_object() || !object.contains("metadata") || !object["metadata"].is_object())
    return "";
  const json& meta = object["metadata"];
  if (!meta.contains("resourceVersion") || !meta["resourceVersion"].is_string()) return "";
  return meta["resourceVersion"].get<std::string>();
}

// `custom`: the patched object is a custom resource (not its Scale, a built-in kind).
json apply_patch(const Request& request, const json& current, bool custom) {
  const std::string media = media_type(request);
  if (custom && media == "application/strategic-merge-patch+json")
    throw unsupported_media_type(media, kCustomPatchTypes);
  json patch;
  try {
    patch = json::parse(request.body);
  } catch (const json::exception& e) {
    if (media == "application/apply-patch+yaml") throw unsupported_media_type(media, kPatchTypes);
    throw bad_request(std::string("the patch could not be decoded as JSON: ") + e.what());
  }
  if (media == "application/merge-patch+json" ||
      media == "application/strategic-merge-patch+json") {
    // Strategic merge is taken as a JSON merge patch: lists are replaced, not merged by
    // key (documented in docs/testing.md).
    if (!patch.is_object()) throw bad_request("a merge patch must be a JSON object");
    json next = current;
    next.merge_patch(patch);
    return next;
  }
  if (media == "application/json-patch+json") {
    if (!patch.is_array()) throw bad_request("a JSON patch must be a JSON array");
    try {
      return current.patch(patch);
    } catch (const json::exception& e) {
      throw ApiError(
          failure_status(422, "Invalid", std::string("the JSON patch failed: ") + e.what()));
    }
  }
  throw unsupported_media_type(media, kPatchTypes);
}

// DeleteOptions from the body (kubectl, client-go) or, when there is none, from the query
// (the Python client, curl): propagationPolicy and the legacy orphanDependents. As
// upstream's delete handler, a body makes the query's options ignored.
DeleteOptions delete_options(const Request& request) {
  if (request.body.empty()) {
    const DeleteQuery query = decode_delete_query(request);
    return parse_delete_options(request.query_param("propagationPolicy"), query.orphan_dependents);
  }
  std::string policy;
  std::optional<bool> orphan;
  const json body = parse_body(request);  // malformed DeleteOptions -> 400
  if (body.is_object() && body.contains("propagationPolicy") &&
      body["propagationPolicy"].is_string())
    policy = body["propagationPolicy"].get<std::string>();
  if (body.is_object() && body.contains("orphanDependents") &&
      body["orphanDependents"].is_boolean())
    orphan = body["orphanDependents"].get<bool>();
  DeleteOptions options = parse_delete_options(policy, orphan);
  const json preconditions =
      body.is_object() ? body.value("preconditions", json::object()) : json::object();
  if (preconditions.is_object()) {
    if (preconditions.contains("uid") && preconditions["uid"].is_string())
      options.precondition_uid = preconditions["uid"].get<std::string>();
    if (preconditions.contains("resourceVersion") && preconditions["resourceVersion"].is_string())
      options.precondition_resource_version = preconditions["resourceVersion"].get<std::string>();
  }
  return options;
}

// ?dryRun=All (or, on DELETE, DeleteOptions.dryRun ["All"] in the body, as client-go
// sends it). "All" is the only value kube-apiserver accepts.
bool dry_run_of(const Request& request) {
  std::vector<std::string> values;
  const std::string query = request.query_param("dryRun");
  if (!query.empty()) values.push_back(query);
  if (request.method == "DELETE" && !request.body.empty()) {
    const json body = parse_body(request);
    if (body.is_object() && body.contains("dryRun") && body["dryRun"].is_array())
      for (const auto& v : body["dryRun"])
        values.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  }
  for (const auto& v : values)
    if (v != "All")
      throw bad_request("dryRun: Unsupported value: \"" + v + "\": supported values: \"All\"");
  return !values.empty();
}

// Scale subresource: the autoscaling/v1 Scale view of a custom resource.
json to_scale(const ResourceInfo& r, const json& obj) {
  json meta = {{"name", obj["metadata"]["name"]},
               {"uid", obj["metadata"]["uid"]},
               {"resourceVersion", obj["metadata"]["resourceVersion"]},
               {"creationTimestamp", obj["metadata"]["creationTimestamp"]}};
  if (obj["metadata"].contains("namespace")) meta["namespace"] = obj["metadata"]["namespace"];
  json spec_replicas = json_path_value(obj, r.scale->spec_replicas_path);
  json status_replicas = json_path_value(obj, r.scale->status_replicas_path);
  return {{"kind", "Scale"},
          {"apiVersion", "autoscaling/v1"},
          {"metadata", meta},
          {"spec", {{"replicas", spec_replicas.is_number() ? spec_replicas : json(0)}}},
          {"status", {{"replicas", status_replicas.is_number() ? status_replicas : json(0)}}}};
}

// What a DELETE answers (upstream's Store.Delete and finalizeDelete): the object while it
// stays (finalizers hold it, or it was deleting already); once gone, the object itself only
// for the resources that set ReturnDeletedObject, else a Success Status naming it.
json deletion_answer(const ResourceInfo& r, const json& object) {
  const json& meta = object["metadata"];
  const bool stays = meta.contains("deletionTimestamp") ||
                     (meta.contains("finalizers") && !meta["finalizers"].empty());
  if (stays || r.returns_deleted_object) return object;
  return success_status(r, meta.value("name", ""), meta.value("uid", ""));
}

// Upstream's ValidateListOptions failure: 422 for ListOptions.meta.k8s.io.
ApiError list_options_invalid(const std::string& error) {
  return ApiError(
      failure_status(422, "Invalid", "ListOptions.meta.k8s.io \"\" is invalid: " + error));
}

// Writes `value` at a simple dotted path (".spec.numNodes").
void set_path(json& obj, const std::string& path, const json& value) {
  json* cur = &obj;
  std::stringstream in(path);
  std::string part;
  std::vector<std::string> parts;
  while (std::getline(in, part, '.'))
    if (!part.empty()) parts.push_back(part);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!(*cur)[parts[i]].is_object()) (*cur)[parts[i]] = json::object();
    cur = &(*cur)[parts[i]];
  }
  if (!parts.empty()) (*cur)[parts.back()] = value;
}

json self_subject_review(const UserInfo& user, TimePoint now) {
  return {{"kind", "SelfSubjectReview"},
          {"apiVersion", "authentication.k8s.io/v1"},
          {"metadata", {{"creationTimestamp", format_rfc3339(now)}}},
          {"status", {{"userInfo", to_json(user)}}}};
}

}  // namespace

ApiHandlers::ApiHandlers(ObjectStore& store, ApiHandlerOptions options)
    : store_(store),
      options_(std::move(options)),
      services_(&store_),
      admission_(store_, services_, options_.admission_plugins,
                 [this](const UserInfo& user, const RequestAttributes& request) {
                   if (options_.authorization != AuthorizationMode::kRbac)
                     return Authorization{true, ""};
                   return authorize(user, request, *rbac_objects());
                 }) {}

Response ApiHandlers::handle(const Request& request, Identity* identity) {
  Write w;
  // Who asks: the user the bearer token stands for (the admin token: kubeadm's
  // kubernetes-admin), as webhooks see it in userInfo (docs/testing.md).
  auto user = options_.authentication.authenticate(request.header("Authorization"));
  if (identity) identity->user = user;
  if (!user) return status_response(failure_status(401, "Unauthorized", "Unauthorized"));
  w.user = std::move(*user);
  Response response;
  try {
    // kubectl --as: from here on the request is the impersonated user, if the requester
    // may impersonate it (impersonation.h).
    if (auto as = impersonate(request.headers, w.user,
                              [this](const UserInfo& requester, const RequestAttributes& a) {
                                if (options_.authorization != AuthorizationMode::kRbac)
                                  return Authorization{true, ""};
                                return authorize(requester, a, *rbac_objects());
                              })) {
      w.user = std::move(*as);
      if (identity) identity->impersonated = w.user;
    }
    authorize_request(request, w.user);
    response = dispatch(request, w);
  } catch (const ApiError& e) {
    response = status_response(e.status());
  } catch (const nlohmann::json::exception& e) {
    // A field of the wrong JSON type (metadata.name: 5, ...): the client's mistake.
    response = status_response(failure_status(
        400, "BadRequest", std::string("the request body is malformed: ") + e.what()));
  } catch (const std::exception& e) {
    response = status_response(
        failure_status(500, "InternalError", std::string("Internal error occurred: ") + e.what()));
  }
  for (const auto& text : w.warnings) response.with_header("Warning", warning_header_value(text));
  return response;
}

void ApiHandlers::authorize_request(const Request& request, const UserInfo& user) {
  if (options_.authorization != AuthorizationMode::kRbac) return;
  const auto watch_param = request.find_query_param("watch");
  const bool watch = watch_param && (*watch_param == "true" || *watch_param == "1");
  const RequestAttributes attributes =
      request_attributes(request.method, request.path, watch, request.query_param("fieldSelector"));
  const Authorization decision = authorize(user, attributes, *rbac_objects());
  if (!decision.allowed) throw ApiError(forbidden_status(user, attributes, decision.reason));
}

std::shared_ptr<const RbacObjects> ApiHandlers::rbac_objects() {
  std::lock_guard lock(rbac_mu_);
  const uint64_t version = store_.resource_version();
  if (rbac_ && rbac_version_ == version) return rbac_;
  RbacObjects rbac = bootstrap_rbac();
  auto add = [&](const char* plural, std::vector<json>& into) {
    const auto r = store_.find_resource("rbac.authorization.k8s.io", "v1", plural);
    if (!r) return;
    for (auto& item : store_.list(*r, "", ListOptions{}).items) into.push_back(std::move(item));
  };
  add("roles", rbac.roles);
  // A stored ClusterRole replaces the bootstrap one of its name (an admin's own `edit`).
  std::vector<json> stored_cluster_roles;
  add("clusterroles", stored_cluster_roles);
  for (const json& role : stored_cluster_roles) {
    const std::string name = role["metadata"].value("name", "");
    std::erase_if(rbac.cluster_roles,
                  [&](const json& r) { return r["metadata"].value("name", "") == name; });
  }
  for (json& role : stored_cluster_roles) rbac.cluster_roles.push_back(std::move(role));
  add("rolebindings", rbac.role_bindings);
  add("clusterrolebindings", rbac.cluster_role_bindings);
  // kube-controller-manager's clusterrole-aggregation controller, as of this version.
  rbac.cluster_roles = aggregate_cluster_roles(std::move(rbac.cluster_roles));
  rbac_ = std::make_shared<const RbacObjects>(std::move(rbac));
  rbac_version_ = version;
  return rbac_;
}

Response ApiHandlers::pod_log(const Request& request, const std::string& ns,
                              const std::string& name) {
  std::string dir;
  {
    std::lock_guard lock(pod_log_mu_);
    dir = pod_log_dir_;
  }
  if (dir.empty()) throw path_not_found();
  const auto pods = store_.find_resource("", "v1", "pods");
  const json pod = store_.get(*pods, ns, name);  // 404 as upstream words it
  std::vector<std::string> names;
  for (const auto& c : pod.value("/spec/containers"_json_pointer, json::array()))
    names.push_back(c.value("name", ""));
  std::string container;
  if (const auto asked = request.find_query_param("container"); asked && !asked->empty()) {
    container = *asked;
    if (std::find(names.begin(), names.end(), container) == names.end())
      throw ApiError(failure_status(400, "BadRequest",
                                    "container " + container + " is not valid for pod " + name));
  } else if (names.size() == 1) {
    container = names.front();
  } else {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : " ") + n;
    throw ApiError(failure_status(
        400, "BadRequest",
        "a container name must be specified for pod " + name + ", choose one of: [" + list + "]"));
  }
  std::ifstream in(
      container_log_file(pod_directory(dir, ns, name, json_string(pod, {"metadata", "uid"})),
                         container),
      std::ios::binary);
  if (!in)
    throw ApiError(failure_status(400, "BadRequest",
                                  "container \"" + container + "\" in pod \"" + name +
                                      "\" is waiting to start: ContainerCreating"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // tailLines: the last N lines, as the kubelet's log reader gives them.
  if (const auto tail = request.find_query_param("tailLines"); tail && !tail->empty()) {
    long long lines = 0;
    try {
      lines = std::stoll(std::string(*tail));
    } catch (const std::exception&) {
      throw ApiError(failure_status(400, "BadRequest", "tailLines: must be an integer"));
    }
    std::size_t start = text.size();
    if (lines > 0) {
      // Back from the end (past a final newline) to the newline before the N-th last line.
      start = text.empty() || text.back() != '\n' ? text.size() : text.size() - 1;
      long long seen = 0;
      while (start > 0 && !(text[start - 1] == '\n' && ++seen == lines)) --start;
    }
    text = text.substr(start);
  }
  return Response::text(200, std::move(text));
}

json ApiHandlers::self_subject_access_review(const json& review, const UserInfo& user) {
  if (!review.is_object() || !review.contains("spec") || !review["spec"].is_object())
    throw ApiError(failure_status(400, "BadRequest", "spec: Required value"));
  const json& spec = review["spec"];
  RequestAttributes r;
  if (const auto a = spec.find("resourceAttributes"); a != spec.end() && a->is_object()) {
    r.verb = json_string(*a, {"verb"});
    r.api_group = json_string(*a, {"group"});
    r.api_version = json_string(*a, {"version"});
    r.resource = json_string(*a, {"resource"});
    r.subresource = json_string(*a, {"subresource"});
    r.ns = json_string(*a, {"namespace"});
    r.name = json_string(*a, {"name"});
  } else if (const auto n = spec.find("nonResourceAttributes"); n != spec.end() && n->is_object()) {
    r.resource_request = false;
    r.verb = json_string(*n, {"verb"});
    r.path = json_string(*n, {"path"});
  } else {
    throw ApiError(failure_status(
        422, "Invalid",
        "spec: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must "
        "be specified"));
  }
  json status = {{"allowed", true}};
  if (options_.authorization == AuthorizationMode::kRbac) {
    const Authorization decision = authorize(user, r, *rbac_objects());
    status["allowed"] = decision.allowed;
    if (!decision.reason.empty()) status["reason"] = decision.reason;
  }
  return {{"kind", "SelfSubjectAccessReview"},
          {"apiVersion", "authorization.k8s.io/v1"},
          {"metadata", {{"creationTimestamp", format_rfc3339(Clock::now())}}},
          {"spec", spec},
          {"status", status}};
}

Response ApiHandlers::dispatch(const Request& request, Write& w) {
  const auto parts = split_path(request.path);
  const bool get = request.method == "GET" || request.method == "HEAD";
  // `kubectl auth whoami`: who the request is, as kube-apiserver's SelfSubjectReview
  // (authentication.k8s.io/v1, create only) answers it.
  if (request.method == "POST" && parts.size() == 4 && parts[0] == "apis" &&
      parts[1] == "authentication.k8s.io" && parts[2] == "v1" && parts[3] == "selfsubjectreviews")
    return object_response(201, self_subject_review(w.user, Clock::now()));
  // `kubectl auth can-i`: may the requester do this, as kube-apiserver's
  // SelfSubjectAccessReview (authorization.k8s.io/v1, create only) answers it.
  if (request.method == "POST" && parts.size() == 4 && parts[0] == "apis" &&
      parts[1] == "authorization.k8s.io" && parts[2] == "v1" &&
      parts[3] == "selfsubjectaccessreviews")
    return object_response(201, self_subject_access_review(parse_body(request), w.user));
  // "/version/" too: the Python client's VersionApi asks for it; go-restful serves both.
  if (get && parts.size() == 1 && parts[0] == "version")
    return object_response(200, version_document());
  if (get && parts.size() == 1 && parts[0] == "api")
    // serverAddressByClientCIDRs: the address the client reached us at.
    return object_response(
        200, core_versions_document(request.has_header("Host") ? std::string(request.header("Host"))
                                                               : "127.0.0.1"));
  if (get && parts.size() == 1 && parts[0] == "apis")
    return object_response(200, group_list_document(store_.registry()));
  if (get && parts.size() == 2 && parts[0] == "api") {
    json doc = resource_list_document(store_.registry(), "", parts[1]);
    if (doc.is_null()) throw path_not_found();
    return object_response(200, doc);
  }
  if (get && parts.size() == 3 && parts[0] == "apis") {
    json doc = resource_list_document(store_.registry(), parts[1], parts[2]);
    if (doc.is_null()) throw path_not_found();
    return object_response(200, doc);
  }
  if (get && parts.size() >= 2 && parts[0] == "openapi" && parts[1] == "v3") {
    const auto registry = store_.registry();
    if (parts.size() == 2) return object_response(200, openapi_v3_root(registry));
    json doc;
    if (parts.size() == 4 && parts[2] == "api")
      doc = openapi_v3_group_version(registry, "", parts[3]);
    if (parts.size() == 5 && parts[2] == "apis")
      doc = openapi_v3_group_version(registry, parts[3], parts[4]);
    if (doc.is_null()) throw path_not_found();
    return object_response(200, doc);
  }
  if (parts.size() >= 3 && parts[0] == "api")
    return serve_resource(request, "", parts[1], {parts.begin() + 2, parts.end()}, w);
  if (parts.size() >= 4 && parts[0] == "apis")
    return serve_resource(request, parts[1], parts[2], {parts.begin() + 3, parts.end()}, w);
  throw path_not_found();
}

Response ApiHandlers::serve_resource(const Request& request, const std::string& group,
                                     const std::string& version,
                                     const std::vector<std::string>& segments, Write& w) {
  // [namespaces/<ns>/]<plural>[/<name>[/<subresource>]]; "namespaces/<name>[/status]" is
  // the namespace object itself unless the third segment is a namespaced resource.
  std::string ns;
  std::vector<std::string> rest = segments;
  if (segments.size() >= 3 && segments[0] == "namespaces") {
    auto inner = store_.find_resource(group, version, segments[2]);
    if (inner && inner->namespaced) {
      ns = segments[1];
      rest.assign(segments.begin() + 2, segments.end());
    }
  }
  if (rest.empty() || rest.size() > 3) throw path_not_found();
  auto found = store_.find_resource(group, version, rest[0]);
  if (!found) throw path_not_found();
  const ResourceInfo& r = *found;
  const std::string name = rest.size() >= 2 ? rest[1] : "";
  const std::string sub = rest.size() == 3 ? rest[2] : "";
  if (r.group.empty() && r.plural == "pods" && sub == "log" && !ns.empty() &&
      (request.method == "GET" || request.method == "HEAD"))
    return pod_log(request, ns, name);
  if (!sub.empty() && !(sub == "status" && r.status_subresource) && !(sub == "scale" && r.scale))
    throw path_not_found();
  if (r.namespaced && ns.empty() && !name.empty()) throw path_not_found();
  const std::string& m = request.method;
  const TimePoint now = Clock::now();
  if (m != "GET" && m != "HEAD") w.dry_run = dry_run_of(request);

  if (name.empty()) {
    if (m == "GET" || m == "HEAD") {
      const ListQuery query = decode_list_query(request);
      if (query.watch) return watch(request, r, ns, query);
      if (query.send_initial_events)
        throw list_options_invalid(
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list");
      const ListOptions options = list_options(request, query);
      ListResult result = store_.list(r, ns, options);
      if (r.group.empty() && r.plural == "events" && result.continue_token.empty()) {
        // One Event storage, two versions upstream: the events.k8s.io/v1 Events too, on
        // the last page (event_views.h), so kubectl describe shows what controllers record.
        if (auto v1 = store_.find_resource("events.k8s.io", "v1", "events"))
          result.items = core_events_view(std::move(result.items), store_.list(*v1, ns, {}).items,
                                          options.labels, options.fields);
      }
      if (wants_table(request)) {
        json table = to_table(r, result.items, std::to_string(result.resource_version),
                              request.query_param("includeObject"), now);
        if (!result.continue_token.empty()) table["metadata"]["continue"] = result.continue_token;
        return object_response(200, table);
      }
      return object_response(200, list_document(r, result));
    }
    if (m == "POST") {
      if (r.namespaced && ns.empty())
        throw bad_request("the namespace of the object must be given in the request path");
      return object_response(201, admitted_create(request, r, ns, w));
    }
    if (m == "DELETE") {
      const ListQuery query = decode_list_query(request);
      const DeleteOptions options = delete_options(request);
      ListResult result = store_.list(r, ns, list_options(request, query));
      json gone = json::array();
      for (const auto& obj : result.items) {
        const std::string item_ns = obj["metadata"].value("namespace", "");
        const std::string item = obj["metadata"].value("name", "");
        // Each item is admitted as its own DELETE, as upstream's DeleteCollection does.
        admit_delete(request, r, item_ns, item, obj, w);
        if (w.dry_run) {
          gone.push_back(obj);
          continue;
        }
        try {
          gone.push_back(store_.remove(r, item_ns, item, options));
        } catch (const ApiError&) {
          // Deleted meanwhile by someone else: nothing left to do.
        }
      }
      result.items = gone.get<std::vector<json>>();
      return object_response(200, list_document(r, result));
    }
    throw method_not_supported(r, m);
  }

  if (sub == "scale") {
    if (m == "GET" || m == "HEAD")
      return object_response(200, to_scale(r, store_.get(r, ns, name)));
    if (m == "PUT" || m == "PATCH")
      return object_response(200, admitted_scale(request, r, ns, name, w));
    throw method_not_supported(r, m);
  }

  if (m == "GET" || m == "HEAD") {
    json obj = store_.get(r, ns, name);
    if (wants_table(request))
      return object_response(200, to_table(r, {obj}, obj["metadata"].value("resourceVersion", ""),
                                           request.query_param("includeObject"), now));
    return object_response(200, obj);
  }
  if (m == "PUT") {
    const json body = parse_body(request);
    // Custom resources allow no unconditional update (upstream's CR strategy); built-ins do.
    if (r.custom && resource_version_of(body).empty())
      throw invalid(r, name, "metadata.resourceVersion", "FieldValueInvalid",
                    "Invalid value: 0x0: must be specified for an update");
    return object_response(200,
                           admitted_update(
                               request, r, ns, name, sub, [&](const json&) { return body; }, w));
  }
  if (m == "PATCH" && is_apply_patch(request))
    return server_side_apply(request, r, ns, name, sub, w);
  if (m == "PATCH") {
    return object_response(
        200, admitted_update(
                 request, r, ns, name, sub,
                 [&](const json& current) { return apply_patch(request, current, r.custom); }, w));
  }
  if (m == "DELETE") {
    const DeleteOptions options = delete_options(request);
    const json current = store_.get(r, ns, name);
    check_delete_preconditions(r, name, options, current);
    admit_delete(request, r, ns, name, current, w);
    // A dry run deletes and marks nothing; it answers as the delete would.
    if (w.dry_run) return object_response(200, deletion_answer(r, current));
    return object_response(200, deletion_answer(r, store_.remove(r, ns, name, options)));
  }
  throw method_not_supported(r, m);
}

namespace {

// How many times a write whose client named no resourceVersion is tried again when the
// object changed between admission and the write. Upstream's GuaranteedUpdate retries
// without a bound: every round some writer's write lands, so writers as a whole never
// stall, but one writer among four can lose many rounds in a row (at 16 attempts, 4 of 240
// concurrent patches under ASan did: about (3/4)^16 each). The bound only stops a request
// that could never land from looping for ever.
constexpr int kWriteAttempts = 1000;

// True when a write that met `e` is to be tried again on the newer object: a conflict,
// the client named no version, and attempts are left.
bool retry_on_newer_object(const ApiError& e, const std::string& asked_version, int attempt) {
  return e.code() == 409 && asked_version.empty() && attempt < kWriteAttempts;
}

// The resourceVersion the client made a precondition of its write; "" for none. A PUT's
// is the one in its body. A patch is applied to the current object, whose version it
// carries: only a version the patch itself set is the client's (upstream's patch handler
// applies the patch again to the newer object when the write conflicts, and a patch that
// names a version then conflicts for good).
std::string asked_version_of(const Request& request, const json& written, const json& current) {
  const std::string version = resource_version_of(written);
  if (request.method == "PATCH" && version == resource_version_of(current)) return "";
  return version;
}

// The object as admission sees it: typed, and in the request's namespace.
json typed(const ResourceInfo& r, json object, const std::string& ns) {
  if (!object.is_object()) throw bad_request("the body must be a JSON object");
  if (!object.contains("apiVersion")) object["apiVersion"] = r.api_version();
  if (!object.contains("kind")) object["kind"] = r.kind;
  if (!object.contains("metadata") || !object["metadata"].is_object())
    object["metadata"] = json::object();
  if (r.namespaced && !ns.empty() && object["metadata"].value("namespace", "").empty())
    object["metadata"]["namespace"] = ns;
  // Decoded and encoded again upstream: times come back in UTC, canonical (wire_times.h).
  canonicalize_times(r, object);
  return object;
}

// fieldValidation for the fields a custom resource's schema does not declare: Strict
// refuses the request as upstream's strict decoding does (400 BadRequest), Warn (the default when
// the parameter is absent) names each in a Warning header, Ignore says nothing. apply_schema prunes
// them in every case.
void check_unknown_fields(const Request& request, const ResourceInfo& r, const json& object,
                          std::vector<std::string>& warnings) {
  if (!r.custom || !r.schema) return;
  const std::string directive = request.query_param("fieldValidation");
  if (directive == "Ignore") return;
  const auto unknown = unknown_fields(*r.schema, object);
  if (unknown.empty()) return;
  if (directive == "Strict") {
    // A create or PUT decodes the body, and upstream's transformDecodeError names the kind;
    // a patch reports the error of decoding the patched object bare.
    std::string message =
        request.method == "PATCH"
            ? ""
            : r.kind + " in version \"" + r.version + "\" cannot be handled as a " + r.kind + ": ";
    message += "strict decoding error: ";
    for (std::size_t i = 0; i < unknown.size(); ++i)
      message += (i == 0 ? "" : ", ") + std::string("unknown field \"") + unknown[i] + "\"";
    throw bad_request(message);
  }
  for (const auto& field : unknown) warnings.push_back("unknown field \"" + field + "\"");
}

// Custom resources with a schema: apply_schema (sim/crd_schema.h) on every write through
// the API, after mutating admission and before the store, as upstream's CR strategy does.
// The store itself takes objects as given: tests that seed it directly can hold what an
// older schema allowed, as etcd can.

// The same for an update: the object as the write would leave it is checked, and what
// defaulting and pruning changed in the part being written is kept.
void apply_schema_to_update(const ResourceInfo& r, const std::string& name, const json& current,
                            WritePart part, json& object) {
  if (!r.custom || !r.schema) return;
  const bool main_keeps_status = part == WritePart::kMain && r.status_subresource;
  json checked = part == WritePart::kStatus ? current : object;
  if (part == WritePart::kStatus || main_keeps_status) {
    const json& status_from = part == WritePart::kStatus ? object : current;
    if (status_from.contains("status")) {
      checked["status"] = status_from["status"];
    } else {
      checked.erase("status");
    }
  }
  apply_schema(r, name, checked);
  if (part == WritePart::kStatus) {
    if (checked.contains("status")) object["status"] = checked["status"];
    return;
  }
  checked["metadata"] = object["metadata"];
  if (!main_keeps_status) {
    object = std::move(checked);
    return;
  }
  if (object.contains("status")) checked["status"] = object["status"];
  object = std::move(checked);
}

// The built-in kinds' update rules (upstream's ValidateXUpdate strategies) the sim models:
// batch/v1 Jobs (sim/job_update_validation.h). Checked on the object as the update would
// store it, after mutating admission and before the validating webhooks, as upstream does.
void check_builtin_update(const ResourceInfo& r, const std::string& name, const json& current,
                          WritePart part, const json& object) {
  if (r.custom || part != WritePart::kMain) return;
  if (r.group == "batch" && r.plural == "jobs") {
    const auto errors = job_update_errors(current, object);
    if (!errors.empty()) throw invalid(r, name, errors);
  }
}

// PatchOptions.force: absent is false, present a Go query boolean (query_options.h).
bool apply_forced(const Request& request) {
  const auto force = request.find_query_param("force");
  return force && go_query_bool(*force);
}

std::string manager_of(const Request& request) {
  return field_manager_name(request.query_param("fieldManager"),
                            std::string(request.header("User-Agent")));
}

// The managedFields an Update leaves, set again on the object admission returned
// (upstream's field manager runs before the mutating webhooks, which cannot change them).
void keep_managed_fields(const json& tracked, json& mutated) {
  if (!mutated.is_object()) return;
  if (!mutated.contains("metadata") || !mutated["metadata"].is_object())
    mutated["metadata"] = json::object();
  if (tracked.contains("metadata") && tracked["metadata"].contains("managedFields")) {
    mutated["metadata"]["managedFields"] = tracked["metadata"]["managedFields"];
  } else {
    mutated["metadata"].erase("managedFields");
  }
}

json gvk(const ResourceInfo& r) {
  return {{"group", r.group}, {"version", r.version}, {"kind", r.kind}};
}

// CreateOptions / UpdateOptions / DeleteOptions as the webhook sees them.
json options_document(const std::string& kind, const Request& request, bool dry_run) {
  json o = {{"kind", kind}, {"apiVersion", "meta.k8s.io/v1"}};
  if (dry_run) o["dryRun"] = json::array({"All"});
  const std::string manager = request.query_param("fieldManager");
  if (!manager.empty()) o["fieldManager"] = manager;
  return o;
}

}  // namespace

json ApiHandlers::admitted_create(const Request& request, const ResourceInfo& r,
                                  const std::string& ns, Write& w) {
  json object = typed(r, parse_body(request), ns);
  check_unknown_fields(request, r, object, w.warnings);
  // Field ownership (sim/server_side_apply.h): an apply owns its configuration, any other
  // create the fields it sets.
  const ManagedFieldsContext ctx = managed_fields_context(r, "");
  object =
      is_apply_patch(request)
          ? apply_configuration(nullptr, object, manager_of(request), apply_forced(request), ctx)
          : track_update(nullptr, std::move(object), manager_of(request), ctx);
  AdmissionAttributes a;
  a.operation = "CREATE";
  a.resource = r;
  a.name = object["metadata"].value("name", "");
  // A Namespace's requests carry its own name as their namespace.
  a.ns = r.storage_key() == "/namespaces" ? a.name : ns;
  a.kind = gvk(r);
  a.dry_run = w.dry_run;
  a.options = options_document("CreateOptions", request, w.dry_run);
  a.user = w.user;
  a.object = object;
  a.old_object = nullptr;
  json mutated = admission_.mutate(a, w.warnings);
  keep_managed_fields(object, mutated);
  if (mutated.is_object() && mutated.contains("metadata") && mutated["metadata"].is_object()) {
    const json& meta = mutated["metadata"];
    apply_schema(r, meta.value("name", meta.value("generateName", "")), mutated);
  }
  // The store's checks and defaults (uid, name from generateName, ...) before the
  // validating webhooks, which see the object as it would be stored.
  json would_be = store_.create(r, ns, mutated, true);
  a.object = would_be;
  a.name = would_be["metadata"].value("name", "");
  admission_.validate(a, w.warnings);
  if (w.dry_run) return would_be;
  // The name the validating webhooks approved, also where it came from generateName.
  mutated["metadata"]["name"] = a.name;
  return store_.create(r, ns, mutated);
}

json ApiHandlers::admitted_update(const Request& request, const ResourceInfo& r,
                                  const std::string& ns, const std::string& name,
                                  const std::string& sub,
                                  const std::function<json(const json&)>& next, Write& w) {
  const WritePart part = sub == "status" ? WritePart::kStatus : WritePart::kMain;
  for (int attempt = 1;; ++attempt) {
    const json current = store_.get(r, ns, name);
    json object = typed(r, next(current), ns);
    check_unknown_fields(request, r, object, w.warnings);
    const std::string asked_version = asked_version_of(request, object, current);
    // An apply's `next` has set the managedFields; any other write is an Update.
    if (!is_apply_patch(request))
      object = track_update(current, std::move(object), manager_of(request),
                            managed_fields_context(r, sub));
    AdmissionAttributes a;
    a.operation = "UPDATE";
    a.resource = r;
    a.subresource = sub;
    a.name = name;
    a.ns = r.storage_key() == "/namespaces" ? name : ns;
    a.kind = gvk(r);
    a.dry_run = w.dry_run;
    a.options = options_document("UpdateOptions", request, w.dry_run);
    a.user = w.user;
    a.object = object;
    a.old_object = current;
    json mutated = admission_.mutate(a, w.warnings);
    if (!mutated.is_object()) throw bad_request("the body must be a JSON object");
    keep_managed_fields(object, mutated);
    // Written only over the version admission saw: a concurrent change makes the write
    // conflict, and (when the client named no version) it is admitted again. A version
    // that is not a string is left for the store to refuse.
    json& version = mutated["metadata"]["resourceVersion"];
    if (asked_version.empty() && (version.is_null() || version.is_string()))
      version = resource_version_of(current);
    apply_schema_to_update(r, name, current, part, mutated);
    check_builtin_update(r, name, current, part, mutated);
    // The object changes between the read above and either write below (the first is
    // the write as validation sees it): both conflicts are tried again.
    try {
      const json would_be = store_.update(r, ns, name, mutated, part, true);
      a.object = would_be;
      admission_.validate(a, w.warnings);
      if (w.dry_run) return would_be;
      return store_.update(r, ns, name, mutated, part);
    } catch (const ApiError& e) {
      if (!retry_on_newer_object(e, asked_version, attempt)) throw;
      w.warnings.clear();
    }
  }
}

// Server-side apply (sim/server_side_apply.h): the applied configuration (YAML or JSON)
// merged into the live object with field ownership, or creating it when absent. As
// upstream's patch handler: a configuration that names a uid or resourceVersion makes
// them preconditions, and it may not carry managedFields.
Response ApiHandlers::server_side_apply(const Request& request, const ResourceInfo& r,
                                        const std::string& ns, const std::string& name,
                                        const std::string& sub, Write& w) {
  if (request.query_param("fieldManager").empty()) {
    json status = failure_status(
        422, "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required "
        "for apply patch");
    status["details"] = {{"group", "meta.k8s.io"},
                         {"kind", "PatchOptions"},
                         {"causes",
                          {{{"reason", "FieldValueRequired"},
                            {"message", "Required value: is required for apply patch"},
                            {"field", "fieldManager"}}}}};
    throw ApiError(status);
  }
  const json applied = parse_body(request);
  if (!applied.is_object()) throw bad_request("the applied configuration must be an object");
  const json applied_meta = applied.value("metadata", json::object());
  if (applied_meta.is_object() && applied_meta.contains("managedFields") &&
      !applied_meta["managedFields"].is_null())
    throw bad_request("metadata.managedFields must be nil");
  const std::string applied_uid =
      applied_meta.is_object() ? applied_meta.value("uid", std::string()) : std::string();
  bool exists = true;
  try {
    store_.get(r, ns, name);
  } catch (const ApiError& e) {
    if (e.code() != 404 || !sub.empty()) throw;
    exists = false;
  }
  if (!exists) {
    // patch.go applyPatch: a uid names an object that must exist.
    if (!applied_uid.empty()) {
      json status =
          failure_status(409, "Conflict",
                         "Operation cannot be fulfilled on " + r.qualified_plural() + " \"" + name +
                             "\": uid mismatch: the provided object specified uid " + applied_uid +
                             ", and no existing object was found");
      status["details"] = {{"name", name}, {"kind", r.plural}};
      if (!r.group.empty()) status["details"]["group"] = r.group;
      throw ApiError(status);
    }
    return object_response(201, admitted_create(request, r, ns, w));
  }
  const bool force = apply_forced(request);
  return object_response(
      200, admitted_update(
               request, r, ns, name, sub,
               [&](const json& current) {
                 // The uid is immutable (ValidateObjectMetaUpdate); a resourceVersion other
                 // than the live one is the store's optimistic-concurrency 409.
                 const std::string live_uid = current["metadata"].value("uid", "");
                 if (!applied_uid.empty() && applied_uid != live_uid)
                   throw invalid(r, name, "metadata.uid", "FieldValueInvalid",
                                 "Invalid value: \"" + applied_uid + "\": field is immutable");
                 json config = typed(r, applied, ns);
                 return apply_configuration(current, config, manager_of(request), force,
                                            managed_fields_context(r, sub));
               },
               w));
}

json ApiHandlers::admitted_scale(const Request& request, const ResourceInfo& r,
                                 const std::string& ns, const std::string& name, Write& w) {
  const json body = request.method == "PUT" ? parse_body(request) : json();
  for (int attempt = 1;; ++attempt) {
    const json current = store_.get(r, ns, name);
    const json old_scale = to_scale(r, current);
    json scale = request.method == "PUT" ? body : apply_patch(request, old_scale, /*custom=*/false);
    if (!scale.is_object()) throw bad_request("the body must be a JSON object");
    scale["apiVersion"] = "autoscaling/v1";
    scale["kind"] = "Scale";
    const std::string asked_version = asked_version_of(request, scale, old_scale);
    AdmissionAttributes a;
    a.operation = "UPDATE";
    a.resource = r;
    a.subresource = "scale";
    a.name = name;
    a.ns = ns;
    a.kind = {{"group", "autoscaling"}, {"version", "v1"}, {"kind", "Scale"}};
    a.dry_run = w.dry_run;
    a.options = options_document("UpdateOptions", request, w.dry_run);
    a.user = w.user;
    a.object = scale;
    a.old_object = old_scale;
    scale = admission_.mutate(a, w.warnings);
    const json replicas = json_path_value(scale, ".spec.replicas");
    if (!replicas.is_number_integer())
      throw invalid(r, name, "spec.replicas", "FieldValueRequired", "Required value");
    json updated = current;
    set_path(updated, r.scale->spec_replicas_path, replicas);
    updated["metadata"]["resourceVersion"] =
        asked_version.empty() ? resource_version_of(current) : asked_version;
    apply_schema_to_update(r, name, current, WritePart::kMain, updated);
    try {
      const json would_be = store_.update(r, ns, name, updated, WritePart::kMain, true);
      a.object = to_scale(r, would_be);
      admission_.validate(a, w.warnings);
      if (w.dry_run) return to_scale(r, would_be);
      return to_scale(r, store_.update(r, ns, name, updated, WritePart::kMain));
    } catch (const ApiError& e) {
      if (!retry_on_newer_object(e, asked_version, attempt)) throw;
      w.warnings.clear();
    }
  }
}

void ApiHandlers::admit_delete(const Request& request, const ResourceInfo& r, const std::string& ns,
                               const std::string& name, const json& current, Write& w) {
  AdmissionAttributes a;
  a.operation = "DELETE";
  a.resource = r;
  a.name = name;
  a.ns = r.storage_key() == "/namespaces" ? name : ns;
  a.kind = gvk(r);
  a.dry_run = w.dry_run;
  a.options = options_document("DeleteOptions", request, w.dry_run);
  if (!request.body.empty()) {
    const json body = parse_body(request);
    if (body.is_object())
      for (const char* k : {"propagationPolicy", "gracePeriodSeconds", "preconditions"})
        if (body.contains(k)) a.options[k] = body[k];
  }
  const std::string policy = request.query_param("propagationPolicy");
  if (!policy.empty()) a.options["propagationPolicy"] = policy;
  a.user = w.user;
  a.object = nullptr;
  a.old_object = current;
  admission_.mutate(a, w.warnings);
  admission_.validate(a, w.warnings);
}

Response ApiHandlers::watch(const Request& request, const ResourceInfo& r, const std::string& ns,
                            const ListQuery& query) {
  WatchRequest w;
  w.ns = ns;
  w.labels = LabelSelectorQuery::parse(request.query_param("labelSelector"));
  w.fields = FieldSelectorQuery::parse(request.query_param("fieldSelector"));
  const std::string rv = request.query_param("resourceVersion");
  if (!rv.empty() && rv != "0") w.from = parse_rv(rv);
  // Upstream: 0 (or none) is the server's default; a negative timeout ends the watch at once.
  // Capped at a century, so that the deadline cannot overflow the clock.
  constexpr int64_t kLongestTimeout = int64_t{100} * 365 * 24 * 3600;
  std::chrono::seconds timeout = options_.default_watch_timeout;
  if (query.timeout_seconds && *query.timeout_seconds != 0)
    timeout = std::chrono::seconds(std::clamp<int64_t>(*query.timeout_seconds, 0, kLongestTimeout));
  const bool bookmarks = query.allow_watch_bookmarks;
  // Watch-list: the current objects as ADDED events, then a bookmark that marks their end.
  // Upstream's ListOptions validation for it, with its messages.
  // Present at all (false too, a pointer upstream), it needs NotOlderThan.
  if (query.send_initial_events && !*query.send_initial_events &&
      request.query_param("resourceVersionMatch") != "NotOlderThan")
    throw list_options_invalid(
        "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
        "resourceVersionMatch to NotOlderThan");
  if (query.send_initial_events.value_or(false)) {
    std::string forbidden;
    if (!bookmarks)
      forbidden =
          "allowWatchBookmarks: Forbidden: sendInitialEvents requires setting "
          "allowWatchBookmarks to true";
    else if (request.query_param("resourceVersionMatch") != "NotOlderThan")
      forbidden =
          "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
          "resourceVersionMatch to NotOlderThan";
    if (!forbidden.empty()) throw list_options_invalid(forbidden);
    w.from.reset();  // the state now is not older than any version asked for
    w.initial_events_end = true;
  }
  const bool table = wants_table(request);
  const std::string include_object = request.query_param("includeObject");

  return Response::streaming(
             200, "application/json",
             [=, this, w = std::move(w)](std::shared_ptr<server::StreamSink> sink) mutable {
               w.deliver = [sink, r, table, include_object](const WatchEvent& e) {
                 json object = e.object;
                 if (e.type == "BOOKMARK") {
                   object["kind"] = r.kind;
                   object["apiVersion"] = r.api_version();
                 } else {
                   object["apiVersion"] = r.api_version();
                   if (table)
                     object = to_table(r, {object}, object["metadata"].value("resourceVersion", ""),
                                       include_object, Clock::now());
                 }
                 return sink->write(watch_line(e.type, object));
               };
               uint64_t id = 0;
               try {
                 id = store_.watch(r, std::move(w));
               } catch (const ApiError& e) {
                 sink->write(watch_line("ERROR", e.status()));
                 sink->close();
                 return;
               }
               if (id == 0) return;  // the client went away during the replay
               std::lock_guard<std::mutex> lock(watches_mu_);
               watches_[id] = {sink, std::chrono::steady_clock::now() + timeout, bookmarks};
             })
      .with_header("Cache-Control", "no-cache, private");
}

void ApiHandlers::tick(bool send_bookmarks) {
  std::map<uint64_t, ActiveWatch> ended;
  std::vector<uint64_t> bookmark_ids;
  {
    std::lock_guard<std::mutex> lock(watches_mu_);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = watches_.begin(); it != watches_.end();) {
      if (it->second.sink->closed() || now >= it->second.deadline) {
        ended.insert(*it);
        it = watches_.erase(it);
      } else {
        if (send_bookmarks && it->second.bookmarks) bookmark_ids.push_back(it->first);
        ++it;
      }
    }
  }
  for (auto& [id, w] : ended) {
    store_.unwatch(id);
    w.sink->close();
  }
  if (!bookmark_ids.empty()) store_.send_bookmarks(bookmark_ids);
}

void ApiHandlers::close_all_watches() {
  std::map<uint64_t, ActiveWatch> ended;
  {
    std::lock_guard<std::mutex> lock(watches_mu_);
    ended.swap(watches_);
  }
  for (auto& [id, w] : ended) {
    store_.unwatch(id);
    w.sink->close();
  }
}

std::size_t ApiHandlers::open_watches() const {
  std::lock_guard<std::mutex> lock(watches_mu_);
  return watches_.size();
}

}  // namespace commgate::sim
