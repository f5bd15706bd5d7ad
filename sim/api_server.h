// The simulated API server: an ObjectStore behind ApiHandlers on the project's HTTPS
// server, with a CA and serving certificate made at start and a kubeconfig to match.
// Usable in process by tests (port 0) and by the commgate-sim binary.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim/api_handlers.h"
#include "sim/audit_log.h"
#include "sim/authentication.h"
#include "sim/faults.h"
#include "sim/object_store.h"
#include "sim/pki.h"

namespace commgate::server {
class Server;
}

namespace commgate::sim {

struct ApiServerOptions {
  uint16_t port = 0;  // 0: any free port
  std::string token;  // the admin's (kubernetes-admin, system:masters); "": a random one
  // More identities by token (authentication.h): e.g. the operator's service account,
  // whose name webhooks then see in userInfo. Tokens must differ from each other and
  // from the admin's.
  std::vector<TokenUser> users;
  // --authorization: AlwaysAllow (the default) or RBAC from the stored roles and bindings.
  AuthorizationMode authorization = AuthorizationMode::kAlwaysAllow;
  // --enable-admission-plugins: built-in plugins beyond the defaults (admission_rules.h),
  // e.g. OwnerReferencesPermissionEnforcement; none by default, as upstream.
  AdmissionPlugins admission_plugins = {};
  std::size_t history_limit = 10'000;
  std::chrono::milliseconds bookmark_interval{60'000};  // kube-apiserver: about a minute
  std::chrono::milliseconds tick_interval{100};         // watch timeouts are this precise
};

class ApiServer {
 public:
  explicit ApiServer(ApiServerOptions options = {});
  ~ApiServer();  // stop()
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Throws std::runtime_error when it cannot listen.
  void start();
  void stop();

  uint16_t port() const;
  std::string url() const;  // https://127.0.0.1:PORT
  const std::string& token() const { return token_; }
  const std::string& ca_pem() const { return pki_.ca_pem; }
  std::string kubeconfig() const;  // the admin's
  // A kubeconfig that authenticates as `username` (one of options.users, or the admin),
  // its context's namespace the service account's own. Throws std::invalid_argument for
  // a user the server does not know.
  std::string kubeconfig_for(const std::string& username) const;
  // The directory holding ca.crt (and the serving pair the server reads).
  const std::string& pki_dir() const { return dir_; }
  ObjectStore& store() { return store_; }
  // Says where the service `<name>.<namespace>.svc` that webhook configurations name
  // listens ("127.0.0.1:PORT"): the sim has no cluster DNS. Admission connects there and
  // still verifies the certificate against the caBundle for the service's DNS name.
  // Throws std::invalid_argument when host_port is not HOST:PORT. The binary offers the
  // same while it runs through `POST /sim/services` (handle_service_request).
  void register_service(const std::string& name, const std::string& ns,
                        const std::string& host_port) {
    handlers_.services().add(name, ns, host_port);
  }
  std::size_t open_watches() const { return handlers_.open_watches(); }
  // Where the kubelet keeps its pods' directories (Kubelet::work_dir): `kubectl logs`
  // reads a container's output there. Unset: the log subresource answers 404.
  void serve_pod_logs_from(const std::string& kubelet_work_dir) {
    handlers_.set_pod_log_dir(kubelet_work_dir);
  }

  // Fault injection (docs/testing.md). The commgate-sim binary offers the same through
  // `POST /sim/faults` (see handle_fault_request).
  //
  // Ends every open watch cleanly; clients must watch again from their last version.
  void close_all_watches();
  // The next `n` API requests (those whose path contains `path_contains`, when given) fail
  // with `status` (500, 429 or 503; 429/503 carry Retry-After).
  void fail_next_requests(int n, int status,
                          std::chrono::seconds retry_after = std::chrono::seconds{1},
                          const std::string& path_contains = "");
  // Every API response waits this long first (0: none).
  void set_response_delay(std::chrono::milliseconds delay);
  // Forgets the store's change history: a watch from any older version gets 410 Expired.
  void compact_history();
  // Stops serving (every connection and watch drops), then serves again on the same port
  // with the same objects. Without `keep_history` the history is compacted too, as after
  // an etcd compaction during the outage, so clients must relist.
  void restart(bool keep_history);
  uint64_t injected_failures() const { return faults_.failed_requests(); }
  // API requests served since start (every request to the Kubernetes API, watches included;
  // not /sim/...): what a benchmark divides by the work done. The binary offers it as
  // `GET /sim/requests` (admin token) → {"apiRequests": N}.
  uint64_t api_requests() const { return api_requests_.load(); }
  // Every API request as kube-apiserver's audit log has it at level Metadata (audit_log.h),
  // oldest first; the faults injected included. The binary: `GET /sim/audit` (admin token)
  // → an audit.k8s.io/v1 EventList.
  std::vector<AuditEvent> audit_events() const { return audit_.events(); }
  // The authorization checks admission plugins made inside requests (admission.h): RBAC
  // grants they use appear nowhere in the audit log.
  std::vector<AuthorizationCheck> admission_authorization_checks() const {
    return handlers_.admission().authorization_checks();
  }

 private:
  void ticker();
  void start_serving(uint16_t port);
  // Faults, delay, handlers; `who`: who the request was, when it reached the handlers.
  server::Response serve_api(const server::Request& request, ApiHandlers::Identity& who);
  server::Response handle_fault_request(const server::Request& request);
  server::Response handle_service_request(const server::Request& request);

  ApiServerOptions options_;
  std::string token_;
  ServingPki pki_;
  std::string dir_;
  ObjectStore store_;
  ApiHandlers handlers_;
  FaultInjector faults_;
  std::atomic<uint64_t> api_requests_{0};
  AuditLog audit_;
  std::mutex restart_mu_;  // one restart at a time; guards server_ replacement
  std::atomic<uint16_t> port_{0};
  std::atomic<bool> restarting_{false};
  std::mutex restarter_mu_;  // guards restarter_
  std::thread restarter_;    // a restart asked for over HTTP runs here, after the reply
  std::unique_ptr<server::Server> server_;
  std::thread ticker_;
  std::mutex tick_mu_;
  std::condition_variable tick_cv_;
  bool stopping_ = false;
};

}  // namespace commgate::sim
