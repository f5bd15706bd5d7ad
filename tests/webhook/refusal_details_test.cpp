// A refusal for invalid fields carries status.details.causes, as kube-apiserver's
// errors.NewInvalid writes them: kubectl shows a 422 Invalid only through its causes
// (`kubectl edit` as `# * <field>: <message>`, `kubectl apply` as
// `The TrainingJob "x" is invalid: * <field>: <message>`), issue #11.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/field_errors.h"
#include "tests/webhook/webhook_test_support.h"
#include "webhook/admission_review.h"
#include "webhook/handlers.h"

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::a_training_job;
using commgate::testing::test_now;
using nlohmann::json;
using namespace commgate::webhook::testing;

json cause(const std::string& field, const std::string& message) {
  return {{"reason", "FieldValueInvalid"}, {"message", message}, {"field", field}};
}

// Both writers: the tree, and the bytes the HTTP layer sends (parsed back).
std::vector<json> both_writers(const AdmissionResponse& r) {
  const json tree = admission_review_response("u-9", "admission.k8s.io/v1", r);
  const std::string bytes = admission_review_response_bytes("u-9", "admission.k8s.io/v1", r);
  EXPECT_EQ(bytes, tree.dump());
  return {tree, json::parse(bytes)};
}

TEST(RefusalDetails, AValidationErrorBecomesOneCausePerField) {
  FieldErrors errors;
  errors.add("spec.numNodes", "must be an integer, got \"four\"");
  errors.add("spec.model.gradientDtype", "must be one of fp32, fp16, bf16, got \"fp64\"");
  AdmissionResponse r = invalid(ValidationError("TrainingJob research/bert is invalid", errors));
  EXPECT_FALSE(r.allowed);
  EXPECT_EQ(r.code, 422);
  EXPECT_EQ(r.reason, "Invalid");
  EXPECT_EQ(r.decision, "Invalid");
  r.details.name = "bert";
  r.details.group = "commgate.io";
  r.details.kind = "TrainingJob";
  for (const json& out : both_writers(r)) {
    const json& status = out["response"]["status"];
    EXPECT_EQ(status["code"], 422);
    EXPECT_EQ(status["reason"], "Invalid");
    EXPECT_EQ(status["status"], "Failure");
    EXPECT_EQ(status["message"], r.message);
    EXPECT_EQ(status["details"], (json{{"name", "bert"},
                                       {"group", "commgate.io"},
                                       {"kind", "TrainingJob"},
                                       {"causes",
                                        {cause("spec.numNodes", "must be an integer, got \"four\""),
                                         cause("spec.model.gradientDtype",
                                               "must be one of fp32, fp16, bf16, got \"fp64\"")}}}))
        << out.dump(2);
  }
}

TEST(RefusalDetails, AFieldAndMessageBecomeTheMessageAndOneCause) {
  const AdmissionResponse r = invalid("spec.replicas", "must be between 1 and 10000, got 0");
  EXPECT_EQ(r.message, "spec.replicas: must be between 1 and 10000, got 0");
  for (const json& out : both_writers(r)) {
    // No name, group or kind until the handler names the request: only causes.
    EXPECT_EQ(out["response"]["status"]["details"],
              (json{{"causes", {cause("spec.replicas", "must be between 1 and 10000, got 0")}}}));
  }
}

TEST(RefusalDetails, StringsInCausesAreEscaped) {
  AdmissionResponse r = invalid("metadata.labels[\"a\\b\"]", "bad \"value\"\n\ttab \x01 é");
  r.details.name = "we\"ird";
  for (const json& out : both_writers(r)) {
    const json& d = out["response"]["status"]["details"];
    EXPECT_EQ(d["name"], "we\"ird");
    EXPECT_EQ(d["causes"][0]["field"], "metadata.labels[\"a\\b\"]");
    EXPECT_EQ(d["causes"][0]["message"], "bad \"value\"\n\ttab \x01 é");
  }
}

TEST(RefusalDetails, ADenialWithoutCausesHasNoDetails) {
  for (const AdmissionResponse& r : {denied("over policy"), denied("bad", 400)}) {
    for (const json& out : both_writers(r))
      EXPECT_FALSE(out["response"]["status"].contains("details")) << out.dump();
  }
}

// What handle_validate answers: details name the request as kube-apiserver does.
TEST(RefusalDetails, AnInvalidTrainingJobIsNamedWithItsGroupAndKind) {
  const json job = a_training_job("bert").set("/spec/numNodes", "four").json();
  const auto response = handle_validate(a_create_of(job).parse(), snapshot_of({}, {}), test_now());
  ASSERT_FALSE(response.allowed);
  EXPECT_EQ(response.code, 422);
  EXPECT_EQ(response.details.name, "bert");
  EXPECT_EQ(response.details.group, "commgate.io");
  EXPECT_EQ(response.details.kind, "TrainingJob");
  ASSERT_EQ(response.details.causes.size(), 1u);
  EXPECT_EQ(response.details.causes[0].field, "spec.numNodes");
  EXPECT_EQ(response.details.causes[0].reason, "FieldValueInvalid");
  EXPECT_NE(response.message.find("spec.numNodes: " + response.details.causes[0].message),
            std::string::npos)
      << response.message;
}

TEST(RefusalDetails, AMissingPolicyRefIsACauseOnSpecPolicyRefName) {
  const json job = a_training_job("bert").policy_ref("nope").json();
  const auto response = handle_validate(a_create_of(job).parse(), snapshot_of({}, {}), test_now());
  ASSERT_FALSE(response.allowed);
  EXPECT_EQ(response.code, 422);
  ASSERT_EQ(response.details.causes.size(), 1u);
  EXPECT_EQ(response.details.causes[0].field, "spec.policyRef.name");
  EXPECT_EQ(response.details.causes[0].message, "CommPolicy \"nope\" not found");
  EXPECT_EQ(response.message, "spec.policyRef.name: CommPolicy \"nope\" not found");
  EXPECT_EQ(response.details.name, "bert");
}

TEST(RefusalDetails, AScaleToZeroIsACauseOnSpecReplicasOfAScale) {
  auto scale = [](int replicas) {
    return json{{"apiVersion", "autoscaling/v1"},
                {"kind", "Scale"},
                {"metadata", {{"name", "bert"}, {"namespace", "research"}}},
                {"spec", {{"replicas", replicas}}}};
  };
  auto review = an_update_of(scale(2), scale(0));
  review.resource("trainingjobs", "scale").kind("Scale").user("alice");
  const auto response = handle_validate(review.parse(), snapshot_of({}, {}), test_now());
  ASSERT_FALSE(response.allowed);
  EXPECT_EQ(response.code, 422);
  ASSERT_EQ(response.details.causes.size(), 1u);
  EXPECT_EQ(response.details.causes[0].field, "spec.replicas");
  EXPECT_EQ(response.details.group, "autoscaling");
  EXPECT_EQ(response.details.kind, "Scale");
}

TEST(RefusalDetails, AnInvalidCommPolicyIsNamedAsACommPolicy) {
  auto review = a_create_of({{"apiVersion", "commgate.io/v1alpha1"},
                             {"kind", "CommPolicy"},
                             {"metadata", {{"name", "p"}}},
                             {"spec", {{"maxCommShare", 1.5}}}});
  review.resource("commpolicies").kind("CommPolicy");
  const auto response = handle_validate(review.parse(), snapshot_of({}, {}), test_now());
  ASSERT_FALSE(response.allowed);
  EXPECT_EQ(response.details.kind, "CommPolicy");
  EXPECT_EQ(response.details.name, "p");
  ASSERT_FALSE(response.details.causes.empty());
  EXPECT_EQ(response.details.causes[0].field, "spec.maxCommShare");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::webhook
