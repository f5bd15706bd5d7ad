// The AdmissionReview envelope: parsing the real apiserver requests, each malformed case,
// and the response shape (uid echo, base64 JSONPatch, warnings, status).
#include "webhook/admission_review.h"

#include <gtest/gtest.h>

#include <string>

#include "core/field_errors.h"
#include "core/training_job.h"
#include "tests/webhook/webhook_test_support.h"

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using namespace commgate::webhook::testing;

TEST(ParseAdmissionReview, ReadsTheRealCreateEnvelope) {
  const auto r = ReviewBuilder("request-v1-create-pod-minikube-user").parse();
  EXPECT_EQ(r.uid, "c3ce937b-1a18-4e45-a0e8-adf5c962f1e4");
  EXPECT_EQ(r.operation, "CREATE");
  EXPECT_EQ(r.user_info.username, "minikube-user");
  EXPECT_EQ(r.user_info.groups,
            (std::vector<std::string>{"system:masters", "system:authenticated"}));
  EXPECT_TRUE(r.old_object.is_null());
  EXPECT_FALSE(r.dry_run);
}

TEST(ParseAdmissionReview, ReadsUserInfoExtraOfAServiceAccount) {
  const auto r = ReviewBuilder("request-v1-update-clusterscoped-cr-serviceaccount").parse();
  EXPECT_EQ(r.operation, "UPDATE");
  EXPECT_TRUE(r.namespace_.empty()) << "cluster-scoped";
  ASSERT_EQ(r.user_info.extra.count("authentication.kubernetes.io/pod-name"), 1u);
  EXPECT_EQ(r.user_info.extra.at("authentication.kubernetes.io/pod-name"),
            std::vector<std::string>{"capsule-controller-manager-58c7d76f49-5kdl6"});
  EXPECT_TRUE(r.old_object.is_object());
}

TEST(ParseAdmissionReview, ReadsADeleteWithObjectNull) {
  const auto r = ReviewBuilder("request-v1-delete-pod-by-node").parse();
  EXPECT_EQ(r.operation, "DELETE");
  EXPECT_TRUE(r.object.is_null());
  EXPECT_TRUE(r.old_object.is_object());
}

TEST(ParseAdmissionReview, AcceptsV1beta1AndEchoesIt) {
  const auto r = ReviewBuilder("request-v1-create-pod-minikube-user")
                     .set("/apiVersion", "admission.k8s.io/v1beta1")
                     .parse();
  const json out = admission_review_response(r.uid, r.api_version, allowed());
  EXPECT_EQ(out["apiVersion"], "admission.k8s.io/v1beta1");
}

struct MalformedCase {
  std::string name;
  std::string body;
  int want_http_status;  // 400: plain 400; 200: AdmissionReview allowed=false
  std::string want_message_part;
};

class Malformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(Malformed, IsRefusedWithAClearMessage) {
  const MalformedCase& c = GetParam();
  try {
    parse_admission_review(c.body);
    FAIL() << "parsed";
  } catch (const MalformedReview& e) {
    EXPECT_EQ(e.http_status(), c.want_http_status);
    EXPECT_NE(std::string(e.what()).find(c.want_message_part), std::string::npos) << e.what();
    if (e.http_status() == 200) {
      EXPECT_FALSE(e.uid().empty());
    }
  }
}

std::string with(const std::string& pointer, json value) {
  return ReviewBuilder("request-v1-create-pod-minikube-user").set(pointer, value).body();
}
std::string without(const std::string& key) {
  json doc = ReviewBuilder("request-v1-create-pod-minikube-user").json();
  doc["request"].erase(key);
  return doc.dump();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Malformed,
    ::testing::Values(
        MalformedCase{"not_json", "{\"apiVersion\": ", 400, "not valid JSON"},
        MalformedCase{"not_an_object", "[1,2,3]", 400, "not a JSON object"},
        MalformedCase{"deeply_nested", std::string(100000, '[') + std::string(100000, ']'), 400,
                      "nested deeper"},
        MalformedCase{"wrong_api_version", with("/apiVersion", "admission.k8s.io/v2"), 400,
                      "apiVersion"},
        MalformedCase{"wrong_kind", with("/kind", "TokenReview"), 400, "kind must be"},
        MalformedCase{
            "missing_request",
            json{{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}}.dump(), 400,
            "request is missing"},
        MalformedCase{"missing_uid", without("uid"), 400, "request.uid"},
        MalformedCase{"uid_not_a_string", with("/request/uid", 42), 400, "request.uid"},
        MalformedCase{"huge_number",
                      [] {
                        std::string b = with("/request/object/spec/numNodes", 7);
                        const auto at = b.find("\"numNodes\":7");
                        return b.replace(at, 12, "\"numNodes\":1e999");
                      }(),
                      400, "number overflow"},
        MalformedCase{"unknown_operation", with("/request/operation", "PATCH"), 200,
                      "request.operation"},
        MalformedCase{"missing_object_on_create", with("/request/object", nullptr), 200,
                      "request.object"},
        MalformedCase{"missing_old_object_on_update", with("/request/operation", "UPDATE"), 200,
                      "request.oldObject"}),
    [](const auto& case_info) { return case_info.param.name; });

TEST(ParseAdmissionReview, ReadsAHugeIntegerAsANumberTheJobParserRefuses) {
  // 2^64 + 1 fits no integer type: nlohmann reads it as a double, and the TrainingJob
  // parser then names the field (it must be an integer in 1..10000).
  std::string body = with("/request/object/spec/numNodes", 7);
  body.replace(body.find("\"numNodes\":7"), 12, "\"numNodes\":18446744073709551617");
  const AdmissionRequest request = parse_admission_review(body);
  const nlohmann::json& nodes = request.object.at("spec").at("numNodes");
  EXPECT_TRUE(nodes.is_number_float()) << nodes.dump();
  try {
    parse_training_job(request.object);
    FAIL() << "a numNodes of 2^64 + 1 was accepted";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("spec.numNodes"), std::string::npos) << e.what();
  }
}

TEST(AdmissionReviewResponse, EchoesTheUidAndEncodesThePatch) {
  AdmissionResponse r = with_warnings(patched({{"add", "/spec/suspend", true}}), {"why"});
  const json out = admission_review_response("u-1", "admission.k8s.io/v1", r);
  EXPECT_EQ(out["kind"], "AdmissionReview");
  EXPECT_EQ(out["response"]["uid"], "u-1");
  EXPECT_EQ(out["response"]["allowed"], true);
  EXPECT_EQ(out["response"]["patchType"], "JSONPatch");
  // base64 of [{"op":"add","path":"/spec/suspend","value":true}]
  EXPECT_EQ(out["response"]["patch"],
            "W3sib3AiOiJhZGQiLCJwYXRoIjoiL3NwZWMvc3VzcGVuZCIsInZhbHVlIjp0cnVlfV0=");
  EXPECT_EQ(out["response"]["warnings"], json::array({"why"}));
}

TEST(AdmissionReviewResponse, CarriesTheStatusOfADenial) {
  const json out = admission_review_response("u-2", "", denied("over policy"));
  EXPECT_EQ(out["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["code"], 403);
  EXPECT_EQ(out["response"]["status"]["message"], "over policy");
  EXPECT_FALSE(out["response"].contains("patch"));
}

TEST(JsonPointerToken, EscapesSlashAndTilde) {
  EXPECT_EQ(json_pointer_token("commgate.io/decision"), "commgate.io~1decision");
  EXPECT_EQ(json_pointer_token("a~b"), "a~0b");
}

// json_nesting_depth skips strings with memchr (#9); the byte-by-byte count it replaced is
// the reference: the same depth for every input, valid JSON or not.
int depth_byte_by_byte(std::string_view body, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return depth;
}

struct DepthCase {
  std::string name;
  std::string body;
};

class NestingDepth : public ::testing::TestWithParam<DepthCase> {};

TEST_P(NestingDepth, IsTheByteByByteCount) {
  for (int limit : {0, 1, 2, 3, 128}) {
    EXPECT_EQ(json_nesting_depth(GetParam().body, limit),
              depth_byte_by_byte(GetParam().body, limit))
        << "limit " << limit;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NestingDepth,
    ::testing::Values(DepthCase{"empty", ""}, DepthCase{"flat_object", R"({"a":1})"},
                      DepthCase{"nested", R"({"a":[{"b":[1,[2]]}]})"},
                      DepthCase{"brackets_inside_a_string", R"({"a":"[[[{{{"})"},
                      DepthCase{"escaped_quote_inside_a_string", R"({"a":"x\"[[[","b":[[1]]})"},
                      DepthCase{"escaped_backslash_before_the_closing_quote",
                                R"({"a":"x\\","b":[[[1]]]})"},
                      DepthCase{"three_backslashes_then_a_quote", R"(["\\\"[", [[]]])"},
                      DepthCase{"unterminated_string", R"([[["abc[[[)"},
                      DepthCase{"unterminated_string_ending_in_a_backslash", "[[\"ab\\"},
                      DepthCase{"closing_more_than_opened", "]]]][[{"},
                      DepthCase{"a_quote_right_after_the_opening_quote", R"([["",[""]]])"},
                      DepthCase{"deep", std::string(300, '[') + std::string(300, ']')}),
    [](const auto& case_info) { return case_info.param.name; });

TEST(NestingDepth, IsTheByteByByteCountOnRandomBytesOfJsonsAlphabet) {
  // Deterministic: a fixed linear congruential sequence over the bytes that matter.
  const std::string alphabet = "\"\\{}[]a ";
  uint64_t x = 12345;
  for (int n = 0; n < 5000; ++n) {
    std::string body;
    const size_t len = n % 64;
    for (size_t i = 0; i < len; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      body += alphabet[(x >> 33) % alphabet.size()];
    }
    ASSERT_EQ(json_nesting_depth(body, 4), depth_byte_by_byte(body, 4)) << body;
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::webhook
