// `commgate-sim --authorization rbac` over real HTTPS: the stored Roles and bindings decide
// each request (sim/rbac_authorizer.h), a denial is kube-apiserver's 403 Status, the admin
// (system:masters) is always allowed, discovery is open to every authenticated user, and
// the default (AlwaysAllow) lets a user do anything.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sim/api_server.h"
#include "tests/server/test_client.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using server::testing::Client;
using server::testing::Reply;
using ms = std::chrono::milliseconds;

constexpr const char* kAliceToken = "alice-token";

json object(const std::string& api_version, const std::string& kind, const std::string& name,
            const std::string& ns = "") {
  json o = {{"apiVersion", api_version}, {"kind", kind}, {"metadata", {{"name", name}}}};
  if (!ns.empty()) o["metadata"]["namespace"] = ns;
  return o;
}

class RbacApiTest : public ::testing::Test {
 protected:
  void start(AuthorizationMode mode) {
    ApiServerOptions options;
    options.authorization = mode;
    options.users.push_back(parse_user_flag(std::string(kAliceToken) + "=alice,researchers"));
    api_ = std::make_unique<ApiServer>(options);
    api_->start();
    client_ = std::make_unique<Client>(api_->port(), api_->pki_dir() + "/ca.crt");
    ASSERT_EQ(client_->connect(), "");
    for (const char* ns : {"ml", "other"})
      ASSERT_EQ(admin("POST", "/api/v1/namespaces", object("v1", "Namespace", ns)).status, 201);
    for (const char* ns : {"ml", "other"})
      ASSERT_EQ(admin("POST", std::string("/api/v1/namespaces/") + ns + "/configmaps",
                      object("v1", "ConfigMap", "settings"))
                    .status,
                201);
    json role = object("rbac.authorization.k8s.io/v1", "Role", "reader", "ml");
    role["rules"] = json::array({{{"apiGroups", {""}},
                                  {"resources", {"configmaps"}},
                                  {"verbs", {"get", "list", "watch"}}}});
    ASSERT_EQ(admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/ml/roles", role).status,
              201);
    json binding = object("rbac.authorization.k8s.io/v1", "RoleBinding", "alice-reads", "ml");
    binding["roleRef"] = {
        {"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "reader"}};
    binding["subjects"] = json::array(
        {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", "alice"}}});
    ASSERT_EQ(
        admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/ml/rolebindings", binding)
            .status,
        201);
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
};

TEST_F(RbacApiTest, a_user_bound_to_a_role_reads_in_its_namespace_and_nothing_more) {
  start(AuthorizationMode::kRbac);
  struct Case {
    std::string name, method, target;
    int want_status;
    std::string want_message;  // the 403's message; "" when allowed
  };
  const Case cases[] = {
      {"get_in_the_bound_namespace", "GET", "/api/v1/namespaces/ml/configmaps/settings", 200, ""},
      {"list_in_the_bound_namespace", "GET", "/api/v1/namespaces/ml/configmaps", 200, ""},
      {"discovery_is_open_to_every_authenticated_user", "GET", "/api", 200, ""},
      {"whoami_is_open_to_every_authenticated_user", "POST",
       "/apis/authentication.k8s.io/v1/selfsubjectreviews", 201, ""},
      {"get_in_another_namespace", "GET", "/api/v1/namespaces/other/configmaps/settings", 403,
       "configmaps \"settings\" is forbidden: User \"alice\" cannot get resource \"configmaps\" "
       "in API group \"\" in the namespace \"other\""},
      {"list_in_another_namespace", "GET", "/api/v1/namespaces/other/configmaps", 403,
       "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group "
       "\"\" in the namespace \"other\""},
      {"list_across_all_namespaces", "GET", "/api/v1/configmaps", 403,
       "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group "
       "\"\" at the cluster scope"},
      {"watch_in_another_namespace", "GET", "/api/v1/namespaces/other/configmaps?watch=1", 403,
       "configmaps is forbidden: User \"alice\" cannot watch resource \"configmaps\" in API "
       "group \"\" in the namespace \"other\""},
      {"a_verb_the_role_does_not_grant", "DELETE", "/api/v1/namespaces/ml/configmaps/settings", 403,
       "configmaps \"settings\" is forbidden: User \"alice\" cannot delete resource "
       "\"configmaps\" in API group \"\" in the namespace \"ml\""},
      {"a_resource_the_role_does_not_grant", "GET", "/api/v1/namespaces/ml/secrets", 403,
       "secrets is forbidden: User \"alice\" cannot list resource \"secrets\" in API group \"\" "
       "in the namespace \"ml\""},
      {"a_non_resource_path_nothing_grants", "GET", "/metrics", 403,
       "forbidden: User \"alice\" cannot get path \"/metrics\""},
  };
  for (const auto& c : cases) {
    const Reply r = alice(c.method, c.target);
    ASSERT_EQ(r.status, c.want_status) << c.name << ": " << r.body;
    if (c.want_status != 403) continue;
    const json body = json::parse(r.body);
    EXPECT_EQ(body["kind"], "Status") << c.name;
    EXPECT_EQ(body["apiVersion"], "v1") << c.name;
    EXPECT_EQ(body["status"], "Failure") << c.name;
    EXPECT_EQ(body["reason"], "Forbidden") << c.name;
    EXPECT_EQ(body["code"], 403) << c.name;
    EXPECT_EQ(body["message"], c.want_message) << c.name;
  }
}

TEST_F(RbacApiTest, a_user_bound_to_a_role_watches_in_its_namespace) {
  start(AuthorizationMode::kRbac);
  Client watcher(api_->port(), api_->pki_dir() + "/ca.crt");
  ASSERT_EQ(watcher.connect(), "");
  watcher.write_raw(
      "GET /api/v1/namespaces/ml/configmaps?watch=1&timeoutSeconds=5 HTTP/1.1\r\nHost: "
      "x\r\nAuthorization: Bearer " +
      std::string(kAliceToken) + "\r\n\r\n");
  EXPECT_TRUE(watcher.read_stream_raw_until("\"type\":\"ADDED\"", ms(5000)));
}

TEST_F(RbacApiTest, a_binding_written_later_takes_effect_on_the_next_request) {
  start(AuthorizationMode::kRbac);
  ASSERT_EQ(alice("GET", "/api/v1/namespaces/other/configmaps").status, 403);
  json binding = object("rbac.authorization.k8s.io/v1", "RoleBinding", "alice-views", "other");
  binding["roleRef"] = {
      {"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "viewer"}};
  binding["subjects"] = json::array(
      {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Group"}, {"name", "researchers"}}});
  ASSERT_EQ(
      admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/other/rolebindings", binding)
          .status,
      201);
  // The binding names a ClusterRole that does not exist yet: the 403 says so, as upstream.
  const Reply missing = alice("GET", "/api/v1/namespaces/other/configmaps");
  ASSERT_EQ(missing.status, 403);
  EXPECT_NE(json::parse(missing.body)["message"].get<std::string>().find(
                "RBAC: clusterrole.rbac.authorization.k8s.io \"viewer\" not found"),
            std::string::npos)
      << missing.body;
  json viewer = object("rbac.authorization.k8s.io/v1", "ClusterRole", "viewer");
  viewer["rules"] =
      json::array({{{"apiGroups", {""}}, {"resources", {"configmaps"}}, {"verbs", {"list"}}}});
  ASSERT_EQ(admin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", viewer).status, 201);
  EXPECT_EQ(alice("GET", "/api/v1/namespaces/other/configmaps").status, 200);
}

// An aggregating ClusterRole (upstream's `edit`: only an aggregationRule) grants what the
// ClusterRoles labelled for it grant, as the clusterrole-aggregation controller fills it;
// a labelled role written later counts from the next request.
TEST_F(RbacApiTest, a_binding_to_an_aggregating_cluster_role_grants_the_labelled_roles_rules) {
  start(AuthorizationMode::kRbac);
  // A role of its own: the bootstrap `edit` already aggregates upstream's rules.
  json edit = object("rbac.authorization.k8s.io/v1", "ClusterRole", "team-edit");
  edit["aggregationRule"] = {
      {"clusterRoleSelectors",
       json::array({{{"matchLabels", {{"example.com/aggregate-to-team-edit", "true"}}}}})}};
  ASSERT_EQ(admin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", edit).status, 201);
  json binding = object("rbac.authorization.k8s.io/v1", "RoleBinding", "alice-edits", "other");
  binding["roleRef"] = {
      {"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "team-edit"}};
  binding["subjects"] = json::array(
      {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", "alice"}}});
  ASSERT_EQ(
      admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/other/rolebindings", binding)
          .status,
      201);
  ASSERT_EQ(alice("DELETE", "/api/v1/namespaces/other/configmaps/settings").status, 403)
      << "team-edit aggregates nothing yet";
  json labelled = object("rbac.authorization.k8s.io/v1", "ClusterRole", "configmaps-edit");
  labelled["metadata"]["labels"] = {{"example.com/aggregate-to-team-edit", "true"}};
  labelled["rules"] = json::array(
      {{{"apiGroups", {""}}, {"resources", {"configmaps"}}, {"verbs", {"get", "delete"}}}});
  ASSERT_EQ(admin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", labelled).status, 201);
  EXPECT_EQ(alice("DELETE", "/api/v1/namespaces/other/configmaps/settings").status, 200);
  // In the binding's namespace only, and only what the labelled role grants.
  EXPECT_EQ(alice("DELETE", "/api/v1/namespaces/ml/configmaps/settings").status, 403);
  EXPECT_EQ(alice("GET", "/api/v1/namespaces/other/configmaps").status, 403);
  // The label taken off: the grant goes with it.
  labelled = json::parse(
      admin("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/configmaps-edit").body);
  labelled["metadata"]["labels"] = json::object();
  ASSERT_EQ(
      admin("PUT", "/apis/rbac.authorization.k8s.io/v1/clusterroles/configmaps-edit", labelled)
          .status,
      200);
  EXPECT_EQ(alice("GET", "/api/v1/namespaces/other/configmaps/settings").status, 403);
}

TEST_F(RbacApiTest, the_admin_is_always_allowed) {
  start(AuthorizationMode::kRbac);
  EXPECT_EQ(admin("GET", "/api/v1/configmaps").status, 200);
  EXPECT_EQ(admin("DELETE", "/api/v1/namespaces/other/configmaps/settings").status, 200);
  EXPECT_EQ(admin("GET", "/metrics").status, 404);  // allowed, then not served
}

TEST_F(RbacApiTest, without_rbac_every_authenticated_user_may_do_anything) {
  start(AuthorizationMode::kAlwaysAllow);
  EXPECT_EQ(alice("GET", "/api/v1/namespaces/other/configmaps").status, 200);
  EXPECT_EQ(alice("DELETE", "/api/v1/namespaces/other/configmaps/settings").status, 200);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
