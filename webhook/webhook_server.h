// The webhook's HTTP layer: AdmissionReview envelopes over server's HTTPS server.
// It owns what the handlers do not: content type (400), the envelope and uid echo, the
// malformed cases, exceptions (AdmissionReview-shaped 500), readiness and metrics. The
// server owns TLS and its reload, the body limit (413), methods (405) and timeouts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "server/router.h"
#include "server/server.h"
#include "webhook/deadline_runner.h"
#include "webhook/policy_source.h"
#include "webhook/webhook_config.h"
#include "webhook/webhook_metrics.h"

namespace commgate::webhook {

using Clock = std::function<TimePoint()>;

// The routes, as a value: usable without sockets (tests call Router::dispatch).
// /mutate and /validate (POST), /healthz, /readyz, /metrics (GET). `stats` supplies the
// server's counters for /metrics (may be empty).
class AdmissionService {
 public:
  AdmissionService(std::shared_ptr<const PolicySource> source, WebhookConfig config,
                   Clock clock = {});
  server::Router router(std::function<server::ServerStats()> stats = {});
  // One admission endpoint: the whole envelope, from HTTP request to HTTP response.
  server::Response admit(const server::Request& request, bool mutate);
  WebhookMetrics& metrics() { return metrics_; }

 private:
  std::string render_metrics(const std::function<server::ServerStats()>& stats);
  // The handler on the calling thread (WebhookConfig::decide_on_pool false): its answer,
  // or nullopt past the deadline.
  std::optional<AdmissionResponse> run_inline(bool mutate, const AdmissionRequest& request,
                                              const Snapshot& snapshot, TimePoint now);

  const std::shared_ptr<const PolicySource> source_;
  const WebhookConfig config_;
  const Clock clock_;
  WebhookMetrics metrics_;
  // Last: its threads stop before the members they read. Null when handlers run inline.
  std::unique_ptr<DeadlineRunner> runner_;
};

// The service behind an HTTPS server.
class WebhookServer {
 public:
  WebhookServer(server::ServerOptions options, std::shared_ptr<const PolicySource> source,
                WebhookConfig config, Clock clock = {});
  void start();  // throws std::runtime_error on misconfiguration (see server::Server::start)
  void stop();
  uint16_t port() const { return server_->port(); }
  server::Server& http() { return *server_; }

 private:
  std::unique_ptr<AdmissionService> service_;
  std::unique_ptr<server::Server> server_;
};

}  // namespace commgate::webhook
