// Researchers' access (charts/commgate/templates/researcher-rbac.yaml; docs/install.md,
// "Researchers' access"): the chart's ClusterRoles aggregated into the built-in view, edit
// and admin roles, and the cluster-wide policy reader. First as rendered (labels, exact
// grants, the values that turn them on and off), then through the sim's RBAC authorizer
// with the clusterrole-aggregation controller (sim::aggregate_cluster_roles) against
// upstream's view, edit and admin, and last end to end: commgate-sim --authorization rbac
// over HTTPS, a researcher bound to `edit` in one namespace, real requests and their 403s.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include "core/yaml_json.h"
#include "sim/api_server.h"
#include "sim/rbac_authorizer.h"
#include "tests/chart/chart_render.h"
#include "tests/server/test_client.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using server::testing::Client;
using server::testing::Reply;

const std::string kToView = "rbac.authorization.k8s.io/aggregate-to-view";
const std::string kToEdit = "rbac.authorization.k8s.io/aggregate-to-edit";
const std::string kToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin";

using Grant = std::tuple<std::string, std::string, std::string>;  // group, resource, verb

std::set<Grant> grants_of(const json& role) {
  std::set<Grant> out;
  for (const auto& rule : role.value("rules", json::array()))
    for (const auto& g : rule.value("apiGroups", json::array()))
      for (const auto& res : rule.value("resources", json::array()))
        for (const auto& v : rule.value("verbs", json::array()))
          out.insert({g.get<std::string>(), res.get<std::string>(), v.get<std::string>()});
  return out;
}

std::set<Grant> grants(const std::string& group, const std::vector<std::string>& resources,
                       const std::vector<std::string>& verbs) {
  std::set<Grant> out;
  for (const auto& r : resources)
    for (const auto& v : verbs) out.insert({group, r, v});
  return out;
}

std::set<Grant> operator+(std::set<Grant> a, const std::set<Grant>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

const std::vector<std::string> kRead = {"get", "list", "watch"};

std::string component(const json& o) {
  const json labels = o.value("metadata", json::object()).value("labels", json::object());
  return labels.value("app.kubernetes.io/component", "");
}
// rbac.policyReaderGroups: [researchers, ml-team]
const std::string kReaders =
    std::string(COMMGATE_SOURCE_DIR) + "/tests/chart/testdata/values-policy-readers.yaml";

// ---- as rendered ----

TEST(ResearcherRbac, defaults_render_view_edit_and_the_policy_reader_labelled_for_aggregation) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const json& view = r.get("ClusterRole", "commgate-view");
  EXPECT_EQ(
      grants_of(view),
      grants("commgate.io", {"trainingjobs", "trainingjobs/status", "trainingjobs/scale"}, kRead) +
          grants("commgate.io", {"commpolicies", "commprofiles"}, kRead));
  const json& edit = r.get("ClusterRole", "commgate-edit");
  EXPECT_EQ(grants_of(edit),
            grants("commgate.io", {"trainingjobs"},
                   {"create", "update", "patch", "delete", "deletecollection"}) +
                grants("commgate.io", {"trainingjobs/scale"}, {"update", "patch"}));
  const json& reader = r.get("ClusterRole", "commgate-policy-reader");
  EXPECT_EQ(grants_of(reader), grants("commgate.io", {"commpolicies", "commprofiles"}, kRead));

  // view's rules go into view, edit and admin; edit's into edit and admin; the reader's
  // into none (its grant is cluster-wide only through its own ClusterRoleBinding).
  const std::map<std::string, std::set<std::string>> want_aggregated = {
      {"commgate-view", {kToView, kToEdit, kToAdmin}},
      {"commgate-edit", {kToEdit, kToAdmin}},
      {"commgate-policy-reader", {}}};
  for (const auto& [name, want] : want_aggregated) {
    const json& labels = r.get("ClusterRole", name)["metadata"]["labels"];
    std::set<std::string> got;
    for (const auto& [key, value] : labels.items()) {
      if (key.rfind("rbac.authorization.k8s.io/", 0) != 0) continue;
      EXPECT_EQ(value, "true") << name << " " << key << ": the controller matches \"true\"";
      got.insert(key);
    }
    EXPECT_EQ(got, want) << name;
    EXPECT_EQ(labels["app.kubernetes.io/component"], "researcher-access") << name;
    EXPECT_EQ(labels["app.kubernetes.io/instance"], "commgate") << name;
    EXPECT_FALSE(r.get("ClusterRole", name).contains("aggregationRule")) << name;
  }
  // Nothing binds them by default: the cluster's own bindings to view/edit/admin do.
  for (const auto& b : r.of_kind("ClusterRoleBinding"))
    EXPECT_NE(component(b), "researcher-access") << b.dump();
}

TEST(ResearcherRbac, no_researcher_role_writes_policies_profiles_or_statuses) {
  const auto r = render_chart({"-f", kReaders});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int roles = 0;
  for (const auto& role : r.of_kind("ClusterRole")) {
    if (component(role) != "researcher-access") continue;
    ++roles;
    for (const auto& [group, resource, verb] : grants_of(role)) {
      EXPECT_EQ(group, "commgate.io") << role.dump();
      EXPECT_EQ(resource.find('*'), std::string::npos) << role.dump();
      EXPECT_EQ(verb.find('*'), std::string::npos) << role.dump();
      if (resource != "trainingjobs" && resource != "trainingjobs/scale") {
        EXPECT_TRUE(verb == "get" || verb == "list" || verb == "watch")
            << role["metadata"]["name"] << " grants " << verb << " on " << resource;
      }
    }
  }
  EXPECT_EQ(roles, 3);
}

TEST(ResearcherRbac, policy_reader_groups_are_bound_cluster_wide) {
  const auto r = render_chart({"-f", kReaders});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& binding = r.get("ClusterRoleBinding", "commgate-policy-reader");
  EXPECT_EQ(binding["roleRef"], json::parse(R"({"apiGroup":"rbac.authorization.k8s.io",
      "kind":"ClusterRole","name":"commgate-policy-reader"})"));
  EXPECT_EQ(binding["subjects"], json::parse(R"([
      {"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"researchers"},
      {"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"ml-team"}])"));
}

TEST(ResearcherRbac, turned_off_the_chart_renders_no_researcher_role) {
  const auto r = render_chart({"--set", "rbac.aggregateToDefaultRoles=false"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* kind : {"ClusterRole", "ClusterRoleBinding"})
    for (const auto& o : r.of_kind(kind))
      EXPECT_NE(component(o), "researcher-access") << o["metadata"]["name"];
  // The operator's, the webhook's and commgate-researcher (rbac.researcherRole).
  EXPECT_EQ(r.of_kind("ClusterRole").size(), 3u);
  // The reader alone, when groups are named.
  const auto reader = render_chart({"-f", kReaders, "--set", "rbac.aggregateToDefaultRoles=false"});
  ASSERT_EQ(reader.exit_code, 0) << reader.output;
  EXPECT_NO_THROW(reader.get("ClusterRole", "commgate-policy-reader"));
  EXPECT_NO_THROW(reader.get("ClusterRoleBinding", "commgate-policy-reader"));
  EXPECT_TRUE(reader.of_kind("ClusterRole").size() == 4u) << reader.output;
}

// Issue #19 item 4: a role to bind instead of edit, without writes of any workload kind.
TEST(ResearcherRbac, the_researcher_role_writes_trainingjobs_and_no_workload) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json& role = r.get("ClusterRole", "commgate-researcher");
  EXPECT_EQ(component(role), "researcher-role");
  EXPECT_FALSE(role.contains("aggregationRule"));
  for (const auto& [key, value] : role["metadata"]["labels"].items())
    EXPECT_NE(key.rfind("rbac.authorization.k8s.io/", 0), 0u) << key << ": not aggregated";
  const std::set<std::string> writes = {"create", "update", "patch", "delete", "deletecollection"};
  std::set<std::string> written;
  for (const auto& [group, resource, verb] : grants_of(role)) {
    EXPECT_EQ(resource.find('*'), std::string::npos);
    EXPECT_EQ(verb.find('*'), std::string::npos);
    EXPECT_NE(verb, "impersonate");
    if (writes.contains(verb)) written.insert(group + "/" + resource);
  }
  EXPECT_EQ(written, (std::set<std::string>{"commgate.io/trainingjobs",
                                            "commgate.io/trainingjobs/scale", "/configmaps",
                                            "/persistentvolumeclaims", "/pods", "/pods/exec"}));
  // Of the pods: delete (the Job controller replaces one at the admitted size), never
  // create, update or patch.
  for (const auto& [group, resource, verb] : grants_of(role))
    if (resource == "pods")
      EXPECT_TRUE(verb == "delete" || verb == "get" || verb == "list" || verb == "watch") << verb;
  const auto off = render_chart({"--set", "rbac.researcherRole.enabled=false"});
  ASSERT_EQ(off.exit_code, 0) << off.output;
  EXPECT_THROW(off.get("ClusterRole", "commgate-researcher"), std::exception);
}

TEST(ResearcherRbac, the_values_schema_refuses_a_wrong_type) {
  const auto r = render_chart({"--set", "rbac.aggregateToDefaultRoles=maybe"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("rbac.aggregateToDefaultRoles"), std::string::npos) << r.output;
  const auto empty =
      render_chart({"-f", std::string(COMMGATE_SOURCE_DIR) +
                              "/tests/chart/testdata/values-empty-reader-group.yaml"});
  EXPECT_NE(empty.exit_code, 0) << empty.output;
  EXPECT_NE(empty.output.find("rbac.policyReaderGroups"), std::string::npos) << empty.output;
}

// ---- through the authorizer, with upstream's aggregating roles ----

// Upstream's view, edit and admin (plugin/pkg/auth/authorizer/rbac/bootstrappolicy) as
// aggregating roles only: their own built-in rules (pods, deployments...) are left out.
json upstream(const std::string& name, const std::string& selects,
              const std::map<std::string, std::string>& labels) {
  json role = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
               {"kind", "ClusterRole"},
               {"metadata", {{"name", name}}},
               {"aggregationRule",
                {{"clusterRoleSelectors", json::array({{{"matchLabels", {{selects, "true"}}}}})}}}};
  if (!labels.empty()) role["metadata"]["labels"] = labels;
  return role;
}
std::vector<json> upstream_roles() {
  return {upstream("admin", kToAdmin, {}), upstream("edit", kToEdit, {{kToAdmin, "true"}}),
          upstream("view", kToView, {{kToEdit, "true"}})};
}

json role_binding(const std::string& ns, const std::string& role, const std::string& group) {
  return {{"apiVersion", "rbac.authorization.k8s.io/v1"},
          {"kind", "RoleBinding"},
          {"metadata", {{"name", "researchers-" + role}, {"namespace", ns}}},
          {"roleRef",
           {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", role}}},
          {"subjects",
           json::array(
               {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Group"}, {"name", group}}})}};
}

struct Request {
  std::string name;
  std::string role;  // the built-in role the user is bound to in namespace ml
  std::string verb, resource, subresource, ns, object;
  bool want_allowed;
};
void PrintTo(const Request& r, std::ostream* os) {
  *os << r.name;
}

sim::RbacObjects aggregated(const std::vector<std::string>& args) {
  const auto r = render_chart(args);
  if (r.exit_code != 0) throw std::runtime_error(r.output);
  sim::RbacObjects rbac = sim::RbacObjects::from(r.objects);
  for (auto& role : upstream_roles()) rbac.cluster_roles.push_back(std::move(role));
  rbac.cluster_roles = sim::aggregate_cluster_roles(std::move(rbac.cluster_roles));
  for (const char* role : {"view", "edit", "admin"})
    rbac.role_bindings.push_back(role_binding("ml", role, std::string("ml-") + role + "s"));
  return rbac;
}

class ResearcherAccess : public ::testing::TestWithParam<Request> {};

TEST_P(ResearcherAccess, the_built_in_roles_grant_what_the_chart_aggregates) {
  static const sim::RbacObjects rbac = aggregated({"-f", kReaders});
  const Request& q = GetParam();
  const sim::UserInfo user{"someone", {"ml-" + q.role + "s", "researchers"}};
  sim::RequestAttributes a;
  a.verb = q.verb;
  a.api_group = "commgate.io";
  a.api_version = "v1alpha1";
  a.resource = q.resource;
  a.subresource = q.subresource;
  a.ns = q.ns;
  a.name = q.object;
  const auto got = sim::authorize(user, a, rbac);
  EXPECT_EQ(got.allowed, q.want_allowed) << got.reason;
}

INSTANTIATE_TEST_SUITE_P(
    Requests, ResearcherAccess,
    ::testing::Values(
        Request{"edit_creates_a_job", "edit", "create", "trainingjobs", "", "ml", "", true},
        Request{"edit_lists_jobs", "edit", "list", "trainingjobs", "", "ml", "", true},
        Request{"edit_reads_a_jobs_status", "edit", "get", "trainingjobs", "status", "ml", "bert",
                true},
        Request{"edit_patches_a_job", "edit", "patch", "trainingjobs", "", "ml", "bert", true},
        Request{"edit_scales_a_job", "edit", "update", "trainingjobs", "scale", "ml", "bert", true},
        Request{"edit_deletes_a_job", "edit", "delete", "trainingjobs", "", "ml", "bert", true},
        Request{"edit_deletes_its_jobs", "edit", "deletecollection", "trainingjobs", "", "ml", "",
                true},
        Request{"edit_reads_policies_through_the_reader", "edit", "list", "commpolicies", "", "",
                "", true},
        Request{"edit_reads_a_profile_through_the_reader", "edit", "get", "commprofiles", "", "",
                "pool-all", true},
        Request{"edit_writes_no_jobs_status", "edit", "update", "trainingjobs", "status", "ml",
                "bert", false},
        Request{"edit_patches_no_jobs_status", "edit", "patch", "trainingjobs", "status", "ml",
                "bert", false},
        Request{"edit_sets_no_finalizers", "edit", "update", "trainingjobs", "finalizers", "ml",
                "bert", false},
        Request{"edit_creates_no_job_elsewhere", "edit", "create", "trainingjobs", "", "other", "",
                false},
        Request{"edit_lists_no_jobs_across_namespaces", "edit", "list", "trainingjobs", "", "", "",
                false},
        Request{"edit_creates_no_policy", "edit", "create", "commpolicies", "", "", "", false},
        Request{"edit_changes_no_policy", "edit", "patch", "commpolicies", "", "", "default",
                false},
        Request{"edit_changes_no_profile", "edit", "update", "commprofiles", "", "", "pool-all",
                false},
        Request{"edit_writes_no_profile_status", "edit", "update", "commprofiles", "status", "",
                "pool-all", false},
        Request{"admin_creates_a_job", "admin", "create", "trainingjobs", "", "ml", "", true},
        Request{"admin_creates_no_policy", "admin", "create", "commpolicies", "", "", "", false},
        Request{"admin_deletes_no_profile", "admin", "delete", "commprofiles", "", "", "pool-all",
                false},
        Request{"view_reads_a_job", "view", "get", "trainingjobs", "", "ml", "bert", true},
        Request{"view_reads_its_scale", "view", "get", "trainingjobs", "scale", "ml", "bert", true},
        Request{"view_creates_no_job", "view", "create", "trainingjobs", "", "ml", "", false},
        Request{"view_scales_no_job", "view", "patch", "trainingjobs", "scale", "ml", "bert",
                false}),
    [](const auto& test) { return test.param.name; });

TEST(ResearcherAccess, turned_off_edit_grants_no_trainingjob) {
  const sim::RbacObjects rbac = aggregated({"--set", "rbac.aggregateToDefaultRoles=false"});
  sim::RequestAttributes a;
  a.verb = "create";
  a.api_group = "commgate.io";
  a.api_version = "v1alpha1";
  a.resource = "trainingjobs";
  a.ns = "ml";
  EXPECT_FALSE(sim::authorize({"someone", {"ml-edits"}}, a, rbac).allowed);
}

// ---- end to end: commgate-sim --authorization rbac over HTTPS ----

constexpr const char* kResearcherToken = "researcher-token";
// A token user in the group the namespace's admin bound to `edit`, as an OIDC user would be.
constexpr const char* kResearcher = "alice";
const char* kJobs = "/apis/commgate.io/v1alpha1/namespaces/ml/trainingjobs";

json read_yaml_file(const std::string& relative);

class ResearcherOnSim : public ::testing::Test {
 protected:
  // Installs the chart's CRDs and RBAC (rendered with `args`) and upstream's edit, and binds
  // the group researchers to edit in ml.
  void install(const std::vector<std::string>& args) {
    sim::ApiServerOptions options;
    options.authorization = sim::AuthorizationMode::kRbac;
    options.users.push_back(
        sim::parse_user_flag(std::string(kResearcherToken) + "=" + kResearcher + ",researchers"));
    api_ = std::make_unique<sim::ApiServer>(options);
    api_->start();
    client_ = std::make_unique<Client>(api_->port(), api_->pki_dir() + "/ca.crt");
    ASSERT_EQ(client_->connect(), "");
    std::vector<std::string> render_args = {"--include-crds"};
    render_args.insert(render_args.end(), args.begin(), args.end());
    const auto chart = render_chart(render_args);
    ASSERT_EQ(chart.exit_code, 0) << chart.output;
    for (const auto& crd : chart.of_kind("CustomResourceDefinition"))
      ASSERT_EQ(
          admin("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).status,
          201);
    for (const char* kind : {"ClusterRole", "ClusterRoleBinding"}) {
      const std::string path =
          std::string("/apis/rbac.authorization.k8s.io/v1/") +
          (kind == std::string("ClusterRole") ? "clusterroles" : "clusterrolebindings");
      for (const auto& o : chart.of_kind(kind)) ASSERT_EQ(admin("POST", path, o).status, 201);
    }
    ASSERT_EQ(admin("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                    upstream("edit", kToEdit, {{kToAdmin, "true"}}))
                  .status,
              201);
    for (const char* ns : {"ml", "other"})
      ASSERT_EQ(admin("POST", "/api/v1/namespaces", {{"metadata", {{"name", ns}}}}).status, 201);
    ASSERT_EQ(admin("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/ml/rolebindings",
                    role_binding("ml", "edit", "researchers"))
                  .status,
              201);
    // What the admin and the operator wrote: a policy and a pool's profile.
    ASSERT_EQ(admin("POST", "/apis/commgate.io/v1alpha1/commpolicies",
                    read_yaml_file("examples/policies/default.yaml"))
                  .status,
              201);
    ASSERT_EQ(admin("POST", "/apis/commgate.io/v1alpha1/commprofiles", profile()).status, 201);
  }

  static json profile() {
    return {{"apiVersion", "commgate.io/v1alpha1"},
            {"kind", "CommProfile"},
            {"metadata", {{"name", "pool-all"}}},
            {"spec", {{"nodeSelector", json::object()}}}};
  }
  static json job(const std::string& ns) {
    json j = read_yaml_file("examples/jobs/resnet50-5m.yaml");
    j["metadata"]["namespace"] = ns;
    return j;
  }

  Reply as(const std::string& token, const std::string& method, const std::string& target,
           const json& body = nullptr, const std::string& content_type = "application/json") {
    return client_->request(method, target, body.is_null() ? "" : body.dump(),
                            {{"Authorization", "Bearer " + token},
                             {"Content-Type", content_type},
                             {"Accept", "application/json"}});
  }
  Reply admin(const std::string& method, const std::string& target, const json& body = nullptr) {
    return as(api_->token(), method, target, body);
  }
  Reply researcher(const std::string& method, const std::string& target, const json& body = nullptr,
                   const std::string& content_type = "application/json") {
    return as(kResearcherToken, method, target, body, content_type);
  }

  std::unique_ptr<sim::ApiServer> api_;
  std::unique_ptr<Client> client_;
};

json read_yaml_file(const std::string& relative) {
  std::ifstream in(source_path(relative));
  std::stringstream text;
  text << in.rdbuf();
  return yaml_documents_to_json(text.str()).at(0);
}

std::string message(const Reply& r) {
  try {
    return json::parse(r.body).value("message", "");
  } catch (const json::exception&) {
    return r.body;
  }
}

TEST_F(ResearcherOnSim, a_researcher_bound_to_edit_runs_jobs_and_reads_policies_only) {
  ASSERT_NO_FATAL_FAILURE(install({"-f", kReaders}));
  const std::string job_path = std::string(kJobs) + "/resnet-small";

  const Reply created = researcher("POST", kJobs, job("ml"));
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(researcher("GET", job_path).status, 200);
  EXPECT_EQ(researcher("GET", kJobs).status, 200);
  EXPECT_EQ(researcher("GET", job_path + "/status").status, 200);
  const Reply patched = researcher("PATCH", job_path, json{{"spec", {{"numNodes", 2}}}},
                                   "application/merge-patch+json");
  EXPECT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(researcher("GET", "/apis/commgate.io/v1alpha1/commpolicies/default").status, 200);
  EXPECT_EQ(researcher("GET", "/apis/commgate.io/v1alpha1/commpolicies").status, 200);
  EXPECT_EQ(researcher("GET", "/apis/commgate.io/v1alpha1/commprofiles/pool-all").status, 200);

  struct Denied {
    std::string name, method, target;
    json body;
    std::string want_message;
  };
  json policy = read_yaml_file("examples/policies/default.yaml");
  policy["metadata"]["name"] = "mine";
  json stored_profile =
      json::parse(admin("GET", "/apis/commgate.io/v1alpha1/commprofiles/pool-all").body);
  stored_profile["spec"]["nodeSelector"] = {{"commgate.io/pool", "fast"}};
  json stored_job = json::parse(researcher("GET", job_path).body);
  stored_job["status"] = {{"phase", "Running"}};
  const std::vector<Denied> denied = {
      {"create_a_policy", "POST", "/apis/commgate.io/v1alpha1/commpolicies", policy,
       "commpolicies.commgate.io is forbidden: User \"alice\" cannot create resource "
       "\"commpolicies\" in API group \"commgate.io\" at the cluster scope"},
      {"update_a_profile", "PUT", "/apis/commgate.io/v1alpha1/commprofiles/pool-all",
       stored_profile,
       "commprofiles.commgate.io \"pool-all\" is forbidden: User \"alice\" cannot update resource "
       "\"commprofiles\" in API group \"commgate.io\" at the cluster scope"},
      {"delete_a_policy", "DELETE", "/apis/commgate.io/v1alpha1/commpolicies/default", nullptr,
       "commpolicies.commgate.io \"default\" is forbidden: User \"alice\" cannot delete resource "
       "\"commpolicies\" in API group \"commgate.io\" at the cluster scope"},
      {"write_a_jobs_status", "PUT", job_path + "/status", stored_job,
       "trainingjobs.commgate.io \"resnet-small\" is forbidden: User \"alice\" cannot update "
       "resource \"trainingjobs/status\" in API group \"commgate.io\" in the namespace \"ml\""},
      {"create_a_job_in_another_namespace", "POST",
       "/apis/commgate.io/v1alpha1/namespaces/other/trainingjobs", job("other"),
       "trainingjobs.commgate.io is forbidden: User \"alice\" cannot create resource "
       "\"trainingjobs\" in API group \"commgate.io\" in the namespace \"other\""},
  };
  for (const auto& d : denied) {
    const Reply r = researcher(d.method, d.target, d.body);
    EXPECT_EQ(r.status, 403) << d.name << ": " << r.body;
    EXPECT_EQ(message(r), d.want_message) << d.name;
  }
  EXPECT_EQ(researcher("DELETE", job_path).status, 200);
}

TEST_F(ResearcherOnSim, without_the_aggregated_roles_edit_grants_no_trainingjob) {
  ASSERT_NO_FATAL_FAILURE(install({"--set", "rbac.aggregateToDefaultRoles=false"}));
  const Reply r = researcher("POST", kJobs, job("ml"));
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(researcher("GET", "/apis/commgate.io/v1alpha1/commpolicies").status, 403);
}

TEST_F(ResearcherOnSim, without_policy_reader_groups_a_namespaced_edit_reads_no_policy) {
  // A RoleBinding grants nothing at the cluster scope, whatever edit aggregates: reading
  // CommPolicies takes the reader's ClusterRoleBinding (rbac.policyReaderGroups).
  ASSERT_NO_FATAL_FAILURE(install({}));
  EXPECT_EQ(researcher("POST", kJobs, job("ml")).status, 201);
  EXPECT_EQ(researcher("GET", "/apis/commgate.io/v1alpha1/commpolicies/default").status, 403);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
