#include "sim/admission.h"

#include <random>

#include "core/base64.h"
#include "sim/api_status.h"
#include "sim/uuid.h"
#include "sim/webhook_caller.h"

namespace commgate::sim {
namespace {

using nlohmann::json;

// ErrCallingWebhook: the webhook could not be asked or gave no usable answer. What it
// means for the request is the webhook's failurePolicy's call.
class CallingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string random_uid() {
  static thread_local std::mt19937_64 gen{std::random_device{}()};
  const uint64_t hi = gen();
  return format_uuid_v4(hi, gen());
}

std::string string_field(const json& obj, const char* key, const std::string& fallback = "") {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string()) return fallback;
  return obj[key].get<std::string>();
}

int int_field(const json& obj, const char* key, int fallback) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number_integer()) return fallback;
  return obj[key].get<int>();
}

bool is_ip_address(const std::string& host) {
  if (host.empty()) return false;
  for (char c : host)
    if (!((c >= '0' && c <= '9') || c == '.' || c == ':')) return false;
  return true;
}

// apierrors.NewInternalError: what a failed call under failurePolicy Fail becomes.
ApiError internal_error(const std::string& message) {
  json s = failure_status(500, "InternalError", "Internal error occurred: " + message);
  s["details"] = {{"causes", json::array({{{"message", message}}})}};
  return ApiError(s);
}

// webhookerrors.ToStatusErr (k8s.io/apiserver 1.32): the webhook's own Status, its code
// raised to 400 at least, its message prefixed with who refused.
ApiError denial(const std::string& hook, const json& result) {
  const json r = result.is_object() ? result : json::object();
  int code = int_field(r, "code", 0);
  if (code < 400) code = 400;
  const std::string message = string_field(r, "message");
  const std::string reason = string_field(r, "reason");
  const std::string denied = "admission webhook \"" + hook + "\" denied the request";
  std::string text = denied + " without explanation";
  if (!message.empty()) {
    text = denied + ": " + message;
  } else if (!reason.empty()) {
    text = denied + ": " + reason;
  }
  json s = failure_status(code, reason, text);
  if (r.contains("details") && r["details"].is_object()) s["details"] = r["details"];
  return ApiError(s);
}

json review_for(const AdmissionAttributes& a, const std::string& uid) {
  const json gvr = {{"group", a.resource.group},
                    {"version", a.resource.version},
                    {"resource", a.resource.plural}};
  json request = {{"uid", uid}, {"kind", a.kind}, {"resource", gvr}};
  if (!a.subresource.empty()) request["subResource"] = a.subresource;
  // The sim serves each resource in the version asked for: the request's kind and
  // resource are the ones the webhook sees (no matchPolicy conversion).
  request["requestKind"] = a.kind;
  request["requestResource"] = gvr;
  if (!a.subresource.empty()) request["requestSubResource"] = a.subresource;
  if (!a.name.empty()) request["name"] = a.name;
  if (!a.ns.empty()) request["namespace"] = a.ns;
  request["operation"] = a.operation;
  request["userInfo"] = to_json(a.user);
  request["object"] = a.object;
  request["oldObject"] = a.old_object;
  request["dryRun"] = a.dry_run;
  request["options"] = a.options;
  return {{"kind", "AdmissionReview"}, {"apiVersion", "admission.k8s.io/v1"}, {"request", request}};
}

struct Parsed {
  json response;
  std::string patch;  // decoded JSONPatch, "" when none
};

// request.VerifyAdmissionResponse for v1.
Parsed verify_response(const WebhookReply& reply, const std::string& uid, bool mutating) {
  if (reply.status != 200) {
    std::string body = reply.body.substr(0, 256);
    throw CallingError("failed to call webhook: an error on the server (\"" + body +
                       "\") has prevented the request from succeeding");
  }
  json doc;
  try {
    doc = json::parse(reply.body);
  } catch (const json::exception& e) {
    throw CallingError(std::string("failed to call webhook: ") + e.what());
  }
  const std::string invalid = "received invalid webhook response: ";
  const std::string api_version = string_field(doc, "apiVersion"), kind = string_field(doc, "kind");
  if (api_version != "admission.k8s.io/v1" || kind != "AdmissionReview")
    throw CallingError(invalid +
                       "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, "
                       "got " +
                       api_version + ", Kind=" + kind);
  if (!doc.contains("response") || !doc["response"].is_object())
    throw CallingError(invalid + "webhook response was absent");
  Parsed p{doc["response"], ""};
  const std::string got_uid = string_field(p.response, "uid");
  if (got_uid != uid)
    throw CallingError(invalid + "expected response.uid=\"" + uid + "\", got \"" + got_uid + "\"");
  const bool has_patch =
      p.response.contains("patch") && !p.response["patch"].is_null() && p.response["patch"] != "";
  const bool has_type = p.response.contains("patchType") && !p.response["patchType"].is_null();
  if (!mutating) {
    if (has_patch) throw CallingError(invalid + "validating webhook may not return response.patch");
    if (has_type)
      throw CallingError(invalid + "validating webhook may not return response.patchType");
    return p;
  }
  if (has_patch && !has_type)
    throw CallingError(invalid + "webhook returned response.patch but not response.patchType");
  if (!has_patch && has_type)
    throw CallingError(invalid + "webhook returned response.patchType but not response.patch");
  if (has_patch) {
    const std::string type = string_field(p.response, "patchType");
    if (type != "JSONPatch") throw CallingError("unsupported patch type \"" + type + "\"");
    try {
      p.patch = base64_decode(p.response["patch"].get<std::string>());
    } catch (const std::exception& e) {
      throw CallingError(invalid + e.what());
    }
  }
  return p;
}

}  // namespace

std::string warning_header_value(const std::string& text) {
  std::string quoted;
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    // A header value holds no control characters: they become spaces.
    quoted += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? ' ' : c;
  }
  return "299 - \"" + quoted + "\"";
}

Admission::Admission(const ObjectStore& store, const ServiceDirectory& services,
                     AdmissionPlugins plugins, Authorizer authorize)
    : store_(store),
      services_(services),
      plugins_(plugins),
      authorize_(authorize ? std::move(authorize) : [](const UserInfo&, const RequestAttributes&) {
        return Authorization{true, ""};
      }) {}

std::vector<json> Admission::webhooks(const std::string& plural) const {
  std::vector<json> out;
  const auto r = store_.find_resource("admissionregistration.k8s.io", "v1", plural);
  if (!r) return out;
  // The store lists in name order: the order kube-apiserver calls configurations in.
  for (const auto& config : store_.list(*r, "", {}).items) {
    if (!config.contains("webhooks") || !config["webhooks"].is_array()) continue;
    for (const auto& hook : config["webhooks"])
      if (hook.is_object()) out.push_back(hook);
  }
  return out;
}

bool Admission::matches(const json& hook, const AdmissionAttributes& a) const {
  if (!rules_match(hook.value("rules", json::array()), a)) return false;
  const bool is_namespace = a.resource.group.empty() && a.resource.plural == "namespaces";
  const json ns_selector = hook.value("namespaceSelector", json::object());
  const bool selects = ns_selector.is_object() && !ns_selector.empty() &&
                       (!ns_selector.value("matchLabels", json::object()).empty() ||
                        !ns_selector.value("matchExpressions", json::array()).empty());
  // Requests for cluster-scoped objects other than namespaces are never exempted by a
  // namespaceSelector (upstream's namespace.Matcher).
  if (selects && (!a.ns.empty() || is_namespace)) {
    json labels;
    if (is_namespace && a.subresource.empty() &&
        (a.operation == "CREATE" || a.operation == "UPDATE")) {
      const json& meta = a.object.is_object() && a.object.contains("metadata")
                             ? a.object["metadata"]
                             : json::object();
      labels = meta.is_object() ? meta.value("labels", json::object()) : json::object();
    } else {
      const auto namespaces = store_.find_resource("", "v1", "namespaces");
      // A missing namespace is a 404, as upstream answers it.
      labels = store_.get(*namespaces, "", a.ns)["metadata"].value("labels", json::object());
    }
    try {
      if (!label_selector_matches(ns_selector, labels)) return false;
    } catch (const std::invalid_argument& e) {
      throw internal_error(e.what());
    }
  }
  try {
    return object_selector_matches(hook.value("objectSelector", json::object()), a);
  } catch (const std::invalid_argument& e) {
    throw internal_error(e.what());
  }
}

json Admission::call(const json& hook, const AdmissionAttributes& a, bool mutating,
                     std::vector<std::string>& warnings) const {
  const std::string name = string_field(hook, "name");
  try {
    if (a.dry_run) {
      if (!hook.contains("sideEffects")) throw CallingError("Webhook SideEffects is nil");
      const std::string effects = string_field(hook, "sideEffects");
      if (effects != "None" && effects != "NoneOnDryRun")
        throw bad_request("admission webhook \"" + name + "\" does not support dry run");
    }
    bool v1 = false;
    for (const auto& v : hook.value("admissionReviewVersions", json::array())) v1 |= v == "v1";
    if (!v1) throw CallingError("webhook does not accept known AdmissionReview versions");

    const int timeout = int_field(hook, "timeoutSeconds", 10);
    const std::string query = "timeout=" + std::to_string(timeout) + "s";
    const json client = hook.value("clientConfig", json::object());
    WebhookEndpoint endpoint;
    try {
      endpoint.ca_pem = base64_decode(string_field(client, "caBundle"));
    } catch (const std::invalid_argument& e) {
      throw CallingError(std::string("failed to decode caBundle: ") + e.what());
    }
    std::optional<ServiceAddress> address;
    if (client.contains("service") && client["service"].is_object()) {
      const json& svc = client["service"];
      const std::string svc_name = string_field(svc, "name"), ns = string_field(svc, "namespace");
      const std::string path = string_field(svc, "path", "/");
      const int port = int_field(svc, "port", 443);
      endpoint.server_name = svc_name + "." + ns + ".svc";
      endpoint.target = path + (path.find('?') == std::string::npos ? "?" : "&") + query;
      endpoint.url =
          "https://" + endpoint.server_name + ":" + std::to_string(port) + endpoint.target;
      address = services_.find(svc_name, ns, static_cast<uint16_t>(port));
    } else {
      // clientConfig.url: https://HOST[:PORT]/PATH. An IP is dialled as it is; a
      // <name>.<namespace>.svc host is looked up among the registered services.
      const std::string url = string_field(client, "url");
      const std::string scheme = "https://";
      if (url.rfind(scheme, 0) != 0)
        throw CallingError("webhook clientConfig.url must start with https://, got \"" + url +
                           "\"");
      const std::string rest = url.substr(scheme.size());
      const std::string host_port = rest.substr(0, rest.find('/'));
      std::string path = rest.size() > host_port.size() ? rest.substr(host_port.size()) : "/";
      const auto colon = host_port.rfind(':');
      const bool has_port = colon != std::string::npos && host_port.find(']') == std::string::npos;
      endpoint.server_name = has_port ? host_port.substr(0, colon) : host_port;
      uint16_t port = 443;
      if (has_port) {
        const std::string text = host_port.substr(colon + 1);
        if (text.empty() || text.size() > 5 ||
            text.find_first_not_of("0123456789") != std::string::npos || std::stoul(text) > 65535)
          throw CallingError("invalid port in webhook clientConfig.url \"" + url + "\"");
        port = static_cast<uint16_t>(std::stoul(text));
      }
      endpoint.target = path + (path.find('?') == std::string::npos ? "?" : "&") + query;
      endpoint.url = scheme + host_port + endpoint.target;
      if (is_ip_address(endpoint.server_name)) {
        address = ServiceAddress{endpoint.server_name, port};
      } else {
        const auto dot1 = endpoint.server_name.find('.');
        const auto dot2 = endpoint.server_name.find('.', dot1 + 1);
        if (dot1 != std::string::npos && dot2 != std::string::npos &&
            endpoint.server_name.substr(dot2) == ".svc")
          address = services_.find(endpoint.server_name.substr(0, dot1),
                                   endpoint.server_name.substr(dot1 + 1, dot2 - dot1 - 1), port);
      }
    }
    if (!address)
      throw CallingError("failed to call webhook: Post \"" + endpoint.url +
                         "\": dial tcp: lookup " + endpoint.server_name +
                         ": no such host (commgate-sim: not registered with --service)");
    endpoint.connect_host = address->host;
    endpoint.connect_port = address->port;

    const std::string uid = random_uid();
    WebhookReply reply;
    try {
      reply = post_webhook(endpoint, review_for(a, uid).dump(), std::chrono::seconds(timeout));
    } catch (const WebhookCallError& e) {
      throw CallingError(std::string("failed to call webhook: ") + e.what());
    }
    const Parsed parsed = verify_response(reply, uid, mutating);
    for (const auto& w : parsed.response.value("warnings", json::array()))
      if (w.is_string()) warnings.push_back(w.get<std::string>());
    if (!parsed.response.value("allowed", false))
      throw denial(name, parsed.response.value("status", json(nullptr)));
    if (parsed.patch.empty() || a.object.is_null()) return a.object;
    // A patch that does not decode or apply is the webhook's fault but not a failed
    // call: 500 whatever the failurePolicy, as upstream.
    try {
      return a.object.patch(json::parse(parsed.patch));
    } catch (const json::exception& e) {
      throw internal_error(e.what());
    }
  } catch (const CallingError& e) {
    if (string_field(hook, "failurePolicy", "Fail") == "Ignore") return a.object;
    throw internal_error("failed calling webhook \"" + name + "\": " + e.what());
  }
}

json Admission::mutate(const AdmissionAttributes& in, std::vector<std::string>& warnings) const {
  if (exempt_from_webhooks(in)) return in.object;
  AdmissionAttributes a = in;
  for (const json& hook : webhooks("mutatingwebhookconfigurations"))
    if (matches(hook, a)) a.object = call(hook, a, true, warnings);
  return a.object;
}

std::vector<AuthorizationCheck> Admission::authorization_checks() const {
  std::lock_guard lock(checks_mu_);
  return {checks_.begin(), checks_.end()};
}

void Admission::validate(const AdmissionAttributes& a, std::vector<std::string>& warnings) const {
  if (plugins_.owner_references_permission_enforcement) {
    const auto resources_of_kind = [this](const std::string& group, const std::string& version,
                                          const std::string& kind) {
      std::vector<ResourceInfo> out;
      for (auto& r : store_.registry().in_group_version(group, version))
        if (r.kind == kind) out.push_back(std::move(r));
      return out;
    };
    const auto recorded = [this](const UserInfo& user, const RequestAttributes& request) {
      const Authorization decision = authorize_(user, request);
      std::lock_guard lock(checks_mu_);
      checks_.push_back(
          {user.username, request, decision.allowed, "OwnerReferencesPermissionEnforcement"});
      while (checks_.size() > 50'000) checks_.pop_front();
      return decision;
    };
    if (auto denied = owner_references_denial(a, recorded, resources_of_kind))
      throw ApiError(*denied);
  }
  if (exempt_from_webhooks(a)) return;
  std::optional<ApiError> first;
  for (const json& hook : webhooks("validatingwebhookconfigurations")) {
    try {
      if (matches(hook, a)) call(hook, a, false, warnings);
    } catch (const ApiError& e) {
      if (!first) first = e;
    }
  }
  if (first) throw *first;
}

}  // namespace commgate::sim
