// User impersonation (sim/impersonation.h): which headers ask for what, the check made for
// each part, the user they make, and the 403 or 500 a request gets, as kube-apiserver's
// impersonation filter answers.
#include "sim/impersonation.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/api_status.h"
#include "sim/audit_log.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using Kind = ImpersonationPart::Kind;
using Groups = std::vector<std::string>;

json impersonator_role(json rules) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRole"},
          {"metadata", {{"name", "impersonator"}}},
          {"rules", std::move(rules)}};
}
json bind_to_bob() {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "ClusterRoleBinding"},
          {"metadata", {{"name", "bob-impersonates"}}},
          {"roleRef",
           {{"apiGroup", "rbac.authorization.k8s.io"},
            {"kind", "ClusterRole"},
            {"name", "impersonator"}}},
          {"subjects",
           json::array(
               {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", "bob"}}})}};
}

// impersonate() with the RBAC authorizer over `rbac`, as the API server calls it.
std::optional<UserInfo> as_bob(const server::HeaderList& headers, const RbacObjects& rbac) {
  const UserInfo bob{"bob", {"system:authenticated"}};
  return impersonate(headers, bob, [&](const UserInfo& u, const RequestAttributes& a) {
    return authorize(u, a, rbac);
  });
}

// The Status of the ApiError a call throws (null when it throws none).
template <typename F>
json refusal(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e.status();
  }
  return nullptr;
}

TEST(ImpersonationHeaders, each_header_is_one_part_in_upstream_order) {
  const auto parts = impersonation_parts({{"impersonate-group", "researchers"},
                                          {"Impersonate-User", "carol"},
                                          {"Impersonate-Extra-Scopes", "view"},
                                          {"Impersonate-Group", "admins"},
                                          {"Impersonate-Extra-Acme.com%2FProject", "p1"},
                                          {"Impersonate-Extra-scopes", "edit"},
                                          {"Impersonate-Uid", "1234"},
                                          {"Accept", "application/json"}});
  ASSERT_EQ(parts.size(), 7u);
  EXPECT_EQ(parts[0].kind, Kind::kUser);
  EXPECT_EQ(parts[0].name, "carol");
  EXPECT_EQ(parts[1].kind, Kind::kGroup);
  EXPECT_EQ(parts[1].name, "researchers");
  EXPECT_EQ(parts[2].name, "admins");
  EXPECT_EQ(parts[3].kind, Kind::kUserExtra);
  EXPECT_EQ(parts[3].extra_key, "scopes");
  EXPECT_EQ(parts[3].name, "view");
  // The key is lower-cased, then %-decoded (a key with '/' travels escaped).
  EXPECT_EQ(parts[4].extra_key, "acme.com/project");
  EXPECT_EQ(parts[5].extra_key, "scopes");
  EXPECT_EQ(parts[6].kind, Kind::kUid);
  EXPECT_EQ(parts[6].name, "1234");
}

TEST(ImpersonationHeaders, no_header_or_an_empty_user_impersonates_no_one) {
  EXPECT_TRUE(impersonation_parts({{"Authorization", "Bearer x"}}).empty());
  EXPECT_TRUE(impersonation_parts({{"Impersonate-User", ""}}).empty());
  // "Impersonate-Extra-" with no key is no extra.
  EXPECT_TRUE(impersonation_parts({{"Impersonate-Extra-", "x"}}).empty());
}

TEST(ImpersonationHeaders, a_service_account_name_is_a_service_account_only_when_valid) {
  auto one = [](const std::string& user) {
    return impersonation_parts({{"Impersonate-User", user}}).at(0);
  };
  const auto sa = one("system:serviceaccount:ml:robot");
  EXPECT_EQ(sa.kind, Kind::kServiceAccount);
  EXPECT_EQ(sa.ns, "ml");
  EXPECT_EQ(sa.name, "robot");
  // serviceaccount.SplitUsername refuses these: they are plain user names.
  for (const char* user : {"system:serviceaccount:ML:robot", "system:serviceaccount:ml:a:b",
                           "system:serviceaccount::robot", "system:serviceaccount:ml:Robot"}) {
    const auto p = one(user);
    EXPECT_EQ(p.kind, Kind::kUser) << user;
    EXPECT_EQ(p.name, user);
  }
}

TEST(ImpersonationHeaders, groups_extras_or_a_uid_without_a_user_are_refused) {
  try {
    impersonation_parts({{"Impersonate-Group", "system:masters"}});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    // Go's %v of the v1.ObjectReference upstream builds.
    EXPECT_STREQ(e.what(), "requested [{Group  system:masters    }] without impersonating a user");
  }
  EXPECT_THROW(impersonation_parts({{"Impersonate-Uid", "1"}}), std::invalid_argument);
  EXPECT_THROW(impersonation_parts({{"Impersonate-Extra-scopes", "x"}}), std::invalid_argument);
  // Through impersonate(): a 500, as upstream's responsewriters.InternalError.
  const json status = refusal([] { as_bob({{"Impersonate-Group", "admins"}}, {}); });
  EXPECT_EQ(status["code"], 500);
  EXPECT_EQ(status["reason"], "InternalError");
  EXPECT_EQ(status["message"],
            "Internal error occurred: requested [{Group  admins    }] without impersonating a "
            "user");
}

TEST(ImpersonatedUser, users_and_service_accounts_get_their_groups) {
  auto user_of = [](const server::HeaderList& h) {
    return impersonated_user(impersonation_parts(h));
  };
  const UserInfo carol = user_of({{"Impersonate-User", "carol"}});
  EXPECT_EQ(carol.username, "carol");
  EXPECT_EQ(carol.groups, Groups({"system:authenticated"}));
  EXPECT_EQ(carol.uid, "");
  EXPECT_TRUE(carol.extra.empty());

  const UserInfo robot = user_of({{"Impersonate-User", "system:serviceaccount:ml:robot"}});
  EXPECT_EQ(robot.username, "system:serviceaccount:ml:robot");
  EXPECT_EQ(robot.groups, Groups({"system:serviceaccounts", "system:serviceaccounts:ml",
                                  "system:authenticated"}));
  // Groups given replace the service account's own.
  EXPECT_EQ(
      user_of({{"Impersonate-User", "system:serviceaccount:ml:robot"}, {"Impersonate-Group", "x"}})
          .groups,
      Groups({"x", "system:authenticated"}));
  // system:authenticated or system:unauthenticated given: nothing added.
  EXPECT_EQ(user_of({{"Impersonate-User", "carol"}, {"Impersonate-Group", "system:authenticated"}})
                .groups,
            Groups({"system:authenticated"}));
  EXPECT_EQ(
      user_of({{"Impersonate-User", "carol"}, {"Impersonate-Group", "system:unauthenticated"}})
          .groups,
      Groups({"system:unauthenticated"}));
  EXPECT_EQ(user_of({{"Impersonate-User", "system:anonymous"}}).groups,
            Groups({"system:unauthenticated"}));

  const UserInfo full = user_of({{"Impersonate-User", "carol"},
                                 {"Impersonate-Uid", "u-1"},
                                 {"Impersonate-Extra-Scopes", "a"},
                                 {"Impersonate-Extra-Scopes", "b"}});
  EXPECT_EQ(full.uid, "u-1");
  EXPECT_EQ(full.extra.at("scopes"), Groups({"a", "b"}));
  EXPECT_EQ(to_json(full), json({{"username", "carol"},
                                 {"groups", {"system:authenticated"}},
                                 {"uid", "u-1"},
                                 {"extra", {{"scopes", {"a", "b"}}}}}));
  EXPECT_EQ(to_json(carol), json({{"username", "carol"}, {"groups", {"system:authenticated"}}}));
}

TEST(ImpersonationChecks, each_part_is_checked_as_verb_impersonate) {
  auto attributes = [](const server::HeaderList& h, std::size_t i) {
    return impersonation_attributes(impersonation_parts(h).at(i));
  };
  const auto user = attributes({{"Impersonate-User", "carol"}}, 0);
  EXPECT_EQ(user.verb, "impersonate");
  EXPECT_TRUE(user.resource_request);
  EXPECT_EQ(user.api_group, "");
  EXPECT_EQ(user.resource, "users");
  EXPECT_EQ(user.name, "carol");
  EXPECT_EQ(user.ns, "");
  const auto sa = attributes({{"Impersonate-User", "system:serviceaccount:ml:robot"}}, 0);
  EXPECT_EQ(sa.resource, "serviceaccounts");
  EXPECT_EQ(sa.ns, "ml");
  EXPECT_EQ(sa.name, "robot");
  const auto extra = attributes({{"Impersonate-User", "c"}, {"Impersonate-Extra-Scopes", "v"}}, 1);
  EXPECT_EQ(extra.api_group, "authentication.k8s.io");
  EXPECT_EQ(extra.resource, "userextras");
  EXPECT_EQ(extra.subresource, "scopes");
  EXPECT_EQ(extra.name, "v");
  const auto uid = attributes({{"Impersonate-User", "c"}, {"Impersonate-Uid", "7"}}, 1);
  EXPECT_EQ(uid.api_group, "authentication.k8s.io");
  EXPECT_EQ(uid.resource, "uids");
  EXPECT_EQ(uid.name, "7");
}

TEST(ImpersonationChecks, refused_parts_are_upstreams_403_naming_the_requester) {
  EXPECT_EQ(as_bob({}, {}), std::nullopt);
  const json users = refusal([] { as_bob({{"Impersonate-User", "carol"}}, {}); });
  EXPECT_EQ(users["code"], 403);
  EXPECT_EQ(users["reason"], "Forbidden");
  EXPECT_EQ(users["message"],
            "users \"carol\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in "
            "API group \"\" at the cluster scope");
  EXPECT_EQ(users["details"], json({{"name", "carol"}, {"kind", "users"}}));
  EXPECT_EQ(refusal([] {
              as_bob({{"Impersonate-User", "system:serviceaccount:ml:robot"}}, {});
            })["message"],
            "serviceaccounts \"robot\" is forbidden: User \"bob\" cannot impersonate resource "
            "\"serviceaccounts\" in API group \"\" in the namespace \"ml\"");

  // Bob may impersonate carol (only), the group researchers and any extra "scopes".
  RbacObjects rbac;
  rbac.cluster_roles.push_back(
      impersonator_role(json::array({{{"apiGroups", {""}},
                                      {"resources", {"users"}},
                                      {"verbs", {"impersonate"}},
                                      {"resourceNames", {"carol"}}},
                                     {{"apiGroups", {""}},
                                      {"resources", {"groups"}},
                                      {"verbs", {"impersonate"}},
                                      {"resourceNames", {"researchers"}}},
                                     {{"apiGroups", {"authentication.k8s.io"}},
                                      {"resources", {"userextras/scopes"}},
                                      {"verbs", {"impersonate"}}}})));
  rbac.cluster_role_bindings.push_back(bind_to_bob());
  const auto carol = as_bob({{"Impersonate-User", "carol"},
                             {"Impersonate-Group", "researchers"},
                             {"Impersonate-Extra-Scopes", "view"}},
                            rbac);
  ASSERT_TRUE(carol);
  EXPECT_EQ(carol->username, "carol");
  EXPECT_EQ(carol->groups, Groups({"researchers", "system:authenticated"}));
  EXPECT_EQ(carol->extra.at("scopes"), Groups({"view"}));

  EXPECT_EQ(refusal([&] {
              as_bob({{"Impersonate-User", "dave"}}, rbac);
            })["message"],
            "users \"dave\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in "
            "API group \"\" at the cluster scope");
  // The user is allowed, a group is not: refused as a whole, naming the group.
  EXPECT_EQ(
      refusal([&] {
        as_bob({{"Impersonate-User", "carol"}, {"Impersonate-Group", "system:masters"}}, rbac);
      })["message"],
      "groups \"system:masters\" is forbidden: User \"bob\" cannot impersonate resource "
      "\"groups\" in API group \"\" at the cluster scope");
  EXPECT_EQ(refusal([&] {
              as_bob({{"Impersonate-User", "carol"}, {"Impersonate-Extra-Project", "p"}}, rbac);
            })["message"],
            "userextras.authentication.k8s.io \"p\" is forbidden: User \"bob\" cannot impersonate "
            "resource \"userextras/project\" in API group \"authentication.k8s.io\" at the "
            "cluster scope");
  EXPECT_EQ(refusal([&] {
              as_bob({{"Impersonate-User", "carol"}, {"Impersonate-Uid", "u-1"}}, rbac);
            })["message"],
            "uids.authentication.k8s.io \"u-1\" is forbidden: User \"bob\" cannot impersonate "
            "resource \"uids\" in API group \"authentication.k8s.io\" at the cluster scope");

  // system:masters may impersonate anyone (kube-apiserver's privileged group authorizer).
  const UserInfo admin{kAdminUsername, {"system:masters", "system:authenticated"}};
  const auto any = impersonate(
      {{"Impersonate-User", "dave"}, {"Impersonate-Group", "system:masters"}}, admin,
      [](const UserInfo& u, const RequestAttributes& a) { return authorize(u, a, RbacObjects{}); });
  ASSERT_TRUE(any);
  EXPECT_EQ(any->groups, Groups({"system:masters", "system:authenticated"}));
}

TEST(ImpersonationAudit, the_event_keeps_the_requester_and_names_the_impersonated_user) {
  AuditEvent e;
  e.verb = "list";
  e.request_uri = "/api/v1/namespaces/ml/configmaps";
  e.username = "kubernetes-admin";
  e.impersonated_user = UserInfo{"carol", {"system:authenticated"}};
  const json j = to_json(e);
  EXPECT_EQ(j["user"]["username"], "kubernetes-admin");
  EXPECT_EQ(j["impersonatedUser"],
            json({{"username", "carol"}, {"groups", {"system:authenticated"}}}));
  e.impersonated_user.reset();
  EXPECT_FALSE(to_json(e).contains("impersonatedUser"));
}

TEST(ImpersonationAudit, rbac_usage_counts_a_request_for_the_user_it_acted_as) {
  // A request made with --as system:serviceaccount:ml:robot used robot's grant.
  RbacObjects rbac;
  rbac.cluster_roles.push_back(
      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
       {"kind", "ClusterRole"},
       {"metadata", {{"name", "cm-reader"}}},
       {"rules",
        json::array({{{"apiGroups", {""}}, {"resources", {"configmaps"}}, {"verbs", {"list"}}}})}});
  rbac.cluster_role_bindings.push_back(
      {{"apiVersion", "rbac.authorization.k8s.io/v1"},
       {"kind", "ClusterRoleBinding"},
       {"metadata", {{"name", "robot-reads"}}},
       {"roleRef",
        {{"apiGroup", "rbac.authorization.k8s.io"},
         {"kind", "ClusterRole"},
         {"name", "cm-reader"}}},
       {"subjects",
        json::array({{{"kind", "ServiceAccount"}, {"name", "robot"}, {"namespace", "ml"}}})}});
  AuditEvent e;
  e.verb = "list";
  e.request_uri = "/api/v1/namespaces/ml/configmaps";
  e.username = "kubernetes-admin";
  e.object_ref.resource = "configmaps";
  e.object_ref.ns = "ml";
  e.object_ref.api_version = "v1";
  e.impersonated_user = impersonated_user(
      impersonation_parts({{"Impersonate-User", "system:serviceaccount:ml:robot"}}));
  const auto usage = rbac_usage(rbac, {e});
  const auto& robot = usage.at("system:serviceaccount:ml:robot");
  ASSERT_EQ(robot.requests.size(), 1u);
  EXPECT_TRUE(robot.requests[0].grant);
  EXPECT_TRUE(robot.unused.empty());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
