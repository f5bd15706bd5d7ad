// `commgate-sim --enable-admission-plugins OwnerReferencesPermissionEnforcement` over real
// HTTPS (with `--authorization rbac`): a user allowed to create ConfigMaps gets upstream's
// 403 for one whose ownerReference blocks its owner's deletion until a rule grants update
// on configmaps/finalizers; changing an object's owners needs delete on it; the check is
// recorded for the RBAC usage report; without the plugin none of this is asked.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/api_server.h"
#include "tests/server/test_client.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using server::testing::Client;
using server::testing::Reply;

constexpr const char* kAliceToken = "alice-token";
constexpr const char* kConfigMaps = "/api/v1/namespaces/ml/configmaps";

json config_map(const std::string& name, json owners = json::array()) {
  json o = {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}, {"namespace", "ml"}}}};
  if (!owners.empty()) o["metadata"]["ownerReferences"] = owners;
  return o;
}
json owned_by(const std::string& uid, bool block) {
  return json::array({{{"apiVersion", "v1"},
                       {"kind", "ConfigMap"},
                       {"name", "owner"},
                       {"uid", uid},
                       {"blockOwnerDeletion", block}}});
}

class OwnerReferencesApiTest : public ::testing::Test {
 protected:
  void start(bool plugin) {
    ApiServerOptions options;
    options.authorization = AuthorizationMode::kRbac;
    options.admission_plugins.owner_references_permission_enforcement = plugin;
    options.users.push_back(parse_user_flag(std::string(kAliceToken) + "=alice"));
    api_ = std::make_unique<ApiServer>(options);
    api_->start();
    client_ = std::make_unique<Client>(api_->port(), api_->pki_dir() + "/ca.crt");
    ASSERT_EQ(client_->connect(), "");
    ASSERT_EQ(admin("POST", "/api/v1/namespaces",
                    {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "ml"}}}})
                  .status,
              201);
    const Reply owner = admin("POST", kConfigMaps, config_map("owner"));
    ASSERT_EQ(owner.status, 201);
    owner_uid_ = json::parse(owner.body)["metadata"]["uid"];
    grant({{{"apiGroups", {""}}, {"resources", {"configmaps"}}, {"verbs", {"create", "update"}}}});
    ASSERT_EQ(admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/ml/rolebindings",
                    {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                     {"kind", "RoleBinding"},
                     {"metadata", {{"name", "alice"}, {"namespace", "ml"}}},
                     {"roleRef", {{"kind", "Role"}, {"name", "alice"}}},
                     {"subjects", json::array({{{"kind", "User"}, {"name", "alice"}}})}})
                  .status,
              201);
  }
  // Alice's Role, created or replaced with these rules.
  void grant(json rules) {
    json role = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                 {"kind", "Role"},
                 {"metadata", {{"name", "alice"}, {"namespace", "ml"}}},
                 {"rules", rules}};
    const std::string roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/ml/roles";
    if (admin("GET", roles + "/alice").status == 200) {
      ASSERT_EQ(admin("PUT", roles + "/alice", role).status, 200);
    } else {
      ASSERT_EQ(admin("POST", roles, role).status, 201);
    }
  }
  Reply as(const std::string& token, const std::string& method, const std::string& target,
           const json& body = nullptr) {
    return client_->request(method, target, body.is_null() ? "" : body.dump(),
                            {{"Authorization", "Bearer " + token},
                             {"Content-Type", "application/json"},
                             {"Accept", "application/json"}});
  }
  Reply admin(const std::string& method, const std::string& target, const json& body = nullptr) {
    return as(api_->token(), method, target, body);
  }
  Reply alice(const std::string& method, const std::string& target, const json& body = nullptr) {
    return as(kAliceToken, method, target, body);
  }

  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<Client> client_;
  std::string owner_uid_;
};

TEST_F(OwnerReferencesApiTest, blocking_an_owners_deletion_needs_update_on_its_finalizers) {
  start(/*plugin=*/true);
  const Reply refused = alice("POST", kConfigMaps, config_map("dep", owned_by(owner_uid_, true)));
  ASSERT_EQ(refused.status, 403) << refused.body;
  const json status = json::parse(refused.body);
  EXPECT_EQ(status["reason"], "Forbidden");
  EXPECT_EQ(status["message"],
            "configmaps \"dep\" is forbidden: cannot set blockOwnerDeletion if an ownerReference "
            "refers to a resource you can't set finalizers on: , <nil>");
  // Not blocking: no check of the owner.
  EXPECT_EQ(alice("POST", kConfigMaps, config_map("loose", owned_by(owner_uid_, false))).status,
            201);

  grant({{{"apiGroups", {""}}, {"resources", {"configmaps"}}, {"verbs", {"create", "update"}}},
         {{"apiGroups", {""}},
          {"resources", {"configmaps/finalizers"}},
          {"verbs", {"update"}},
          {"resourceNames", {"owner"}}}});
  EXPECT_EQ(alice("POST", kConfigMaps, config_map("dep", owned_by(owner_uid_, true))).status, 201);

  // Changing the owners of an existing object needs delete on it.
  const Reply update =
      alice("PUT", std::string(kConfigMaps) + "/loose", config_map("loose", json::array()));
  ASSERT_EQ(update.status, 403) << update.body;
  EXPECT_EQ(json::parse(update.body)["message"],
            "configmaps \"loose\" is forbidden: cannot set an ownerRef on a resource you can't "
            "delete: , <nil>");

  // Each check is kept for the RBAC usage report, with its answer.
  std::vector<std::string> checks;
  for (const auto& c : api_->admission_authorization_checks())
    checks.push_back(c.username + " " + c.request.verb + " " + c.request.resource + "/" +
                     c.request.subresource + " " + c.request.name + " " +
                     (c.allowed ? "allowed" : "denied"));
  EXPECT_EQ(checks, (std::vector<std::string>{"alice update configmaps/finalizers owner denied",
                                              "alice update configmaps/finalizers owner allowed",
                                              "alice delete configmaps/ loose denied"}));
}

TEST_F(OwnerReferencesApiTest, without_the_plugin_owners_are_not_checked) {
  start(/*plugin=*/false);
  EXPECT_EQ(alice("POST", kConfigMaps, config_map("dep", owned_by(owner_uid_, true))).status, 201);
  EXPECT_TRUE(api_->admission_authorization_checks().empty());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
