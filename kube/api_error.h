// An error answer of the Kubernetes API: the HTTP code and the Status body's reason and
// message (a 410 Expired on a watch means "list again"; a 429 or 5xx may carry
// Retry-After). Also what a watch's ERROR event carries.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace commgate::kube {

class ApiError : public std::runtime_error {
 public:
  // `what_call` names the request ("GET /api/v1/namespaces").
  ApiError(int code, std::string reason, std::string message, const std::string& what_call,
           std::chrono::seconds retry_after = std::chrono::seconds(0));

  // From an HTTP status and the response body (a Status object, or anything: then the
  // body's start becomes the message).
  static ApiError from_response(int http_code, const std::string& body,
                                const std::string& what_call,
                                std::chrono::seconds retry_after = std::chrono::seconds(0));
  // From a Status object (a watch's ERROR event).
  static ApiError from_status(const nlohmann::json& status, const std::string& what_call);

  int code() const { return code_; }
  const std::string& reason() const { return reason_; }    // e.g. "Expired", "NotFound"
  const std::string& message() const { return message_; }  // the Status message
  std::chrono::seconds retry_after() const { return retry_after_; }

  // 410 Gone / Expired: the resourceVersion is older than the history kept.
  bool expired() const { return code_ == 410 || reason_ == "Expired" || reason_ == "Gone"; }
  bool not_found() const { return code_ == 404; }
  bool unauthorized() const { return code_ == 401; }
  // 409 on a stale resourceVersion (read again, then retry); not AlreadyExists.
  bool conflict() const { return code_ == 409 && reason_ != "AlreadyExists"; }
  bool already_exists() const { return code_ == 409 && reason_ == "AlreadyExists"; }
  bool invalid() const { return code_ == 422; }
  bool too_many_requests() const { return code_ == 429; }

 private:
  int code_;
  std::string reason_;
  std::string message_;
  std::chrono::seconds retry_after_;
};

}  // namespace commgate::kube
