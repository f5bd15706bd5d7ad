// The chart's RBAC, proven with the sim's RBAC authorizer (sim/rbac_authorizer.h) rather
// than read: every request the operator and the webhook make, as their ServiceAccounts'
// users, against the rendered Roles, ClusterRoles and bindings. Each request the code makes
// is allowed, each it must not make is denied, and every grant of the operator's
// ClusterRole and Role is used by some request (no unused rule).
#include <gtest/gtest.h>

#include <ostream>
#include <set>
#include <tuple>

#include "kube/cached_reader.h"
#include "operator/kueue_admission_check.h"
#include "operator/kueue_check_reconciler.h"
#include "sim/rbac_authorizer.h"
#include "tests/chart/chart_render.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using sim::RequestAttributes;

struct Request {
  std::string name;
  std::string verb, group, resource, subresource, ns, object;
  bool want_allowed;
};

void PrintTo(const Request& r, std::ostream* os) {
  *os << r.name;
}

RequestAttributes attributes(const Request& r) {
  RequestAttributes a;
  a.verb = r.verb;
  a.api_group = r.group;
  a.api_version = "v1";
  a.resource = r.resource;
  a.subresource = r.subresource;
  a.ns = r.ns;
  a.name = r.object;
  return a;
}

const sim::RbacObjects& chart_rbac() {
  static const sim::RbacObjects rbac = [] {
    const auto r = render_chart();
    if (r.exit_code != 0) throw std::runtime_error(r.output);
    return sim::RbacObjects::from(r.objects);
  }();
  return rbac;
}

const sim::UserInfo kOperator = sim::service_account_user("commgate-system", "commgate-operator");
const sim::UserInfo kWebhook = sim::service_account_user("commgate-system", "commgate-webhook");

// What the operator does (OPERATOR_CONTRACT: informers, the reconcile's steps, Events,
// leader election) and what it must not be able to do.
const std::vector<Request> kOperatorRequests = {
    // informers: every TrainingJob, CommPolicy, CommProfile, Namespace; commgate's Jobs and
    // Pods in all namespaces (label-selected)
    {"lists_trainingjobs", "list", "commgate.io", "trainingjobs", "", "", "", true},
    {"watches_trainingjobs", "watch", "commgate.io", "trainingjobs", "", "", "", true},
    {"lists_commpolicies", "list", "commgate.io", "commpolicies", "", "", "", true},
    {"watches_commpolicies", "watch", "commgate.io", "commpolicies", "", "", "", true},
    {"lists_commprofiles", "list", "commgate.io", "commprofiles", "", "", "", true},
    {"watches_commprofiles", "watch", "commgate.io", "commprofiles", "", "", "", true},
    {"lists_namespaces", "list", "", "namespaces", "", "", "", true},
    {"watches_namespaces", "watch", "", "namespaces", "", "", "", true},
    {"lists_jobs_everywhere", "list", "batch", "jobs", "", "", "", true},
    {"watches_jobs_everywhere", "watch", "batch", "jobs", "", "", "", true},
    {"lists_pods_everywhere", "list", "", "pods", "", "", "", true},
    {"watches_pods_everywhere", "watch", "", "pods", "", "", "", true},
    // reads past the cache
    {"gets_a_trainingjob", "get", "commgate.io", "trainingjobs", "", "nlp", "bert", true},
    {"gets_a_commprofile", "get", "commgate.io", "commprofiles", "", "", "pool-1a2b", true},
    {"deletes_an_empty_commprofile", "delete", "commgate.io", "commprofiles", "", "", "pool-1a2b",
     true},
    {"gets_a_commpolicy", "get", "commgate.io", "commpolicies", "", "", "default", true},
    {"gets_a_namespace", "get", "", "namespaces", "", "nlp", "nlp", true},
    {"gets_a_probe_job", "get", "batch", "jobs", "", "commgate-system", "commgate-probe-pool-1",
     true},
    {"gets_a_probe_pod", "get", "", "pods", "", "commgate-system", "commgate-probe-pool-1-0-x",
     true},
    // the reconcile's writes
    {"creates_a_commprofile", "create", "commgate.io", "commprofiles", "", "", "", true},
    {"writes_a_commprofiles_status", "update", "commgate.io", "commprofiles", "status", "",
     "pool-1a2b", true},
    {"creates_the_probe_job", "create", "batch", "jobs", "", "commgate-system", "", true},
    {"creates_the_probe_service", "create", "", "services", "", "commgate-system", "", true},
    {"deletes_a_finished_probe", "delete", "batch", "jobs", "", "commgate-system",
     "commgate-probe-pool-1", true},
    {"deletes_a_probe_service", "delete", "", "services", "", "commgate-system",
     "commgate-probe-pool-1", true},
    {"patches_an_admitted_jobs_spec", "patch", "commgate.io", "trainingjobs", "", "nlp", "bert",
     true},
    {"writes_a_jobs_status", "update", "commgate.io", "trainingjobs", "status", "nlp", "bert",
     true},
    {"creates_the_workload_job", "create", "batch", "jobs", "", "nlp", "", true},
    // ... owned by its TrainingJob with blockOwnerDeletion: true, which clusters running
    // OwnerReferencesPermissionEnforcement allow only with update on the owner's finalizers
    {"sets_blockOwnerDeletion_on_its_trainingjob", "update", "commgate.io", "trainingjobs",
     "finalizers", "nlp", "bert", true},
    {"creates_the_workload_service", "create", "", "services", "", "nlp", "", true},
    {"deletes_a_workload_job", "delete", "batch", "jobs", "", "nlp", "bert", true},
    {"writes_a_policys_counters", "update", "commgate.io", "commpolicies", "status", "", "default",
     true},
    {"records_an_event", "create", "events.k8s.io", "events", "", "nlp", "", true},
    {"adds_to_an_events_series", "patch", "events.k8s.io", "events", "", "nlp", "bert.17a", true},
    // leader election, in the release namespace, on its own Lease
    {"creates_the_lease", "create", "coordination.k8s.io", "leases", "", "commgate-system", "",
     true},
    {"reads_its_lease", "get", "coordination.k8s.io", "leases", "", "commgate-system",
     "commgate-operator", true},
    {"renews_its_lease", "update", "coordination.k8s.io", "leases", "", "commgate-system",
     "commgate-operator", true},

    // never
    // (spec changes are merge patches, statuses are PUT, Services are never read back)
    {"reads_no_service", "get", "", "services", "", "nlp", "bert", false},
    {"replaces_no_jobs_spec", "update", "commgate.io", "trainingjobs", "", "nlp", "bert", false},
    {"patches_no_jobs_status", "patch", "commgate.io", "trainingjobs", "status", "nlp", "bert",
     false},
    {"patches_no_profiles_status", "patch", "commgate.io", "commprofiles", "status", "",
     "pool-1a2b", false},
    // What each policy governs (operator/policy_status.h): a merge patch of its status.
    {"patches_a_policys_governance", "patch", "commgate.io", "commpolicies", "status", "",
     "default", true},
    {"reads_no_secret", "get", "", "secrets", "", "commgate-system", "commgate-webhook-tls", false},
    {"lists_no_secrets", "list", "", "secrets", "", "", "", false},
    {"reads_no_configmap", "get", "", "configmaps", "", "nlp", "settings", false},
    // The pool check and a probe's size and backend read the Nodes (issue #20), as a
    // watch; no single node is read, none is written.
    {"lists_nodes", "list", "", "nodes", "", "", "", true},
    {"watches_nodes", "watch", "", "nodes", "", "", "", true},
    {"reads_no_node", "get", "", "nodes", "", "", "gpu-1", false},
    {"changes_no_node", "patch", "", "nodes", "", "", "gpu-1", false},
    {"creates_no_pod_itself", "create", "", "pods", "", "nlp", "", false},
    {"deletes_no_pod", "delete", "", "pods", "", "nlp", "bert-0", false},
    // ... and gives it back its admitted size when someone else changed it
    {"restores_a_resized_workload_job", "patch", "batch", "jobs", "", "nlp", "bert", true},
    {"deletes_no_collection_of_jobs", "deletecollection", "batch", "jobs", "", "nlp", "", false},
    {"lists_no_services", "list", "", "services", "", "", "", false},
    {"creates_no_trainingjob", "create", "commgate.io", "trainingjobs", "", "nlp", "", false},
    {"deletes_no_trainingjob", "delete", "commgate.io", "trainingjobs", "", "nlp", "bert", false},
    {"scales_no_trainingjob", "update", "commgate.io", "trainingjobs", "scale", "nlp", "bert",
     false},
    {"changes_no_commprofile_spec", "update", "commgate.io", "commprofiles", "", "", "pool-1a2b",
     false},
    {"changes_no_policy", "patch", "commgate.io", "commpolicies", "", "", "default", false},
    {"writes_no_core_events", "create", "", "events", "", "nlp", "", false},
    {"takes_no_other_lease", "update", "coordination.k8s.io", "leases", "", "commgate-system",
     "kube-scheduler", false},
    {"takes_no_lease_elsewhere", "update", "coordination.k8s.io", "leases", "", "kube-system",
     "commgate-operator", false},
    {"creates_no_lease_elsewhere", "create", "coordination.k8s.io", "leases", "", "kube-system", "",
     false},
    {"deletes_no_lease", "delete", "coordination.k8s.io", "leases", "", "commgate-system",
     "commgate-operator", false},
    {"binds_no_roles", "create", "rbac.authorization.k8s.io", "clusterrolebindings", "", "", "",
     false},
    {"changes_no_webhook_configuration", "update", "admissionregistration.k8s.io",
     "validatingwebhookconfigurations", "", "", "commgate", false},
};

class OperatorRbac : public ::testing::TestWithParam<Request> {};

TEST_P(OperatorRbac, the_chart_allows_exactly_what_the_operator_does) {
  const auto got = sim::authorize(kOperator, attributes(GetParam()), chart_rbac());
  EXPECT_EQ(got.allowed, GetParam().want_allowed) << got.reason;
  const std::string subject = R"(to ServiceAccount "commgate-operator/commgate-system")";
  if (GetParam().want_allowed) {
    EXPECT_TRUE(got.reason.size() > subject.size() &&
                got.reason.compare(got.reason.size() - subject.size(), subject.size(), subject) ==
                    0)
        << got.reason;
  }
}

INSTANTIATE_TEST_SUITE_P(Requests, OperatorRbac, ::testing::ValuesIn(kOperatorRequests),
                         [](const auto& test) { return test.param.name; });

// Every grant is used: a rule no request needs is a privilege nobody asked for.
TEST(OperatorRbac, every_grant_is_used_by_a_request_the_operator_makes) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::set<std::tuple<std::string, std::string, std::string>> used;
  for (const auto& q : kOperatorRequests)
    if (q.want_allowed)
      used.insert(
          {q.group, q.subresource.empty() ? q.resource : q.resource + "/" + q.subresource, q.verb});
  for (const auto& [kind, name] : std::vector<std::pair<std::string, std::string>>{
           {"ClusterRole", "commgate-operator"}, {"Role", "commgate-operator-leader-election"}})
    for (const auto& rule : r.get(kind, name)["rules"])
      for (const auto& g : rule["apiGroups"])
        for (const auto& res : rule["resources"])
          for (const auto& v : rule["verbs"])
            EXPECT_TRUE(used.count({g, res, v}))
                << kind << " " << name << " grants " << v << " on " << res << " in \""
                << g.get<std::string>() << "\" that no operator request uses";
}

// ---- the Kueue admission check (kueue.enabled, issue #23) ----

const sim::RbacObjects& kueue_chart_rbac() {
  static const sim::RbacObjects rbac = [] {
    const auto r = render_chart({"--set", "kueue.enabled=true"});
    if (r.exit_code != 0) throw std::runtime_error(r.output);
    return sim::RbacObjects::from(r.objects);
  }();
  return rbac;
}

// A request on an API path the operator's code builds (operator/kueue_check_reconciler.h,
// kueue_admission_check.h), so the chart follows the code's paths, not a copy of them.
Request on_path(const std::string& name, const std::string& verb, const std::string& path,
                bool want_allowed) {
  const auto p = kube::parse_api_path(path);
  if (!p) throw std::runtime_error("not an API path: " + path);
  const std::string group =
      p->prefix.rfind("/apis/", 0) == 0 ? p->prefix.substr(6, p->prefix.find('/', 6) - 6) : "";
  return {name, verb, group, p->resource, p->subresource, p->ns, p->name, want_allowed};
}

const std::string kWorkload = op::kueue::workload_path("nlp", "pytorchjob-bert-1a2b3");
const std::string kAdmissionCheck = std::string(op::kueue::kAdmissionChecks) + "/comm";
const std::string kFlavor = std::string(op::kueue::kResourceFlavors) + "/a100";
const std::string kTopology = "/apis/kueue.x-k8s.io/v1beta2/topologies/default";

std::string owner_path(const std::string& api_version, const std::string& kind) {
  const auto path = op::kueue::owner_job_path("nlp", {api_version, kind, "bert", "uid-1"});
  if (!path) throw std::runtime_error("the operator reads no " + kind);
  return *path;
}

// What `commgate operator --kueue` does (the list above describes its watches, reads and
// writes) and what it must not do.
std::vector<Request> kueue_requests() {
  const std::string workloads = "/apis/kueue.x-k8s.io/v1beta2/workloads";  // all namespaces
  return {
      // informers, all namespaces
      on_path("lists_workloads", "list", workloads, true),
      on_path("watches_workloads", "watch", workloads, true),
      on_path("lists_admissionchecks", "list", op::kueue::kAdmissionChecks, true),
      on_path("watches_admissionchecks", "watch", op::kueue::kAdmissionChecks, true),
      on_path("lists_resourceflavors", "list", op::kueue::kResourceFlavors, true),
      on_path("watches_resourceflavors", "watch", op::kueue::kResourceFlavors, true),
      // Named by issue #23 for topology-aware scheduling; the operator's code does not
      // read Topologies yet (it decodes the assignment's levels from the Workload).
      on_path("lists_topologies", "list", "/apis/kueue.x-k8s.io/v1beta2/topologies", true),
      on_path("watches_topologies", "watch", "/apis/kueue.x-k8s.io/v1beta2/topologies", true),
      on_path("gets_a_topology", "get", kTopology, true),
      // reads past the cache
      on_path("gets_a_workload", "get", kWorkload, true),
      on_path("gets_an_admissioncheck", "get", kAdmissionCheck, true),
      on_path("gets_a_resourceflavor", "get", kFlavor, true),
      // the job that owns the Workload, for its model annotations
      on_path("gets_a_pytorchjob", "get", owner_path("kubeflow.org/v1", "PyTorchJob"), true),
      on_path("gets_a_trainjob", "get", owner_path("trainer.kubeflow.org/v1alpha1", "TrainJob"),
              true),
      on_path("gets_a_jobset", "get", owner_path("jobset.x-k8s.io/v1alpha2", "JobSet"), true),
      on_path("gets_a_batch_job", "get", owner_path("batch/v1", "Job"), true),
      // the writes: server-side apply (PATCH) of our entry and of the Active condition
      on_path("applies_its_check_entry", "patch", kWorkload + "/status", true),
      on_path("applies_the_active_condition", "patch", kAdmissionCheck + "/status", true),
      {"records_an_event_on_a_workload", "create", "events.k8s.io", "events", "", "nlp", "", true},

      // never: Kueue owns the rest of a Workload, the admins the AdmissionChecks,
      // flavors and queues, the researchers their jobs
      on_path("puts_no_workload_status", "update", kWorkload + "/status", false),
      on_path("changes_no_workload_spec", "patch", kWorkload, false),
      on_path("replaces_no_workload", "update", kWorkload, false),
      on_path("deletes_no_workload", "delete", kWorkload, false),
      on_path("creates_no_workload", "create",
              "/apis/kueue.x-k8s.io/v1beta2/namespaces/nlp/workloads", false),
      on_path("changes_no_admissioncheck_spec", "patch", kAdmissionCheck, false),
      on_path("creates_no_admissioncheck", "create", op::kueue::kAdmissionChecks, false),
      on_path("deletes_no_admissioncheck", "delete", kAdmissionCheck, false),
      on_path("changes_no_flavor", "patch", kFlavor, false),
      on_path("writes_no_flavor_status", "patch", kFlavor + "/status", false),
      on_path("changes_no_topology", "update", kTopology, false),
      on_path("reads_no_clusterqueue", "get", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team",
              false),
      on_path("writes_no_clusterqueue_status", "patch",
              "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team/status", false),
      on_path("lists_no_localqueues", "list", "/apis/kueue.x-k8s.io/v1beta2/localqueues", false),
      on_path("lists_no_pytorchjobs", "list", "/apis/kubeflow.org/v1/pytorchjobs", false),
      on_path("changes_no_pytorchjob", "patch", owner_path("kubeflow.org/v1", "PyTorchJob"), false),
      on_path("deletes_no_trainjob", "delete",
              owner_path("trainer.kubeflow.org/v1alpha1", "TrainJob"), false),
      on_path("changes_no_jobset", "update", owner_path("jobset.x-k8s.io/v1alpha2", "JobSet"),
              false),
      on_path("writes_no_pytorchjob_status", "patch",
              owner_path("kubeflow.org/v1", "PyTorchJob") + "/status", false),
  };
}

class KueueCheckRbac : public ::testing::TestWithParam<Request> {};

TEST_P(KueueCheckRbac, the_kueue_value_allows_exactly_what_the_check_does) {
  const auto got = sim::authorize(kOperator, attributes(GetParam()), kueue_chart_rbac());
  EXPECT_EQ(got.allowed, GetParam().want_allowed) << got.reason;
}

// Off by default: nothing of Kueue's, nor of the jobs Kueue queues (batch Jobs and Events
// the operator has for its TrainingJobs).
TEST(KueueCheckRbac, without_the_value_the_operator_may_do_none_of_it) {
  for (const auto& q : kueue_requests()) {
    if (q.group.empty() || q.group == "batch" || q.group == "events.k8s.io") continue;
    EXPECT_FALSE(sim::authorize(kOperator, attributes(q), chart_rbac()).allowed) << q.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Requests, KueueCheckRbac, ::testing::ValuesIn(kueue_requests()),
                         [](const auto& test) { return test.param.name; });

TEST(KueueCheckRbac, every_grant_is_used_by_a_request_the_operator_makes) {
  const auto r = render_chart({"--set", "kueue.enabled=true"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::set<std::tuple<std::string, std::string, std::string>> used;
  std::vector<Request> all = kOperatorRequests;
  for (const auto& q : kueue_requests()) all.push_back(q);
  for (const auto& q : all)
    if (q.want_allowed)
      used.insert(
          {q.group, q.subresource.empty() ? q.resource : q.resource + "/" + q.subresource, q.verb});
  for (const auto& rule : r.get("ClusterRole", "commgate-operator")["rules"])
    for (const auto& g : rule["apiGroups"])
      for (const auto& res : rule["resources"])
        for (const auto& v : rule["verbs"])
          EXPECT_TRUE(used.count({g, res, v}))
              << "grants " << v << " on " << res << " in \"" << g.get<std::string>()
              << "\" that no operator request uses";
}

TEST(WebhookRbac, the_chart_allows_the_webhook_its_watches_and_nothing_more) {
  const std::vector<Request> requests = {
      {"", "list", "commgate.io", "commpolicies", "", "", "", true},
      {"", "watch", "commgate.io", "commpolicies", "", "", "", true},
      {"", "list", "commgate.io", "commprofiles", "", "", "", true},
      {"", "watch", "commgate.io", "commprofiles", "", "", "", true},
      {"", "list", "", "namespaces", "", "", "", true},
      {"", "watch", "", "namespaces", "", "", "", true},
      {"", "list", "", "nodes", "", "", "", true},
      {"", "watch", "", "nodes", "", "", "", true},
      {"", "get", "", "nodes", "", "", "gpu-1", false},
      {"", "update", "", "nodes", "", "", "gpu-1", false},
      {"", "get", "commgate.io", "trainingjobs", "", "nlp", "bert", false},
      {"", "create", "commgate.io", "commprofiles", "", "", "", false},
      {"", "update", "coordination.k8s.io", "leases", "", "commgate-system", "commgate-operator",
       false},
      {"", "get", "", "secrets", "", "commgate-system", "commgate-webhook-tls", false},
  };
  for (const auto& q : requests) {
    const auto got = sim::authorize(kWebhook, attributes(q), chart_rbac());
    EXPECT_EQ(got.allowed, q.want_allowed)
        << q.verb << " " << q.resource << " " << q.ns << "/" << q.object << ": " << got.reason;
  }
}

TEST(OperatorRbac, another_service_account_in_the_release_namespace_gets_nothing) {
  const auto other = sim::service_account_user("commgate-system", "default");
  for (const auto& q : kOperatorRequests)
    EXPECT_FALSE(sim::authorize(other, attributes(q), chart_rbac()).allowed) << q.name;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
