#include "sim/authentication.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace commgate::sim {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

void add_group_once(std::vector<std::string>& groups, const std::string& group) {
  if (std::find(groups.begin(), groups.end(), group) == groups.end()) groups.push_back(group);
}

nlohmann::json to_json(const UserInfo& user) {
  nlohmann::json out = {{"username", user.username}, {"groups", user.groups}};
  if (!user.uid.empty()) out["uid"] = user.uid;
  if (!user.extra.empty()) out["extra"] = user.extra;
  return out;
}

UserInfo with_implied_groups(UserInfo user) {
  // serviceaccount.UserInfo: "system:serviceaccount:<ns>:<name>" with both parts non-empty.
  const std::string& name = user.username;
  if (name.rfind(kServiceAccountPrefix, 0) == 0) {
    const std::string rest = name.substr(kServiceAccountPrefix.size());
    const auto colon = rest.find(':');
    if (colon != std::string::npos && colon > 0 && colon + 1 < rest.size() &&
        rest.find(':', colon + 1) == std::string::npos) {
      add_group_once(user.groups, "system:serviceaccounts");
      add_group_once(user.groups, "system:serviceaccounts:" + rest.substr(0, colon));
    }
  }
  add_group_once(user.groups, "system:authenticated");
  return user;
}

TokenUser parse_user_flag(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos)
    throw std::invalid_argument("--user wants TOKEN=USERNAME[,GROUP...], got \"" + text + "\"");
  TokenUser out;
  out.token = text.substr(0, eq);
  if (out.token.empty()) throw std::invalid_argument("--user \"" + text + "\": the token is empty");
  for (char c : out.token)
    if (std::isspace(static_cast<unsigned char>(c)) || c == ',' || !std::isprint(c))
      throw std::invalid_argument("--user \"" + text +
                                  "\": a bearer token cannot hold spaces, commas or control "
                                  "characters");
  std::vector<std::string> parts;
  std::string rest = text.substr(eq + 1);
  for (std::size_t from = 0;;) {
    const auto comma = rest.find(',', from);
    parts.push_back(
        rest.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (parts[0].empty())
    throw std::invalid_argument("--user \"" + text + "\": the user name is empty");
  out.user.username = parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].empty())
      throw std::invalid_argument("--user \"" + text + "\": group " + std::to_string(i) +
                                  " is empty");
    add_group_once(out.user.groups, parts[i]);
  }
  out.user = with_implied_groups(std::move(out.user));
  return out;
}

std::optional<std::string> bearer_token(std::string_view authorization) {
  // k8s.io/apiserver pkg/authentication/request/bearertoken: the header trimmed, split
  // in at most three at single spaces; "bearer" in any case, then the token (what
  // follows another space is ignored); an empty token authenticates nobody.
  const std::string_view v = trim(authorization);
  const auto space = v.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string scheme(v.substr(0, space));
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view token = v.substr(space + 1);
  token = token.substr(0, token.find(' '));
  if (scheme != "bearer" || token.empty()) return std::nullopt;
  return std::string(token);
}

TokenAuthenticator::TokenAuthenticator(std::string admin_token, std::vector<TokenUser> users)
    : admin_token_(std::move(admin_token)), users_(std::move(users)) {
  if (!admin_token_.empty())
    by_token_[admin_token_] = {kAdminUsername, {"system:masters", "system:authenticated"}};
  for (const auto& u : users_) {
    if (u.token.empty())
      throw std::invalid_argument("user \"" + u.user.username + "\" has no token");
    if (!by_token_.emplace(u.token, with_implied_groups(u.user)).second)
      throw std::invalid_argument("the token of user \"" + u.user.username +
                                  "\" is already another user's");
  }
}

std::optional<UserInfo> TokenAuthenticator::authenticate(std::string_view authorization) const {
  if (admin_token_.empty() && users_.empty())
    return UserInfo{kAdminUsername, {"system:masters", "system:authenticated"}};
  const auto token = bearer_token(authorization);
  if (!token) return std::nullopt;
  const auto it = by_token_.find(*token);
  if (it == by_token_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> TokenAuthenticator::token_of(const std::string& username) const {
  if (username == kAdminUsername && !admin_token_.empty()) return admin_token_;
  for (const auto& u : users_)
    if (u.user.username == username) return u.token;
  return std::nullopt;
}

}  // namespace commgate::sim
