// End to end: kubectl v1.32's `create <kind>` commands against the simulated API server.
// They go through client-go's typed clients, which send protobuf bodies
// (application/vnd.kubernetes.protobuf); kube-apiserver accepts them, so must the sim.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/api_server.h"
#include "tests/sim/kubectl_on_sim.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using namespace std::chrono_literals;

class KubectlCreateTest : public KubectlOnSim {
 protected:
  json get_json(const std::vector<std::string>& what) {
    std::vector<std::string> args = {"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "json"});
    Result r = kubectl(args);
    EXPECT_EQ(r.code, 0) << r.output;
    return r.code == 0 ? json::parse(r.output) : json::object();
  }
};

TEST_F(KubectlCreateTest, create_namespace_configmap_secret_and_serviceaccount) {
  Result ns = kubectl({"create", "namespace", "foo"});
  ASSERT_EQ(ns.code, 0) << ns.output;
  EXPECT_NE(ns.output.find("namespace/foo created"), std::string::npos) << ns.output;
  const json foo = get_json({"namespace", "foo"});
  EXPECT_EQ(foo["status"]["phase"], "Active");
  // Set by the API server on every Namespace (namespaceStrategy), as upstream.
  EXPECT_EQ(foo["metadata"]["labels"]["kubernetes.io/metadata.name"], "foo");

  Result cm = kubectl(
      {"create", "configmap", "cfg", "-n", "foo", "--from-literal=a=b", "--from-literal=empty="});
  ASSERT_EQ(cm.code, 0) << cm.output;
  EXPECT_EQ(get_json({"configmap", "cfg", "-n", "foo"})["data"], json({{"a", "b"}, {"empty", ""}}));

  Result secret =
      kubectl({"create", "secret", "generic", "creds", "-n", "foo", "--from-literal=k=v"});
  ASSERT_EQ(secret.code, 0) << secret.output;
  const json s = get_json({"secret", "creds", "-n", "foo"});
  EXPECT_EQ(s["data"], json({{"k", "dg=="}}));
  EXPECT_EQ(s["type"], "Opaque");

  Result sa = kubectl({"create", "serviceaccount", "robot", "-n", "foo"});
  ASSERT_EQ(sa.code, 0) << sa.output;
  EXPECT_EQ(get_json({"serviceaccount", "robot", "-n", "foo"})["metadata"]["name"], "robot");

  // The same name again: kube-apiserver's 409, as kubectl prints it.
  Result again = kubectl({"create", "namespace", "foo"});
  EXPECT_NE(again.code, 0);
  EXPECT_NE(
      again.output.find("Error from server (AlreadyExists): namespaces \"foo\" already exists"),
      std::string::npos)
      << again.output;
}

// Issue #20 defect 5: docs/install.md binds researchers with `kubectl create rolebinding`;
// the sim answered 415 to its protobuf body.
TEST_F(KubectlCreateTest, create_role_clusterrole_and_their_bindings) {
  ASSERT_EQ(kubectl({"create", "namespace", "nlp"}).code, 0);
  Result rb =
      kubectl({"create", "rolebinding", "researchers-edit", "-n", "nlp", "--clusterrole=edit",
               "--group=researchers", "--user=alice", "--serviceaccount=nlp:ci"});
  ASSERT_EQ(rb.code, 0) << rb.output;
  const json b = get_json({"rolebinding", "researchers-edit", "-n", "nlp"});
  EXPECT_EQ(
      b["roleRef"],
      json({{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "edit"}}));
  EXPECT_EQ(b["subjects"], json::parse(R"([
      {"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"},
      {"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"researchers"},
      {"kind":"ServiceAccount","name":"ci","namespace":"nlp"}])"));

  Result role = kubectl({"create", "role", "pod-reader", "-n", "nlp", "--verb=get,list",
                         "--resource=pods", "--resource-name=a"});
  ASSERT_EQ(role.code, 0) << role.output;
  EXPECT_EQ(get_json({"role", "pod-reader", "-n", "nlp"})["rules"], json::parse(R"([
      {"apiGroups":[""],"resources":["pods"],"resourceNames":["a"],"verbs":["get","list"]}])"));

  Result cr = kubectl({"create", "clusterrole", "gpu-team", "--aggregation-rule=team=gpu"});
  ASSERT_EQ(cr.code, 0) << cr.output;
  EXPECT_EQ(get_json({"clusterrole", "gpu-team"})["aggregationRule"],
            json::parse(R"({"clusterRoleSelectors":[{"matchLabels":{"team":"gpu"}}]})"));
  Result crb = kubectl(
      {"create", "clusterrolebinding", "readers", "--clusterrole=view", "--group=researchers"});
  ASSERT_EQ(crb.code, 0) << crb.output;
  EXPECT_EQ(get_json({"clusterrolebinding", "readers"})["roleRef"]["name"], "view");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
