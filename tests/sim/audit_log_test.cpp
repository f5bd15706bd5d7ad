// The audit log's pure parts: kube-apiserver's verb for a request, the objectRef a path
// names, and the audit.k8s.io/v1 Event written for one.
#include "sim/audit_log.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

server::Request request(const std::string& method, const std::string& target) {
  server::Request r;
  r.method = method;
  r.target = target;
  const size_t q = target.find('?');
  r.path = target.substr(0, q);
  r.query = q == std::string::npos ? "" : target.substr(q + 1);
  return r;
}

struct VerbCase {
  std::string method, target, want;
};

TEST(AuditVerb, AsKubeApiserverNamesIt) {
  const std::vector<VerbCase> cases = {
      {"GET", "/api/v1/namespaces/a/pods", "list"},
      {"GET", "/api/v1/namespaces/a/pods?watch=true", "watch"},
      {"GET", "/api/v1/namespaces/a/pods?watch=1", "watch"},
      {"GET", "/api/v1/namespaces/a/pods?watch=false", "list"},
      {"GET", "/api/v1/namespaces/a/pods/p", "get"},
      {"GET", "/api/v1/namespaces/a", "get"},
      {"GET", "/api/v1/namespaces", "list"},
      {"GET", "/apis/batch/v1/jobs", "list"},
      {"GET", "/apis", "get"},
      {"GET", "/version", "get"},
      {"POST", "/apis/batch/v1/namespaces/a/jobs", "create"},
      {"PUT", "/apis/commgate.io/v1alpha1/namespaces/a/trainingjobs/t/status", "update"},
      {"PATCH", "/apis/commgate.io/v1alpha1/namespaces/a/trainingjobs/t", "patch"},
      {"DELETE", "/apis/batch/v1/namespaces/a/jobs/j", "delete"},
      {"DELETE", "/apis/batch/v1/namespaces/a/jobs", "deletecollection"},
  };
  for (const auto& c : cases)
    EXPECT_EQ(audit_verb(request(c.method, c.target)), c.want) << c.method << " " << c.target;
}

struct RefCase {
  std::string path;
  AuditObjectRef want;
};

TEST(AuditObjectRef, FromTheApiPathLayout) {
  const std::vector<RefCase> cases = {
      {"/api/v1/namespaces/a/pods/p", {"pods", "", "a", "p", "", "v1"}},
      {"/api/v1/namespaces/a/pods/p/log", {"pods", "log", "a", "p", "", "v1"}},
      {"/api/v1/namespaces/a", {"namespaces", "", "", "a", "", "v1"}},
      {"/api/v1/namespaces", {"namespaces", "", "", "", "", "v1"}},
      {"/api/v1/namespaces/a/finalize", {"namespaces", "finalize", "", "a", "", "v1"}},
      {"/api/v1/nodes/n1", {"nodes", "", "", "n1", "", "v1"}},
      {"/apis/batch/v1/namespaces/a/jobs", {"jobs", "", "a", "", "batch", "v1"}},
      {"/apis/commgate.io/v1alpha1/namespaces/a/trainingjobs/t/status",
       {"trainingjobs", "status", "a", "t", "commgate.io", "v1alpha1"}},
      {"/apis/commgate.io/v1alpha1/commprofiles/pool-1",
       {"commprofiles", "", "", "pool-1", "commgate.io", "v1alpha1"}},
      {"/apis", {}},
      {"/version", {}},
  };
  for (const auto& c : cases) {
    const AuditObjectRef got = audit_object_ref(c.path);
    EXPECT_EQ(got.resource, c.want.resource) << c.path;
    EXPECT_EQ(got.subresource, c.want.subresource) << c.path;
    EXPECT_EQ(got.ns, c.want.ns) << c.path;
    EXPECT_EQ(got.name, c.want.name) << c.path;
    EXPECT_EQ(got.api_group, c.want.api_group) << c.path;
    EXPECT_EQ(got.api_version, c.want.api_version) << c.path;
  }
}

TEST(AuditEvent, ACreateNamesTheCreatedObjectAndTheEventIsAuditV1) {
  server::Response created;
  created.status = 201;
  created.body = R"({"metadata":{"name":"probe-x7k2q","namespace":"a"}})";
  const auto received = std::chrono::system_clock::time_point(
      std::chrono::microseconds(1'764'633'600'123'456));  // 2025-12-02T00:00:00.123456Z
  AuditEvent e = audit_event(request("POST", "/apis/batch/v1/namespaces/a/jobs"), created,
                             "system:serviceaccount:commgate-system:commgate-operator", received);
  EXPECT_EQ(e.object_ref.name, "probe-x7k2q");
  const nlohmann::json j = to_json(e);
  EXPECT_EQ(j["apiVersion"], "audit.k8s.io/v1");
  EXPECT_EQ(j["kind"], "Event");
  EXPECT_EQ(j["stage"], "ResponseComplete");
  EXPECT_EQ(j["verb"], "create");
  EXPECT_EQ(j["user"]["username"], "system:serviceaccount:commgate-system:commgate-operator");
  EXPECT_EQ(j["objectRef"]["name"], "probe-x7k2q");
  EXPECT_EQ(j["objectRef"]["apiGroup"], "batch");
  EXPECT_EQ(j["responseStatus"]["code"], 201);
  EXPECT_EQ(j["requestReceivedTimestamp"], "2025-12-02T00:00:00.123456Z");

  server::Response refused;
  refused.status = 401;
  e = audit_event(request("GET", "/api/v1/pods?watch=true"), refused, "", received);
  EXPECT_EQ(to_json(e)["user"], nlohmann::json::object());
  EXPECT_EQ(to_json(e)["stage"], "ResponseStarted");
}

TEST(AuditLog, KeepsTheNewestUpToItsLimit) {
  AuditLog log(2);
  for (const char* uri : {"/a", "/b", "/c"}) {
    AuditEvent e;
    e.request_uri = uri;
    log.add(e);
  }
  const auto events = log.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].request_uri, "/b");
  EXPECT_EQ(events[1].request_uri, "/c");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
