// The HTTP layer without sockets: Router::dispatch on AdmissionService's routes.
#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/webhook/webhook_test_support.h"
#include "webhook/webhook_server.h"

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

using commgate::testing::a_training_job;
using commgate::testing::test_now;
using nlohmann::json;
using server::Request;
using server::Response;
using namespace commgate::webhook::testing;

Request post(const std::string& path, std::string body,
             const std::string& content_type = "application/json") {
  Request r;
  r.method = "POST";
  r.target = r.path = path;
  r.body = std::move(body);
  if (!content_type.empty()) r.headers.push_back({"Content-Type", content_type});
  return r;
}

Request get(const std::string& path) {
  Request r;
  r.method = "GET";
  r.target = r.path = path;
  return r;
}

struct Fixture {
  std::shared_ptr<StaticPolicySource> source =
      std::make_shared<StaticPolicySource>(std::make_shared<Snapshot>(snapshot_of({}, {})));
  AdmissionService service{source, WebhookConfig{}, [] { return test_now(); }};
  server::Router router = service.router();
};

const std::string kJob = a_create_of(a_training_job("bert").nodes(4).json()).body();

TEST(AdmissionService, AnswersAnAdmissionReviewWithTheUid) {
  Fixture f;
  const Response r = f.router.dispatch(post("/mutate", kJob));
  EXPECT_EQ(r.status, 200);
  const json out = json::parse(r.body);
  EXPECT_EQ(out["response"]["uid"], "c3ce937b-1a18-4e45-a0e8-adf5c962f1e4");
  EXPECT_EQ(out["response"]["patchType"], "JSONPatch") << "gated";
}

TEST(AdmissionService, AcceptsAJsonContentTypeWithParameters) {
  Fixture f;
  EXPECT_EQ(f.router.dispatch(post("/validate", kJob, "application/json; charset=utf-8")).status,
            200);
}

TEST(AdmissionService, RefusesAnotherContentTypeWith400) {
  Fixture f;
  EXPECT_EQ(f.router.dispatch(post("/validate", kJob, "text/plain")).status, 400);
  EXPECT_EQ(f.router.dispatch(post("/validate", kJob, "")).status, 400);
}

TEST(AdmissionService, RefusesAMalformedBodyWith400) {
  Fixture f;
  const Response r = f.router.dispatch(post("/validate", "{not json"));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("not valid JSON"), std::string::npos);
}

TEST(AdmissionService, AnswersAReadableButWrongRequestWithAllowedFalse) {
  Fixture f;
  const std::string body =
      a_create_of(a_training_job().json()).set("/request/operation", "X").body();
  const Response r = f.router.dispatch(post("/validate", body));
  EXPECT_EQ(r.status, 200);
  const json out = json::parse(r.body);
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["code"], 400);
}

TEST(AdmissionService, Answers405ForAGet) {
  Fixture f;
  EXPECT_EQ(f.router.dispatch(get("/mutate")).status, 405);
}

TEST(AdmissionService, IsNotReadyAndDeniesUntilTheSourceHasLoaded) {
  Fixture f;
  f.source->set(nullptr);
  EXPECT_EQ(f.router.dispatch(get("/readyz")).status, 503);
  EXPECT_EQ(f.router.dispatch(get("/healthz")).status, 200);
  const json out = json::parse(f.router.dispatch(post("/validate", kJob)).body);
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["code"], 503);
  f.source->set(std::make_shared<Snapshot>());
  EXPECT_EQ(f.router.dispatch(get("/readyz")).status, 200);
}

class ThrowingSource : public PolicySource {
 public:
  std::shared_ptr<const Snapshot> snapshot() const override {
    throw std::runtime_error("cache exploded");
  }
};

// Issue #19: the 500 carried the exception's text to the requester. It now says only that
// commgate failed and the uid; the text is in the webhook's log with that uid.
TEST(AdmissionService, TurnsAnExceptionIntoAnAdmissionReview500WithTheUidAndLogsIt) {
  std::vector<std::string> logged;
  WebhookConfig config;
  config.log = Logger([&](const LogRecord& r) { logged.push_back(format_log_text(r, "test")); });
  AdmissionService service(std::make_shared<ThrowingSource>(), config);
  const Response r = service.admit(post("/validate", kJob), false);
  EXPECT_EQ(r.status, 500);
  const json out = json::parse(r.body);
  EXPECT_EQ(out["response"]["uid"], "c3ce937b-1a18-4e45-a0e8-adf5c962f1e4");
  const std::string message = out["response"]["status"]["message"];
  EXPECT_EQ(message.find("cache exploded"), std::string::npos) << message;
  EXPECT_NE(message.find("internal error (uid c3ce937b-1a18-4e45-a0e8-adf5c962f1e4)"),
            std::string::npos)
      << message;
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("admission failed: cache exploded"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("c3ce937b-1a18-4e45-a0e8-adf5c962f1e4"), std::string::npos) << logged[0];
}

// Issue #20: the webhook logged no admissions. Each one it decides is one info line, at
// /validate (the API server calls it once per admission, after /mutate): the object, the
// requester and the answer, with the message of a refusal. Here a job that reached
// /validate without /mutate's record (Bypass).
TEST(AdmissionService, LogsEachDecidedAdmissionOnceWithTheObjectAndTheRequester) {
  std::vector<std::string> logged;
  WebhookConfig config;
  config.log = Logger([&](const LogRecord& r) { logged.push_back(format_log_text(r, "test")); });
  auto source =
      std::make_shared<StaticPolicySource>(std::make_shared<Snapshot>(snapshot_of({}, {})));
  AdmissionService service(source, config, [] { return test_now(); });
  const std::string body = a_create_of(a_training_job("bert").nodes(4).json()).user("carol").body();
  service.admit(post("/mutate", body), true);
  EXPECT_TRUE(logged.empty()) << logged[0];
  service.admit(post("/validate", body), false);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("info: refused TrainingJob research/bert: Bypass"), std::string::npos)
      << logged[0];
  EXPECT_NE(logged[0].find("message=\"spec.suspend: must stay true"), std::string::npos)
      << logged[0];
  EXPECT_NE(logged[0].find("user=carol"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("operation=CREATE"), std::string::npos) << logged[0];
}

// docs/webhook.md lists `Exempt`: an exempt requester's admission is counted as such, not
// as a plain Admit (issue #20 defect 9).
TEST(AdmissionService, CountsAnExemptAdmissionAsExempt) {
  auto source = std::make_shared<StaticPolicySource>(std::make_shared<Snapshot>(snapshot_of(
      {commgate::testing::a_policy().named("p").max_comm_share(0.1).exempt_user("carol").build()},
      {})));
  AdmissionService service{source, WebhookConfig{}, [] { return test_now(); }};
  server::Router router = service.router();
  const std::string body = a_create_of(a_training_job("bert").nodes(4).json()).user("carol").body();
  router.dispatch(post("/mutate", body));
  router.dispatch(post("/validate", body));
  const std::string text = router.dispatch(get("/metrics")).body;
  EXPECT_NE(text.find(R"(commgate_webhook_admissions_total{decision="Exempt"} 1)"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          R"(commgate_webhook_requests_total{endpoint="mutate",decision="Exempt",code="200"} 1)"),
      std::string::npos)
      << text;
}

TEST(AdmissionService, CountsRequestsByEndpointDecisionAndCode) {
  Fixture f;
  f.router.dispatch(post("/mutate", kJob));
  f.router.dispatch(post("/validate", "{"));
  const std::string text = f.router.dispatch(get("/metrics")).body;
  EXPECT_NE(
      text.find(
          R"(commgate_webhook_requests_total{endpoint="mutate",decision="Gate",code="200"} 1)"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          R"(commgate_webhook_requests_total{endpoint="validate",decision="Malformed",code="400"} 1)"),
      std::string::npos);
  EXPECT_NE(text.find("commgate_webhook_request_duration_seconds_bucket"), std::string::npos);
  // Issue #20 defect 9: each admission once, by its /validate answer (the malformed one).
  EXPECT_NE(text.find(R"(commgate_webhook_admissions_total{decision="Malformed"} 1)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find(R"(commgate_webhook_admissions_total{decision="Gate"})"), std::string::npos)
      << "a /mutate answer is not an admission of its own";
  EXPECT_NE(text.find("commgate_webhook_snapshot_age_seconds"), std::string::npos);
  EXPECT_NE(
      text.find("# TYPE commgate_webhook_build_info gauge\ncommgate_webhook_build_info{version=\""),
      std::string::npos)
      << text;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::webhook
