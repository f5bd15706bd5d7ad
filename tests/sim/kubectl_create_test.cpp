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

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
