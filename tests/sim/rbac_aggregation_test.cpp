// sim/rbac_authorizer's aggregate_cluster_roles: kube-controller-manager's
// clusterrole-aggregation controller (pkg/controller/clusterroleaggregation), which fills
// the built-in admin, edit and view roles (and any ClusterRole with an aggregationRule)
// from the ClusterRoles labelled for them. Table-driven: the stored ClusterRoles, and the
// rules each aggregating one ends with.
#include <gtest/gtest.h>

#include <map>
#include <ostream>

#include "sim/rbac_authorizer.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json rule(const std::string& resource, json verbs) {
  return {{"apiGroups", {"commgate.io"}}, {"resources", {resource}}, {"verbs", verbs}};
}

// A ClusterRole with labels and rules; `selectors` (metav1.LabelSelector[]) makes it an
// aggregating one.
json cluster_role(const std::string& name, json labels, json rules,
                  json selectors = json(nullptr)) {
  json r = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
            {"kind", "ClusterRole"},
            {"metadata", {{"name", name}}}};
  if (!labels.empty()) r["metadata"]["labels"] = labels;
  if (!rules.is_null()) r["rules"] = rules;
  if (!selectors.is_null()) r["aggregationRule"] = {{"clusterRoleSelectors", selectors}};
  return r;
}

json match_labels(const std::string& key) {
  return {{"matchLabels", {{key, "true"}}}};
}

const std::string kToView = "rbac.authorization.k8s.io/aggregate-to-view";
const std::string kToEdit = "rbac.authorization.k8s.io/aggregate-to-edit";
const std::string kToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin";

// Upstream's three (bootstrappolicy): only their aggregationRules, and the labels that chain
// them (view is aggregated into edit, edit into admin).
json upstream_view() {
  return cluster_role("view", {{kToEdit, "true"}}, json::array(),
                      json::array({match_labels(kToView)}));
}
json upstream_edit() {
  return cluster_role("edit", {{kToAdmin, "true"}}, json::array(),
                      json::array({match_labels(kToEdit)}));
}
json upstream_admin() {
  return cluster_role("admin", json::object(), json::array(),
                      json::array({match_labels(kToAdmin)}));
}

struct AggregationCase {
  std::string name;
  std::vector<json> roles;
  std::map<std::string, json> want_rules;  // by role name; roles not listed: unchanged
};

void PrintTo(const AggregationCase& c, std::ostream* os) {
  *os << c.name;
}

class RbacAggregation : public ::testing::TestWithParam<AggregationCase> {};

TEST_P(RbacAggregation, each_aggregating_role_ends_with_the_rules_its_selectors_pick) {
  const auto& c = GetParam();
  const auto got = aggregate_cluster_roles(c.roles);
  ASSERT_EQ(got.size(), c.roles.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const std::string name = got[i]["metadata"]["name"];
    EXPECT_EQ(name, c.roles[i]["metadata"]["name"]) << "the order is kept";
    const auto want = c.want_rules.find(name);
    if (want == c.want_rules.end()) {
      EXPECT_EQ(got[i], c.roles[i]) << name << " is not aggregating and must stay as stored";
      continue;
    }
    EXPECT_EQ(got[i]["rules"], want->second) << name << ":\n" << got[i]["rules"].dump(1);
    EXPECT_EQ(got[i]["aggregationRule"], c.roles[i]["aggregationRule"]) << name;
  }
}

const json kReadJobs = rule("trainingjobs", {"get", "list", "watch"});
const json kWriteJobs = rule("trainingjobs", {"create", "update", "patch", "delete"});
const json kReadPolicies = rule("commpolicies", {"get", "list", "watch"});
const json kWritePolicies = rule("commpolicies", {"create", "update", "patch", "delete"});

INSTANTIATE_TEST_SUITE_P(
    Cases, RbacAggregation,
    ::testing::Values(
        AggregationCase{
            "the_labelled_roles_rules_sorted_by_role_name_each_rule_once",
            {upstream_edit(),
             cluster_role("z-jobs-edit", {{kToEdit, "true"}}, json::array({kWriteJobs})),
             cluster_role("a-jobs-view", {{kToEdit, "true"}},
                          json::array({kReadJobs, kReadPolicies})),
             // the same rule again, with an empty list where the other has none
             cluster_role("m-dup", {{kToEdit, "true"}},
                          json::array({json{{"apiGroups", {"commgate.io"}},
                                            {"resources", {"trainingjobs"}},
                                            {"verbs", {"get", "list", "watch"}},
                                            {"resourceNames", json::array()}}})),
             cluster_role("not-labelled", json::object(), json::array({kWritePolicies})),
             cluster_role("labelled-false", {{kToEdit, "false"}}, json::array({kWritePolicies}))},
            {{"edit", json::array({kReadJobs, kReadPolicies, kWriteJobs})}}},
        AggregationCase{"its_own_stored_rules_are_replaced",
                        {cluster_role("edit", {{kToEdit, "true"}}, json::array({kWritePolicies}),
                                      json::array({match_labels(kToEdit)})),
                         cluster_role("jobs-edit", {{kToEdit, "true"}}, json::array({kWriteJobs}))},
                        // and it does not select itself, though it carries the label
                        {{"edit", json::array({kWriteJobs})}}},
        AggregationCase{"chains_settle_whatever_the_order_view_into_edit_into_admin",
                        {upstream_admin(), upstream_edit(), upstream_view(),
                         cluster_role("jobs-view", {{kToView, "true"}}, json::array({kReadJobs})),
                         cluster_role("jobs-edit", {{kToEdit, "true"}}, json::array({kWriteJobs}))},
                        {{"view", json::array({kReadJobs})},
                         {"edit", json::array({kWriteJobs, kReadJobs})},
                         {"admin", json::array({kWriteJobs, kReadJobs})}}},
        AggregationCase{
            "selectors_in_order_with_match_expressions",
            {cluster_role("picker", json::object(), json::array(),
                          json::array({json{{"matchExpressions",
                                             json::array({{{"key", "tier"},
                                                           {"operator", "In"},
                                                           {"values", {"gold", "silver"}}}})}},
                                       match_labels("extra")})),
             cluster_role("a-extra", {{"extra", "true"}}, json::array({kReadPolicies})),
             cluster_role("b-gold", {{"tier", "gold"}}, json::array({kReadJobs})),
             cluster_role("c-bronze", {{"tier", "bronze"}}, json::array({kWritePolicies}))},
            {{"picker", json::array({kReadJobs, kReadPolicies})}}},
        AggregationCase{
            "an_empty_selector_list_aggregates_nothing",
            {cluster_role("empty", json::object(), json::array({kWriteJobs}), json::array()),
             cluster_role("jobs-edit", {{kToEdit, "true"}}, json::array({kWriteJobs}))},
            {{"empty", json::array()}}},
        AggregationCase{
            "an_unreadable_selector_keeps_the_stored_rules_as_the_controller_fails_its_sync",
            {cluster_role("broken", json::object(), json::array({kReadJobs}),
                          json::array({json{
                              {"matchExpressions", json::array({{{"key", "tier"},
                                                                 {"operator", "Near"},
                                                                 {"values", {"gold"}}}})}}})),
             cluster_role("b-gold", {{"tier", "gold"}}, json::array({kWriteJobs}))},
            {{"broken", json::array({kReadJobs})}}},
        AggregationCase{"a_selector_cycle_ends",
                        {cluster_role("a", {{"b-takes", "true"}}, json::array(),
                                      json::array({match_labels("a-takes")})),
                         cluster_role("b", {{"a-takes", "true"}}, json::array(),
                                      json::array({match_labels("b-takes")})),
                         cluster_role("c", {{"a-takes", "true"}}, json::array({kReadJobs}))},
                        {{"a", json::array({kReadJobs})}, {"b", json::array({kReadJobs})}}}),
    [](const auto& test) { return test.param.name; });

// Through the authorizer: a RoleBinding to the aggregated `edit` grants the labelled rules
// in its namespace only, and never a cluster-scoped resource (a RoleBinding grants nothing
// at the cluster scope: CommPolicies need a ClusterRoleBinding).
TEST(RbacAggregation, a_role_binding_to_the_aggregated_edit_grants_in_its_namespace) {
  RbacObjects rbac;
  rbac.cluster_roles = aggregate_cluster_roles(
      {upstream_edit(), cluster_role("jobs-edit", {{kToEdit, "true"}},
                                     json::array({kWriteJobs, kReadJobs, kReadPolicies}))});
  rbac.role_bindings.push_back(
      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
       {"kind", "RoleBinding"},
       {"metadata", {{"name", "researchers-edit"}, {"namespace", "ml"}}},
       {"roleRef",
        {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "edit"}}},
       {"subjects", json::array({{{"kind", "ServiceAccount"}, {"name", "alice"}}})}});
  const UserInfo alice = service_account_user("ml", "alice");
  auto request = [](std::string verb, std::string resource, std::string ns) {
    RequestAttributes r;
    r.verb = std::move(verb);
    r.api_group = "commgate.io";
    r.api_version = "v1alpha1";
    r.resource = std::move(resource);
    r.ns = std::move(ns);
    return r;
  };
  const auto create = authorize(alice, request("create", "trainingjobs", "ml"), rbac);
  EXPECT_TRUE(create.allowed);
  EXPECT_EQ(create.reason,
            "RBAC: allowed by RoleBinding \"researchers-edit/ml\" of ClusterRole \"edit\" to "
            "ServiceAccount \"alice/ml\"");
  EXPECT_FALSE(authorize(alice, request("create", "trainingjobs", "other"), rbac).allowed);
  EXPECT_FALSE(authorize(alice, request("list", "commpolicies", ""), rbac).allowed);
  // Without aggregation (as stored) `edit` has no rules at all.
  RbacObjects stored = rbac;
  stored.cluster_roles = {upstream_edit()};
  EXPECT_FALSE(authorize(alice, request("create", "trainingjobs", "ml"), stored).allowed);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
