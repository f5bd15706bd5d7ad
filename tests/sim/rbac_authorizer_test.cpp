// sim/rbac_authorizer: Kubernetes RBAC semantics, table-driven. Each case is one request
// by one user against one set of RBAC objects, with the decision and reason
// kube-apiserver's RBAC authorizer gives.
#include "sim/rbac_authorizer.h"

#include <gtest/gtest.h>

#include <ostream>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

// ---- builders ----

// Lists as std::vector, not json: `{"batch"}` as a json parameter is an array under GCC
// and the string itself under clang (nlohmann's brace initialization), and the sanitizer
// build is clang's.
using Strings = std::vector<std::string>;
using Objects = std::vector<json>;

json rule(const Strings& groups, const Strings& resources, const Strings& verbs,
          const Strings& names = {}) {
  json r = {{"apiGroups", groups}, {"resources", resources}, {"verbs", verbs}};
  if (!names.empty()) r["resourceNames"] = names;
  return r;
}

json cluster_role(const std::string& name, const Objects& rules) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRole"},
          {"metadata", {{"name", name}}},
          {"rules", rules}};
}

json role(const std::string& ns, const std::string& name, const Objects& rules) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "Role"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"rules", rules}};
}

json sa(const std::string& name, const std::string& ns = "") {
  json s = {{"kind", "ServiceAccount"}, {"name", name}};
  if (!ns.empty()) s["namespace"] = ns;
  return s;
}
json user(const std::string& name) {
  return {{"kind", "User"}, {"apiGroup", "rbac.authorization.k8s.io"}, {"name", name}};
}
json group(const std::string& name) {
  return {{"kind", "Group"}, {"apiGroup", "rbac.authorization.k8s.io"}, {"name", name}};
}

json cluster_binding(const std::string& name, const std::string& role_name,
                     const Objects& subjects) {
  return {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRoleBinding"},
      {"metadata", {{"name", name}}},
      {"roleRef",
       {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", role_name}}},
      {"subjects", subjects}};
}

json binding(const std::string& ns, const std::string& name, const std::string& ref_kind,
             const std::string& role_name, const Objects& subjects) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "RoleBinding"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"roleRef",
           {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", ref_kind}, {"name", role_name}}},
          {"subjects", subjects}};
}

RequestAttributes resource(const std::string& verb, const std::string& group,
                           const std::string& res, const std::string& ns = "",
                           const std::string& name = "", const std::string& sub = "") {
  RequestAttributes r;
  r.verb = verb;
  r.api_group = group;
  r.api_version = "v1";
  r.resource = res;
  r.subresource = sub;
  r.ns = ns;
  r.name = name;
  return r;
}

RequestAttributes non_resource(const std::string& verb, const std::string& path) {
  RequestAttributes r;
  r.resource_request = false;
  r.verb = verb;
  r.path = path;
  return r;
}

const UserInfo kRobot = service_account_user("ml", "robot");
const UserInfo kAlice{"alice", {"researchers", "system:authenticated"}};

// The objects of the cases below.
RbacObjects objects() {
  RbacObjects o;
  o.cluster_roles = {
      cluster_role("job-reader", {rule({"batch"}, {"jobs"}, {"get", "list", "watch"})}),
      cluster_role("pod-status", {rule({""}, {"pods/status"}, {"patch"})}),
      cluster_role("any-status", {rule({""}, {"*/status"}, {"get"})}),
      cluster_role("everything", {rule({"*"}, {"*"}, {"*"})}),
      cluster_role("one-config",
                   {rule({""}, {"configmaps"}, {"get", "update", "create"}, {"settings"})}),
      cluster_role("metrics", {{{"nonResourceURLs", {"/metrics", "/debug/*"}},
                                {"verbs", json::array({"get"})}}}),
  };
  o.roles = {role("ml", "lease",
                  {rule({"coordination.k8s.io"}, {"leases"}, {"get", "update"}, {"leader"})})};
  o.cluster_role_bindings = {
      cluster_binding("robot-jobs", "job-reader", {sa("robot", "ml")}),
      cluster_binding("alice-metrics", "metrics", {user("alice")}),
      cluster_binding("admins", "everything", {group("platform-admins")}),
      cluster_binding("broken", "no-such-role", {user("alice")}),
  };
  o.role_bindings = {
      binding("ml", "robot-lease", "Role", "lease", {sa("robot")}),  // namespace from the binding
      binding("ml", "researchers-config", "ClusterRole", "one-config", {group("researchers")}),
      binding("ml", "robot-pod-status", "ClusterRole", "pod-status", {sa("robot", "ml")}),
      binding("vision", "robot-status", "ClusterRole", "any-status", {sa("robot", "ml")}),
  };
  return o;
}

struct Case {
  std::string name;
  UserInfo user;
  RequestAttributes request;
  bool want_allowed;
  std::string want_reason;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class RbacAuthorize : public ::testing::TestWithParam<Case> {};

TEST_P(RbacAuthorize, decides_as_kube_apiserver_does) {
  const auto got = authorize(GetParam().user, GetParam().request, objects());
  EXPECT_EQ(got.allowed, GetParam().want_allowed);
  EXPECT_EQ(got.reason, GetParam().want_reason);
}

const std::string kRobotJobs =
    R"(RBAC: allowed by ClusterRoleBinding "robot-jobs" of ClusterRole "job-reader" to ServiceAccount "robot/ml")";

INSTANTIATE_TEST_SUITE_P(
    Cases, RbacAuthorize,
    ::testing::Values(
        Case{"cluster_role_binding_grants_in_every_namespace", kRobot,
             resource("list", "batch", "jobs", "vision"), true, kRobotJobs},
        Case{"cluster_role_binding_grants_at_the_cluster_scope", kRobot,
             resource("watch", "batch", "jobs"), true, kRobotJobs},
        Case{"a_verb_the_rule_does_not_list_is_denied", kRobot,
             resource("delete", "batch", "jobs", "ml", "train"), false, ""},
        Case{"the_same_resource_in_another_group_is_denied", kRobot,
             resource("get", "", "jobs", "ml", "train"), false, ""},
        Case{"a_resource_rule_does_not_grant_its_subresources", kRobot,
             resource("get", "batch", "jobs", "ml", "train", "status"), false, ""},
        Case{"no_rule_grants_secrets", kRobot, resource("get", "", "secrets", "ml", "token"), false,
             ""},
        Case{
            "role_binding_to_a_role_grants_only_the_named_object", kRobot,
            resource("update", "coordination.k8s.io", "leases", "ml", "leader"), true,
            R"(RBAC: allowed by RoleBinding "robot-lease/ml" of Role "lease" to ServiceAccount "robot/ml")"},
        Case{"resource_names_never_match_a_create", kRobot,
             resource("create", "coordination.k8s.io", "leases", "ml"), false, ""},
        Case{"resource_names_never_match_a_list", kRobot,
             resource("list", "coordination.k8s.io", "leases", "ml"), false, ""},
        Case{"another_name_is_denied", kRobot,
             resource("get", "coordination.k8s.io", "leases", "ml", "other"), false, ""},
        Case{"a_role_binding_grants_nothing_in_another_namespace", kRobot,
             resource("get", "coordination.k8s.io", "leases", "vision", "leader"), false, ""},
        Case{"a_role_binding_grants_nothing_at_the_cluster_scope", kRobot,
             resource("patch", "", "pods", "", "", "status"), false, ""},
        Case{
            "role_binding_to_a_cluster_role_grants_in_its_namespace", kRobot,
            resource("patch", "", "pods", "ml", "p-0", "status"), true,
            R"(RBAC: allowed by RoleBinding "robot-pod-status/ml" of ClusterRole "pod-status" to ServiceAccount "robot/ml")"},
        Case{
            "a_wildcard_subresource_rule_matches_that_subresource_of_any_resource", kRobot,
            resource("get", "", "services", "vision", "web", "status"), true,
            R"(RBAC: allowed by RoleBinding "robot-status/vision" of ClusterRole "any-status" to ServiceAccount "robot/ml")"},
        Case{"a_wildcard_subresource_rule_does_not_match_the_resource_itself", kRobot,
             resource("get", "", "services", "vision", "web"), false, ""},
        Case{"a_service_account_of_another_namespace_is_another_user",
             service_account_user("vision", "robot"), resource("list", "batch", "jobs"), false, ""},
        Case{
            "a_group_subject_grants_its_members", kAlice,
            resource("update", "", "configmaps", "ml", "settings"), true,
            R"(RBAC: allowed by RoleBinding "researchers-config/ml" of ClusterRole "one-config" to Group "researchers")"},
        Case{
            "wildcards_grant_everything_to_the_group", UserInfo{"bob", {"platform-admins"}},
            resource("deletecollection", "", "secrets", "kube-system"), true,
            R"(RBAC: allowed by ClusterRoleBinding "admins" of ClusterRole "everything" to Group "platform-admins")"},
        Case{"a_binding_to_a_missing_role_is_the_denials_reason", kAlice,
             resource("get", "", "nodes", "", "n1"), false,
             R"(RBAC: clusterrole.rbac.authorization.k8s.io "no-such-role" not found)"},
        Case{"system_masters_is_always_allowed", UserInfo{"root", {"system:masters"}},
             resource("delete", "", "namespaces", "", "ml"), true,
             "the group system:masters is always allowed"},
        Case{
            "a_non_resource_url_exactly", UserInfo{"alice", {}}, non_resource("get", "/metrics"),
            true,
            R"(RBAC: allowed by ClusterRoleBinding "alice-metrics" of ClusterRole "metrics" to User "alice")"},
        Case{
            "a_non_resource_url_by_its_prefix", UserInfo{"alice", {}},
            non_resource("get", "/debug/pprof/heap"), true,
            R"(RBAC: allowed by ClusterRoleBinding "alice-metrics" of ClusterRole "metrics" to User "alice")"},
        Case{"a_non_resource_url_with_another_verb", UserInfo{"alice", {}},
             non_resource("post", "/metrics"), false,
             R"(RBAC: clusterrole.rbac.authorization.k8s.io "no-such-role" not found)"},
        Case{"nobody_is_allowed_by_default", UserInfo{"mallory", {"system:authenticated"}},
             resource("get", "", "pods", "ml", "p"), false, ""}),
    [](const auto& test) { return test.param.name; });

TEST(RbacAuthorize, several_errors_are_listed_as_kubernetes_aggregates_them) {
  RbacObjects o;
  o.cluster_role_bindings = {cluster_binding("a", "gone-a", {user("u")}),
                             cluster_binding("b", "gone-b", {user("u")})};
  const auto got = authorize(UserInfo{"u", {}}, resource("get", "", "pods", "ns", "p"), o);
  EXPECT_FALSE(got.allowed);
  EXPECT_EQ(
      got.reason,
      R"(RBAC: [clusterrole.rbac.authorization.k8s.io "gone-a" not found, clusterrole.rbac.authorization.k8s.io "gone-b" not found])");
}

TEST(RbacAuthorize, objects_are_picked_by_kind_from_any_list) {
  const auto o = RbacObjects::from({cluster_role("r", {}),
                                    role("ns", "r", {}),
                                    binding("ns", "b", "Role", "r", {}),
                                    cluster_binding("b", "r", {}),
                                    {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}}});
  EXPECT_EQ(o.cluster_roles.size(), 1u);
  EXPECT_EQ(o.roles.size(), 1u);
  EXPECT_EQ(o.role_bindings.size(), 1u);
  EXPECT_EQ(o.cluster_role_bindings.size(), 1u);
}

TEST(RbacAuthorize, a_service_accounts_user_carries_the_groups_the_api_server_adds) {
  const auto u = service_account_user("ml", "robot");
  EXPECT_EQ(u.username, "system:serviceaccount:ml:robot");
  EXPECT_EQ(u.groups,
            (std::vector<std::string>{"system:serviceaccounts", "system:serviceaccounts:ml",
                                      "system:authenticated"}));
}

// ---- request attributes ----

struct AttributesCase {
  std::string name;
  std::string method, path;
  bool watch;
  std::string field_selector;
  // verb group resource subresource namespace name, space-separated ("-" for empty)
  std::string want;
};

void PrintTo(const AttributesCase& c, std::ostream* os) {
  *os << c.name;
}

std::string summary(const RequestAttributes& r) {
  const auto f = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  if (!r.resource_request) return "nonresource " + f(r.verb) + " " + r.path;
  return f(r.verb) + " " + f(r.api_group) + " " + f(r.resource) + " " + f(r.subresource) + " " +
         f(r.ns) + " " + f(r.name);
}

class RbacAttributes : public ::testing::TestWithParam<AttributesCase> {};

TEST_P(RbacAttributes, read_as_request_info_does) {
  const auto& c = GetParam();
  EXPECT_EQ(summary(request_attributes(c.method, c.path, c.watch, c.field_selector)), c.want);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RbacAttributes,
    ::testing::Values(
        AttributesCase{"get_of_a_namespaced_object", "GET", "/apis/batch/v1/namespaces/ml/jobs/j",
                       false, "", "get batch jobs - ml j"},
        AttributesCase{"list_in_a_namespace", "GET", "/api/v1/namespaces/ml/pods", false, "",
                       "list - pods - ml -"},
        AttributesCase{"list_across_namespaces", "GET", "/apis/commgate.io/v1alpha1/trainingjobs",
                       false, "", "list commgate.io trainingjobs - - -"},
        AttributesCase{"watch_by_query", "GET", "/api/v1/pods", true, "", "watch - pods - - -"},
        AttributesCase{"legacy_watch_path", "GET", "/api/v1/watch/namespaces/ml/pods", false, "",
                       "watch - pods - ml -"},
        AttributesCase{"field_selector_on_the_name_names_the_object", "GET",
                       "/apis/coordination.k8s.io/v1/namespaces/ml/leases", true,
                       "metadata.name=leader", "watch coordination.k8s.io leases - ml leader"},
        AttributesCase{"create", "POST", "/apis/batch/v1/namespaces/ml/jobs", false, "",
                       "create batch jobs - ml -"},
        AttributesCase{"status_update", "PUT",
                       "/apis/commgate.io/v1alpha1/namespaces/ml/trainingjobs/t/status", false, "",
                       "update commgate.io trainingjobs status ml t"},
        AttributesCase{"patch", "PATCH", "/apis/events.k8s.io/v1/namespaces/ml/events/e", false, "",
                       "patch events.k8s.io events - ml e"},
        AttributesCase{"delete_of_one", "DELETE", "/api/v1/namespaces/ml/services/s", false, "",
                       "delete - services - ml s"},
        AttributesCase{"delete_of_a_collection", "DELETE", "/api/v1/namespaces/ml/pods", false, "",
                       "deletecollection - pods - ml -"},
        AttributesCase{"a_namespace_is_in_its_own_namespace", "GET", "/api/v1/namespaces/ml", false,
                       "", "get - namespaces - ml ml"},
        AttributesCase{"a_namespaces_status", "PUT", "/api/v1/namespaces/ml/status", false, "",
                       "update - namespaces status ml ml"},
        AttributesCase{"cluster_scoped_object", "GET",
                       "/apis/commgate.io/v1alpha1/commprofiles/pool-1", false, "",
                       "get commgate.io commprofiles - - pool-1"},
        AttributesCase{"discovery_is_not_a_resource_request", "GET", "/apis/batch/v1", false, "",
                       "nonresource get /apis/batch/v1"},
        AttributesCase{"health_is_not_a_resource_request", "GET", "/healthz", false, "",
                       "nonresource get /healthz"}),
    [](const auto& test) { return test.param.name; });

// ---- the 403 ----

TEST(RbacForbidden, names_the_user_verb_resource_and_namespace_as_kube_apiserver_does) {
  const json s = forbidden_status(kRobot, resource("delete", "batch", "jobs", "ml", "train"), "");
  EXPECT_EQ(s, json::parse(R"({"kind":"Status","apiVersion":"v1","metadata":{},
      "status":"Failure","reason":"Forbidden","code":403,
      "details":{"name":"train","group":"batch","kind":"jobs"},
      "message":"jobs.batch \"train\" is forbidden: User \"system:serviceaccount:ml:robot\" cannot delete resource \"jobs\" in API group \"batch\" in the namespace \"ml\""})"));
}

TEST(RbacForbidden, a_core_list_at_the_cluster_scope_with_a_reason) {
  const json s = forbidden_status(kAlice, resource("list", "", "secrets"),
                                  "RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found");
  EXPECT_EQ(s["message"],
            "secrets is forbidden: User \"alice\" cannot list resource \"secrets\" in API group "
            "\"\" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not "
            "found");
  EXPECT_EQ(s["details"], json::parse(R"({"kind":"secrets"})"));
}

TEST(RbacForbidden, a_subresource_and_a_non_resource_path) {
  EXPECT_EQ(forbidden_status(kRobot,
                             resource("patch", "commgate.io", "trainingjobs", "ml", "t", "status"),
                             "")["message"],
            "trainingjobs.commgate.io \"t\" is forbidden: User \"system:serviceaccount:ml:robot\" "
            "cannot patch resource \"trainingjobs/status\" in API group \"commgate.io\" in the "
            "namespace \"ml\"");
  const json s = forbidden_status(kAlice, non_resource("get", "/metrics"), "");
  EXPECT_EQ(s["message"], "forbidden: User \"alice\" cannot get path \"/metrics\"");
  EXPECT_EQ(s["details"], json::object());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

// Issue #20 defect 5: the built-in admin, edit and view roles, as a cluster gives them,
// bound per namespace (`kubectl create rolebinding --clusterrole=edit`).
RbacObjects bootstrap_with_binding(const std::string& role, const std::string& user) {
  RbacObjects rbac = bootstrap_rbac();
  rbac.role_bindings.push_back(
      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
       {"kind", "RoleBinding"},
       {"metadata", {{"name", user + "-" + role}, {"namespace", "ml"}}},
       {"roleRef",
        {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", role}}},
       {"subjects",
        json::array(
            {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", user}}})}});
  rbac.cluster_roles = aggregate_cluster_roles(std::move(rbac.cluster_roles));
  return rbac;
}

TEST(BootstrapRoles, EditWritesWorkloadsAndImpersonatesTheNamespacesServiceAccounts) {
  const RbacObjects rbac = bootstrap_with_binding("edit", "alice");
  auto allowed = [&](const std::string& verb, const std::string& group, const std::string& res,
                     const std::string& ns = "ml") {
    return authorize(kAlice, resource(verb, group, res, ns), rbac).allowed;
  };
  EXPECT_TRUE(allowed("create", "batch", "jobs"));
  EXPECT_TRUE(allowed("patch", "batch", "cronjobs"));
  EXPECT_TRUE(allowed("create", "", "pods"));
  EXPECT_TRUE(allowed("impersonate", "", "serviceaccounts"));
  EXPECT_TRUE(allowed("get", "", "secrets"));
  // view's, aggregated into edit.
  EXPECT_TRUE(authorize(kAlice, resource("get", "", "pods", "ml", "p", "log"), rbac).allowed);
  EXPECT_TRUE(allowed("create", "coordination.k8s.io", "leases"));
  EXPECT_FALSE(allowed("create", "rbac.authorization.k8s.io", "rolebindings"));  // admin's
  EXPECT_FALSE(allowed("create", "batch", "jobs", "other"));
  EXPECT_FALSE(allowed("list", "", "nodes", ""));
}

TEST(BootstrapRoles, AdminAddsRbacInTheNamespaceAndViewOnlyReads) {
  RbacObjects rbac = bootstrap_with_binding("admin", "alice");
  EXPECT_TRUE(
      authorize(kAlice, resource("create", "rbac.authorization.k8s.io", "rolebindings", "ml"), rbac)
          .allowed);
  EXPECT_TRUE(authorize(kAlice, resource("delete", "batch", "jobs", "ml"), rbac).allowed);
  rbac = bootstrap_with_binding("view", "alice");
  EXPECT_TRUE(authorize(kAlice, resource("list", "", "pods", "ml"), rbac).allowed);
  EXPECT_FALSE(authorize(kAlice, resource("get", "", "secrets", "ml"), rbac).allowed);
  EXPECT_FALSE(authorize(kAlice, resource("create", "batch", "jobs", "ml"), rbac).allowed);
}

TEST(BootstrapRoles, NameEachRoleOnce) {
  // (A stored role of one of these names replaces it: sim/api_handlers.cpp, checked through
  // kubectl in tests/chart/chart_rbac_usage_test.cpp.)
  std::map<std::string, int> names;
  for (const json& r : bootstrap_rbac().cluster_roles) ++names[r["metadata"]["name"]];
  for (const auto& [name, count] : names) EXPECT_EQ(count, 1) << name;
  EXPECT_TRUE(names.contains("edit") && names.contains("view") && names.contains("admin") &&
              names.contains("cluster-admin"));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
