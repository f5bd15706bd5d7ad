// The Kubernetes API over cpprestsdk's http_client, configured as DESIGN.md
// ("Dependencies", the Kubernetes API client) measured it:
// - two http_clients: one for ordinary calls (request_timeout, about 30 s) and one for
//   watches whose timeout (per silence, not per response) is above any watch's
//   timeoutSeconds, so a quiet watch is not cut;
// - the TLS callback replaces the certificate store with one holding only the cluster's
//   CA (trust only that CA, as kubectl does; about 0.8 MB less per connection); client
//   certificates load from memory; the bearer token is added by a pipeline stage, read
//   per request so a rotated token file is picked up;
// - a watch body is read by a non-blocking, self-rescheduling read_line loop (never a
//   blocking .get() inside a cpprestsdk task: with a small pool that froze every
//   request) and stopped only through a cancellation token.
//
// The client keeps no mutable state shared between calls: every error belongs to its
// call. get(), list() and the writes block the calling thread; never call them from a
// watch callback. Every request except a watch first takes a token from the client-side
// rate limit (Options::qps, burst), as client-go's rest client does.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kube/api_error.h"
#include "kube/clock.h"
#include "kube/cluster_config.h"

namespace commgate::kube {

// Stops a blocking call (get/list) or a watch from another thread. Copies share state.
class Cancel {
 public:
  Cancel();
  void cancel() const;
  bool cancelled() const;

 private:
  friend class ApiClient;
  struct State;
  std::shared_ptr<State> state_;
};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;           // 0: everything in one page
  std::string continue_token;  // from the previous page
};

struct ListPage {
  std::vector<nlohmann::json> items;
  std::string resource_version;  // the list's metadata.resourceVersion
  std::string continue_token;    // "" on the last page
};

struct WatchOptions {
  std::string resource_version;  // "": from now, starting with ADDED for every object
  int timeout_seconds = 290;     // the server ends the watch after this
  bool allow_bookmarks = true;
  std::string label_selector;
  std::string field_selector;
};

// The PATCH content types (docs/kube-client.md, "Writes").
enum class PatchType {
  kMerge,  // application/merge-patch+json (RFC 7386): an object; null deletes a field
  kJson,   // application/json-patch+json (RFC 6902): an array of operations
  kApply,  // application/apply-patch+yaml: server-side apply; needs a field manager
};

struct PatchOptions {
  std::string field_manager;  // ?fieldManager=; required for kApply
  bool force = false;         // ?force=true; only for kApply
};

struct DeleteOptions {
  std::string propagation_policy;  // "", "Background", "Foreground" or "Orphan"
  // preconditions.uid: delete only the object with this UID; another (the name deleted and
  // created again since it was read) answers 409 Conflict and stays.
  std::string precondition_uid;
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  nlohmann::json object;
};

// The running watch. Destroying it (or cancel()) stops the watch and waits until its
// callbacks have returned; never do either from inside those callbacks.
class WatchHandle {
 public:
  struct State;
  WatchHandle() = default;
  explicit WatchHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}
  WatchHandle(WatchHandle&&) noexcept = default;
  WatchHandle& operator=(WatchHandle&& other) noexcept;
  WatchHandle(const WatchHandle&) = delete;
  WatchHandle& operator=(const WatchHandle&) = delete;
  ~WatchHandle();

  void cancel();
  bool finished() const;

 private:
  std::shared_ptr<State> state_;
};

class ApiClient {
 public:
  struct Options {
    std::chrono::seconds request_timeout{30};
    // The longest timeoutSeconds a watch may ask for; the watch client's timeout is this
    // plus watch_timeout_margin.
    int max_watch_timeout_seconds = 600;
    std::chrono::seconds watch_timeout_margin{30};
    // The client-side rate limit (the operator's --kube-api-qps and --kube-api-burst);
    // qps <= 0 turns it off. client-go's 5/10 is sized for kubectl; an operator relisting
    // several collections after a 410 and writing a status per reconcile needs more
    // (docs/kube-client.md, "Rate limit").
    double qps = 20;
    int burst = 30;
    std::shared_ptr<Clock> clock = steady_clock();  // what the rate limit waits on
    // client-go's rest client: an answer of 429 or 5xx carrying a positive Retry-After (API
    // Priority and Fairness throttling, an apiserver shutting down) is not an error yet:
    // the same request goes again after that many seconds, up to this many times (10, as
    // client-go). Watches are not retried here (the Watcher honours Retry-After itself).
    // Then the last answer is the ApiError, its retry_after set. 0: never again.
    int max_retries = 10;
    // Asked right before each write (POST, PUT, PATCH, DELETE) is sent, a retry's too;
    // false: the write is not sent and the call throws std::runtime_error. The operator's
    // reconcile client passes "this replica is sure it leads" (the elector's is_leader():
    // its last renewal is younger than the renew deadline), so a replica that lost its
    // Lease writes nothing more, even from a reconcile already running or a write waiting
    // on Retry-After (issue #19 item 9). Unset: every write is sent.
    std::function<bool()> may_write;
  };

  // Throws std::runtime_error when the CA or client certificate/key do not load.
  explicit ApiClient(ClusterConfig config);
  ApiClient(ClusterConfig config, Options options);
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  const ClusterConfig& config() const { return config_; }

  // GET `path` ("/api/v1/namespaces/default/configmaps/x"). Throws ApiError for an error
  // answer and std::runtime_error (naming the call) for a transport error or a timeout.
  nlohmann::json get(const std::string& path, const Cancel& cancel = Cancel()) const;
  // One page of a collection.
  ListPage list(const std::string& path, const ListOptions& options = {},
                const Cancel& cancel = Cancel()) const;

  // POST to `collection`; returns the created object. 409 AlreadyExists when it exists.
  nlohmann::json create(const std::string& collection, const nlohmann::json& object,
                        const Cancel& cancel = Cancel()) const;
  // PUT to `path` (an object, or its "/status" or "/scale"); returns the stored object.
  // A stale metadata.resourceVersion is ApiError 409 Conflict.
  nlohmann::json update(const std::string& path, const nlohmann::json& object,
                        const Cancel& cancel = Cancel()) const;
  // PATCH `path`. kApply without a field manager is refused here (std::invalid_argument),
  // as the server would with 422.
  nlohmann::json patch(const std::string& path, PatchType type, const nlohmann::json& patch,
                       const PatchOptions& options = {}, const Cancel& cancel = Cancel()) const;
  // DELETE `path`; returns what the server answers: the object (pods, services, or one
  // that finalizers hold) or a Success Status (custom resources, Jobs, Leases, Events).
  nlohmann::json remove(const std::string& path, const DeleteOptions& options = {},
                        const Cancel& cancel = Cancel()) const;

  // Starts a watch of the collection at `path`. on_event runs on a cpprestsdk thread for
  // each event in order (keep it fast: hand work on); on_end runs exactly once after the
  // last event: with nullptr when the server ended the watch, with the error otherwise
  // (ApiError when the server refused it, e.g. 410; any other exception means "watch
  // again from the last resourceVersion"; after cancel(), an exception too).
  // Throws std::invalid_argument when timeout_seconds is above max_watch_timeout_seconds.
  WatchHandle watch(const std::string& path, const WatchOptions& options,
                    std::function<void(WatchEvent)> on_event,
                    std::function<void(std::exception_ptr)> on_end) const;

 private:
  struct Clients;
  // call_once, again after each Retry-After the server asks for (Options::max_retries).
  nlohmann::json call(const std::string& method, const std::string& target,
                      const nlohmann::json* body, const std::string& content_type,
                      const Cancel& cancel) const;
  // Sends one request (after a token from the rate limit) and parses the JSON answer.
  nlohmann::json call_once(const std::string& method, const std::string& target,
                           const nlohmann::json* body, const std::string& content_type,
                           const Cancel& cancel) const;
  // Waits `delay` on the options' clock; throws std::runtime_error when cancelled.
  void wait_retry_after(std::chrono::seconds delay, const Cancel& cancel,
                        const std::string& what) const;
  ClusterConfig config_;
  Options options_;
  std::shared_ptr<Clients> clients_;
};

}  // namespace commgate::kube
