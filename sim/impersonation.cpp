#include "sim/impersonation.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "sim/api_status.h"

namespace commgate::sim {
namespace {

constexpr std::string_view kUserHeader = "Impersonate-User";
constexpr std::string_view kGroupHeader = "Impersonate-Group";
constexpr std::string_view kUidHeader = "Impersonate-Uid";
constexpr std::string_view kExtraPrefix = "Impersonate-Extra-";
constexpr const char* kAuthenticationV1 = "authentication.k8s.io/v1";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool starts_with_ignoring_case(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && server::header_name_equal(s.substr(0, prefix.size()), prefix);
}

// DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63.
bool dns_label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s)
    if (!(std::islower(static_cast<unsigned char>(c)) ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
      return false;
  return s.front() != '-' && s.back() != '-';
}

// DNS-1123 subdomain: labels joined by dots, at most 253.
bool dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (std::size_t from = 0;;) {
    const auto dot = s.find('.', from);
    if (!dns_label(
            s.substr(from, dot == std::string_view::npos ? std::string_view::npos : dot - from)))
      return false;
    if (dot == std::string_view::npos) return true;
    from = dot + 1;
  }
}

// serviceaccount.SplitUsername: "system:serviceaccount:<ns>:<name>" with a valid namespace
// and service account name; anything else names a plain user.
bool split_service_account(const std::string& username, std::string& ns, std::string& name) {
  if (username.rfind(kServiceAccountPrefix, 0) != 0) return false;
  const std::string rest = username.substr(kServiceAccountPrefix.size());
  const auto colon = rest.find(':');
  if (colon == std::string::npos || rest.find(':', colon + 1) != std::string::npos) return false;
  ns = rest.substr(0, colon);
  name = rest.substr(colon + 1);
  return dns_label(ns) && dns_subdomain(name);
}

// url.PathUnescape; a malformed escape leaves the key as sent.
std::string path_unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(s[i + 2])))
      return s;
    out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
    i += 2;
  }
  return out;
}

// A part as Go's %v prints the v1.ObjectReference upstream builds for it (Kind Namespace
// Name UID APIVersion ResourceVersion FieldPath).
std::string go_object_reference(const ImpersonationPart& p) {
  using K = ImpersonationPart::Kind;
  const char* kind = p.kind == K::kUser             ? "User"
                     : p.kind == K::kServiceAccount ? "ServiceAccount"
                     : p.kind == K::kGroup          ? "Group"
                     : p.kind == K::kUserExtra      ? "UserExtra"
                                                    : "UID";
  const bool v1 = p.kind == K::kUserExtra || p.kind == K::kUid;
  return std::string("{") + kind + " " + p.ns + " " + p.name + "  " +
         (v1 ? kAuthenticationV1 : "") + "  " + p.extra_key + "}";
}

}  // namespace

std::vector<ImpersonationPart> impersonation_parts(const server::HeaderList& headers) {
  using K = ImpersonationPart::Kind;
  std::vector<ImpersonationPart> parts;
  // http.Header.Get: the first value.
  std::string user, uid;
  bool user_seen = false, uid_seen = false;
  for (const auto& [name, value] : headers) {
    if (!user_seen && server::header_name_equal(name, kUserHeader)) {
      user = value;
      user_seen = true;
    }
    if (!uid_seen && server::header_name_equal(name, kUidHeader)) {
      uid = value;
      uid_seen = true;
    }
  }
  const bool has_user = !user.empty();
  if (has_user) {
    ImpersonationPart p;
    if (split_service_account(user, p.ns, p.name)) {
      p.kind = K::kServiceAccount;
    } else {
      p.kind = K::kUser;
      p.name = user;
    }
    parts.push_back(std::move(p));
  }
  bool has_groups = false, has_extra = false;
  for (const auto& [name, value] : headers)
    if (server::header_name_equal(name, kGroupHeader)) {
      has_groups = true;
      parts.push_back({K::kGroup, value, "", ""});
    }
  for (const auto& [name, value] : headers)
    if (name.size() > kExtraPrefix.size() && starts_with_ignoring_case(name, kExtraPrefix)) {
      has_extra = true;
      parts.push_back(
          {K::kUserExtra, value, "", path_unescape(lower(name.substr(kExtraPrefix.size())))});
    }
  const bool has_uid = !uid.empty();
  if (has_uid) parts.push_back({K::kUid, uid, "", ""});
  if ((has_groups || has_extra || has_uid) && !has_user) {
    std::string list;
    for (const auto& p : parts) list += (list.empty() ? "" : " ") + go_object_reference(p);
    throw std::invalid_argument("requested [" + list + "] without impersonating a user");
  }
  return parts;
}

RequestAttributes impersonation_attributes(const ImpersonationPart& part) {
  using K = ImpersonationPart::Kind;
  RequestAttributes a;
  a.resource_request = true;
  a.verb = "impersonate";
  a.name = part.name;
  a.ns = part.ns;
  switch (part.kind) {
    case K::kUser:
      a.resource = "users";
      a.api_version = "v1";
      break;
    case K::kServiceAccount:
      a.resource = "serviceaccounts";
      a.api_version = "v1";
      break;
    case K::kGroup:
      a.resource = "groups";
      a.api_version = "v1";
      break;
    case K::kUserExtra:
      a.api_group = "authentication.k8s.io";
      a.api_version = "v1";
      a.resource = "userextras";
      a.subresource = part.extra_key;
      break;
    case K::kUid:
      a.api_group = "authentication.k8s.io";
      a.api_version = "v1";
      a.resource = "uids";
      break;
  }
  return a;
}

UserInfo impersonated_user(const std::vector<ImpersonationPart>& parts) {
  using K = ImpersonationPart::Kind;
  const bool groups_specified =
      std::any_of(parts.begin(), parts.end(), [](const auto& p) { return p.kind == K::kGroup; });
  UserInfo out;
  for (const auto& p : parts) {
    switch (p.kind) {
      case K::kServiceAccount:
        out.username = std::string(kServiceAccountPrefix) + p.ns + ":" + p.name;
        // Upstream replaces the groups so far (none: the user comes first).
        if (!groups_specified)
          out.groups = {"system:serviceaccounts", "system:serviceaccounts:" + p.ns};
        break;
      case K::kUser:
        out.username = p.name;
        break;
      case K::kGroup:
        out.groups.push_back(p.name);
        break;
      case K::kUserExtra:
        out.extra[p.extra_key].push_back(p.name);
        break;
      case K::kUid:
        out.uid = p.name;
        break;
    }
  }
  const auto has = [&](const char* g) {
    return std::find(out.groups.begin(), out.groups.end(), g) != out.groups.end();
  };
  if (out.username != "system:anonymous") {
    if (!has("system:authenticated") && !has("system:unauthenticated"))
      out.groups.push_back("system:authenticated");
  } else {
    add_group_once(out.groups, "system:unauthenticated");
  }
  return out;
}

std::optional<UserInfo> impersonate(const server::HeaderList& headers, const UserInfo& requester,
                                    const ImpersonationAuthorizer& authorize) {
  std::vector<ImpersonationPart> parts;
  try {
    parts = impersonation_parts(headers);
  } catch (const std::invalid_argument& e) {
    throw ApiError(
        failure_status(500, "InternalError", std::string("Internal error occurred: ") + e.what()));
  }
  if (parts.empty()) return std::nullopt;
  for (const auto& part : parts) {
    const RequestAttributes attributes = impersonation_attributes(part);
    const Authorization decision = authorize(requester, attributes);
    if (!decision.allowed) throw ApiError(forbidden_status(requester, attributes, decision.reason));
  }
  return impersonated_user(parts);
}

}  // namespace commgate::sim
