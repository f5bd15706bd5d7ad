// The real `kubectl apply --server-side` against the sim: two field managers on a
// ConfigMap and on a custom resource, the conflict kubectl reports without
// --force-conflicts, ownership moved with it, a dropped field removed unless another
// manager owns it, and `kubectl get --show-managed-fields`.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/sim/kubectl_on_sim.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

class ServerSideApplyKubectlTest : public KubectlOnSim {
 protected:
  std::string file(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  Result apply(const std::string& path, const std::string& manager, bool force = false) {
    std::vector<std::string> args = {"apply", "--server-side", "--field-manager=" + manager, "-f",
                                     path};
    if (force) args.push_back("--force-conflicts");
    return kubectl(args);
  }
  json get_json(const std::vector<std::string>& what) {
    std::vector<std::string> args = {"get"};
    args.insert(args.end(), what.begin(), what.end());
    args.insert(args.end(), {"-o", "json", "--show-managed-fields"});
    const Result r = kubectl(args);
    EXPECT_EQ(r.code, 0) << r.output;
    return json::parse(r.output);
  }
};

const char* kKubectlCm = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
data:
)";

TEST_F(ServerSideApplyKubectlTest, two_managers_on_a_configmap) {
  Result r = apply(file("one.yaml", std::string(kKubectlCm) + "  a: \"1\"\n  b: \"1\"\n"), "one");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("configmap/settings serverside-applied"), std::string::npos) << r.output;
  // Another manager, same value for b and a field of its own: no conflict.
  r = apply(file("two.yaml", std::string(kKubectlCm) + "  b: \"1\"\n  c: \"2\"\n"), "two");
  ASSERT_EQ(r.code, 0) << r.output;
  // A different value for a field "one" owns: kubectl's conflict message, exit 1.
  const std::string conflicting =
      file("two-b.yaml", std::string(kKubectlCm) + "  a: \"changed\"\n  b: \"1\"\n  c: \"2\"\n");
  r = apply(conflicting, "two");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("error: Apply failed with 1 conflict: conflict with \"one\": .data.a"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--force-conflicts"), std::string::npos) << r.output;
  EXPECT_EQ(get_json({"configmap", "settings"})["data"]["a"], "1");
  // Forced: the value and the ownership move to "two".
  r = apply(conflicting, "two", /*force=*/true);
  ASSERT_EQ(r.code, 0) << r.output;
  json cm = get_json({"configmap", "settings"});
  EXPECT_EQ(cm["data"]["a"], "changed");
  for (const auto& e : cm["metadata"]["managedFields"]) {
    if (e["manager"] == "one") EXPECT_EQ(e["fieldsV1"], json::parse(R"({"f:data":{"f:b":{}}})"));
    if (e["manager"] == "two")
      EXPECT_EQ(e["fieldsV1"], json::parse(R"({"f:data":{"f:a":{},"f:b":{},"f:c":{}}})"));
  }
  // "one" now applies nothing in data: b stays ("two" owns it too).
  r = apply(file("one-empty.yaml", std::string(kKubectlCm) + "  z: \"9\"\n"), "one");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(get_json({"configmap", "settings"})["data"],
            json({{"a", "changed"}, {"b", "1"}, {"c", "2"}, {"z", "9"}}));
  // "two" drops c, which no one else owns: removed.
  r = apply(file("two-c.yaml", std::string(kKubectlCm) + "  a: \"changed\"\n  b: \"1\"\n"), "two");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(get_json({"configmap", "settings"})["data"],
            json({{"a", "changed"}, {"b", "1"}, {"z", "9"}}));
  // The YAML view shows the entries.
  r = kubectl({"get", "configmap", "settings", "-o", "yaml", "--show-managed-fields"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("managedFields:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("manager: two"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("operation: Apply"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fieldsType: FieldsV1"), std::string::npos) << r.output;
  // Without the flag kubectl hides them.
  r = kubectl({"get", "configmap", "settings", "-o", "yaml"});
  EXPECT_EQ(r.output.find("managedFields:"), std::string::npos) << r.output;
}

const char* kGadgetCrd = R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.x.commgate.io
spec:
  group: x.commgate.io
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
)";

const char* kGadget = R"(apiVersion: x.commgate.io/v1
kind: Gadget
metadata:
  name: g
  namespace: default
spec:
)";

TEST_F(ServerSideApplyKubectlTest, custom_resource_map_list_merged_by_key) {
  ASSERT_EQ(kubectl({"apply", "-f", file("crd.yaml", kGadgetCrd)}).code, 0);
  Result r = apply(
      file("g1.yaml", std::string(kGadget) + "  size: 1\n  ports:\n  - {name: http, port: 80}\n"),
      "one");
  ASSERT_EQ(r.code, 0) << r.output;
  r = apply(file("g2.yaml", std::string(kGadget) + "  ports:\n  - {name: metrics, port: 9090}\n"),
            "two");
  ASSERT_EQ(r.code, 0) << r.output;
  json g = get_json({"gadget", "g"});
  ASSERT_EQ(g["spec"]["ports"].size(), 2u) << g.dump();
  r = apply(file("g3.yaml", std::string(kGadget) + "  ports:\n  - {name: http, port: 8080}\n"),
            "two");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("conflict with \"one\": .spec.ports[name=\"http\"].port"),
            std::string::npos)
      << r.output;
  // "one" drops its port: only the other manager's item is left.
  r = apply(file("g4.yaml", std::string(kGadget) + "  size: 1\n"), "one");
  ASSERT_EQ(r.code, 0) << r.output;
  g = get_json({"gadget", "g"});
  EXPECT_EQ(g["spec"]["ports"], json::parse(R"([{"name":"metrics","port":9090}])"));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
