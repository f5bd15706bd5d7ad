// admission_review_response_bytes (the string writer the HTTP layer sends) against
// admission_review_response(...).dump() (the JSON tree it replaced, #9): the same bytes for
// hand-made responses at every edge of the shape and escaping, and for every answer the
// handlers give to the fuzz seeds and the example jobs under a gate, a downsize and an
// admit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/comm_profile.h"
#include "core/training_job.h"
#include "core/yaml_json.h"
#include "tests/webhook/webhook_test_support.h"
#include "webhook/admission_review.h"
#include "webhook/handlers.h"

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::a_policy;
using commgate::testing::test_now;
using nlohmann::json;
using namespace commgate::webhook::testing;

struct ResponseCase {
  std::string name;
  std::string uid;
  std::string api_version;
  AdmissionResponse response;
};

void PrintTo(const ResponseCase& c, std::ostream* os) {
  *os << c.name;
}

class ResponseBytes : public ::testing::TestWithParam<ResponseCase> {};

TEST_P(ResponseBytes, AreTheTreesDump) {
  const ResponseCase& c = GetParam();
  EXPECT_EQ(admission_review_response_bytes(c.uid, c.api_version, c.response),
            admission_review_response(c.uid, c.api_version, c.response).dump());
}

AdmissionResponse every_field() {
  AdmissionResponse r = denied("over \"policy\"\n\tline\\2", 422);
  r.patch = {{"add", "/metadata/annotations", json::object()},
             {"add", "/metadata/annotations/commgate.io~1decision", "Downsize"},
             {"replace", "/spec/numNodes", 2},
             {"add", "/spec/suspend", true},
             {"add", "/spec/model/parameters", 3.4e8},
             {"remove", "/metadata/annotations/x", nullptr},
             {"add", "/spec/list", json::array({1, "two", nullptr})}};
  r.warnings = {"first", "second \"quoted\""};
  r.audit_annotations = {{"reason", "OverPolicyDownsized"}, {"decision", "Downsize"}};
  return r;
}

AdmissionResponse with_message(std::string message, bool allow) {
  AdmissionResponse r = allow ? allowed() : denied("");
  r.message = std::move(message);
  return r;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ResponseBytes,
    ::testing::Values(
        ResponseCase{"plain_allow", "u-1", "admission.k8s.io/v1", allowed()},
        ResponseCase{"no_api_version_answers_v1", "u-2", "", allowed()},
        ResponseCase{"v1beta1_is_echoed", "u-3", "admission.k8s.io/v1beta1", allowed()},
        ResponseCase{"denial_by_policy", "u-4", "admission.k8s.io/v1", denied("over policy")},
        ResponseCase{"denial_without_code_or_reason_reads_403_forbidden", "u-5", "",
                     [] {
                       AdmissionResponse r;
                       r.allowed = false;
                       r.message = "no code";
                       return r;
                     }()},
        ResponseCase{"every_field_at_once", "u-6", "admission.k8s.io/v1", every_field()},
        ResponseCase{"allowed_with_a_message_has_a_status_without_code", "u-7",
                     "admission.k8s.io/v1", with_message("note", true)},
        ResponseCase{"denied_with_an_empty_message", "u-8", "", with_message("", false)},
        ResponseCase{"control_characters_are_escaped_as_nlohmann_does", "u-9", "",
                     with_message(std::string("a\x01\x1f\x7f\b\f\r z", 10), false)},
        ResponseCase{"utf8_passes_through", "u-\xc3\xa9", "",
                     with_message("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x9a\x80", false)},
        ResponseCase{"a_uid_that_needs_escaping", "u\"\\/", "", allowed()},
        ResponseCase{"patch_values_that_are_unicode_strings", "u-10", "",
                     patched({{"add", "/metadata/annotations/n\xc3\xa9", "v\xc3\xa9"}})}),
    [](const auto& case_info) { return case_info.param.name; });

TEST(ResponseBytes, ThrowOnInvalidUtf8AsTheTreesDumpDoes) {
  const AdmissionResponse r = with_message("bad \xff byte", false);
  EXPECT_THROW(admission_review_response("u", "", r).dump(), json::type_error);
  EXPECT_THROW(admission_review_response_bytes("u", "", r), json::type_error);
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every review the handlers are fed here: the fuzz seeds as they are, and each example
// job as a CREATE and as an UPDATE that doubles numNodes.
std::vector<std::pair<std::string, std::string>> reviews() {
  const std::filesystem::path testdata = COMMGATE_WEBHOOK_TESTDATA;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : std::filesystem::directory_iterator(testdata / "../fuzz/corpus"))
    out.emplace_back(e.path().filename().string(), read_file(e.path()));
  for (const auto& e : std::filesystem::directory_iterator(testdata / "../../../examples/jobs")) {
    for (const json& job : yaml_documents_to_json(read_file(e.path()))) {
      json raised = job;
      raised["spec"]["numNodes"] = job["spec"].value("numNodes", 1) * 2;
      out.emplace_back(e.path().filename().string() + " CREATE", a_create_of(job).body());
      out.emplace_back(e.path().filename().string() + " UPDATE", an_update_of(job, raised).body());
    }
  }
  return out;
}

// The pool a review's TrainingJob runs in, so the snapshots below measure it.
std::string pool_of(const AdmissionRequest& request) {
  try {
    return pool_name(
        parse_training_job(request.object, ObjectSource::kAdmission).spec.node_selector);
  } catch (const std::exception&) {
    return "pool-all";
  }
}

TEST(ResponseBytes, AreTheTreesDumpForEveryHandlerAnswerToTheSeedsAndExamples) {
  const TimePoint now = test_now();
  int compared = 0;
  for (const auto& [name, body] : reviews()) {
    SCOPED_TRACE(name);
    AdmissionRequest request;
    try {
      request = parse_admission_review(body);
    } catch (const MalformedReview& e) {
      const AdmissionResponse answer = denied(e.what(), 400);
      EXPECT_EQ(admission_review_response_bytes(e.uid(), e.api_version(), answer),
                admission_review_response(e.uid(), e.api_version(), answer).dump());
      ++compared;
      continue;
    }
    const std::string pool = pool_of(request);
    const std::vector<Snapshot> snapshots = {
        snapshot_of({}, {}),  // gate
        snapshot_of({a_policy().named("strict").max_comm_share(0.10).build()},
                    {a_profile(0.1, now, pool)}),       // downsize or deny
        snapshot_of({}, {a_profile(100, now, pool)})};  // admit
    for (const Snapshot& snapshot : snapshots) {
      for (const AdmissionResponse& answer :
           {handle_mutate(request, snapshot, now), handle_validate(request, snapshot, now)}) {
        EXPECT_EQ(admission_review_response_bytes(request.uid, request.api_version, answer),
                  admission_review_response(request.uid, request.api_version, answer).dump());
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 50) << "the seeds and examples were found";
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::webhook
