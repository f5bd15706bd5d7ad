#include "sim/rbac_authorizer.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <stdexcept>

#include "sim/admission_rules.h"  // label_selector_matches: metav1.LabelSelector

namespace commgate::sim {

namespace {

using nlohmann::json;

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
    return user.username == std::string(kServiceAccountPrefix) + ns + ":" + name;
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
  // The rule that allowed: its role (`ClusterRole "r"`, `Role "ns/r"`) and index.
  std::string role;
  std::size_t rule_index = 0;
  const json* rule = nullptr;
};

std::string role_name(const std::string& kind, const std::string& name, const std::string& ns) {
  return kind + " \"" + (kind == "Role" ? ns + "/" + name : name) + "\"";
}

// The role a binding references, or null (with the error kube-apiserver records).
const json* role_of(const json& binding, bool cluster_binding, const RbacObjects& rbac,
                    std::vector<std::string>* errors) {
  const std::string binding_ns = cluster_binding ? "" : meta(binding, "namespace");
  const json ref = binding.value("roleRef", json::object());
  const std::string ref_kind = str(ref, "kind"), ref_name = str(ref, "name");
  const json* role = nullptr;
  std::string error;
  if (ref_kind == "ClusterRole") {
    role = find_object(rbac.cluster_roles, ref_name, std::nullopt);
    if (!role) error = "clusterrole.rbac.authorization.k8s.io \"" + ref_name + "\" not found";
  } else if (ref_kind == "Role" && !cluster_binding) {
    role = find_object(rbac.roles, ref_name, binding_ns);
    if (!role) error = "role.rbac.authorization.k8s.io \"" + ref_name + "\" not found";
  } else {
    error = "unsupported role reference kind: \"" + ref_kind + "\"";
  }
  if (!role && errors) errors->push_back(error);
  return role;
}

const json* subject_for(const json& binding, const UserInfo& user, const std::string& binding_ns) {
  const auto it = binding.find("subjects");
  if (it == binding.end() || !it->is_array()) return nullptr;
  for (const auto& s : *it)
    if (s.is_object() && applies_to(s, user, binding_ns)) return &s;
  return nullptr;
}

// One binding: its role's rules against the request, if a subject is the user.
void visit_binding(const json& binding, bool cluster_binding, const UserInfo& user,
                   const RequestAttributes& request, const RbacObjects& rbac, Visit& visit) {
  const std::string binding_ns = cluster_binding ? "" : meta(binding, "namespace");
  const json* subject = subject_for(binding, user, binding_ns);
  if (!subject) return;
  const json* role = role_of(binding, cluster_binding, rbac, &visit.errors);
  if (!role) return;
  const json ref = binding.value("roleRef", json::object());
  const std::string ref_kind = str(ref, "kind"), ref_name = str(ref, "name");
  static const json kNoRules = json::array();
  const auto found = role->find("rules");
  const json& stored_rules = found != role->end() && found->is_array() ? *found : kNoRules;
  for (std::size_t i = 0; i < stored_rules.size(); ++i) {
    const json& rule = stored_rules[i];
    if (!rule.is_object() || !rule_allows(rule, request)) continue;
    const std::string binding_name =
        cluster_binding ? meta(binding, "name") : meta(binding, "name") + "/" + binding_ns;
    visit.allowed_by = std::string(cluster_binding ? "ClusterRoleBinding" : "RoleBinding") + " \"" +
                       binding_name + "\" of " + ref_kind + " \"" + ref_name + "\" to " +
                       describe(*subject, binding_ns);
    visit.role = role_name(ref_kind, ref_name, meta(*role, "namespace"));
    visit.rule_index = i;
    visit.rule = &rule;
    return;
  }
}

// The bindings in authorize()'s order until one allows: ClusterRoleBindings, then the
// request namespace's RoleBindings.
Visit visit_all(const UserInfo& user, const RequestAttributes& request, const RbacObjects& rbac) {
  Visit visit;
  for (const json* b : sorted_bindings(rbac.cluster_role_bindings, std::nullopt)) {
    visit_binding(*b, true, user, request, rbac, visit);
    if (visit.allowed_by) return visit;
  }
  if (!request.ns.empty()) {
    for (const json* b : sorted_bindings(rbac.role_bindings, request.ns)) {
      visit_binding(*b, false, user, request, rbac, visit);
      if (visit.allowed_by) return visit;
    }
  }
  return visit;
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

// equality.Semantic.DeepEqual on two PolicyRules: an absent list and an empty one are
// equal.
json normalized_rule(const json& rule) {
  if (!rule.is_object()) return rule;
  json out = json::object();
  for (const auto& [key, value] : rule.items())
    if (!value.is_null() && !(value.is_array() && value.empty())) out[key] = value;
  return out;
}

const json* aggregation_rule(const json& role) {
  const auto it = role.find("aggregationRule");
  return it != role.end() && it->is_object() ? &*it : nullptr;
}

// The rules an aggregating role gets from `roles` now; nullopt when a selector cannot be read.
std::optional<json> aggregated_rules(const json& role, const std::vector<json>& roles) {
  const std::string self = meta(role, "name");
  std::vector<const json*> by_name;
  for (const auto& r : roles) by_name.push_back(&r);
  std::sort(by_name.begin(), by_name.end(),
            [](const json* a, const json* b) { return meta(*a, "name") < meta(*b, "name"); });
  json rules = json::array();
  std::vector<json> taken;  // normalized, for the comparison
  json selectors = aggregation_rule(role)->value("clusterRoleSelectors", json::array());
  if (selectors.is_null()) selectors = json::array();
  if (!selectors.is_array()) return std::nullopt;
  for (const auto& selector : selectors) {
    for (const json* other : by_name) {
      if (meta(*other, "name") == self) continue;
      const auto m = other->find("metadata");
      const json labels = m != other->end() && m->is_object() && m->contains("labels")
                              ? (*m)["labels"]
                              : json::object();
      try {
        if (!label_selector_matches(selector, labels)) continue;
      } catch (const std::invalid_argument&) {
        return std::nullopt;
      }
      const json other_rules = other->value("rules", json::array());
      if (!other_rules.is_array()) continue;
      for (const auto& rule : other_rules) {
        json key = normalized_rule(rule);
        if (std::find(taken.begin(), taken.end(), key) != taken.end()) continue;
        taken.push_back(std::move(key));
        rules.push_back(rule);
      }
    }
  }
  return rules;
}

}  // namespace

std::vector<json> aggregate_cluster_roles(std::vector<json> cluster_roles) {
  // The controller re-syncs every aggregating role whenever any ClusterRole changes, so
  // chains (admin <- edit <- view) settle; one pass per role bounds a selector cycle.
  std::vector<std::size_t> aggregating;
  for (std::size_t i = 0; i < cluster_roles.size(); ++i)
    if (cluster_roles[i].is_object() && aggregation_rule(cluster_roles[i]))
      aggregating.push_back(i);
  std::sort(aggregating.begin(), aggregating.end(), [&](std::size_t a, std::size_t b) {
    return meta(cluster_roles[a], "name") < meta(cluster_roles[b], "name");
  });
  for (std::size_t pass = 0; pass <= aggregating.size(); ++pass) {
    bool changed = false;
    for (const std::size_t i : aggregating) {
      auto rules = aggregated_rules(cluster_roles[i], cluster_roles);
      if (!rules || cluster_roles[i].value("rules", json::array()) == *rules) continue;
      cluster_roles[i]["rules"] = std::move(*rules);
      changed = true;
    }
    if (!changed) break;
  }
  return cluster_roles;
}

UserInfo service_account_user(const std::string& ns, const std::string& name) {
  return with_implied_groups({std::string(kServiceAccountPrefix) + ns + ":" + name, {}});
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
  const Visit visit = visit_all(user, request, rbac);
  if (visit.allowed_by) return {true, "RBAC: allowed by " + *visit.allowed_by};
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

namespace {

using Strings = std::vector<std::string>;

json rule(Strings groups, Strings resources, Strings verbs) {
  return {{"apiGroups", std::move(groups)},
          {"resources", std::move(resources)},
          {"verbs", std::move(verbs)}};
}

json cluster_role(const std::string& name, json labels, json rules) {
  json role = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
               {"kind", "ClusterRole"},
               {"metadata",
                {{"name", name},
                 {"annotations", {{"rbac.authorization.kubernetes.io/autoupdate", "true"}}},
                 {"labels", std::move(labels)}}}};
  if (!rules.is_null()) role["rules"] = std::move(rules);
  return role;
}

json aggregating(const std::string& name, const std::string& selects, json labels) {
  json role = cluster_role(name, std::move(labels), nullptr);
  role["aggregationRule"] = {
      {"clusterRoleSelectors",
       json::array(
           {{{"matchLabels", {{"rbac.authorization.k8s.io/aggregate-to-" + selects, "true"}}}}})}};
  return role;
}

// cluster-admin, admin, edit, view and the system:aggregate-to-* roles of upstream's
// plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go (ClusterRoles()), as its
// testdata/cluster-roles.yaml renders them.
void add_user_facing_roles(std::vector<json>& roles) {
  const json defaults = {{"kubernetes.io/bootstrapping", "rbac-defaults"}};
  auto labelled = [&](const char* aggregate_to) {
    json l = defaults;
    l[std::string("rbac.authorization.k8s.io/aggregate-to-") + aggregate_to] = "true";
    return l;
  };
  const Strings read = {"get", "list", "watch"};
  const Strings write = {"create", "delete", "deletecollection", "patch", "update"};
  const Strings all = {"create", "delete", "deletecollection", "get",
                       "list",   "patch",  "update",           "watch"};
  roles.push_back(cluster_role(
      "cluster-admin", defaults,
      json::array({rule({"*"}, {"*"}, {"*"}), {{"nonResourceURLs", {"*"}}, {"verbs", {"*"}}}})));
  roles.push_back(aggregating("admin", "admin", defaults));
  roles.push_back(aggregating("edit", "edit", labelled("admin")));
  roles.push_back(aggregating("view", "view", labelled("edit")));
  roles.push_back(cluster_role(
      "system:aggregate-to-admin", labelled("admin"),
      json::array({rule({"authorization.k8s.io"}, {"localsubjectaccessreviews"}, {"create"}),
                   rule({"rbac.authorization.k8s.io"}, {"rolebindings", "roles"}, all)})));
  roles.push_back(cluster_role(
      "system:aggregate-to-edit", labelled("edit"),
      json::array(
          {rule({""},
                {"pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets",
                 "services/proxy"},
                read),
           rule({""}, {"serviceaccounts"}, {"impersonate"}),
           rule({""}, {"pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"},
                write),
           rule({""}, {"pods/eviction"}, {"create"}),
           rule({""},
                {"configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
                 "replicationcontrollers/scale", "secrets", "serviceaccounts", "services",
                 "services/proxy"},
                write),
           rule({""}, {"serviceaccounts/token"}, {"create"}),
           rule({"apps"},
                {"daemonsets", "deployments", "deployments/rollback", "deployments/scale",
                 "replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"},
                write),
           rule({"autoscaling"}, {"horizontalpodautoscalers"}, write),
           rule({"batch"}, {"cronjobs", "jobs"}, write),
           rule({"extensions"},
                {"daemonsets", "deployments", "deployments/rollback", "deployments/scale",
                 "ingresses", "networkpolicies", "replicasets", "replicasets/scale",
                 "replicationcontrollers/scale"},
                write),
           rule({"policy"}, {"poddisruptionbudgets"}, write),
           rule({"networking.k8s.io"}, {"ingresses", "networkpolicies"}, write),
           rule({"coordination.k8s.io"}, {"leases"}, all)})));
  roles.push_back(cluster_role(
      "system:aggregate-to-view", labelled("view"),
      json::array(
          {rule({""},
                {"configmaps", "endpoints", "persistentvolumeclaims",
                 "persistentvolumeclaims/status", "pods", "replicationcontrollers",
                 "replicationcontrollers/scale", "serviceaccounts", "services", "services/status"},
                read),
           rule(
               {""},
               {"bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
                "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"},
               read),
           rule({""}, {"namespaces"}, read), rule({"discovery.k8s.io"}, {"endpointslices"}, read),
           rule({"apps"},
                {"controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
                 "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
                 "replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status"},
                read),
           rule({"autoscaling"}, {"horizontalpodautoscalers", "horizontalpodautoscalers/status"},
                read),
           rule({"batch"}, {"cronjobs", "cronjobs/status", "jobs", "jobs/status"}, read),
           rule({"extensions"},
                {"daemonsets", "daemonsets/status", "deployments", "deployments/scale",
                 "deployments/status", "ingresses", "ingresses/status", "networkpolicies",
                 "replicasets", "replicasets/scale", "replicasets/status",
                 "replicationcontrollers/scale"},
                read),
           rule({"policy"}, {"poddisruptionbudgets", "poddisruptionbudgets/status"}, read),
           rule({"networking.k8s.io"}, {"ingresses", "ingresses/status", "networkpolicies"},
                read)})));
}

}  // namespace

RbacObjects bootstrap_rbac() {
  using nlohmann::json;
  auto role = [](const std::string& name, json rules) {
    return cluster_role(name, {{"kubernetes.io/bootstrapping", "rbac-defaults"}}, std::move(rules));
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
           json::array({rule({"authorization.k8s.io"},
                             {"selfsubjectaccessreviews", "selfsubjectrulesreviews"}, {"create"}),
                        rule({"authentication.k8s.io"}, {"selfsubjectreviews"}, {"create"})})));
  for (const char* name : {"system:discovery", "system:public-info-viewer", "system:basic-user"})
    rbac.cluster_role_bindings.push_back(binding(name));
  add_user_facing_roles(rbac.cluster_roles);
  return rbac;
}

namespace {

// The (apiGroup, resource, verb) of `rule` that `r` matched: the request's own values
// where the rule lists them, else the wildcard that matched.
Grant matched_grant(const std::string& role, std::size_t index, const json& rule,
                    const RequestAttributes& r) {
  Grant g{role, index, "", "", "", strings_of(rule, "resourceNames")};
  g.verb = has(strings_of(rule, "verbs"), r.verb) ? r.verb : "*";
  if (!r.resource_request) {  // a nonResourceURLs rule: the URL pattern that matched
    for (const auto& url : strings_of(rule, "nonResourceURLs"))
      if (non_resource_url_matches({url}, r.path)) {
        g.resource = url;
        break;
      }
    return g;
  }
  const auto groups = strings_of(rule, "apiGroups");
  g.api_group = has(groups, r.api_group) ? r.api_group : "*";
  const std::string combined =
      r.subresource.empty() ? r.resource : r.resource + "/" + r.subresource;
  const auto resources = strings_of(rule, "resources");
  g.resource = has(resources, combined) ? combined
               : !r.subresource.empty() && has(resources, "*/" + r.subresource)
                   ? "*/" + r.subresource
                   : "*";
  return g;
}

std::string method_of(const std::string& verb) {
  if (verb == "get" || verb == "list" || verb == "watch") return "GET";
  if (verb == "create") return "POST";
  if (verb == "update") return "PUT";
  if (verb == "patch") return "PATCH";
  if (verb == "delete" || verb == "deletecollection") return "DELETE";
  std::string upper = verb;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return upper;
}

}  // namespace

std::string to_string(const Grant& g) {
  std::string out = g.role + " rule " + std::to_string(g.rule) + ": " + g.verb + " \"" +
                    g.resource + "\" in API group \"" + g.api_group + "\"";
  if (!g.resource_names.empty()) {
    out += " named [";
    for (size_t i = 0; i < g.resource_names.size(); ++i)
      out += (i ? ", " : "") + g.resource_names[i];
    out += "]";
  }
  return out;
}

std::optional<Grant> grant_used(const UserInfo& user, const RequestAttributes& request,
                                const RbacObjects& rbac) {
  const Visit visit = visit_all(user, request, rbac);
  if (!visit.allowed_by || !visit.rule) return std::nullopt;
  return matched_grant(visit.role, visit.rule_index, *visit.rule, request);
}

std::vector<Grant> grants_of(const UserInfo& user, const RbacObjects& rbac) {
  std::set<Grant> out;
  std::set<const json*> seen;
  auto add_role = [&](const json& binding, bool cluster_binding) {
    const std::string binding_ns = cluster_binding ? "" : meta(binding, "namespace");
    if (!subject_for(binding, user, binding_ns)) return;
    const json* role = role_of(binding, cluster_binding, rbac, nullptr);
    if (!role || !seen.insert(role).second) return;
    const std::string name = role_name(str(binding.value("roleRef", json::object()), "kind"),
                                       meta(*role, "name"), meta(*role, "namespace"));
    const json rules = role->value("rules", json::array());
    for (std::size_t i = 0; i < rules.size(); ++i) {
      if (!rules[i].is_object()) continue;
      for (const auto& url : strings_of(rules[i], "nonResourceURLs"))
        for (const auto& verb : strings_of(rules[i], "verbs"))
          out.insert({name, i, "", url, verb, {}});
      for (const auto& group : strings_of(rules[i], "apiGroups"))
        for (const auto& resource : strings_of(rules[i], "resources"))
          for (const auto& verb : strings_of(rules[i], "verbs"))
            out.insert({name, i, group, resource, verb, strings_of(rules[i], "resourceNames")});
    }
  };
  for (const auto& b : rbac.cluster_role_bindings) add_role(b, true);
  for (const auto& b : rbac.role_bindings) add_role(b, false);
  return {out.begin(), out.end()};
}

RequestAttributes request_attributes(const AuditEvent& event) {
  server::Request request;
  request.method = method_of(event.verb);
  request.target = event.request_uri;
  const size_t q = request.target.find('?');
  request.path = request.target.substr(0, q);
  request.query = q == std::string::npos ? "" : request.target.substr(q + 1);
  return request_attributes(request.method, request.path, event.verb == "watch",
                            request.query_param("fieldSelector"));
}

std::map<std::string, RbacUsage> rbac_usage(const RbacObjects& rbac,
                                            const std::vector<AuditEvent>& events,
                                            const std::vector<AuthorizationCheck>& checks) {
  std::map<std::string, UserInfo> accounts;
  auto add_subjects = [&](const json& binding, const std::string& binding_ns) {
    for (const auto& s : binding.value("subjects", json::array())) {
      if (!s.is_object() || str(s, "kind") != "ServiceAccount") continue;
      const std::string ns = str(s, "namespace").empty() ? binding_ns : str(s, "namespace");
      if (ns.empty()) continue;
      const UserInfo user = service_account_user(ns, str(s, "name"));
      accounts.emplace(user.username, user);
    }
  };
  for (const auto& b : rbac.cluster_role_bindings) add_subjects(b, "");
  for (const auto& b : rbac.role_bindings) add_subjects(b, meta(b, "namespace"));

  std::map<std::string, RbacUsage> out;
  for (const auto& [name, user] : accounts) {
    RbacUsage& usage = out[name];
    std::set<Grant> used;
    for (const AuditEvent& e : events) {
      // Authorization used the impersonated user when there was one (kubectl --as).
      if ((e.impersonated_user ? e.impersonated_user->username : e.username) != name) continue;
      RequestUse use{e, grant_used(user, request_attributes(e), rbac)};
      if (use.grant) used.insert(*use.grant);
      usage.requests.push_back(std::move(use));
    }
    for (const AuthorizationCheck& c : checks) {
      if (c.username != name) continue;
      CheckUse use{c, grant_used(user, c.request, rbac)};
      if (use.grant) used.insert(*use.grant);
      usage.checks.push_back(std::move(use));
    }
    for (const Grant& g : grants_of(user, rbac))
      if (!used.count(g)) usage.unused.push_back(g);
  }
  return out;
}

}  // namespace commgate::sim
