// CRD schemas over real HTTPS: the sim defaults, prunes and validates TrainingJobs with the
// shipped CRD (crds/trainingjobs.commgate.io.yaml) on create, update, patch and status,
// and answers unknown fields per fieldValidation, as kube-apiserver does.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/yaml_json.h"
#include "sim/api_server.h"
#include "tests/server/test_client.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using server::testing::Client;
using server::testing::Reply;

json read_yaml(const std::string& relative) {
  std::ifstream in(std::string(COMMGATE_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return yaml_documents_to_json(text.str()).at(0);
}

const char* kJobs = "/apis/commgate.io/v1alpha1/namespaces/vision/trainingjobs";

class CrdSchemaApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    client_ = std::make_unique<Client>(api_.port(), api_.pki_dir() + "/ca.crt");
    ASSERT_EQ(client_->connect(), "");
    ASSERT_EQ(call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                   read_yaml("crds/trainingjobs.commgate.io.yaml"))
                  .status,
              201);
    ASSERT_EQ(call("POST", "/api/v1/namespaces", {{"metadata", {{"name", "vision"}}}}).status, 201);
  }

  Reply call(const std::string& method, const std::string& target, const json& body,
             const std::string& content_type = "application/json") {
    return client_->request(
        method, target, body.dump(),
        {{"Authorization", "Bearer " + api_.token()}, {"Content-Type", content_type}});
  }

  static json example() { return read_yaml("examples/jobs/resnet50-5m.yaml"); }

  ApiServer api_;
  std::unique_ptr<Client> client_;
};

TEST_F(CrdSchemaApiTest, create_refuses_every_field_error_in_one_422) {
  json job = example();
  job["metadata"]["name"] = "bert";
  job["spec"]["numNodes"] = 0;
  job["spec"].erase("model");
  Reply r = call("POST", kJobs, job);
  ASSERT_EQ(r.status, 422) << r.body;
  const json s = json::parse(r.body);
  EXPECT_EQ(s["reason"], "Invalid");
  EXPECT_EQ(s["message"],
            "TrainingJob.commgate.io \"bert\" is invalid: [spec.numNodes: Invalid value: 0: "
            "spec.numNodes in body should be greater than or equal to 1, spec.model: Required "
            "value, spec: Invalid value: \"object\": spec.minNodes must be <= spec.numNodes]");
  EXPECT_EQ(s["details"]["kind"], "TrainingJob");
  EXPECT_EQ(s["details"]["group"], "commgate.io");
  EXPECT_EQ(s["details"]["name"], "bert");
  EXPECT_EQ(
      s["details"]["causes"],
      json::parse(
          R"([{"reason":"FieldValueInvalid","message":"Invalid value: 0: spec.numNodes in body should be greater than or equal to 1","field":"spec.numNodes"},
                            {"reason":"FieldValueRequired","message":"Required value","field":"spec.model"},
                            {"reason":"FieldValueInvalid","message":"Invalid value: \"object\": spec.minNodes must be <= spec.numNodes","field":"spec"}])"));
  EXPECT_EQ(call("GET", std::string(kJobs) + "/bert", nullptr).status, 404);
}

TEST_F(CrdSchemaApiTest, create_stores_the_crd_defaults) {
  Reply r = call("POST", kJobs, example());
  ASSERT_EQ(r.status, 201) << r.body;
  const json stored = json::parse(call("GET", std::string(kJobs) + "/resnet-small", nullptr).body);
  EXPECT_EQ(stored["spec"]["minNodes"], 1);
  EXPECT_EQ(stored["spec"]["suspend"], false);
  EXPECT_EQ(stored["spec"]["numProcPerNode"], 1);
  EXPECT_EQ(stored["spec"]["model"]["gradientDtype"], "fp32");
  EXPECT_EQ(stored["spec"]["model"]["batchSize"], 4096);  // given, not defaulted
  EXPECT_EQ(json::parse(r.body)["spec"], stored["spec"]);
}

TEST_F(CrdSchemaApiTest, unknown_fields_follow_field_validation) {
  json job = example();
  job["spec"]["numNodez"] = 3;
  job["spec"]["model"]["color"] = "blue";

  Reply strict = call("POST", std::string(kJobs) + "?fieldValidation=Strict", job);
  ASSERT_EQ(strict.status, 400) << strict.body;
  EXPECT_EQ(json::parse(strict.body)["reason"], "BadRequest");
  EXPECT_EQ(json::parse(strict.body)["message"],
            "TrainingJob in version \"v1alpha1\" cannot be handled as a TrainingJob: strict "
            "decoding error: unknown field \"spec.model.color\", unknown field \"spec.numNodez\"");

  Reply warned = call("POST", kJobs, job);  // Warn is the default
  ASSERT_EQ(warned.status, 201) << warned.body;
  std::vector<std::string> warnings;
  for (const auto& [k, v] : warned.headers)
    if (k == "Warning") warnings.push_back(v);
  EXPECT_EQ(warnings, (std::vector<std::string>{"299 - \"unknown field \\\"spec.model.color\\\"\"",
                                                "299 - \"unknown field \\\"spec.numNodez\\\"\""}));
  const json stored = json::parse(warned.body);
  EXPECT_FALSE(stored["spec"].contains("numNodez"));
  EXPECT_FALSE(stored["spec"]["model"].contains("color"));

  Reply ignored = call("PATCH", std::string(kJobs) + "/resnet-small?fieldValidation=Ignore",
                       {{"spec", {{"other", 1}}}}, "application/merge-patch+json");
  ASSERT_EQ(ignored.status, 200) << ignored.body;
  EXPECT_EQ(ignored.header("Warning"), "");
  EXPECT_FALSE(json::parse(ignored.body)["spec"].contains("other"));

  Reply strict_patch = call("PATCH", std::string(kJobs) + "/resnet-small?fieldValidation=Strict",
                            {{"spec", {{"other", 1}}}}, "application/merge-patch+json");
  EXPECT_EQ(strict_patch.status, 400) << strict_patch.body;
  EXPECT_EQ(json::parse(strict_patch.body)["message"],
            "strict decoding error: unknown field \"spec.other\"");
}

TEST_F(CrdSchemaApiTest, patch_update_and_status_are_validated_too) {
  ASSERT_EQ(call("POST", kJobs, example()).status, 201);
  const std::string job = std::string(kJobs) + "/resnet-small";

  Reply patch =
      call("PATCH", job, {{"spec", {{"numNodes", 20000}}}}, "application/merge-patch+json");
  ASSERT_EQ(patch.status, 422) << patch.body;
  EXPECT_EQ(json::parse(patch.body)["details"]["causes"][0]["message"],
            "Invalid value: 20000: spec.numNodes in body should be less than or equal to 10000");

  json stored = json::parse(call("GET", job, nullptr).body);
  stored["spec"]["model"]["gradientDtype"] = "fp8";
  stored["spec"].erase("minNodes");  // defaulted again on update
  Reply put = call("PUT", job, stored);
  ASSERT_EQ(put.status, 422) << put.body;
  EXPECT_EQ(json::parse(put.body)["details"]["causes"][0],
            json::parse(R"({"reason":"FieldValueNotSupported","field":"spec.model.gradientDtype",
                            "message":"Unsupported value: \"fp8\": supported values: \"fp32\", \"fp16\", \"bf16\""})"));
  stored["spec"]["model"]["gradientDtype"] = "bf16";
  put = call("PUT", job, stored);
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(json::parse(put.body)["spec"]["minNodes"], 1);

  Reply status =
      call("PATCH", job + "/status", {{"status", {{"phase", "Sleeping"}, {"admittedNodes", "4"}}}},
           "application/merge-patch+json");
  ASSERT_EQ(status.status, 422) << status.body;
  EXPECT_EQ(json::parse(status.body)["message"],
            "TrainingJob.commgate.io \"resnet-small\" is invalid: [status.admittedNodes: Invalid "
            "value: \"string\": status.admittedNodes in body must be of type integer: \"string\", "
            "status.phase: Unsupported value: \"Sleeping\": supported values: \"Gated\", "
            "\"Probing\", \"Admitted\", \"Downsized\", \"Rejected\", \"Running\", \"Succeeded\", "
            "\"Failed\"]");
  status = call("PATCH", job + "/status", {{"status", {{"phase", "Gated"}}}},
                "application/merge-patch+json");
  EXPECT_EQ(status.status, 200) << status.body;
}

}  // namespace
}  // namespace commgate::sim
