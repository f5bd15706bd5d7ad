// Who a request is: the sim's stand-in for kube-apiserver's authentication with static
// bearer tokens (the `--token-auth-file` authenticator). The admin token stands for
// kubeadm's `kubernetes-admin` (group system:masters); more users are added with their
// token (`commgate-sim --user TOKEN=USERNAME[,GROUP...]`), so a component can run as its
// service account and webhooks see that name in AdmissionReview.request.userInfo. The
// identity is kept in each request's context for the handlers (and an authorizer).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commgate::sim {

struct UserInfo {
  std::string username;
  std::vector<std::string> groups;
  // Set only by impersonation (Impersonate-Uid, Impersonate-Extra-<key>; impersonation.h).
  std::string uid = {};
  std::map<std::string, std::vector<std::string>> extra = {};
};

// authentication.k8s.io/v1 UserInfo as kube-apiserver writes it (AdmissionReview's
// request.userInfo, SelfSubjectReview's status.userInfo, the audit log's user): username and
// groups, then uid and extra only when set.
nlohmann::json to_json(const UserInfo& user);

// One user the sim knows, by the bearer token that stands for it.
struct TokenUser {
  std::string token;
  UserInfo user;
};

inline constexpr const char* kAdminUsername = "kubernetes-admin";
// A service account's username: system:serviceaccount:<namespace>:<name>.
inline constexpr std::string_view kServiceAccountPrefix = "system:serviceaccount:";

// Appends `group` unless `groups` holds it already (a user's groups are a set, in order).
void add_group_once(std::vector<std::string>& groups, const std::string& group);

// The groups kube-apiserver gives an authenticated user besides its own: a service
// account's (`system:serviceaccount:<ns>:<name>` → system:serviceaccounts,
// system:serviceaccounts:<ns>), then system:authenticated; none twice.
UserInfo with_implied_groups(UserInfo user);

// Parses the --user flag: "TOKEN=USERNAME[,GROUP...]" (groups as given, then the implied
// ones). Throws std::invalid_argument saying what is wrong (an empty token or name, a
// character that cannot be in a bearer token, an empty group).
TokenUser parse_user_flag(const std::string& text);

// The `Authorization` header's bearer token as upstream reads it ("Bearer" in any case,
// one space, the token up to the next space; the header trimmed first); nullopt when
// there is none.
std::optional<std::string> bearer_token(std::string_view authorization);

class TokenAuthenticator {
 public:
  // `admin_token` stands for kubernetes-admin (system:masters, system:authenticated);
  // "" turns authentication off (every request is the admin). Throws
  // std::invalid_argument when a token is given twice or a user has no token.
  explicit TokenAuthenticator(std::string admin_token = "", std::vector<TokenUser> users = {});

  // The user the request's `Authorization` header names; nullopt: 401 Unauthorized.
  std::optional<UserInfo> authenticate(std::string_view authorization) const;
  // The token of a user by name (the admin's too); nullopt when the sim does not know it.
  std::optional<std::string> token_of(const std::string& username) const;
  const std::vector<TokenUser>& users() const { return users_; }

 private:
  std::string admin_token_;
  std::vector<TokenUser> users_;
  std::map<std::string, UserInfo, std::less<>> by_token_;
};

}  // namespace commgate::sim
