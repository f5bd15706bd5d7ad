// The leader election's LeaseClient and the event recorder's EventSink over the Reader
// and Writer seams, against the in-memory fake: the outcome mapping of the LeaseClient
// contract (404, 409 on create and on a stale update, anything else an error with its
// message) and the sink's true/false.
#include "kube/api_adapters.h"

#include <gtest/gtest.h>

#include "kube/testing/fake_client.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using testing::FakeClient;
using testing::Method;
using Outcome = LeaseClient::Outcome;

json lease(const std::string& holder) {
  return {{"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", "commgate-operator"}, {"namespace", "commgate-system"}}},
          {"spec", {{"holderIdentity", holder}, {"leaseDurationSeconds", 15}}}};
}

TEST(ApiLeaseClient, MapsEveryAnswerAsTheContractSays) {
  FakeClient fake;
  ApiLeaseClient client(fake, fake);
  EXPECT_EQ(client.get("commgate-system", "commgate-operator").outcome, Outcome::kNotFound);

  const auto created = client.create(lease("a"));
  ASSERT_EQ(created.outcome, Outcome::kOk) << created.message;
  EXPECT_EQ(created.object["spec"]["holderIdentity"], "a");
  EXPECT_TRUE(fake.peek(ApiLeaseClient::collection("commgate-system") + "/commgate-operator"));
  EXPECT_EQ(client.create(lease("b")).outcome, Outcome::kConflict) << "AlreadyExists";

  json mine = client.get("commgate-system", "commgate-operator").object;
  json theirs = mine;
  theirs["spec"]["holderIdentity"] = "b";
  ASSERT_EQ(client.update(theirs).outcome, Outcome::kOk);
  mine["spec"]["holderIdentity"] = "a";
  const auto stale = client.update(mine);
  EXPECT_EQ(stale.outcome, Outcome::kConflict) << "a stale resourceVersion";
  EXPECT_NE(stale.message.find("409"), std::string::npos) << stale.message;

  fake.fail_next(Method::kGet, ApiError(503, "ServiceUnavailable", "later", "GET lease"));
  const auto failed = client.get("commgate-system", "commgate-operator");
  EXPECT_EQ(failed.outcome, Outcome::kError);
  EXPECT_NE(failed.message.find("503"), std::string::npos) << failed.message;

  json nowhere = lease("a");
  nowhere["metadata"].erase("namespace");
  EXPECT_EQ(client.create(nowhere).outcome, Outcome::kError);
  EXPECT_EQ(client.update(nowhere).outcome, Outcome::kError);
}

TEST(ApiEventSink, CreatesAndPatchesEventsAndSaysFalseOnAnyError) {
  FakeClient fake;
  ApiEventSink sink(fake);
  const json event = {{"apiVersion", "events.k8s.io/v1"},
                      {"kind", "Event"},
                      {"metadata", {{"name", "tj.1"}, {"namespace", "team"}}},
                      {"reason", "Downsized"}};
  EXPECT_TRUE(sink.create(event));
  EXPECT_TRUE(sink.patch("team", "tj.1", {{"series", {{"count", 2}}}}));
  EXPECT_EQ((*fake.peek(ApiEventSink::collection("team") + "/tj.1"))["series"]["count"], 2);
  EXPECT_FALSE(sink.patch("team", "absent", {{"series", {{"count", 2}}}}));
  EXPECT_FALSE(sink.create(event)) << "AlreadyExists";
  fake.fail_next(Method::kCreate, ApiError(429, "TooManyRequests", "", ""));
  json other = event;
  other["metadata"]["name"] = "tj.2";
  EXPECT_FALSE(sink.create(other));
  EXPECT_TRUE(sink.create(other));
  EXPECT_EQ(fake.actions(),
            (std::vector<std::string>{"create " + ApiEventSink::collection("team") + "/tj.1",
                                      "patch " + ApiEventSink::collection("team") + "/tj.1",
                                      "create " + ApiEventSink::collection("team") + "/tj.2"}));
}

}  // namespace
}  // namespace commgate::kube
