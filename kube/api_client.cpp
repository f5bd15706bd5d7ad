#include "kube/api_client.h"

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <stop_token>

#include "kube/rate_limiter.h"

namespace commgate::kube {
namespace {

namespace http = web::http;
namespace client = web::http::client;
using nlohmann::json;

// What the TLS callback does to every new connection's context; also run once at
// construction on a scratch context so that a bad CA or key fails there, not per request.
void configure_tls(boost::asio::ssl::context& ctx, const ClusterConfig& config) {
  if (!config.ca_pem.empty()) {
    // A fresh store: the system CAs cpprestsdk loaded are dropped with the old one.
    X509_STORE* store = X509_STORE_new();
    if (!store) throw std::runtime_error("out of memory for the certificate store");
    SSL_CTX_set_cert_store(ctx.native_handle(), store);
    ctx.add_certificate_authority(boost::asio::buffer(config.ca_pem));
  }
  if (!config.client_cert_pem.empty()) {
    ctx.use_certificate_chain(boost::asio::buffer(config.client_cert_pem));
    ctx.use_private_key(boost::asio::buffer(config.client_key_pem), boost::asio::ssl::context::pem);
  }
}

std::chrono::seconds retry_after_of(const http::http_response& response) {
  const auto& headers = response.headers();
  auto it = headers.find("Retry-After");
  if (it == headers.end()) return std::chrono::seconds(0);
  try {
    return std::chrono::seconds(std::stol(it->second));
  } catch (const std::exception&) {
    return std::chrono::seconds(0);  // an HTTP date: rare from kube-apiserver; use backoff
  }
}

std::string with_query(const std::string& path,
                       const std::vector<std::pair<std::string, std::string>>& query) {
  web::uri_builder b(path);
  for (const auto& [k, v] : query)
    if (!v.empty()) b.append_query(k, v);
  return b.to_string();
}

const char* patch_content_type(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

// Runs `wait` with a std::stop_token that a cancel of `token` (before or during) stops;
// `wait` returns false when stopped, and then this throws "<what>: cancelled".
template <typename Wait>
void wait_cancellably(const pplx::cancellation_token& token, const std::string& what, Wait&& wait) {
  std::stop_source stop;
  pplx::cancellation_token_registration registration;
  const bool cancelable = token.is_cancelable();
  if (cancelable) registration = token.register_callback([&stop] { stop.request_stop(); });
  if (token.is_canceled()) stop.request_stop();
  const bool done = wait(stop.get_token());
  if (cancelable) token.deregister_callback(registration);
  if (!done) throw std::runtime_error(what + ": cancelled");
}

// Takes a token from the rate limit; a cancel during the wait ends it at once.
void wait_for_token(TokenBucket& limit, const pplx::cancellation_token& token,
                    const std::string& what) {
  wait_cancellably(token, what, [&](std::stop_token stop) { return limit.take(stop).has_value(); });
}

}  // namespace

struct Cancel::State {
  pplx::cancellation_token_source source;
};

Cancel::Cancel() : state_(std::make_shared<State>()) {}
void Cancel::cancel() const {
  state_->source.cancel();
}
bool Cancel::cancelled() const {
  return state_->source.get_token().is_canceled();
}

struct ApiClient::Clients {
  std::shared_ptr<BearerToken> token;
  std::unique_ptr<client::http_client> calls;
  std::shared_ptr<client::http_client> watches;  // held by running watches too
  std::unique_ptr<TokenBucket> limit;            // every request but watches
};

struct WatchHandle::State {
  pplx::cancellation_token_source cts;
  std::function<void(WatchEvent)> on_event;
  std::function<void(std::exception_ptr)> on_end;
  std::string what_call;
  std::shared_ptr<client::http_client> client;  // alive while the watch runs

  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;

  void finish(std::exception_ptr error) {
    {
      std::lock_guard lock(mu);
      if (finished) return;
    }
    if (on_end) on_end(error);
    std::lock_guard lock(mu);
    finished = true;
    on_event = nullptr;  // drop what the callbacks captured as soon as possible
    on_end = nullptr;
    client.reset();
    cv.notify_all();
  }
};

WatchHandle& WatchHandle::operator=(WatchHandle&& other) noexcept {
  if (this != &other) {
    cancel();
    state_ = std::move(other.state_);
  }
  return *this;
}

WatchHandle::~WatchHandle() {
  cancel();
}

void WatchHandle::cancel() {
  if (!state_) return;
  state_->cts.cancel();
  std::unique_lock lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->finished; });
}

bool WatchHandle::finished() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mu);
  return state_->finished;
}

ApiClient::ApiClient(ClusterConfig config) : ApiClient(std::move(config), Options{}) {}

ApiClient::ApiClient(ClusterConfig config, Options options)
    : config_(std::move(config)), options_(options), clients_(std::make_shared<Clients>()) {
  try {
    boost::asio::ssl::context scratch(boost::asio::ssl::context::tls_client);
    configure_tls(scratch, config_);
  } catch (const std::exception& e) {
    throw std::runtime_error(config_.source +
                             ": the CA or client certificate does not load: " + e.what());
  }
  clients_->token = std::make_shared<BearerToken>(config_.token);
  clients_->limit = std::make_unique<TokenBucket>(options_.qps, options_.burst,
                                                  options_.clock ? options_.clock : steady_clock());
  auto make = [&](std::chrono::seconds timeout) {
    client::http_client_config cfg;
    cfg.set_timeout(timeout);
    const ClusterConfig tls = config_;  // the callback outlives this constructor's scope
    cfg.set_ssl_context_callback(
        [tls](boost::asio::ssl::context& ctx) { configure_tls(ctx, tls); });
    auto c = std::make_unique<client::http_client>(web::uri(config_.server), cfg);
    std::shared_ptr<BearerToken> token = clients_->token;
    c->add_handler(
        [token](http::http_request request, std::shared_ptr<http::http_pipeline_stage> next) {
          const std::string t = token->current();
          if (!t.empty()) request.headers().add("Authorization", "Bearer " + t);
          return next->propagate(request);
        });
    return c;
  };
  clients_->calls = make(options_.request_timeout);
  clients_->watches = make(std::chrono::seconds(options_.max_watch_timeout_seconds) +
                           options_.watch_timeout_margin);
}

ApiClient::~ApiClient() = default;

json ApiClient::call(const std::string& method, const std::string& target, const json* body,
                     const std::string& content_type, const Cancel& cancel) const {
  for (int retry = 0;; ++retry) {
    try {
      return call_once(method, target, body, content_type, cancel);
    } catch (const ApiError& e) {
      const bool server_said_wait = e.code() == 429 || e.code() >= 500;
      if (!server_said_wait || e.retry_after().count() <= 0 || retry >= options_.max_retries) throw;
      wait_retry_after(e.retry_after(), cancel, method + " " + target);
    }
  }
}

void ApiClient::wait_retry_after(std::chrono::seconds delay, const Cancel& cancel,
                                 const std::string& what) const {
  const Clock::time_point due = options_.clock->now() + delay;
  wait_cancellably(cancel.state_->source.get_token(), what, [&](std::stop_token stop) {
    std::mutex wait_mu;
    std::condition_variable cv;
    std::stop_callback wake(stop, [&] {
      std::lock_guard lock(wait_mu);
      cv.notify_all();
    });
    std::unique_lock lock(wait_mu);
    return !options_.clock->wait_until(lock, cv, due, [&] { return stop.stop_requested(); });
  });
}

json ApiClient::call_once(const std::string& method, const std::string& target, const json* body,
                          const std::string& content_type, const Cancel& cancel) const {
  const std::string what = method + " " + target;
  wait_for_token(*clients_->limit, cancel.state_->source.get_token(), what);
  // After the rate limit's wait, the last moment before sending.
  if (method != "GET" && options_.may_write && !options_.may_write())
    throw std::runtime_error(what +
                             ": not sent: this replica is not sure that it leads (its Lease "
                             "was not renewed within the renew deadline)");
  http::http_request request{http::method(method)};
  request.set_request_uri(target);
  request.headers().add("Accept", "application/json");
  if (body) request.set_body(body->dump(), content_type);
  http::http_response response;
  std::string text;
  try {
    // Blocking is fine here: this runs on the caller's thread, not a cpprestsdk one.
    response = clients_->calls->request(request, cancel.state_->source.get_token()).get();
    text = response.extract_string(true).get();
  } catch (const pplx::task_canceled&) {
    throw std::runtime_error(what + ": cancelled");
  } catch (const std::exception& e) {
    throw std::runtime_error(what + ": " + e.what());
  }
  if (response.status_code() >= 300)
    throw ApiError::from_response(response.status_code(), text, what, retry_after_of(response));
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) throw std::runtime_error(what + ": the answer is not JSON");
  return doc;
}

json ApiClient::get(const std::string& path, const Cancel& cancel) const {
  return call("GET", path, nullptr, "", cancel);
}

json ApiClient::create(const std::string& collection, const json& object,
                       const Cancel& cancel) const {
  return call("POST", collection, &object, "application/json", cancel);
}

json ApiClient::update(const std::string& path, const json& object, const Cancel& cancel) const {
  return call("PUT", path, &object, "application/json", cancel);
}

json ApiClient::patch(const std::string& path, PatchType type, const json& patch,
                      const PatchOptions& options, const Cancel& cancel) const {
  if (type == PatchType::kApply && options.field_manager.empty())
    throw std::invalid_argument("PATCH " + path + ": server-side apply needs a field manager");
  if (options.force && type != PatchType::kApply)
    throw std::invalid_argument("PATCH " + path + ": force is only for server-side apply");
  const std::string target = with_query(
      path, {{"fieldManager", options.field_manager}, {"force", options.force ? "true" : ""}});
  // JSON is YAML: the applied configuration is sent as JSON under the apply type.
  return call("PATCH", target, &patch, patch_content_type(type), cancel);
}

json ApiClient::remove(const std::string& path, const DeleteOptions& options,
                       const Cancel& cancel) const {
  if (options.precondition_uid.empty()) {
    const std::string target =
        with_query(path, {{"propagationPolicy", options.propagation_policy}});
    return call("DELETE", target, nullptr, "", cancel);
  }
  // Preconditions go in a DeleteOptions body (as client-go sends them), and with a body the
  // API server reads the propagation policy from it, not from the query.
  json body = {{"kind", "DeleteOptions"},
               {"apiVersion", "v1"},
               {"preconditions", {{"uid", options.precondition_uid}}}};
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  return call("DELETE", path, &body, "application/json", cancel);
}

ListPage ApiClient::list(const std::string& path, const ListOptions& options,
                         const Cancel& cancel) const {
  const std::string target =
      with_query(path, {{"labelSelector", options.label_selector},
                        {"fieldSelector", options.field_selector},
                        {"limit", options.limit > 0 ? std::to_string(options.limit) : ""},
                        {"continue", options.continue_token}});
  json doc = get(target, cancel);
  ListPage page;
  const auto& items = doc["items"];
  if (!items.is_null() && !items.is_array())
    throw std::runtime_error("GET " + target + ": items is not a list");
  if (items.is_array()) page.items.assign(items.begin(), items.end());
  // kube-apiserver leaves apiVersion and kind out of the items of built-in lists; the
  // list's own say what they are ("NamespaceList" holds Namespaces), as client-go fills in.
  const std::string list_kind = doc.value("kind", "");
  const std::string api_version = doc.value("apiVersion", "");
  if (list_kind.size() > 4 && list_kind.ends_with("List")) {
    const std::string kind = list_kind.substr(0, list_kind.size() - 4);
    for (auto& item : page.items) {
      if (!item.is_object()) continue;
      if (!item.contains("kind")) item["kind"] = kind;
      if (!item.contains("apiVersion") && !api_version.empty()) item["apiVersion"] = api_version;
    }
  }
  const auto& meta = doc["metadata"];
  if (meta.is_object()) {
    page.resource_version = meta.value("resourceVersion", "");
    page.continue_token = meta.value("continue", "");
  }
  return page;
}

namespace {

// Reads one line, hands it on, and schedules the next read from its continuation: no
// thread ever waits on the stream.
void read_events(std::shared_ptr<WatchHandle::State> st, http::http_response response) {
  auto line = std::make_shared<concurrency::streams::container_buffer<std::string>>();
  auto body = response.body();
  body.read_line(*line).then([st, response, line](pplx::task<size_t> done) {
    try {
      done.get();  // already complete here: rethrows the read's error, never waits
      std::string text = line->collection();
      while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.pop_back();
      if (!text.empty()) {
        json event = json::parse(text, nullptr, false);
        if (!event.is_object() || !event["type"].is_string())
          throw std::runtime_error(st->what_call + ": a watch event is not an event object");
        st->on_event(WatchEvent{event["type"].get<std::string>(), std::move(event["object"])});
      }
      if (st->cts.get_token().is_canceled())
        throw std::runtime_error(st->what_call + ": cancelled");
      auto stream = response.body();
      if (stream.is_eof()) return st->finish(nullptr);
      read_events(st, response);
    } catch (...) {
      st->finish(std::current_exception());
    }
  });
}

}  // namespace

WatchHandle ApiClient::watch(const std::string& path, const WatchOptions& options,
                             std::function<void(WatchEvent)> on_event,
                             std::function<void(std::exception_ptr)> on_end) const {
  if (options.timeout_seconds <= 0 || options.timeout_seconds > options_.max_watch_timeout_seconds)
    throw std::invalid_argument("watch timeoutSeconds must be from 1 to " +
                                std::to_string(options_.max_watch_timeout_seconds));
  const std::string target =
      with_query(path, {{"watch", "true"},
                        {"resourceVersion", options.resource_version},
                        {"timeoutSeconds", std::to_string(options.timeout_seconds)},
                        {"allowWatchBookmarks", options.allow_bookmarks ? "true" : ""},
                        {"labelSelector", options.label_selector},
                        {"fieldSelector", options.field_selector}});
  auto st = std::make_shared<WatchHandle::State>();
  st->on_event = std::move(on_event);
  st->on_end = std::move(on_end);
  st->what_call = "watch " + target;
  st->client = clients_->watches;

  http::http_request request(http::methods::GET);
  request.set_request_uri(target);
  request.headers().add("Accept", "application/json");
  st->client->request(request, st->cts.get_token())
      .then([st](pplx::task<http::http_response> sent) {
        try {
          http::http_response response = sent.get();  // complete: does not wait
          if (response.status_code() != 200) {
            // 401, 403, 410 ... arrive as statuses before any event.
            const int code = response.status_code();
            const auto retry_after = retry_after_of(response);
            response.extract_string(true).then([st, code, retry_after](pplx::task<std::string> b) {
              std::string body;
              try {
                body = b.get();
              } catch (const std::exception&) {
              }
              st->finish(std::make_exception_ptr(
                  ApiError::from_response(code, body, st->what_call, retry_after)));
            });
            return;
          }
          read_events(st, response);
        } catch (...) {
          st->finish(std::current_exception());
        }
      });
  return WatchHandle(st);
}

}  // namespace commgate::kube
