// User impersonation as kube-apiserver does it (k8s.io/apiserver pkg/endpoints/filters/
// impersonation.go; kubectl's --as, --as-group, --as-uid): a request that carries
// `Impersonate-User`, `Impersonate-Group` (repeatable), `Impersonate-Uid` or
// `Impersonate-Extra-<key>` headers acts as the user they name, once the requester is
// allowed the verb `impersonate` on each part:
//   users <name> / serviceaccounts <name> in <namespace> / groups <name> (API group ""),
//   uids <uid> / userextras/<key> <value> (API group authentication.k8s.io).
// A refusal is the 403 Status of the first part refused, naming the requester (`users
// "carol" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at
// the cluster scope`). Groups, uid or extras without a user is a 500, as upstream.
// The impersonated user: a service account (`system:serviceaccount:<ns>:<name>`) gets
// system:serviceaccounts and system:serviceaccounts:<ns> unless groups were given; every
// user then system:authenticated unless system:authenticated or system:unauthenticated is
// among its groups. What follows (authorization, admission's userInfo, SelfSubjectReview)
// sees only the impersonated user; the audit log keeps the requester as `user` and adds
// `impersonatedUser`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "server/http.h"
#include "sim/authentication.h"
#include "sim/rbac_authorizer.h"

namespace commgate::sim {

// One thing a request asks to act as (upstream's ObjectReference per part).
struct ImpersonationPart {
  enum class Kind { kUser, kServiceAccount, kGroup, kUserExtra, kUid };
  Kind kind = Kind::kUser;
  std::string name;       // the user, account, group or uid; the extra's value
  std::string ns;         // a service account's namespace
  std::string extra_key;  // a UserExtra's key: lower case, %-decoded
};

// The parts the request's headers ask for, in upstream's order (user, groups, extras in
// header order, uid); empty when it impersonates no one. An empty Impersonate-User counts
// as none. Throws std::invalid_argument (upstream's 500 message, `requested [...] without
// impersonating a user`) for groups, extras or a uid without a user.
std::vector<ImpersonationPart> impersonation_parts(const server::HeaderList& headers);

// The check made for a part: verb impersonate on users/groups/serviceaccounts/uids/
// userextras, named by the part.
RequestAttributes impersonation_attributes(const ImpersonationPart& part);

// The user the parts make (as above; `parts` not empty).
UserInfo impersonated_user(const std::vector<ImpersonationPart>& parts);

// Who the request acts as: nullopt when its headers impersonate no one; else the
// impersonated user once `authorize` allowed `requester` every part. Throws ApiError:
// 403 (forbidden_status for the requester and the refused part), 500 for malformed headers.
using ImpersonationAuthorizer =
    std::function<Authorization(const UserInfo& requester, const RequestAttributes& request)>;
std::optional<UserInfo> impersonate(const server::HeaderList& headers, const UserInfo& requester,
                                    const ImpersonationAuthorizer& authorize);

}  // namespace commgate::sim
