// OwnerReferencesPermissionEnforcement (sim/admission_rules.h: owner_references_denial), as
// kube-apiserver's plugin/pkg/admission/gc does it, table-driven: each case is one write by
// a user holding some RBAC rules, and whether the plugin lets it through or the 403 message
// it answers.
#include <gtest/gtest.h>

#include <ostream>

#include "sim/admission_rules.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

const UserInfo kOperator = service_account_user("ops", "operator");

ResourceInfo resource(std::string group, std::string version, std::string plural, std::string kind,
                      bool namespaced = true) {
  ResourceInfo r;
  r.group = std::move(group);
  r.version = std::move(version);
  r.plural = std::move(plural);
  r.kind = std::move(kind);
  r.namespaced = namespaced;
  return r;
}
const ResourceInfo kJobs = resource("batch", "v1", "jobs", "Job");
const ResourceInfo kPods = resource("", "v1", "pods", "Pod");
const std::vector<ResourceInfo> kServed = {
    kJobs, kPods, resource("commgate.io", "v1alpha1", "trainingjobs", "TrainingJob"),
    resource("commgate.io", "v1alpha1", "commprofiles", "CommProfile", false)};

std::vector<ResourceInfo> resources_of_kind(const std::string& group, const std::string& version,
                                            const std::string& kind) {
  std::vector<ResourceInfo> out;
  for (const auto& r : kServed)
    if (r.group == group && r.version == version && r.kind == kind) out.push_back(r);
  return out;
}

json owner(const std::string& kind, const std::string& name, json block,
           const std::string& api_version = "commgate.io/v1alpha1") {
  json ref = {{"apiVersion", api_version},
              {"kind", kind},
              {"name", name},
              {"uid", "u-" + name},
              {"controller", true}};
  if (!block.is_null()) ref["blockOwnerDeletion"] = block;
  return ref;
}
// Lists as std::vector, not json: `{x}` as a json parameter is an array under GCC and x
// itself under clang (nlohmann's brace initialization; the sanitizer build is clang's).
json object(const std::string& name, const std::vector<json>& refs) {
  json o = {{"metadata", {{"name", name}, {"namespace", "nlp"}}}};
  if (!refs.empty()) o["metadata"]["ownerReferences"] = json(refs);
  return o;
}

// The operator's ClusterRole: each case lists the rules it holds.
RbacObjects rbac_with(json rules) {
  return RbacObjects::from({{{"apiVersion", "rbac.authorization.k8s.io/v1"},
                             {"kind", "ClusterRole"},
                             {"metadata", {{"name", "operator"}}},
                             {"rules", rules}},
                            {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                             {"kind", "ClusterRoleBinding"},
                             {"metadata", {{"name", "operator"}}},
                             {"roleRef", {{"kind", "ClusterRole"}, {"name", "operator"}}},
                             {"subjects", json::array({{{"kind", "ServiceAccount"},
                                                        {"name", "operator"},
                                                        {"namespace", "ops"}}})}}});
}
json rule(const std::string& group, const std::string& resource,
          const std::vector<std::string>& verbs) {
  return {{"apiGroups", json::array({group})},
          {"resources", json::array({resource})},
          {"verbs", verbs}};
}
const json kCreateJobs = rule("batch", "jobs", {"create"});
const json kTrainingJobFinalizers = rule("commgate.io", "trainingjobs/finalizers", {"update"});

struct Case {
  std::string name;
  std::string operation;
  ResourceInfo resource;
  std::string subresource;
  json object, old_object;
  json rules;
  std::string want_denial;  // "" when allowed
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

const std::string kFinalizersDenied =
    R"(jobs.batch "bert" is forbidden: cannot set blockOwnerDeletion if an ownerReference )"
    R"(refers to a resource you can't set finalizers on: , <nil>)";

const std::vector<Case> kCases = {
    {"a_blocking_owner_on_create_needs_update_on_the_owners_finalizers", "CREATE", kJobs, "",
     object("bert", {owner("TrainingJob", "bert", true)}), nullptr, json::array({kCreateJobs}),
     kFinalizersDenied},
    {"the_finalizers_grant_lets_the_create_through", "CREATE", kJobs, "",
     object("bert", {owner("TrainingJob", "bert", true)}), nullptr,
     json::array({kCreateJobs, kTrainingJobFinalizers}), ""},
    {"the_finalizers_grant_by_name_is_enough", "CREATE", kJobs, "",
     object("bert", {owner("TrainingJob", "bert", true)}), nullptr,
     json::array({json{{"apiGroups", json::array({"commgate.io"})},
                       {"resources", json::array({"trainingjobs/finalizers"})},
                       {"verbs", json::array({"update"})},
                       {"resourceNames", json::array({"bert"})}}}),
     ""},
    {"update_on_the_owner_itself_is_not_update_on_its_finalizers", "CREATE", kJobs, "",
     object("bert", {owner("TrainingJob", "bert", true)}), nullptr,
     json::array({rule("commgate.io", "trainingjobs", {"update", "delete"})}), kFinalizersDenied},
    {"a_non_blocking_owner_needs_nothing_on_create", "CREATE", kJobs, "",
     object("bert", {owner("TrainingJob", "bert", false)}), nullptr, json::array(), ""},
    {"an_absent_blockOwnerDeletion_is_not_blocking", "CREATE", kJobs, "",
     object("bert", {owner("TrainingJob", "bert", nullptr)}), nullptr, json::array(), ""},
    {"an_object_without_owners_needs_nothing", "CREATE", kJobs, "", object("bert", {}), nullptr,
     json::array(), ""},
    {"an_update_that_keeps_the_owners_needs_nothing", "UPDATE", kJobs, "",
     object("bert", {owner("TrainingJob", "bert", true)}),
     object("bert", {owner("TrainingJob", "bert", true)}), json::array(), ""},
    {"changing_the_owners_needs_delete_on_the_object", "UPDATE", kJobs, "",
     object("bert", {owner("TrainingJob", "other", false)}),
     object("bert", {owner("TrainingJob", "bert", false)}), json::array({kTrainingJobFinalizers}),
     R"(jobs.batch "bert" is forbidden: cannot set an ownerRef on a resource you can't delete: , <nil>)"},
    {"turning_blocking_on_needs_delete_on_the_object_and_the_owners_finalizers", "UPDATE", kJobs,
     "", object("bert", {owner("TrainingJob", "bert", true)}),
     object("bert", {owner("TrainingJob", "bert", false)}),
     json::array({rule("batch", "jobs", {"delete"})}), kFinalizersDenied},
    {"turning_blocking_on_with_both_grants_passes", "UPDATE", kJobs, "",
     object("bert", {owner("TrainingJob", "bert", true)}),
     object("bert", {owner("TrainingJob", "bert", false)}),
     json::array({rule("batch", "jobs", {"delete"}), kTrainingJobFinalizers}), ""},
    {"a_subresource_update_needs_delete_on_that_subresource", "UPDATE", kJobs, "status",
     object("bert", {owner("TrainingJob", "x", false)}), object("bert", {}),
     json::array({rule("batch", "jobs", {"delete"})}),
     R"(jobs.batch "bert" is forbidden: cannot set an ownerRef on a resource you can't delete: , <nil>)"},
    {"pods_status_is_exempt_as_upstream_whitelists_it", "UPDATE", kPods, "status",
     object("p", {owner("Job", "bert", true, "batch/v1")}), object("p", {}), json::array(), ""},
    {"a_cluster_scoped_owner_is_checked_at_the_cluster_scope", "CREATE", kJobs, "",
     object("probe", {owner("CommProfile", "pool-1", true)}), nullptr,
     json::array({rule("commgate.io", "commprofiles/finalizers", {"update"})}), ""},
    {"an_owner_kind_nothing_serves_is_refused", "CREATE", kJobs, "",
     object("bert", {owner("Widget", "w", true, "example.com/v1")}), nullptr,
     json::array({rule("*", "*", {"*"})}),
     R"(jobs.batch "bert" is forbidden: cannot set blockOwnerDeletion in this case because )"
     R"(cannot find RESTMapping for APIVersion example.com/v1 Kind Widget: no matches for )"
     R"(kind "Widget" in version "example.com/v1")"},
    {"a_delete_is_not_checked", "DELETE", kJobs, "", nullptr,
     object("bert", {owner("TrainingJob", "bert", true)}), json::array(), ""},
};

class OwnerReferencesAdmission : public ::testing::TestWithParam<Case> {};

TEST_P(OwnerReferencesAdmission, allows_or_answers_upstreams_403) {
  const Case& c = GetParam();
  AdmissionAttributes a;
  a.operation = c.operation;
  a.resource = c.resource;
  a.subresource = c.subresource;
  a.name = c.object.is_object() ? c.object["metadata"].value("name", "") : "bert";
  a.ns = "nlp";
  a.object = c.object;
  a.old_object = c.old_object;
  a.user = kOperator;
  const RbacObjects rbac = rbac_with(c.rules);
  const auto denial = owner_references_denial(
      a, [&](const UserInfo& u, const RequestAttributes& r) { return authorize(u, r, rbac); },
      resources_of_kind);
  EXPECT_EQ(denial ? denial->value("message", "") : "", c.want_denial);
  if (denial) {
    EXPECT_EQ((*denial)["code"], 403);
    EXPECT_EQ((*denial)["reason"], "Forbidden");
    EXPECT_EQ((*denial)["details"]["kind"], c.resource.plural);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, OwnerReferencesAdmission, ::testing::ValuesIn(kCases),
                         [](const auto& test) { return test.param.name; });

TEST(OwnerReferencesAdmission, the_admin_is_always_allowed) {
  AdmissionAttributes a;
  a.operation = "CREATE";
  a.resource = kJobs;
  a.name = "bert";
  a.ns = "nlp";
  a.object = object("bert", {owner("TrainingJob", "bert", true)});
  a.user = {"kubernetes-admin", {"system:masters", "system:authenticated"}};
  const RbacObjects none;
  EXPECT_FALSE(owner_references_denial(
      a, [&](const UserInfo& u, const RequestAttributes& r) { return authorize(u, r, none); },
      resources_of_kind));
}

TEST(AdmissionPlugins, the_flag_names_upstreams_plugin_and_refuses_others) {
  EXPECT_FALSE(parse_admission_plugins("").owner_references_permission_enforcement);
  EXPECT_TRUE(parse_admission_plugins("OwnerReferencesPermissionEnforcement")
                  .owner_references_permission_enforcement);
  EXPECT_THROW(parse_admission_plugins("OwnerReferencesPermissionEnforcement,AlwaysPullImages"),
               std::invalid_argument);
  try {
    parse_admission_plugins("ownerreferencespermissionenforcement");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"ownerreferencespermissionenforcement\""),
              std::string::npos);
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
