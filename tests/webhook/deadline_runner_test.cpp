// The per-request deadline (webhook/deadline_runner.h): a handler that does not finish in
// time is answered without, and a busy pool never makes a request wait longer.
#include "webhook/deadline_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "tests/webhook/webhook_test_support.h"
#include "webhook/webhook_server.h"

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

using namespace std::chrono_literals;
using commgate::testing::a_training_job;
using commgate::testing::test_now;
using nlohmann::json;
using namespace commgate::webhook::testing;

TEST(DeadlineRunner, ReturnsTheAnswerOfAHandlerThatFinishesInTime) {
  DeadlineRunner runner(2);
  const auto answer = runner.run([] { return denied("no", 403); }, 10s);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->message, "no");
  EXPECT_EQ(runner.abandoned(), 0u);
}

TEST(DeadlineRunner, GivesUpOnAHandlerPastTheDeadline) {
  DeadlineRunner runner(1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  const auto started = std::chrono::steady_clock::now();
  const auto answer = runner.run(
      [released] {
        released.wait();
        return allowed();
      },
      50ms);
  EXPECT_FALSE(answer);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
  EXPECT_EQ(runner.abandoned(), 1u);
  // The only thread is still busy with the abandoned handler: the next request waits in
  // the queue, and still no longer than its deadline.
  const auto queued = std::chrono::steady_clock::now();
  EXPECT_FALSE(runner.run([] { return allowed(); }, 50ms));
  EXPECT_LT(std::chrono::steady_clock::now() - queued, 5s);
  release.set_value();
  // Once free, the pool answers again (the abandoned queued task is skipped).
  EXPECT_TRUE(runner.run([] { return allowed(); }, 10s));
}

TEST(DeadlineRunner, RethrowsAHandlersException) {
  DeadlineRunner runner(1);
  EXPECT_THROW(runner.run([]() -> AdmissionResponse { throw std::runtime_error("boom"); }, 10s),
               std::runtime_error);
}

// Through the whole HTTP layer, with the handlers inline (the default) and on the pool:
// past the deadline /mutate gates, /validate denies (503), and both are counted as Timeout.
class ServiceDeadline : public ::testing::TestWithParam<bool> {};

TEST_P(ServiceDeadline, TheServiceAnswersPastTheDeadlineAsFailurePolicyFailMeansIt) {
  auto source =
      std::make_shared<StaticPolicySource>(std::make_shared<Snapshot>(snapshot_of({}, {})));
  WebhookConfig config;
  config.decide_on_pool = GetParam();
  config.decision_deadline = 0ms;  // every request is past it
  AdmissionService service{source, config, [] { return test_now(); }};
  server::Router router = service.router();
  server::Request post;
  post.method = "POST";
  post.headers.push_back({"Content-Type", "application/json"});
  post.body = a_create_of(a_training_job("bert").nodes(4).json()).body();

  post.target = post.path = "/mutate";
  const json mutated = json::parse(router.dispatch(post).body);
  EXPECT_EQ(mutated["response"]["allowed"], true);
  EXPECT_EQ(mutated["response"]["patchType"], "JSONPatch");
  EXPECT_NE(mutated["response"]["warnings"][0].get<std::string>().find("deadline"),
            std::string::npos);

  post.target = post.path = "/validate";
  const json validated = json::parse(router.dispatch(post).body);
  EXPECT_EQ(validated["response"]["allowed"], false);
  EXPECT_EQ(validated["response"]["status"]["code"], 503);

  server::Request get;
  get.method = "GET";
  get.target = get.path = "/metrics";
  const std::string metrics = router.dispatch(get).body;
  EXPECT_NE(metrics.find("endpoint=\"mutate\",decision=\"Timeout\""), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("endpoint=\"validate\",decision=\"Timeout\""), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(InlineAndPool, ServiceDeadline, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "pool" : "inline"; });

// Where the handler runs changes no byte of any answer: a decision, an invalid job, an
// UPDATE and a request no handler reads, both endpoints.
TEST(ServiceDeadline, InlineAndPoolAnswerTheSameBytes) {
  auto source =
      std::make_shared<StaticPolicySource>(std::make_shared<Snapshot>(snapshot_of({}, {})));
  WebhookConfig on_pool;
  on_pool.decide_on_pool = true;
  AdmissionService inline_service{source, WebhookConfig{}, [] { return test_now(); }};
  AdmissionService pool_service{source, on_pool, [] { return test_now(); }};
  const json job = a_training_job("bert").nodes(4).json();
  json bad = job;
  bad["spec"]["numNodes"] = -3;
  json raised = job;
  raised["spec"]["numNodes"] = 6;
  const std::vector<std::string> bodies = {
      a_create_of(job).body(), a_create_of(bad).body(), an_update_of(job, raised).body(),
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",)"
      R"("operation":"CREATE","kind":{"kind":"X"},"resource":{"resource":"x"}}})"};
  for (const bool mutate : {true, false}) {
    for (const auto& body : bodies) {
      server::Request post;
      post.method = "POST";
      post.target = post.path = mutate ? "/mutate" : "/validate";
      post.headers.push_back({"Content-Type", "application/json"});
      post.body = body;
      const server::Response a = inline_service.admit(post, mutate);
      const server::Response b = pool_service.admit(post, mutate);
      EXPECT_EQ(a.status, b.status) << post.path << " " << body;
      EXPECT_EQ(a.body, b.body) << post.path << " " << body;
    }
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::webhook
