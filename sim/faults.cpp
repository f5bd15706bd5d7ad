#include "sim/faults.h"

#include "sim/api_status.h"

namespace commgate::sim {
namespace {

// The Status bodies kube-apiserver sends for these (k8s.io/apiserver's
// NewInternalError / NewTooManyRequests / NewServiceUnavailable).
server::Response failure_response(const RequestFailure& f) {
  nlohmann::json status;
  if (f.status == 429) {
    status = failure_status(429, "TooManyRequests", "Too many requests, please try again later.");
    status["details"] = {{"retryAfterSeconds", f.retry_after.count()}};
  } else if (f.status == 503) {
    status = failure_status(503, "ServiceUnavailable",
                            "the server is currently unable to "
                            "handle the request");
    status["details"] = {{"retryAfterSeconds", f.retry_after.count()}};
  } else {
    status = failure_status(f.status, "InternalError",
                            "Internal error occurred: injected fault (commgate-sim)");
  }
  server::Response r;
  r.status = f.status;
  r.content_type = "application/json";
  r.body = status.dump();
  if (f.status == 429 || f.status == 503)
    r.headers.emplace_back("Retry-After", std::to_string(f.retry_after.count()));
  return r;
}

}  // namespace

void FaultInjector::fail_next_requests(const RequestFailure& failure) {
  std::lock_guard<std::mutex> lock(mu_);
  failure_ = failure;
}

void FaultInjector::set_response_delay(std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(mu_);
  delay_ = delay;
}

std::chrono::milliseconds FaultInjector::response_delay() const {
  std::lock_guard<std::mutex> lock(mu_);
  return delay_;
}

std::optional<server::Response> FaultInjector::intercept(const server::Request& request) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_.count <= 0) return std::nullopt;
  if (!failure_.path_contains.empty() &&
      request.path.find(failure_.path_contains) == std::string::npos)
    return std::nullopt;
  --failure_.count;
  ++failed_;
  return failure_response(failure_);
}

uint64_t FaultInjector::failed_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

}  // namespace commgate::sim
