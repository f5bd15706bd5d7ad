// The real kubectl (v1.32) applying TrainingJobs against the sim with the shipped CRD:
// the server's schema validation, defaults and strict field validation as a user sees them.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/api_server.h"
#include "tests/sim/kubectl_on_sim.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using namespace std::chrono_literals;

class CrdSchemaKubectlTest : public KubectlOnSim {
 protected:
  void SetUp() override {
    KubectlOnSim::SetUp();
    if (IsSkipped()) return;
    std::ofstream(dir_ + "/ns.yaml")
        << "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: vision\n";
    Result crd = kubectl(
        {"apply", "-f", std::string(COMMGATE_SOURCE_DIR) + "/crds/trainingjobs.commgate.io.yaml"});
    ASSERT_EQ(crd.code, 0) << crd.output;
    ASSERT_EQ(kubectl({"apply", "-f", dir_ + "/ns.yaml"}).code, 0);
  }

  // A TrainingJob manifest with `spec` as given.
  std::string job_file(const std::string& name, const std::string& spec_yaml) {
    const std::string path = dir_ + "/" + name + ".yaml";
    std::ofstream(path) << "apiVersion: commgate.io/v1alpha1\nkind: TrainingJob\nmetadata:\n"
                           "  name: "
                        << name << "\n  namespace: vision\nspec:\n"
                        << spec_yaml;
    return path;
  }

  static constexpr const char* kTemplate =
      "  template:\n    spec:\n      containers:\n        - name: t\n          image: i\n";
};

TEST_F(CrdSchemaKubectlTest, apply_is_refused_with_the_field_paths) {
  Result r = kubectl({"apply", "-f", job_file("bert", std::string("  numNodes: 0\n") + kTemplate)});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.output.find("The TrainingJob \"bert\" is invalid"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("spec.numNodes: Invalid value: 0: spec.numNodes in body should be "
                          "greater than or equal to 1"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("spec.model: Required value"), std::string::npos) << r.output;
  EXPECT_NE(kubectl({"get", "tj", "-n", "vision", "bert"}).code, 0);
}

TEST_F(CrdSchemaKubectlTest, apply_stores_the_example_with_the_crd_defaults) {
  Result r = kubectl(
      {"apply", "-f", std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/resnet50-5m.yaml"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("Warning"), std::string::npos) << r.output;
  Result get = kubectl({"get", "tj", "-A", "-o", "json"});
  ASSERT_EQ(get.code, 0) << get.output;
  const json items = json::parse(get.output)["items"];
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0]["spec"]["minNodes"], 1);
  EXPECT_EQ(items[0]["spec"]["suspend"], false);
  EXPECT_TRUE(items[0]["spec"]["model"].contains("gradientDtype"));
}

TEST_F(CrdSchemaKubectlTest, unknown_field_is_refused_by_default_and_warned_with_validate_warn) {
  const std::string path =
      job_file("typo", std::string("  numNodez: 2\n  numNodes: 2\n  model:\n    parameters: 5M\n") +
                           kTemplate);
  Result strict = kubectl({"apply", "-f", path});
  EXPECT_NE(strict.code, 0);
  EXPECT_NE(strict.output.find("strict decoding error: unknown field \"spec.numNodez\""),
            std::string::npos)
      << strict.output;

  Result warned = kubectl({"apply", "--validate=warn", "-f", path});
  EXPECT_EQ(warned.code, 0) << warned.output;
  EXPECT_NE(warned.output.find("Warning: unknown field \"spec.numNodez\""), std::string::npos)
      << warned.output;
  Result get = kubectl({"get", "tj", "-n", "vision", "typo", "-o", "json"});
  ASSERT_EQ(get.code, 0) << get.output;
  EXPECT_FALSE(json::parse(get.output)["spec"].contains("numNodez"));
}

// #19 and #20: `kubectl scale tj --replicas=1` below spec.minNodes was stored on the sim
// (no CEL); a cluster refuses it with the CRD's rule, and the sim now does too.
TEST_F(CrdSchemaKubectlTest, scale_below_min_nodes_is_refused_by_the_crds_rule) {
  const std::string path =
      job_file("bert", std::string("  numNodes: 4\n  minNodes: 2\n  model:\n    parameters: 5M\n") +
                           kTemplate);
  ASSERT_EQ(kubectl({"apply", "-f", path}).code, 0);
  Result below = kubectl({"scale", "tj", "-n", "vision", "bert", "--replicas=1"});
  EXPECT_NE(below.code, 0) << below.output;
  EXPECT_NE(below.output.find("The TrainingJob \"bert\" is invalid: spec: Invalid value: "
                              "\"object\": spec.minNodes must be <= spec.numNodes"),
            std::string::npos)
      << below.output;
  EXPECT_EQ(
      kubectl({"get", "tj", "-n", "vision", "bert", "-o", "jsonpath={.spec.numNodes}"}).output,
      "4");
  Result within = kubectl({"scale", "tj", "-n", "vision", "bert", "--replicas=2"});
  EXPECT_EQ(within.code, 0) << within.output;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
