// Every statistic the webhook keeps, declared in one place, over server's registry.
#pragma once

#include <chrono>
#include <string>

#include "server/metrics.h"

namespace commgate::webhook {

class WebhookMetrics {
 public:
  WebhookMetrics();

  // One admission request answered: endpoint "mutate" | "validate", the decision the
  // response carries (AdmissionResponse::decision, or "Malformed" / "Error"), the HTTP code.
  void record_request(const std::string& endpoint, const std::string& decision, int code,
                      std::chrono::nanoseconds duration);

  server::Registry& registry() { return registry_; }

 private:
  server::Registry registry_;
  server::Histogram& mutate_latency_;
  server::Histogram& validate_latency_;
};

}  // namespace commgate::webhook
