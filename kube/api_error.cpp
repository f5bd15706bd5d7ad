#include "kube/api_error.h"

namespace commgate::kube {
namespace {

std::string describe(int code, const std::string& reason, const std::string& message,
                     const std::string& what_call) {
  std::string out = what_call.empty() ? "" : what_call + ": ";
  out += std::to_string(code);
  if (!reason.empty()) out += " " + reason;
  if (!message.empty()) out += ": " + message;
  return out;
}

}  // namespace

ApiError::ApiError(int code, std::string reason, std::string message, const std::string& what_call,
                   std::chrono::seconds retry_after)
    : std::runtime_error(describe(code, reason, message, what_call)),
      code_(code),
      reason_(std::move(reason)),
      message_(std::move(message)),
      retry_after_(retry_after) {}

ApiError ApiError::from_status(const nlohmann::json& status, const std::string& what_call) {
  int code = 0;
  std::string reason, message;
  if (status.is_object()) {
    if (auto c = status.find("code"); c != status.end() && c->is_number_integer())
      code = c->get<int>();
    if (auto r = status.find("reason"); r != status.end() && r->is_string())
      reason = r->get<std::string>();
    if (auto m = status.find("message"); m != status.end() && m->is_string())
      message = m->get<std::string>();
  }
  return ApiError(code, reason, message, what_call);
}

ApiError ApiError::from_response(int http_code, const std::string& body,
                                 const std::string& what_call, std::chrono::seconds retry_after) {
  std::string reason, message;
  const auto status = nlohmann::json::parse(body, nullptr, false);
  if (status.is_object() && status.value("kind", "") == "Status") {
    reason = status.value("reason", "");
    message = status.value("message", "");
  } else {
    // Not a Status (a proxy's HTML page, say): its start still says more than nothing.
    message = body.substr(0, 200);
  }
  return ApiError(http_code, reason, message, what_call, retry_after);
}

}  // namespace commgate::kube
