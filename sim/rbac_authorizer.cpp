#include "sim/rbac_authorizer.h"

#include <algorithm>
#include <functional>
#include <optional>

namespace commgate::sim {

namespace {

using nlohmann::json;

constexpr char kServiceAccountPrefix[] = "system:serviceaccount:";

std::vector<std::string> strings_of(const json& rule, const char* field) {
  std::vector<std::string> out;
  const auto it = rule.find(field);
  if (it == rule.end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

bool has(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool contains_or_all(const std::vector<std::string>& list, const std::string& value) {
  return has(list, "*") || has(list, value);
}

bool resource_matches(const std::vector<std::string>& resources, const RequestAttributes& r) {
  const std::string combined =
      r.subresource.empty() ? r.resource : r.resource + "/" + r.subresource;
  for (const auto& res : resources) {
    if (res == "*" || res == combined) return true;
    if (!r.subresource.empty() && res == "*/" + r.subresource) return true;
  }
  return false;
}

bool non_resource_url_matches(const std::vector<std::string>& urls, const std::string& path) {
  for (const auto& url : urls) {
    if (url == "*" || url == path) return true;
    if (!url.empty() && url.back() == '*' &&
        path.rfind(url.substr(0, url.find_last_not_of('*') + 1), 0) == 0)
      return true;
  }
  return false;
}

bool rule_allows(const json& rule, const RequestAttributes& r) {
  if (!contains_or_all(strings_of(rule, "verbs"), r.verb)) return false;
  if (!r.resource_request)
    return non_resource_url_matches(strings_of(rule, "nonResourceURLs"), r.path);
  if (!contains_or_all(strings_of(rule, "apiGroups"), r.api_group)) return false;
  if (!resource_matches(strings_of(rule, "resources"), r)) return false;
  const auto names = strings_of(rule, "resourceNames");
  return names.empty() || has(names, r.name);
}

std::string str(const json& object, const char* field) {
  const auto it = object.find(field);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string meta(const json& object, const char* field) {
  const auto it = object.find("metadata");
  return it != object.end() && it->is_object() ? str(*it, field) : "";
}

// rbac's appliesToUser: `binding_ns` is "" for a ClusterRoleBinding.
bool applies_to(const json& subject, const UserInfo& user, const std::string& binding_ns) {
  const std::string kind = str(subject, "kind");
  const std::string name = str(subject, "name");
  if (kind == "User") return user.username == name;
  if (kind == "Group") return has(user.groups, name);
  if (kind == "ServiceAccount") {
    std::string ns = str(subject, "namespace");
    if (ns.empty()) ns = binding_ns;
    if (ns.empty()) return false;
    return user.username == kServiceAccountPrefix + ns + ":" + name;
  }
  return false;
}

// rbac's describeSubject.
std::string describe(const json& subject, const std::string& binding_ns) {
  const std::string kind = str(subject, "kind");
  std::string name = str(subject, "name");
  if (kind == "ServiceAccount") {
    const std::string ns = str(subject, "namespace");
    name += "/" + (ns.empty() ? binding_ns : ns);
  }
  return kind + " \"" + name + "\"";
}

const json* find_object(const std::vector<json>& objects, const std::string& name,
                        const std::optional<std::string>& ns) {
  for (const auto& o : objects)
    if (meta(o, "name") == name && (!ns || meta(o, "namespace") == *ns)) return &o;
  return nullptr;
}

// Bindings sorted by name, as a deterministic stand-in for the informer's order.
std::vector<const json*> sorted_bindings(const std::vector<json>& bindings,
                                         const std::optional<std::string>& ns) {
  std::vector<const json*> out;
  for (const auto& b : bindings)
    if (!ns || meta(b, "namespace") == *ns) out.push_back(&b);
  std::sort(out.begin(), out.end(),
            [](const json* a, const json* b) { return meta(*a, "name") < meta(*b, "name"); });
  return out;
}

struct Visit {
  std::optional<std::string> allowed_by;
  std::vector<std::string> errors;
};

// One binding: its role's rules against the request, if a subject is the user.
void visit_binding(const json& binding, bool cluster_binding, const UserInfo& user,
                   const RequestAttributes& request, const RbacObjects& rbac, Visit& visit) {
  const std::string binding_ns = cluster_binding ? "" : meta(binding, "namespace");
  const json subjects = binding.value("subjects", json::array());
  const json* subject = nullptr;
  for (const auto& s : subjects)
    if (s.is_object() && applies_to(s, user, binding_ns)) {
      subject = &s;
      break;
    }
  if (!subject) return;
  const json ref = binding.value("roleRef", json::object());
  const std::string ref_kind = str(ref, "kind"), ref_name = str(ref, "name");
  const json* role = nullptr;
  if (ref_kind == "ClusterRole") {
    role = find_object(rbac.cluster_roles, ref_name, std::nullopt);
    if (!role)
      visit.errors.push_back("clusterrole.rbac.authorization.k8s.io \"" + ref_name +
                             "\" not found");
  } else if (ref_kind == "Role" && !cluster_binding) {
    role = find_object(rbac.roles, ref_name, binding_ns);
    if (!role)
      visit.errors.push_back("role.rbac.authorization.k8s.io \"" + ref_name + "\" not found");
  } else {
    visit.errors.push_back("unsupported role reference kind: \"" + ref_kind + "\"");
  }
  if (!role) return;
  for (const auto& rule : role->value("rules", json::array())) {
    if (!rule.is_object() || !rule_allows(rule, request)) continue;
    const std::string binding_name =
        cluster_binding ? meta(binding, "name") : meta(binding, "name") + "/" + binding_ns;
    visit.allowed_by = std::string(cluster_binding ? "ClusterRoleBinding" : "RoleBinding") + " \"" +
                       binding_name + "\" of " + ref_kind + " \"" + ref_name + "\" to " +
                       describe(*subject, binding_ns);
    return;
  }
}

std::string join_errors(const std::vector<std::string>& errors) {
  // utilerrors.NewAggregate: one error as itself, several as "[a, b]".
  if (errors.size() == 1) return errors[0];
  std::string out = "[";
  for (size_t i = 0; i < errors.size(); ++i) out += (i ? ", " : "") + errors[i];
  return out + "]";
}

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at < path.size()) {
    while (at < path.size() && path[at] == '/') ++at;
    const size_t end = path.find('/', at);
    const size_t stop = end == std::string_view::npos ? path.size() : end;
    if (stop > at) parts.emplace_back(path.substr(at, stop - at));
    at = stop;
  }
  return parts;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// fields.Selector.RequiresExactMatch("metadata.name") on e.g. "metadata.name=x,a!=b".
std::string exact_name(std::string_view selector) {
  size_t at = 0;
  while (at <= selector.size()) {
    size_t end = selector.find(',', at);
    if (end == std::string_view::npos) end = selector.size();
    const std::string_view term = selector.substr(at, end - at);
    at = end + 1;
    if (term.find("!=") != std::string_view::npos) continue;
    const size_t eq = term.find('=');
    if (eq == std::string_view::npos || term.substr(0, eq) != "metadata.name") continue;
    std::string_view value = term.substr(eq + 1);
    if (!value.empty() && value[0] == '=') value.remove_prefix(1);
    return std::string(value);
  }
  return "";
}

}  // namespace

UserInfo service_account_user(const std::string& ns, const std::string& name) {
  return with_implied_groups({kServiceAccountPrefix + ns + ":" + name, {}});
}

RbacObjects RbacObjects::from(const std::vector<json>& objects) {
  RbacObjects out;
  for (const auto& o : objects) {
    if (!o.is_object() || str(o, "apiVersion") != "rbac.authorization.k8s.io/v1") continue;
    const std::string kind = str(o, "kind");
    if (kind == "Role") out.roles.push_back(o);
    if (kind == "ClusterRole") out.cluster_roles.push_back(o);
    if (kind == "RoleBinding") out.role_bindings.push_back(o);
    if (kind == "ClusterRoleBinding") out.cluster_role_bindings.push_back(o);
  }
  return out;
}

Authorization authorize(const UserInfo& user, const RequestAttributes& request,
                        const RbacObjects& rbac) {
  if (has(user.groups, "system:masters"))
    return {true, "the group system:masters is always allowed"};
  Visit visit;
  for (const json* b : sorted_bindings(rbac.cluster_role_bindings, std::nullopt)) {
    visit_binding(*b, true, user, request, rbac, visit);
    if (visit.allowed_by) return {true, "RBAC: allowed by " + *visit.allowed_by};
  }
  if (!request.ns.empty()) {
    for (const json* b : sorted_bindings(rbac.role_bindings, request.ns)) {
      visit_binding(*b, false, user, request, rbac, visit);
      if (visit.allowed_by) return {true, "RBAC: allowed by " + *visit.allowed_by};
    }
  }
  return {false, visit.errors.empty() ? "" : "RBAC: " + join_errors(visit.errors)};
}

RequestAttributes request_attributes(std::string_view method, std::string_view path, bool watch,
                                     std::string_view field_selector) {
  RequestAttributes r;
  r.path = std::string(path);
  r.resource_request = false;
  r.verb = lower(method);
  std::vector<std::string> parts = split_path(path);
  if (parts.size() < 3 || (parts[0] != "api" && parts[0] != "apis")) return r;
  const bool grouped = parts[0] == "apis";
  parts.erase(parts.begin());
  if (grouped) {
    if (parts.size() < 3) return r;
    r.api_group = parts[0];
    parts.erase(parts.begin());
  }
  r.resource_request = true;
  r.api_version = parts[0];
  parts.erase(parts.begin());
  if ((parts[0] == "watch" || parts[0] == "proxy") && parts.size() >= 2) {
    r.verb = parts[0];
    parts.erase(parts.begin());
  } else if (method == "POST") {
    r.verb = "create";
  } else if (method == "GET" || method == "HEAD") {
    r.verb = "get";
  } else if (method == "PUT") {
    r.verb = "update";
  } else if (method == "PATCH") {
    r.verb = "patch";
  } else if (method == "DELETE") {
    r.verb = "delete";
  } else {
    r.verb = "";
  }
  if (parts[0] == "namespaces" && parts.size() > 1) {
    r.ns = parts[1];
    // namespaces/<ns>/<resource>/...; namespaces/<ns>/status and /finalize are the
    // namespace's own subresources.
    if (parts.size() > 2 && parts[2] != "status" && parts[2] != "finalize")
      parts.erase(parts.begin(), parts.begin() + 2);
  }
  if (parts.size() >= 3 && r.verb != "proxy") r.subresource = parts[2];
  if (parts.size() >= 2) r.name = parts[1];
  r.resource = parts[0];
  if (r.name.empty() && r.verb == "get") {
    r.verb = watch ? "watch" : "list";
    r.name = exact_name(field_selector);
  }
  if (r.name.empty() && r.verb == "delete") r.verb = "deletecollection";
  return r;
}

json forbidden_status(const UserInfo& user, const RequestAttributes& request,
                      const std::string& reason) {
  std::string message = "User \"" + user.username + "\" cannot " + request.verb;
  if (!request.resource_request) {
    message += " path \"" + request.path + "\"";
  } else {
    const std::string resource = request.subresource.empty()
                                     ? request.resource
                                     : request.resource + "/" + request.subresource;
    message += " resource \"" + resource + "\" in API group \"" + request.api_group + "\"";
    message +=
        request.ns.empty() ? " at the cluster scope" : " in the namespace \"" + request.ns + "\"";
  }
  if (!reason.empty()) message += ": " + reason;
  json details = json::object();
  if (!request.resource_request) {
    message = "forbidden: " + message;
  } else {
    const std::string qualified =
        request.api_group.empty() ? request.resource : request.resource + "." + request.api_group;
    message = (request.name.empty() ? qualified : qualified + " \"" + request.name + "\"") +
              " is forbidden: " + message;
    if (!request.name.empty()) details["name"] = request.name;
    if (!request.api_group.empty()) details["group"] = request.api_group;
    details["kind"] = request.resource;
  }
  return {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
          {"status", "Failure"}, {"message", message}, {"reason", "Forbidden"},
          {"details", details},  {"code", 403}};
}

RbacObjects bootstrap_rbac() {
  using nlohmann::json;
  auto role = [](const std::string& name, json rules) {
    return json{{"apiVersion", "rbac.authorization.k8s.io/v1"},
                {"kind", "ClusterRole"},
                {"metadata", {{"name", name}}},
                {"rules", std::move(rules)}};
  };
  auto binding = [](const std::string& name) {
    return json{
        {"apiVersion", "rbac.authorization.k8s.io/v1"},
        {"kind", "ClusterRoleBinding"},
        {"metadata", {{"name", name}}},
        {"roleRef",
         {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", name}}},
        {"subjects", json::array({{{"apiGroup", "rbac.authorization.k8s.io"},
                                   {"kind", "Group"},
                                   {"name", "system:authenticated"}}})}};
  };
  RbacObjects rbac;
  rbac.cluster_roles.push_back(
      role("system:discovery",
           json::array({{{"verbs", {"get"}},
                         {"nonResourceURLs",
                          {"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                           "/openapi/*", "/readyz", "/version", "/version/"}}}})));
  rbac.cluster_roles.push_back(role(
      "system:public-info-viewer",
      json::array(
          {{{"verbs", {"get"}},
            {"nonResourceURLs", {"/healthz", "/livez", "/readyz", "/version", "/version/"}}}})));
  rbac.cluster_roles.push_back(
      role("system:basic-user",
           json::array({{{"verbs", {"create"}},
                         {"apiGroups", {"authorization.k8s.io"}},
                         {"resources", {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}}},
                        {{"verbs", {"create"}},
                         {"apiGroups", {"authentication.k8s.io"}},
                         {"resources", {"selfsubjectreviews"}}}})));
  for (const char* name : {"system:discovery", "system:public-info-viewer", "system:basic-user"})
    rbac.cluster_role_bindings.push_back(binding(name));
  return rbac;
}

}  // namespace commgate::sim
