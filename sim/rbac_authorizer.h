// Kubernetes RBAC authorization as kube-apiserver does it (plugin/pkg/auth/authorizer/rbac,
// pkg/apis/rbac/v1 helpers, apiserver/pkg/endpoints/request's RequestInfoFactory), as pure
// functions: who asks (a user and groups), what for (the request's attributes), and the
// Roles, ClusterRoles, RoleBindings and ClusterRoleBindings as the API stores them.
//
// Modelled:
//  - ClusterRoleBindings grant everywhere; RoleBindings grant in their namespace only,
//    whether they reference a Role (of that namespace) or a ClusterRole. ClusterRoleBindings
//    are visited first, then the request namespace's RoleBindings, each by name.
//  - A rule allows when its verbs, apiGroups, resources and resourceNames all match:
//    `*` matches any verb, group or resource; a resource with a subresource matches only
//    "resource/subresource" or "*/subresource" (a rule for "pods" does not grant
//    "pods/status"); empty resourceNames match any name, otherwise the request's name must
//    be listed (so a list, a watch or a create, which name nothing, never match a rule with
//    resourceNames). Non-resource URLs: exact, `*`, or a trailing `*` prefix; only
//    ClusterRoleBindings grant them.
//  - Subjects: User (by name), Group (one of the user's groups), ServiceAccount (the user
//    system:serviceaccount:<namespace>:<name>; a subject without a namespace takes a
//    RoleBinding's). Group system:masters is always allowed (kube-apiserver's privileged
//    group authorizer, ahead of RBAC).
//  - Reasons as kube-apiserver writes them: `RBAC: allowed by ClusterRoleBinding "b" of
//    ClusterRole "r" to ServiceAccount "sa/ns"`; a denial's reason is "" unless a binding
//    referenced a missing role (`RBAC: clusterrole.rbac.authorization.k8s.io "x" not
//    found`), and the 403 Status names the user, verb, resource and scope.
//  - A request's attributes from its method, path and query, as RequestInfoFactory reads
//    them (list/watch/deletecollection, namespaces/<name> scoped to that namespace,
//    subresources, a fieldSelector metadata.name=<x> naming the object).
//  - Aggregated ClusterRoles: aggregate_cluster_roles() fills an aggregating ClusterRole's
//    rules as kube-controller-manager's clusterrole-aggregation controller does; the API
//    server's authorizer applies it to the stored ClusterRoles before each decision.
// Shortcuts: the aggregated rules are computed when authorizing, not written back to the
// stored ClusterRole (`kubectl get clusterrole edit -o yaml` shows the rules as written); no
// escalation/bind checks on writes of RBAC objects, no Node or Webhook authorizer.
// Impersonation (verb impersonate on users, groups, serviceaccounts, uids, userextras) is
// checked with authorize() by impersonation.h.
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/audit_log.h"       // AuditEvent: the requests a usage report reads
#include "sim/authentication.h"  // UserInfo: who asks (username, groups)

namespace commgate::sim {

// The user a service-account token authenticates as, with the groups kube-apiserver adds
// (with_implied_groups): system:serviceaccounts, system:serviceaccounts:<namespace>,
// system:authenticated.
UserInfo service_account_user(const std::string& ns, const std::string& name);

struct RequestAttributes {
  bool resource_request = true;
  std::string verb;         // get list watch create update patch delete deletecollection
                            // (resource); get post put patch delete head (non-resource)
  std::string api_group;    // "" for the core group
  std::string api_version;  // "v1"; only for the 403's group-version, never matched
  std::string resource;     // plural: "pods"
  std::string subresource;  // "status", "scale", "" for none
  std::string ns;           // "" at the cluster scope (cluster-scoped, or all namespaces)
  std::string name;         // "" for list, watch, create, deletecollection
  std::string path;         // the URL path (non-resource requests are matched by it)
};

// The RBAC objects as stored (rbac.authorization.k8s.io/v1 JSON).
struct RbacObjects {
  std::vector<nlohmann::json> roles, cluster_roles, role_bindings, cluster_role_bindings;
  // Picks the four kinds out of any list of objects (e.g. a rendered chart); others are
  // ignored.
  static RbacObjects from(const std::vector<nlohmann::json>& objects);
};

struct Authorization {
  bool allowed = false;
  // Allowed: which binding, role and subject allowed it. Denied: "" when no rule matched,
  // else "RBAC: " and the errors met (a binding to a missing role), as kube-apiserver
  // appends to the 403's message.
  std::string reason;
};

Authorization authorize(const UserInfo& user, const RequestAttributes& request,
                        const RbacObjects& rbac);

// The request's attributes as kube-apiserver's RequestInfoFactory reads them.
// `watch`: the decoded watch query parameter; `field_selector`: the raw fieldSelector
// (metadata.name=<x> names the object of a list or watch).
RequestAttributes request_attributes(std::string_view method, std::string_view path, bool watch,
                                     std::string_view field_selector = "");

// The 403 Forbidden Status kube-apiserver answers a denied request with, e.g.
// `jobs.batch "x" is forbidden: User "u" cannot delete resource "jobs" in API group
// "batch" in the namespace "ml"`.
nlohmann::json forbidden_status(const UserInfo& user, const RequestAttributes& request,
                                const std::string& reason);

// kube-controller-manager's clusterrole-aggregation controller
// (pkg/controller/clusterroleaggregation), run until nothing changes: each ClusterRole with
// an aggregationRule gets as its rules those of every other ClusterRole matched by one of
// its clusterRoleSelectors (metav1.LabelSelector on the ClusterRole's labels), selector by
// selector, the matches sorted by name, a rule already taken (the same rule, field for
// field) taken once. Its own stored rules are replaced. Aggregation is transitive as
// upstream's converges to it: `admin` selects `edit` (labelled aggregate-to-admin), which
// selects `view`. A role whose selector cannot be read (an unknown operator) keeps its
// stored rules, as the controller fails its sync. Roles without an aggregationRule are
// returned unchanged, in the same order.
std::vector<nlohmann::json> aggregate_cluster_roles(std::vector<nlohmann::json> cluster_roles);

// The part of kube-apiserver's bootstrap policy (plugin/pkg/auth/authorizer/rbac/
// bootstrappolicy) that every authenticated user relies on and that the sim's store does
// not hold: ClusterRoles system:discovery and system:public-info-viewer (the discovery,
// OpenAPI, version and health URLs) and system:basic-user (create selfsubjectreviews,
// selfsubjectaccessreviews, selfsubjectrulesreviews), each bound to system:authenticated
// by a ClusterRoleBinding of the same name. And the user-facing roles an admin binds
// (issue #20 defect 5): cluster-admin, and admin, edit and view with their aggregation
// (each an aggregationRule over rbac.authorization.k8s.io/aggregate-to-<role>; edit is
// labelled aggregate-to-admin, view aggregate-to-edit) and the rules of
// system:aggregate-to-admin, -edit and -view, rule for rule as upstream's
// testdata/cluster-roles.yaml (Kubernetes 1.32) lists them. A stored ClusterRole of the
// same name replaces a bootstrap one (as an admin's edit of an autoupdated role would
// stand until the API server restarts). Authorization only: they are not in the store, so
// `kubectl get clusterrole edit` does not show them.
RbacObjects bootstrap_rbac();

// ---- Which rule each request used, and which grants none used (RBAC proven, not assumed) ----

// One (apiGroup, resource, verb) of one rule of one role: the unit in which a grant is used
// or not. A rule with two resources and three verbs is six grants.
struct Grant {
  std::string role;      // `ClusterRole "commgate-operator"`, `Role "ns/leader-election"`
  std::size_t rule = 0;  // the rule's index in the role's rules
  std::string api_group;
  std::string resource;  // as written: "pods", "trainingjobs/status", "*"
  std::string verb;
  std::vector<std::string> resource_names;  // the rule's, [] for any name
  auto operator<=>(const Grant&) const = default;
};
// `ClusterRole "x" rule 2: update "trainingjobs/status" in API group "commgate.io"` (and
// ` named [a, b]` when the rule names objects).
std::string to_string(const Grant& grant);

// The rule that allows a request, as authorize() visits the bindings (the first that
// allows), given as the Grant the request used; nullopt when none allows it (denied, or
// allowed only as system:masters).
std::optional<Grant> grant_used(const UserInfo& user, const RequestAttributes& request,
                                const RbacObjects& rbac);

// Every grant the roles bound to `user` give it (bindings that apply to the user: by name,
// group or service account), each role once.
std::vector<Grant> grants_of(const UserInfo& user, const RbacObjects& rbac);

// A request of the audit log as the authorizer saw it: the verb, resource, subresource,
// namespace and name kube-apiserver's RequestInfoFactory reads from the method (from the
// audit verb) and the request URI (a list's fieldSelector metadata.name=x names x; a
// namespace's own requests are scoped to it).
RequestAttributes request_attributes(const AuditEvent& event);

// An authorization check made inside a request rather than by one (an admission plugin
// asking whether the requester may update an owner's finalizers): it is not in the audit
// log, yet it uses a grant.
struct AuthorizationCheck {
  std::string username;
  RequestAttributes request;
  bool allowed = false;
  std::string by;  // who asked: "OwnerReferencesPermissionEnforcement"
};

struct RequestUse {
  AuditEvent event;
  std::optional<Grant> grant;  // nullopt: no rule of the given objects allowed it
};
struct CheckUse {
  AuthorizationCheck check;
  std::optional<Grant> grant;
};
struct RbacUsage {
  std::vector<RequestUse> requests;  // the service account's requests, oldest first
  std::vector<CheckUse> checks;      // the checks made for its requests, oldest first
  std::vector<Grant> unused;         // its grants that no request or check used, sorted
};
// For each ServiceAccount a binding of `rbac` names (key: its username,
// system:serviceaccount:<ns>:<name>): which grant each of its requests in `events` used,
// and which of its grants no request used. Every request counts, whatever its answer (a
// request the authorizer allowed and a webhook refused still used its grant; a 403 used
// none), and so does every check in `checks`. Pass the roles under test without bootstrap_rbac(),
// so discovery requests show as using no grant rather than as uses of system:discovery. `checks`:
// the authorization checks admission made (Admission::authorization_checks()).
std::map<std::string, RbacUsage> rbac_usage(const RbacObjects& rbac,
                                            const std::vector<AuditEvent>& events,
                                            const std::vector<AuthorizationCheck>& checks = {});

}  // namespace commgate::sim
