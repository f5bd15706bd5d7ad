// sim/rbac_authorizer's usage report (rbac_usage, grant_used, grants_of): which grant each
// request of the audit log used, as the authorizer chose it, and which grants of each
// ServiceAccount no request used. Table-driven: each case is a set of RBAC objects and the
// requests of an audit log, with the grant each request used and the grants left unused.
#include <gtest/gtest.h>

#include <ostream>

#include "sim/rbac_authorizer.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

constexpr const char* kOperator = "system:serviceaccount:ops:operator";

json rule(json groups, json resources, json verbs, json names = json::array()) {
  json r = {{"apiGroups", groups}, {"resources", resources}, {"verbs", verbs}};
  if (!names.empty()) r["resourceNames"] = names;
  return r;
}
json cluster_role(const std::string& name, json rules) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRole"},
          {"metadata", {{"name", name}}},
          {"rules", rules}};
}
json role(const std::string& ns, const std::string& name, json rules) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "Role"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"rules", rules}};
}
json operator_sa() {
  return {{"kind", "ServiceAccount"}, {"name", "operator"}, {"namespace", "ops"}};
}
json cluster_binding(const std::string& name, const std::string& role_name,
                     json subjects = json::array({operator_sa()})) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRoleBinding"},
          {"metadata", {{"name", name}}},
          {"roleRef", {{"kind", "ClusterRole"}, {"name", role_name}}},
          {"subjects", subjects}};
}
json role_binding(const std::string& ns, const std::string& name, const std::string& ref_kind,
                  const std::string& role_name) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "RoleBinding"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"roleRef", {{"kind", ref_kind}, {"name", role_name}}},
          {"subjects", json::array({operator_sa()})}};
}

AuditEvent request(const std::string& verb, const std::string& uri, int code = 200,
                   const std::string& user = kOperator) {
  AuditEvent e;
  e.verb = verb;
  e.request_uri = uri;
  e.username = user;
  e.object_ref = audit_object_ref(uri.substr(0, uri.find('?')));
  e.code = code;
  return e;
}

struct Case {
  std::string name;
  std::vector<json> objects;
  std::vector<AuditEvent> events;
  // For each of the operator's requests in order: to_string of the grant it used, "-" for none.
  std::vector<std::string> want_used;
  std::vector<std::string> want_unused;  // to_string of each unused grant, sorted
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

const json kPods =
    cluster_role("pods", json::array({rule({""}, {"pods"}, {"get", "list", "watch"})}));

const std::vector<Case> kCases = {
    {"list_and_watch_are_separate_verbs",
     {kPods, cluster_binding("pods", "pods")},
     {request("list", "/api/v1/pods"), request("get", "/api/v1/namespaces/a/pods/p")},
     {R"(ClusterRole "pods" rule 0: list "pods" in API group "")",
      R"(ClusterRole "pods" rule 0: get "pods" in API group "")"},
     {R"(ClusterRole "pods" rule 0: watch "pods" in API group "")"}},
    {"a_watch_is_the_watch_verb_in_the_audit_log",
     {kPods, cluster_binding("pods", "pods")},
     {request("watch", "/api/v1/pods?watch=true&resourceVersion=5"),
      request("watch", "/api/v1/watch/namespaces/a/pods")},
     {R"(ClusterRole "pods" rule 0: watch "pods" in API group "")",
      R"(ClusterRole "pods" rule 0: watch "pods" in API group "")"},
     {R"(ClusterRole "pods" rule 0: get "pods" in API group "")",
      R"(ClusterRole "pods" rule 0: list "pods" in API group "")"}},
    {"a_subresource_uses_its_own_grant_not_the_resources",
     {cluster_role("tj", json::array({rule({"commgate.io"}, {"trainingjobs"}, {"patch"}),
                                      rule({"commgate.io"}, {"trainingjobs/status"}, {"patch"})})),
      cluster_binding("tj", "tj")},
     {request("patch", "/apis/commgate.io/v1alpha1/namespaces/nlp/trainingjobs/bert/status")},
     {R"(ClusterRole "tj" rule 1: patch "trainingjobs/status" in API group "commgate.io")"},
     {R"(ClusterRole "tj" rule 0: patch "trainingjobs" in API group "commgate.io")"}},
    {"a_rule_by_name_is_used_by_requests_naming_the_object_and_create_needs_its_own",
     {role("ops", "lease",
           json::array({rule({"coordination.k8s.io"}, {"leases"}, {"get", "update"}, {"op"}),
                        rule({"coordination.k8s.io"}, {"leases"}, {"create"})})),
      role_binding("ops", "lease", "Role", "lease")},
     {request("create", "/apis/coordination.k8s.io/v1/namespaces/ops/leases", 201),
      request("get", "/apis/coordination.k8s.io/v1/namespaces/ops/leases/op"),
      request("update", "/apis/coordination.k8s.io/v1/namespaces/ops/leases/op")},
     {R"(Role "ops/lease" rule 1: create "leases" in API group "coordination.k8s.io")",
      R"(Role "ops/lease" rule 0: get "leases" in API group "coordination.k8s.io" named [op])",
      R"(Role "ops/lease" rule 0: update "leases" in API group "coordination.k8s.io" named [op])"},
     {}},
    {"a_field_selector_on_the_name_names_the_object_of_a_watch",
     {role("ops", "lease",
           json::array({rule({"coordination.k8s.io"}, {"leases"}, {"watch"}, {"op"})})),
      role_binding("ops", "lease", "Role", "lease")},
     {request("watch",
              "/apis/coordination.k8s.io/v1/namespaces/ops/leases?watch=1&"
              "fieldSelector=metadata.name%3Dop"),
      request("watch", "/apis/coordination.k8s.io/v1/namespaces/ops/leases?watch=1", 403)},
     {R"(Role "ops/lease" rule 0: watch "leases" in API group "coordination.k8s.io" named [op])",
      "-"},
     {}},
    {"a_forbidden_request_and_discovery_use_no_grant",
     {kPods, cluster_binding("pods", "pods")},
     {request("get", "/api/v1/namespaces/a/secrets/s", 403), request("get", "/apis"),
      request("list", "/api/v1/pods")},
     {"-", "-", R"(ClusterRole "pods" rule 0: list "pods" in API group "")"},
     {R"(ClusterRole "pods" rule 0: get "pods" in API group "")",
      R"(ClusterRole "pods" rule 0: watch "pods" in API group "")"}},
    {"the_first_binding_that_allows_is_the_grant_used_so_a_duplicate_shows_unused",
     {cluster_role("a", json::array({rule({""}, {"pods"}, {"get"})})),
      cluster_role("b", json::array({rule({""}, {"pods", "services"}, {"get"})})),
      cluster_binding("a", "a"), cluster_binding("b", "b")},
     {request("get", "/api/v1/namespaces/x/pods/p"),
      request("get", "/api/v1/namespaces/x/services/s")},
     {R"(ClusterRole "a" rule 0: get "pods" in API group "")",
      R"(ClusterRole "b" rule 0: get "services" in API group "")"},
     {R"(ClusterRole "b" rule 0: get "pods" in API group "")"}},
    {"a_wildcard_rule_is_one_grant_whatever_it_served",
     {cluster_role("all", json::array({rule({"*"}, {"*"}, {"*"})})), cluster_binding("all", "all")},
     {request("delete", "/apis/batch/v1/namespaces/x/jobs/j")},
     {R"(ClusterRole "all" rule 0: * "*" in API group "*")"},
     {}},
    {"a_clusterrole_bound_in_a_namespace_grants_there_only",
     {kPods, role_binding("x", "pods", "ClusterRole", "pods")},
     {request("get", "/api/v1/namespaces/x/pods/p"),
      request("get", "/api/v1/namespaces/y/pods/p", 403)},
     {R"(ClusterRole "pods" rule 0: get "pods" in API group "")", "-"},
     {R"(ClusterRole "pods" rule 0: list "pods" in API group "")",
      R"(ClusterRole "pods" rule 0: watch "pods" in API group "")"}},
    {"another_users_requests_use_none_of_the_accounts_grants",
     {kPods, cluster_binding("pods", "pods")},
     {request("get", "/api/v1/namespaces/x/pods/p", 200, "system:serviceaccount:ops:other")},
     {},
     {R"(ClusterRole "pods" rule 0: get "pods" in API group "")",
      R"(ClusterRole "pods" rule 0: list "pods" in API group "")",
      R"(ClusterRole "pods" rule 0: watch "pods" in API group "")"}},
};

class RbacUsageTable : public ::testing::TestWithParam<Case> {};

TEST_P(RbacUsageTable, reports_the_grant_each_request_used_and_the_unused_ones) {
  const Case& c = GetParam();
  const auto usage = rbac_usage(RbacObjects::from(c.objects), c.events);
  ASSERT_EQ(usage.size(), 1u);
  ASSERT_TRUE(usage.count(kOperator));
  const RbacUsage& u = usage.at(kOperator);
  std::vector<std::string> used, unused;
  for (const auto& r : u.requests) used.push_back(r.grant ? to_string(*r.grant) : "-");
  for (const auto& g : u.unused) unused.push_back(to_string(g));
  EXPECT_EQ(used, c.want_used);
  EXPECT_EQ(unused, c.want_unused);
}

INSTANTIATE_TEST_SUITE_P(Cases, RbacUsageTable, ::testing::ValuesIn(kCases),
                         [](const auto& test) { return test.param.name; });

TEST(RbacUsage, every_service_account_a_binding_names_has_a_report) {
  const std::vector<json> objects = {
      kPods, cluster_binding(
                 "pods", "pods",
                 json::array({operator_sa(),
                              {{"kind", "ServiceAccount"}, {"name", "hook"}, {"namespace", "ops"}},
                              {{"kind", "User"}, {"name", "alice"}}}))};
  const auto usage = rbac_usage(RbacObjects::from(objects), {});
  std::vector<std::string> names;
  for (const auto& [name, u] : usage) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"system:serviceaccount:ops:hook", kOperator}));
}

// OwnerReferencesPermissionEnforcement asks about trainingjobs/finalizers inside a create:
// no request of the audit log names it, yet the grant is used.
TEST(RbacUsage, an_admission_plugins_check_uses_a_grant_no_request_names) {
  const std::vector<json> objects = {
      cluster_role("op",
                   json::array({rule({"batch"}, {"jobs"}, {"create"}),
                                rule({"commgate.io"}, {"trainingjobs/finalizers"}, {"update"})})),
      cluster_binding("op", "op")};
  RequestAttributes finalizers;
  finalizers.verb = "update";
  finalizers.api_group = "commgate.io";
  finalizers.resource = "trainingjobs";
  finalizers.subresource = "finalizers";
  finalizers.ns = "nlp";
  finalizers.name = "bert";
  const auto without = rbac_usage(RbacObjects::from(objects),
                                  {request("create", "/apis/batch/v1/namespaces/nlp/jobs", 201)});
  ASSERT_EQ(without.at(kOperator).unused.size(), 1u);
  EXPECT_EQ(
      to_string(without.at(kOperator).unused[0]),
      R"(ClusterRole "op" rule 1: update "trainingjobs/finalizers" in API group "commgate.io")");
  const auto with = rbac_usage(
      RbacObjects::from(objects), {request("create", "/apis/batch/v1/namespaces/nlp/jobs", 201)},
      {{kOperator, finalizers, true, "OwnerReferencesPermissionEnforcement"},
       {"system:serviceaccount:ops:other", finalizers, false, "x"}});
  EXPECT_TRUE(with.at(kOperator).unused.empty());
  ASSERT_EQ(with.at(kOperator).checks.size(), 1u);
  EXPECT_TRUE(with.at(kOperator).checks[0].grant.has_value());
}

TEST(RbacUsage, a_request_of_the_audit_log_reads_as_the_authorizer_read_it) {
  const RequestAttributes a = request_attributes(request(
      "list", "/api/v1/namespaces/nlp/pods?labelSelector=a%3Db&fieldSelector=metadata.name%3Dp"));
  EXPECT_EQ(a.verb, "list");
  EXPECT_EQ(a.ns, "nlp");
  EXPECT_EQ(a.name, "p");
  const RequestAttributes ns = request_attributes(request("get", "/api/v1/namespaces/nlp"));
  EXPECT_EQ(ns.ns, "nlp");
  EXPECT_EQ(ns.resource, "namespaces");
  const RequestAttributes del =
      request_attributes(request("deletecollection", "/apis/batch/v1/namespaces/x/jobs"));
  EXPECT_EQ(del.verb, "deletecollection");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
