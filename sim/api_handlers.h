// The Kubernetes REST surface over an ObjectStore: discovery, OpenAPI, and the verbs on
// /api/v1/... and /apis/<group>/<version>/... (get, list, watch, create, update, patch,
// delete, deletecollection; status and scale subresources; Table output). A Request ->
// Response function, plus the bookkeeping of open watch streams (timeouts, bookmarks).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "server/http.h"
#include "sim/admission.h"
#include "sim/authentication.h"
#include "sim/object_store.h"
#include "sim/query_options.h"
#include "sim/rbac_authorizer.h"
#include "sim/service_directory.h"

namespace commgate::sim {

// What a request that authenticated may do: everything (AlwaysAllow, the default), or what
// the Roles, ClusterRoles, RoleBindings and ClusterRoleBindings in the store grant
// (rbac_authorizer.h; kube-apiserver's --authorization-mode=RBAC).
enum class AuthorizationMode { kAlwaysAllow, kRbac };

struct ApiHandlerOptions {
  // Who each bearer token is (authentication.h); a request no token names is a 401.
  TokenAuthenticator authentication;
  AuthorizationMode authorization = AuthorizationMode::kAlwaysAllow;
  std::chrono::seconds default_watch_timeout{1800};
  // Built-in admission plugins (admission_rules.h), authorized as the requests are.
  AdmissionPlugins admission_plugins = {};
};

class ApiHandlers {
 public:
  ApiHandlers(ObjectStore& store, ApiHandlerOptions options);

  // Who a request was: the user its bearer token names (nullopt: none, a 401) and, when
  // it impersonated someone and was allowed to (impersonation.h), the user it acted as.
  struct Identity {
    std::optional<UserInfo> user;
    std::optional<UserInfo> impersonated;
  };
  // Never throws: every failure becomes a Status response. `identity`, when given, is told
  // who the request was (for the audit log).
  server::Response handle(const server::Request& request, Identity* identity = nullptr);

  // Called periodically: ends watches past their timeoutSeconds and forgets closed ones;
  // with `send_bookmarks`, sends a BOOKMARK to the watches that allowed them.
  void tick(bool send_bookmarks);
  std::size_t open_watches() const;
  // The kubelet's pod directories, for the pods/log subresource (set once the cluster runs).
  void set_pod_log_dir(std::string dir) {
    std::lock_guard lock(pod_log_mu_);
    pod_log_dir_ = std::move(dir);
  }
  // Ends every open watch stream now, cleanly (the last chunk), as an apiserver that
  // sheds load or restarts does; clients must watch again from their last version.
  void close_all_watches();
  // Where the services that webhook configurations name listen (service_directory.h).
  ServiceDirectory& services() { return services_; }
  // Admission, for the authorization checks its plugins made (rbac_usage()).
  const Admission& admission() const { return admission_; }
  // Who each bearer token is (the audit log names a request's user with it).
  const TokenAuthenticator& authentication() const { return options_.authentication; }

 private:
  struct ActiveWatch {
    std::shared_ptr<server::StreamSink> sink;
    std::chrono::steady_clock::time_point deadline;
    bool bookmarks = false;
  };

  // One request's context: who asks (set by authentication and impersonation before
  // anything else, for admission's userInfo and an authorizer), whether a write is a dry run, the
  // warnings admission returned (sent as Warning headers on the response, success or not).
  struct Write {
    UserInfo user;
    bool dry_run = false;
    std::vector<std::string> warnings;
  };

  server::Response dispatch(const server::Request& request, Write& w);
  server::Response serve_resource(const server::Request& request, const std::string& group,
                                  const std::string& version, const std::vector<std::string>& rest,
                                  Write& w);
  // The write verbs with admission between the request and the store, as kube-apiserver
  // orders it: mutating webhooks, then the store's checks and defaults (a dry run of the
  // write), then validating webhooks, then the write itself unless it is a dry run.
  nlohmann::json admitted_create(const server::Request& request, const ResourceInfo& r,
                                 const std::string& ns, Write& w);
  // PUT and PATCH of the object or its status: `next` makes the new object from the stored one.
  server::Response server_side_apply(const server::Request& request, const ResourceInfo& r,
                                     const std::string& ns, const std::string& name,
                                     const std::string& sub, Write& w);
  nlohmann::json admitted_update(const server::Request& request, const ResourceInfo& r,
                                 const std::string& ns, const std::string& name,
                                 const std::string& sub,
                                 const std::function<nlohmann::json(const nlohmann::json&)>& next,
                                 Write& w);
  nlohmann::json admitted_scale(const server::Request& request, const ResourceInfo& r,
                                const std::string& ns, const std::string& name, Write& w);
  // The webhooks for a DELETE of `current` (object null, oldObject the stored object).
  void admit_delete(const server::Request& request, const ResourceInfo& r, const std::string& ns,
                    const std::string& name, const nlohmann::json& current, Write& w);
  server::Response watch(const server::Request& request, const ResourceInfo& r,
                         const std::string& ns, const ListQuery& query);
  // Under kRbac: throws ApiError 403 (forbidden_status) when the user may not make the
  // request; system:masters always may.
  void authorize_request(const server::Request& request, const UserInfo& user);
  // The RBAC objects as stored now plus bootstrap_rbac(); read again only when the store
  // has changed since the last read (its resourceVersion moved).
  std::shared_ptr<const RbacObjects> rbac_objects();
  // GET pods/<name>/log (`kubectl logs`): the container's output file in the kubelet's
  // pod directory.
  server::Response pod_log(const server::Request& request, const std::string& ns,
                           const std::string& name);
  // POST authorization.k8s.io/v1 selfsubjectaccessreviews (`kubectl auth can-i`).
  nlohmann::json self_subject_access_review(const nlohmann::json& review, const UserInfo& user);

  ObjectStore& store_;
  ApiHandlerOptions options_;
  mutable std::mutex pod_log_mu_;
  std::string pod_log_dir_;  // guarded by pod_log_mu_
  ServiceDirectory services_;
  Admission admission_;
  mutable std::mutex watches_mu_;
  std::map<uint64_t, ActiveWatch> watches_;
  std::mutex rbac_mu_;
  uint64_t rbac_version_ = 0;
  std::shared_ptr<const RbacObjects> rbac_;
};

}  // namespace commgate::sim
