// Every statistic the webhook keeps, declared in one place, over server's registry.
#pragma once

#include <chrono>
#include <string>

#include "core/metrics.h"

namespace commgate::webhook {

class WebhookMetrics {
 public:
  WebhookMetrics();

  // One admission request answered: endpoint "mutate" | "validate", the decision the
  // response carries (AdmissionResponse::decision, or "Malformed" / "Error"), the HTTP code.
  // A /validate answer is also counted in commgate_webhook_admissions_total{decision}: the
  // API server calls /validate once per admission, after /mutate, so that counter counts
  // each admission once (issue #20 defect 9: summing requests_total over both endpoints
  // counted each twice).
  void record_request(const std::string& endpoint, const std::string& decision, int code,
                      std::chrono::nanoseconds duration);

  Registry& registry() { return registry_; }

 private:
  Registry registry_;
  Histogram& mutate_latency_;
  Histogram& validate_latency_;
};

}  // namespace commgate::webhook
