// metav1.Status bodies exactly as kube-apiserver writes them (k8s.io/apimachinery
// pkg/api/errors), and ApiError, which carries one from the store to the HTTP layer.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/resource.h"

namespace commgate::sim {

class ApiError : public std::runtime_error {
 public:
  explicit ApiError(nlohmann::json status)
      : std::runtime_error(status.value("message", "")), status_(std::move(status)) {}
  int code() const { return status_.value("code", 500); }
  const nlohmann::json& status() const { return status_; }

 private:
  nlohmann::json status_;
};

// The generic shape: {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",...}.
nlohmann::json failure_status(int code, const std::string& reason, const std::string& message);
nlohmann::json success_status(const ResourceInfo& r, const std::string& name,
                              const std::string& uid);

// `pods "x" not found`; details.kind is the resource (plural), as upstream does.
ApiError not_found(const ResourceInfo& r, const std::string& name);
ApiError already_exists(const ResourceInfo& r, const std::string& name);
// The optimistic-concurrency 409 (fixtures/k8s/status/status-409-conflict-*.json).
ApiError conflict(const ResourceInfo& r, const std::string& name);
// The 409 a delete's failed precondition gets in upstream's rest.BeforeDelete, which names
// the kind, not the resource: "Operation cannot be fulfilled on Job.batch \"x\": <why>".
ApiError precondition_conflict(const ResourceInfo& r, const std::string& name,
                               const std::string& why);
// One field.Error: its type as a StatusCause reason (FieldValueInvalid, FieldValueRequired,
// ...), the field path, and the message as upstream's ErrorBody() writes it ("Required
// value", "Invalid value: 0: ...").
struct FieldError {
  std::string reason;
  std::string field;
  std::string message;
};

// 422 for several field errors at once: `Kind.group "name" is invalid: [a: m, b: m]` (no
// brackets for one), one cause each, as NewInvalid with an aggregate does.
ApiError invalid(const ResourceInfo& r, const std::string& name,
                 const std::vector<FieldError>& errors);
// 422: `Kind.group "name" is invalid: field: message`, with one cause.
ApiError invalid(const ResourceInfo& r, const std::string& name, const std::string& field,
                 const std::string& cause_reason, const std::string& message);
ApiError bad_request(const std::string& message);
// 410 for a watch or list from a resourceVersion older than the kept history.
ApiError expired(const std::string& message);
// `accepted`: the media types this endpoint reads, for the message.
ApiError unsupported_media_type(const std::string& content_type, const std::string& accepted);
ApiError method_not_supported(const ResourceInfo& r, const std::string& verb);

}  // namespace commgate::sim
