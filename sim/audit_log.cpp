#include "sim/audit_log.h"

#include <ctime>
#include <utility>

#include "sim/query_options.h"

namespace commgate::sim {
namespace {

std::vector<std::string> path_segments(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 1;
  while (start <= path.size()) {
    const size_t end = path.find('/', start);
    const std::string part = path.substr(start, end == std::string::npos ? end : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// metav1.MicroTime as the audit log writes it: UTC, six fractional digits.
std::string micro_time(std::chrono::system_clock::time_point t) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1'000'000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, ".%06lldZ", static_cast<long long>(micros % 1'000'000));
  return std::string(text) + fraction;
}

}  // namespace

std::string audit_verb(const server::Request& request) {
  const std::string& m = request.method;
  if (m == "POST") return "create";
  if (m == "PUT") return "update";
  if (m == "PATCH") return "patch";
  const AuditObjectRef ref = audit_object_ref(request.path);
  const bool collection = ref.name.empty();
  if (m == "DELETE") return collection ? "deletecollection" : "delete";
  if (m == "GET" || m == "HEAD") {
    if (query_bool(request, "watch")) return "watch";
    return collection && !ref.resource.empty() ? "list" : "get";
  }
  return m;
}

AuditObjectRef audit_object_ref(const std::string& path) {
  const std::vector<std::string> s = path_segments(path);
  AuditObjectRef ref;
  size_t i = 0;
  if (s.size() >= 2 && s[0] == "api") {
    ref.api_version = s[1];
    i = 2;
  } else if (s.size() >= 3 && s[0] == "apis") {
    ref.api_group = s[1];
    ref.api_version = s[2];
    i = 3;
  } else {
    return ref;  // discovery, /version, /openapi
  }
  if (i + 3 == s.size() && s[i] == "namespaces" &&
      (s[i + 2] == "status" || s[i + 2] == "finalize")) {
    // /namespaces/NAME/status and /finalize: the namespace's subresources
    ref.resource = "namespaces";
    ref.name = s[i + 1];
    ref.subresource = s[i + 2];
    return ref;
  }
  if (i + 2 < s.size() && s[i] == "namespaces") {
    // /namespaces/NS/RESOURCE[/NAME[/SUB]]
    ref.ns = s[i + 1];
    i += 2;
  } else if (i + 1 < s.size() && s[i] == "namespaces") {
    // /namespaces/NAME: the namespace itself
    ref.resource = "namespaces";
    ref.name = s[i + 1];
    return ref;
  }
  if (i < s.size()) ref.resource = s[i];
  if (i + 1 < s.size()) ref.name = s[i + 1];
  if (i + 2 < s.size()) ref.subresource = s[i + 2];
  return ref;
}

nlohmann::json to_json(const AuditEvent& e) {
  nlohmann::json ref = nlohmann::json::object();
  const AuditObjectRef& r = e.object_ref;
  if (!r.resource.empty()) ref["resource"] = r.resource;
  if (!r.ns.empty()) ref["namespace"] = r.ns;
  if (!r.name.empty()) ref["name"] = r.name;
  if (!r.api_group.empty()) ref["apiGroup"] = r.api_group;
  if (!r.api_version.empty()) ref["apiVersion"] = r.api_version;
  if (!r.subresource.empty()) ref["subresource"] = r.subresource;
  nlohmann::json out = {{"kind", "Event"},
                        {"apiVersion", "audit.k8s.io/v1"},
                        {"level", "Metadata"},
                        {"stage", e.verb == "watch" ? "ResponseStarted" : "ResponseComplete"},
                        {"verb", e.verb},
                        {"requestURI", e.request_uri},
                        {"user", nlohmann::json::object()},
                        {"responseStatus", {{"code", e.code}}},
                        {"requestReceivedTimestamp", micro_time(e.received)},
                        {"stageTimestamp", micro_time(e.completed)}};
  if (!e.username.empty()) out["user"]["username"] = e.username;
  if (e.impersonated_user) out["impersonatedUser"] = to_json(*e.impersonated_user);
  if (!ref.empty()) out["objectRef"] = ref;
  return out;
}

AuditEvent audit_event(const server::Request& request, const server::Response& response,
                       std::string username, std::chrono::system_clock::time_point received) {
  AuditEvent e;
  e.verb = audit_verb(request);
  e.request_uri = request.target;
  e.username = std::move(username);
  e.object_ref = audit_object_ref(request.path);
  e.code = response.status;
  e.received = received;
  e.completed = std::chrono::system_clock::now();
  if (e.verb == "create" && e.object_ref.name.empty() && response.status == 201) {
    // The name the server gave (generateName): from the created object.
    const nlohmann::json created = nlohmann::json::parse(response.body, nullptr, false);
    if (created.is_object() && created.contains("metadata") && created["metadata"].is_object())
      e.object_ref.name = created["metadata"].value("name", "");
  }
  return e;
}

void AuditLog::add(AuditEvent event) {
  std::lock_guard lock(mu_);
  events_.push_back(std::move(event));
  while (events_.size() > limit_) events_.pop_front();
}

std::vector<AuditEvent> AuditLog::events() const {
  std::lock_guard lock(mu_);
  return {events_.begin(), events_.end()};
}

}  // namespace commgate::sim
