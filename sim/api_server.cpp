#include "sim/api_server.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <stdexcept>

#include "server/server.h"
#include "sim/kubeconfig.h"

namespace commgate::sim {
namespace {

std::string random_token() {
  static const char* d = "0123456789abcdef";
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 32; ++i) s += d[rd() % 16];
  return s;
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// The answer to a /sim/ request without the admin's token.
server::Response unauthorized() {
  return server::Response::json(
      401,
      R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"Unauthorized","code":401})");
}

ObjectStore::Options store_options(const ApiServerOptions& o) {
  ObjectStore::Options s;
  s.history_limit = o.history_limit;
  return s;
}

}  // namespace

ApiServer::ApiServer(ApiServerOptions options)
    : options_(options),
      token_(options.token.empty() ? random_token() : options.token),
      pki_(make_serving_pki()),
      store_(store_options(options)),
      handlers_(store_,
                ApiHandlerOptions{TokenAuthenticator(token_, options.users), options.authorization,
                                  std::chrono::seconds(1800), options.admission_plugins}) {
  std::string templ = (std::filesystem::temp_directory_path() / "commgate-sim-XXXXXX").string();
  if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = templ;
  write_file(std::filesystem::path(dir_) / "ca.crt", pki_.ca_pem);
  write_file(std::filesystem::path(dir_) / "tls.crt", pki_.cert_pem);
  write_file(std::filesystem::path(dir_) / "tls.key", pki_.key_pem);
}

ApiServer::~ApiServer() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void ApiServer::start() {
  start_serving(options_.port);
  stopping_ = false;
  ticker_ = std::thread([this] { ticker(); });
}

void ApiServer::start_serving(uint16_t port) {
  server::ServerOptions so;
  so.port = port;
  so.tls = server::TlsFiles{dir_ + "/tls.crt", dir_ + "/tls.key"};
  so.threads = 2;
  so.shutdown_timeout = std::chrono::milliseconds(2000);
  so.idle_timeout = std::chrono::milliseconds(300'000);
  server::Router router;
  router.post("/sim/faults", [this](const server::Request& r) { return handle_fault_request(r); });
  router.post("/sim/services",
              [this](const server::Request& r) { return handle_service_request(r); });
  router.get("/sim/requests", [this](const server::Request& r) {
    if (r.header("Authorization") != "Bearer " + token_) return unauthorized();
    return server::Response::json(200, nlohmann::json{{"apiRequests", api_requests()}}.dump());
  });
  router.get("/sim/audit", [this](const server::Request& r) {
    if (r.header("Authorization") != "Bearer " + token_) return unauthorized();
    nlohmann::json items = nlohmann::json::array();
    for (const AuditEvent& e : audit_.events()) items.push_back(to_json(e));
    return server::Response::json(
        200,
        nlohmann::json{{"kind", "EventList"}, {"apiVersion", "audit.k8s.io/v1"}, {"items", items}}
            .dump());
  });
  router.add("*", "/*", [this](const server::Request& r) {
    api_requests_.fetch_add(1, std::memory_order_relaxed);
    const auto received = std::chrono::system_clock::now();
    ApiHandlers::Identity who;
    server::Response response = serve_api(r, who);
    // A request a fault answered never reached authentication: who its token names.
    if (!who.user) who.user = handlers_.authentication().authenticate(r.header("Authorization"));
    AuditEvent event = audit_event(r, response, who.user ? who.user->username : "", received);
    event.impersonated_user = std::move(who.impersonated);
    audit_.add(std::move(event));
    return response;
  });
  server_ = std::make_unique<server::Server>(std::move(so), std::move(router));
  server_->start();
  port_ = server_->port();
}

server::Response ApiServer::serve_api(const server::Request& request, ApiHandlers::Identity& who) {
  if (auto failure = faults_.intercept(request)) return std::move(*failure);
  const auto delay = faults_.response_delay();
  if (delay.count() > 0) std::this_thread::sleep_for(delay);
  return handlers_.handle(request, &who);
}

void ApiServer::stop() {
  {
    std::lock_guard<std::mutex> lock(tick_mu_);
    stopping_ = true;
  }
  tick_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  {
    std::lock_guard<std::mutex> lock(restarter_mu_);
    if (restarter_.joinable()) restarter_.join();
  }
  std::lock_guard<std::mutex> lock(restart_mu_);
  if (server_) server_->stop();
}

void ApiServer::close_all_watches() {
  handlers_.close_all_watches();
}

void ApiServer::fail_next_requests(int n, int status, std::chrono::seconds retry_after,
                                   const std::string& path_contains) {
  faults_.fail_next_requests(RequestFailure{n, status, retry_after, path_contains});
}

void ApiServer::set_response_delay(std::chrono::milliseconds delay) {
  faults_.set_response_delay(delay);
}

void ApiServer::compact_history() {
  store_.compact_history();
}

void ApiServer::restart(bool keep_history) {
  std::lock_guard<std::mutex> lock(restart_mu_);
  if (!server_) return;
  const uint16_t port = server_->port();
  server_->stop();  // drops every connection, watches included
  handlers_.close_all_watches();
  if (!keep_history) store_.compact_history();
  start_serving(port);
}

// POST /sim/faults, authenticated like the API, with one JSON object:
//   {"closeWatches": true}
//   {"failNext": {"count": 3, "code": 429, "retryAfterSeconds": 1, "pathContains": "/watch"}}
//   {"delayMs": 200}
//   {"compactHistory": true}
//   {"restart": {"keepHistory": false}}
// Several keys may be combined; they apply in the order listed here. A restart happens
// after the reply is sent (its connection is one of those dropped).
server::Response ApiServer::handle_fault_request(const server::Request& request) {
  const auto status_reply = [](int code, const std::string& message) {
    nlohmann::json body = {{"kind", "Status"},
                           {"apiVersion", "v1"},
                           {"message", message},
                           {"status", code < 300 ? "Success" : "Failure"},
                           {"code", code}};
    return server::Response::json(code, body.dump());
  };
  if (request.header("Authorization") != "Bearer " + token_)
    return status_reply(401, "Unauthorized");
  bool close_watches = false, compact = false, restart_wanted = false, keep = true;
  std::optional<std::chrono::milliseconds> delay;
  std::optional<RequestFailure> failure;
  try {
    const nlohmann::json spec = nlohmann::json::parse(request.body);
    if (!spec.is_object()) return status_reply(400, "body: must be a JSON object");
    if (spec.contains("failNext")) {
      const auto& f = spec.at("failNext");
      failure = RequestFailure{f.value("count", 1), f.value("code", 500),
                               std::chrono::seconds(f.value("retryAfterSeconds", 1)),
                               f.value("pathContains", std::string())};
      if (failure->status != 500 && failure->status != 429 && failure->status != 503)
        return status_reply(400, "failNext.code: must be 500, 429 or 503");
    }
    close_watches = spec.value("closeWatches", false);
    if (spec.contains("delayMs"))
      delay = std::chrono::milliseconds(spec.at("delayMs").get<int64_t>());
    compact = spec.value("compactHistory", false);
    if (spec.contains("restart")) {
      restart_wanted = true;
      keep = spec.at("restart").value("keepHistory", true);
    }
  } catch (const std::exception& e) {
    return status_reply(400, std::string("body: ") + e.what());
  }
  if (failure) faults_.fail_next_requests(*failure);
  if (close_watches) close_all_watches();
  if (delay) faults_.set_response_delay(*delay);
  if (compact) compact_history();
  if (restart_wanted) {
    if (restarting_.exchange(true)) return status_reply(409, "a restart is already under way");
    std::lock_guard<std::mutex> lock(restarter_mu_);
    if (restarter_.joinable()) restarter_.join();  // the previous one, finished
    restarter_ = std::thread([this, keep] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the reply go out
      restart(keep);
      restarting_ = false;
    });
  }
  return status_reply(200, "ok");
}

// POST /sim/services, authenticated like /sim/faults (the admin's token), with
//   {"name": "commgate-webhook", "namespace": "commgate-system", "address": "127.0.0.1:8443"}
// registers where a service listens while the sim runs (register_service), for a webhook
// started after the sim because it reads the sim's kubeconfig.
server::Response ApiServer::handle_service_request(const server::Request& request) {
  const auto reply = [](int code, const std::string& message) {
    const nlohmann::json body = {{"kind", "Status"},
                                 {"apiVersion", "v1"},
                                 {"message", message},
                                 {"status", code < 300 ? "Success" : "Failure"},
                                 {"code", code}};
    return server::Response::json(code, body.dump());
  };
  if (request.header("Authorization") != "Bearer " + token_) return reply(401, "Unauthorized");
  try {
    const nlohmann::json spec = nlohmann::json::parse(request.body);
    if (!spec.is_object()) return reply(400, "body: must be a JSON object");
    for (const char* key : {"name", "namespace", "address"})
      if (!spec.contains(key) || !spec[key].is_string() || spec[key].get<std::string>().empty())
        return reply(400, std::string("body.") + key + ": a non-empty string is required");
    register_service(spec["name"], spec["namespace"], spec["address"]);
  } catch (const std::invalid_argument& e) {
    return reply(400, std::string("body.address: ") + e.what());
  } catch (const std::exception& e) {
    return reply(400, std::string("body: ") + e.what());
  }
  return reply(200, "ok");
}

void ApiServer::ticker() {
  auto next_bookmark = std::chrono::steady_clock::now() + options_.bookmark_interval;
  std::unique_lock<std::mutex> lock(tick_mu_);
  while (!tick_cv_.wait_for(lock, options_.tick_interval, [this] { return stopping_; })) {
    lock.unlock();
    const auto now = std::chrono::steady_clock::now();
    const bool bookmarks = now >= next_bookmark;
    if (bookmarks) next_bookmark = now + options_.bookmark_interval;
    handlers_.tick(bookmarks);
    lock.lock();
  }
}

uint16_t ApiServer::port() const {
  return port_;
}

std::string ApiServer::url() const {
  return "https://127.0.0.1:" + std::to_string(port());
}

std::string ApiServer::kubeconfig() const {
  return kubeconfig_yaml(url(), pki_.ca_pem, token_);
}

std::string ApiServer::kubeconfig_for(const std::string& username) const {
  if (username == kAdminUsername) return kubeconfig();
  for (const auto& u : options_.users)
    if (u.user.username == username)
      return kubeconfig_yaml(url(), pki_.ca_pem, u.token, username, default_namespace_of(username));
  throw std::invalid_argument("the sim knows no user \"" + username + "\" (add it with --user)");
}

}  // namespace commgate::sim
