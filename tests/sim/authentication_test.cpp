// Who a request is (sim/authentication.h): the --user flag, the groups kube-apiserver
// implies, the Authorization header as upstream reads it, and the token table.
#include "sim/authentication.h"

#include <gtest/gtest.h>

#include "core/yaml_json.h"
#include "sim/kubeconfig.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using Groups = std::vector<std::string>;
constexpr const char* kOperator = "system:serviceaccount:commgate-system:commgate-operator";

TEST(ParseUserFlag, a_name_with_colons_and_groups_after_commas) {
  struct Case {
    std::string name, text, want_token, want_user;
    Groups want_groups;
  };
  const Case cases[] = {
      {"a_service_account_gets_its_groups",
       std::string("op-token=") + kOperator,
       "op-token",
       kOperator,
       {"system:serviceaccounts", "system:serviceaccounts:commgate-system",
        "system:authenticated"}},
      {"a_person_with_groups_keeps_them_in_order",
       "t1=alice,researchers,nlp",
       "t1",
       "alice",
       {"researchers", "nlp", "system:authenticated"}},
      {"a_person_without_groups_is_authenticated", "t2=bob", "t2", "bob", {"system:authenticated"}},
      {"a_group_given_twice_counts_once",
       "t3=carol,ml,ml,system:authenticated",
       "t3",
       "carol",
       {"ml", "system:authenticated"}},
      {"the_token_ends_at_the_first_equals_sign", "a=b=c", "a", "b=c", {"system:authenticated"}},
      {"a_malformed_service_account_name_gets_no_service_account_groups",
       "t4=system:serviceaccount:only-namespace",
       "t4",
       "system:serviceaccount:only-namespace",
       {"system:authenticated"}},
  };
  for (const auto& c : cases) {
    const TokenUser u = parse_user_flag(c.text);
    EXPECT_EQ(u.token, c.want_token) << c.name;
    EXPECT_EQ(u.user.username, c.want_user) << c.name;
    EXPECT_EQ(u.user.groups, c.want_groups) << c.name;
  }
}

TEST(ParseUserFlag, refuses_what_cannot_be_a_user_and_says_why) {
  const std::pair<std::string, std::string> cases[] = {
      {"no-equals-sign", "wants TOKEN=USERNAME"}, {"=alice", "the token is empty"},
      {"tok=", "the user name is empty"},         {"tok=,admins", "the user name is empty"},
      {"tok=alice,,admins", "group 1 is empty"},  {"to k=alice", "cannot hold spaces"},
  };
  for (const auto& [text, want] : cases) {
    try {
      parse_user_flag(text);
      ADD_FAILURE() << text << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << text << ": " << e.what();
    }
  }
}

TEST(BearerToken, read_as_kube_apiservers_bearertoken_authenticator_reads_it) {
  const std::pair<std::string, std::optional<std::string>> cases[] = {
      {"Bearer abc", "abc"},
      {"bearer abc", "abc"},
      {"BEARER abc", "abc"},
      {"  Bearer abc  ", "abc"},
      {"Bearer abc extra", "abc"},
      {"Bearer  abc", std::nullopt},  // two spaces: the token is the empty string between them
      {"Bearer", std::nullopt},
      {"Bearer ", std::nullopt},
      {"Basic YWxpY2U6cHc=", std::nullopt},
      {"", std::nullopt},
  };
  for (const auto& [header, want] : cases) EXPECT_EQ(bearer_token(header), want) << header;
}

TEST(TokenAuthenticator, each_token_is_its_user_and_an_unknown_one_nobody) {
  const TokenAuthenticator authn("admin-token",
                                 {parse_user_flag(std::string("op-token=") + kOperator),
                                  parse_user_flag("alice-token=alice,researchers")});
  const auto admin = authn.authenticate("Bearer admin-token");
  ASSERT_TRUE(admin);
  EXPECT_EQ(admin->username, "kubernetes-admin");
  EXPECT_EQ(admin->groups, (Groups{"system:masters", "system:authenticated"}));
  const auto op = authn.authenticate("Bearer op-token");
  ASSERT_TRUE(op);
  EXPECT_EQ(op->username, kOperator);
  EXPECT_EQ(op->groups, (Groups{"system:serviceaccounts", "system:serviceaccounts:commgate-system",
                                "system:authenticated"}));
  EXPECT_EQ(authn.authenticate("Bearer alice-token")->username, "alice");
  EXPECT_FALSE(authn.authenticate("Bearer nobody"));
  EXPECT_FALSE(authn.authenticate(""));
  EXPECT_EQ(authn.token_of(kOperator), "op-token");
  EXPECT_EQ(authn.token_of("kubernetes-admin"), "admin-token");
  EXPECT_FALSE(authn.token_of("mallory"));
}

TEST(TokenAuthenticator, a_token_given_twice_is_refused_at_start) {
  EXPECT_THROW(TokenAuthenticator("same", {parse_user_flag("same=alice")}), std::invalid_argument);
  EXPECT_THROW(TokenAuthenticator("admin", {parse_user_flag("t=alice"), parse_user_flag("t=bob")}),
               std::invalid_argument);
}

TEST(TokenAuthenticator, without_tokens_everybody_is_the_admin) {
  const TokenAuthenticator open;
  const auto user = open.authenticate("");
  ASSERT_TRUE(user);
  EXPECT_EQ(user->username, "kubernetes-admin");
}

TEST(Kubeconfig, a_service_accounts_kubeconfig_names_it_and_defaults_to_its_namespace) {
  EXPECT_EQ(default_namespace_of(kOperator), "commgate-system");
  EXPECT_EQ(default_namespace_of("alice"), "default");
  EXPECT_EQ(default_namespace_of("system:serviceaccount:ns-only"), "default");
  const auto docs = yaml_documents_to_json(
      kubeconfig_yaml("https://127.0.0.1:1", "CA", "00123", kOperator, "commgate-system"));
  ASSERT_EQ(docs.size(), 1u);
  const auto& k = docs[0];
  EXPECT_EQ(k["users"][0]["name"], kOperator);
  EXPECT_EQ(k["users"][0]["user"]["token"], "00123");  // a string, not the number 123
  EXPECT_EQ(k["contexts"][0]["context"]["user"], kOperator);
  EXPECT_EQ(k["contexts"][0]["context"]["namespace"], "commgate-system");
}

}  // namespace
}  // namespace commgate::sim
