#include "sim/api_handlers.h"

#include <sstream>

#include "core/yaml_json.h"
#include "sim/api_status.h"
#include "sim/discovery.h"
#include "sim/table.h"

namespace commgate::sim {
namespace {

using nlohmann::json;
using server::Request;
using server::Response;

Response status_response(const json& status) {
  return Response::json(status.value("code", 500), status.dump());
}

Response object_response(int code, const json& object) {
  return Response::json(code, object.dump());
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
    "application/strategic-merge-patch+json";

bool truthy(const std::string& v) {
  return v == "1" || v == "true";
}

json parse_body(const Request& request) {
  const std::string_view type = request.header("Content-Type");
  // No protobuf codec: kubectl's typed clients (create namespace, create configmap, ...)
  // send protobuf; a 415 says so instead of a confusing decode error (docs/testing.md).
  if (type.find("protobuf") != std::string_view::npos)
    throw unsupported_media_type(std::string(type), "application/json, application/yaml");
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
  return {{"kind", r.kind + "List"},
          {"apiVersion", r.api_version()},
          {"metadata", meta},
          {"items", result.items}};
}

ListOptions list_options(const Request& request) {
  ListOptions o;
  o.labels = LabelSelectorQuery::parse(request.query_param("labelSelector"));
  o.fields = FieldSelectorQuery::parse(request.query_param("fieldSelector"));
  const std::string limit = request.query_param("limit");
  if (!limit.empty()) o.limit = parse_rv(limit);
  o.continue_token = request.query_param("continue");
  return o;
}

json apply_patch(const Request& request, const json& current) {
  const std::string type(request.header("Content-Type"));
  const auto semi = type.find(';');
  const std::string media = type.substr(0, semi);
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

// DeleteOptions from the query (kubectl, client-go's DeleteCollection) or the body
// (client-go's Delete): propagationPolicy and the legacy orphanDependents.
DeleteOptions delete_options(const Request& request) {
  std::string policy = request.query_param("propagationPolicy");
  std::optional<bool> orphan;
  const std::string orphan_text = request.query_param("orphanDependents");
  if (!orphan_text.empty()) orphan = truthy(orphan_text);
  if (!request.body.empty()) {
    const json body = parse_body(request);  // malformed DeleteOptions -> 400
    if (body.is_object() && body.contains("propagationPolicy") &&
        body["propagationPolicy"].is_string())
      policy = body["propagationPolicy"].get<std::string>();
    if (body.is_object() && body.contains("orphanDependents") &&
        body["orphanDependents"].is_boolean())
      orphan = body["orphanDependents"].get<bool>();
  }
  return parse_delete_options(policy, orphan);
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

}  // namespace

ApiHandlers::ApiHandlers(ObjectStore& store, ApiHandlerOptions options)
    : store_(store), options_(std::move(options)) {}

Response ApiHandlers::handle(const Request& request) {
  try {
    if (!options_.token.empty() && request.header("Authorization") != "Bearer " + options_.token)
      return status_response(failure_status(401, "Unauthorized", "Unauthorized"));
    return dispatch(request);
  } catch (const ApiError& e) {
    return status_response(e.status());
  } catch (const nlohmann::json::exception& e) {
    // A field of the wrong JSON type (metadata.name: 5, ...): the client's mistake.
    return status_response(failure_status(
        400, "BadRequest", std::string("the request body is malformed: ") + e.what()));
  } catch (const std::exception& e) {
    return status_response(
        failure_status(500, "InternalError", std::string("Internal error occurred: ") + e.what()));
  }
}

Response ApiHandlers::dispatch(const Request& request) {
  const auto parts = split_path(request.path);
  const bool get = request.method == "GET" || request.method == "HEAD";
  if (get && request.path == "/version") return object_response(200, version_document());
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
    return serve_resource(request, "", parts[1], {parts.begin() + 2, parts.end()});
  if (parts.size() >= 4 && parts[0] == "apis")
    return serve_resource(request, parts[1], parts[2], {parts.begin() + 3, parts.end()});
  throw path_not_found();
}

Response ApiHandlers::serve_resource(const Request& request, const std::string& group,
                                     const std::string& version,
                                     const std::vector<std::string>& segments) {
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
  if (!sub.empty() && !(sub == "status" && r.status_subresource) && !(sub == "scale" && r.scale))
    throw path_not_found();
  if (r.namespaced && ns.empty() && !name.empty()) throw path_not_found();
  const std::string& m = request.method;
  const TimePoint now = Clock::now();
  // Refused rather than ignored: executing a dry run would change state the caller
  // expects untouched (docs/testing.md).
  if (m != "GET" && m != "HEAD" && !request.query_param("dryRun").empty())
    throw bad_request("dryRun is not supported by commgate-sim");

  if (name.empty()) {
    if (m == "GET" || m == "HEAD") {
      if (truthy(request.query_param("watch"))) return watch(request, r, ns);
      const ListResult result = store_.list(r, ns, list_options(request));
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
      return object_response(201, store_.create(r, ns, parse_body(request)));
    }
    if (m == "DELETE") {
      const DeleteOptions options = delete_options(request);
      ListResult result = store_.list(r, ns, list_options(request));
      json gone = json::array();
      for (const auto& obj : result.items) {
        try {
          gone.push_back(store_.remove(r, obj["metadata"].value("namespace", ""),
                                       obj["metadata"].value("name", ""), options));
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
    if (m == "PUT" || m == "PATCH") {
      json updated = store_.mutate(r, ns, name, WritePart::kMain, [&](const json& current) {
        json scale = m == "PUT" ? parse_body(request) : apply_patch(request, to_scale(r, current));
        json next = current;
        const json replicas = json_path_value(scale, ".spec.replicas");
        if (!replicas.is_number_integer())
          throw invalid(r, name, "spec.replicas", "FieldValueRequired", "Required value");
        set_path(next, r.scale->spec_replicas_path, replicas);
        const json rv = json_path_value(scale, ".metadata.resourceVersion");
        if (rv.is_string()) next["metadata"]["resourceVersion"] = rv;
        return next;
      });
      return object_response(200, to_scale(r, updated));
    }
    throw method_not_supported(r, m);
  }

  const WritePart part = sub == "status" ? WritePart::kStatus : WritePart::kMain;
  if (m == "GET" || m == "HEAD") {
    json obj = store_.get(r, ns, name);
    if (wants_table(request))
      return object_response(200, to_table(r, {obj}, obj["metadata"].value("resourceVersion", ""),
                                           request.query_param("includeObject"), now));
    return object_response(200, obj);
  }
  if (m == "PUT")
    return object_response(200, store_.update(r, ns, name, parse_body(request), part));
  if (m == "PATCH") {
    return object_response(200, store_.mutate(r, ns, name, part, [&](const json& current) {
      return apply_patch(request, current);
    }));
  }
  if (m == "DELETE")
    return object_response(200, store_.remove(r, ns, name, delete_options(request)));
  throw method_not_supported(r, m);
}

Response ApiHandlers::watch(const Request& request, const ResourceInfo& r, const std::string& ns) {
  WatchRequest w;
  w.ns = ns;
  w.labels = LabelSelectorQuery::parse(request.query_param("labelSelector"));
  w.fields = FieldSelectorQuery::parse(request.query_param("fieldSelector"));
  const std::string rv = request.query_param("resourceVersion");
  if (!rv.empty() && rv != "0") w.from = parse_rv(rv);
  std::chrono::seconds timeout = options_.default_watch_timeout;
  const std::string timeout_text = request.query_param("timeoutSeconds");
  if (!timeout_text.empty()) timeout = std::chrono::seconds(parse_rv(timeout_text));
  const bool bookmarks = truthy(request.query_param("allowWatchBookmarks"));
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
