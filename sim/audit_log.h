// The sim's audit log: every request to the Kubernetes API as kube-apiserver's audit log
// records it at level Metadata (audit.k8s.io/v1 Event: verb, requestURI, user, objectRef,
// responseStatus.code, timestamps), kept in memory, the newest `limit` only. Tests read it
// to say which client created or deleted what and when (a duplicate probe: two creates
// of one name, by whom, between which deletes); the binary serves it as `GET /sim/audit`.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/http.h"
#include "sim/authentication.h"

namespace commgate::sim {

struct AuditObjectRef {
  std::string resource;     // "jobs", "trainingjobs", "namespaces"
  std::string subresource;  // "status", "scale", "" for the object itself
  std::string ns;
  std::string name;  // of a create: the created object's (generateName resolved)
  std::string api_group;
  std::string api_version;
};

struct AuditEvent {
  std::string verb;  // get list watch create update patch delete deletecollection
  std::string request_uri;
  std::string username;  // the requester; "" when no token named anyone (the 401s)
  // The user the request acted as when it impersonated one and was allowed to (kubectl
  // --as; impersonation.h): the audit Event's impersonatedUser. Authorization used it.
  std::optional<UserInfo> impersonated_user;
  AuditObjectRef object_ref;
  int code = 0;  // the response's status (a watch's 200 when it started)
  std::chrono::system_clock::time_point received;
  std::chrono::system_clock::time_point completed;
};

// kube-apiserver's verb for a request: GET is get, list or watch (`watch` true in the
// query as upstream parses booleans), DELETE of a collection is deletecollection.
std::string audit_verb(const server::Request& request);
// The objectRef a request's path names (the API's path layout; empty for discovery).
AuditObjectRef audit_object_ref(const std::string& path);
// The audit.k8s.io/v1 Event.
nlohmann::json to_json(const AuditEvent& event);

// The event for a finished request: the created object's name read from a create's
// response body.
AuditEvent audit_event(const server::Request& request, const server::Response& response,
                       std::string username, std::chrono::system_clock::time_point received);

// Thread-safe; bounded (the oldest events go first).
class AuditLog {
 public:
  explicit AuditLog(std::size_t limit = 50'000) : limit_(limit) {}
  void add(AuditEvent event);
  std::vector<AuditEvent> events() const;

 private:
  std::size_t limit_;
  mutable std::mutex mu_;
  std::deque<AuditEvent> events_;
};

}  // namespace commgate::sim
