#include "webhook/webhook_server.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <thread>

#include "core/prometheus_text.h"
#include "webhook/admission_review.h"
#include "webhook/handlers.h"

namespace commgate::webhook {
namespace {

using server::Request;
using server::Response;

bool is_json_content_type(std::string_view value) {
  // "application/json", optionally with parameters ("; charset=utf-8"), any case.
  constexpr std::string_view kJson = "application/json";
  if (value.size() < kJson.size()) return false;
  for (size_t i = 0; i < kJson.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != kJson[i]) return false;
  }
  const std::string_view rest = value.substr(kJson.size());
  return rest.empty() || rest.front() == ';' || rest.front() == ' ';
}

Response review(int status, const std::string& uid, const std::string& api_version,
                const AdmissionResponse& answer) {
  return Response::json(status, admission_review_response_bytes(uid, api_version, answer));
}

}  // namespace

AdmissionService::AdmissionService(std::shared_ptr<const PolicySource> source, WebhookConfig config,
                                   Clock clock)
    : source_(std::move(source)),
      config_(std::move(config)),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::system_clock::now(); })) {
  if (config_.decide_on_pool) {
    runner_ = std::make_unique<DeadlineRunner>(
        config_.decision_threads ? config_.decision_threads
                                 : std::max(1u, std::thread::hardware_concurrency()));
  }
  metrics_.registry().add_collector([source = source_] { return source->metrics_text(); });
}

Response AdmissionService::admit(const Request& request, bool mutate) {
  const auto started = std::chrono::steady_clock::now();
  // Workload-gate checks (Jobs, Pods, ...: webhook/validate_workload.h) are counted as
  // their own endpoint, "workloads": every Pod write of a gated namespace is one, and
  // commgate_webhook_admissions_total counts TrainingJob decisions only.
  std::string endpoint = mutate ? "mutate" : "validate";
  std::string decision = "Malformed";
  Response response;
  try {
    response = [&]() -> Response {
      if (!is_json_content_type(request.header("Content-Type"))) {
        return Response::text(400, "Content-Type must be application/json, got \"" +
                                       std::string(request.header("Content-Type")) + "\"\n");
      }
      // Shared with the handler's thread, not copied: a copy of the object's JSON tree
      // (and its destruction) cost as much as parsing it (#9).
      std::shared_ptr<const AdmissionRequest> parsed;
      try {
        parsed = std::make_shared<const AdmissionRequest>(parse_admission_review(request.body));
      } catch (const MalformedReview& e) {
        if (e.http_status() == 400) return Response::text(400, std::string(e.what()) + "\n");
        return review(200, e.uid(), e.api_version(), denied(e.what(), 400));
      }
      if (!mutate && parsed->resource.group != "commgate.io") endpoint = "workloads";
      const auto snapshot = source_->snapshot();
      if (!snapshot) {
        decision = "NotReady";
        return review(200, parsed->uid, parsed->api_version,
                      denied("commgate has not loaded its policies and measurements yet", 503));
      }
      const TimePoint now = clock_();
      std::optional<AdmissionResponse> answer;
      if (runner_) {
        // The handler shares its inputs: past the deadline this frame is gone while it runs.
        auto handler = [this, mutate, now, snapshot, request = parsed]() {
          return mutate ? handle_mutate(*request, *snapshot, now, config_)
                        : handle_validate(*request, *snapshot, now, config_);
        };
        answer = runner_->run(std::move(handler), config_.decision_deadline);
      } else {
        answer = run_inline(mutate, *parsed, *snapshot, now);
      }
      if (!answer) {
        answer = mutate ? gate_past_deadline(*parsed, now, config_.decision_deadline,
                                             config_.records.get())
                        : deny_past_deadline(config_.decision_deadline);
        answer->decision = "Timeout";
      }
      decision = answer->decision;
      // One line per admission decided (at /validate, which the API server calls once per
      // admission, after /mutate): who asked for what, and the answer.
      if (!mutate && decision != "None") {
        const std::string key =
            parsed->namespace_.empty() ? parsed->name : parsed->namespace_ + "/" + parsed->name;
        LogFields fields = {{"decision", decision},
                            {"kind", parsed->kind},
                            {"object", key},
                            {"operation", parsed->operation},
                            {"user", parsed->user_info.username},
                            {"allowed", answer->allowed ? "true" : "false"}};
        if (!answer->allowed) fields.push_back({"message", answer->message});
        config_.log.info(std::string(answer->allowed ? "admitted " : "refused ") + parsed->kind +
                             " " + key + ": " + decision,
                         std::move(fields));
      }
      return review(200, parsed->uid, parsed->api_version, *answer);
    }();
  } catch (const std::exception& e) {
    // Never let an exception reach the server's generic 500: the apiserver reads an
    // AdmissionReview with the uid it sent. Its text goes to the log, not to the requester
    // (a parser's or the cache's internals are nothing a researcher should be shown).
    decision = "Error";
    const std::string uid = try_read_uid(request.body);
    config_.log.error(std::string("admission failed: ") + e.what(),
                      {{"endpoint", endpoint}, {"uid", uid}});
    response = review(500, uid, "",
                      denied("commgate webhook internal error (uid " + uid +
                                 "); the webhook's log has the details",
                             500));
  }
  metrics_.record_request(endpoint, decision, response.status,
                          std::chrono::steady_clock::now() - started);
  return response;
}

std::optional<AdmissionResponse> AdmissionService::run_inline(bool mutate,
                                                              const AdmissionRequest& request,
                                                              const Snapshot& snapshot,
                                                              TimePoint now) {
  // As DeadlineRunner::run: a zero deadline answers without running the handler, and an
  // answer that came later than the deadline is dropped (the caller answers as past it).
  const auto deadline = config_.decision_deadline;
  if (deadline <= std::chrono::milliseconds::zero()) return std::nullopt;
  const auto started = std::chrono::steady_clock::now();
  AdmissionResponse answer = mutate ? handle_mutate(request, snapshot, now, config_)
                                    : handle_validate(request, snapshot, now, config_);
  if (std::chrono::steady_clock::now() - started > deadline) return std::nullopt;
  return answer;
}

std::string AdmissionService::render_metrics(const std::function<server::ServerStats()>& stats) {
  std::string out = metrics_.registry().render();
  out += "# HELP commgate_webhook_build_info The commgate version running.\n";
  out += "# TYPE commgate_webhook_build_info gauge\n";
  out += "commgate_webhook_build_info{version=\"" + prometheus_escape_label(config_.version) +
         "\"} 1\n";
  const auto snapshot = source_->snapshot();
  const double age =
      snapshot ? std::chrono::duration<double>(clock_() - snapshot->loaded_at).count() : -1;
  append_prometheus_sample(out, "commgate_webhook_snapshot_age_seconds", "gauge",
                           "Age of the policies and measurements the webhook decides "
                           "from; -1 before the first load.",
                           age);
  append_prometheus_sample(out, "commgate_webhook_policies", "gauge",
                           "CommPolicies in the current snapshot.",
                           snapshot ? static_cast<double>(snapshot->policies.size()) : 0);
  append_prometheus_sample(out, "commgate_webhook_profiles", "gauge",
                           "CommProfiles in the current snapshot.",
                           snapshot ? static_cast<double>(snapshot->profiles.size()) : 0);
  if (stats) out += server::server_stats_prometheus(stats(), "commgate_webhook_http");
  return out;
}

server::Router AdmissionService::router(std::function<server::ServerStats()> stats) {
  server::Router r;
  r.post("/mutate", [this](const Request& q) { return admit(q, true); });
  r.post("/validate", [this](const Request& q) { return admit(q, false); });
  r.get("/healthz", [](const Request&) { return Response::text(200, "ok\n"); });
  r.get("/readyz", [this](const Request&) {
    return source_->snapshot() ? Response::text(200, "ok\n")
                               : Response::text(503, "policies and measurements not loaded\n");
  });
  r.get("/metrics", [this, stats](const Request&) {
    Response m = Response::text(200, render_metrics(stats));
    m.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return m;
  });
  return r;
}

WebhookServer::WebhookServer(server::ServerOptions options,
                             std::shared_ptr<const PolicySource> source, WebhookConfig config,
                             Clock clock)
    : service_(std::make_unique<AdmissionService>(std::move(source), std::move(config),
                                                  std::move(clock))) {
  // The router's /metrics reads the server's stats; the server exists only after the
  // router is built, hence the indirection through this object.
  server_ = std::make_unique<server::Server>(std::move(options),
                                             service_->router([this] { return server_->stats(); }));
}

void WebhookServer::start() {
  server_->start();
}

void WebhookServer::stop() {
  server_->stop();
}

}  // namespace commgate::webhook
