#include "webhook/webhook_metrics.h"

namespace commgate::webhook {
namespace {

constexpr const char* kLatencyName = "commgate_webhook_request_duration_seconds";
constexpr const char* kLatencyHelp =
    "Time from a parsed HTTP request to its AdmissionReview answer, by endpoint.";

}  // namespace

WebhookMetrics::WebhookMetrics()
    : mutate_latency_(registry_.histogram(kLatencyName, kLatencyHelp, default_latency_buckets(),
                                          {{"endpoint", "mutate"}})),
      validate_latency_(registry_.histogram(kLatencyName, kLatencyHelp, default_latency_buckets(),
                                            {{"endpoint", "validate"}})) {}

void WebhookMetrics::record_request(const std::string& endpoint, const std::string& decision,
                                    int code, std::chrono::nanoseconds duration) {
  registry_
      .counter("commgate_webhook_requests_total",
               "AdmissionReview requests answered, by endpoint, decision and HTTP code.",
               {{"endpoint", endpoint}, {"decision", decision}, {"code", std::to_string(code)}})
      .inc();
  if (endpoint == "validate")
    registry_
        .counter("commgate_webhook_admissions_total",
                 "Admissions decided, once each (their /validate answers), by decision.",
                 {{"decision", decision}})
        .inc();
  const double seconds = std::chrono::duration<double>(duration).count();
  (endpoint == "mutate" ? mutate_latency_ : validate_latency_).observe(seconds);
}

}  // namespace commgate::webhook
