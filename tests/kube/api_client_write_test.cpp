// The client's writes against the simulated API server over real TLS, through the seams
// the operator uses (kube/client.h): create, update and its 409 on a stale
// resourceVersion, merge and JSON patches, server-side apply, delete with a propagation
// policy (a Status or the object, by resource), the status and scale subresources, every
// error answer as ApiError (422, 429 with Retry-After), the client-side rate limit on a
// fake clock, and the write fence of a replica that is not sure it leads.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "core/yaml_json.h"
#include "kube/api_adapters.h"
#include "kube/api_client.h"
#include "kube/client.h"
#include "sim/api_server.h"
#include "tests/kube/kube_test_support.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using testing::client_for;
using testing::config_for;
using testing::configmap;
using testing::kConfigMaps;
using testing::wait_until;

const std::string kJobs = "/apis/commgate.io/v1alpha1/namespaces/default/trainingjobs";
const std::string kCm = std::string(kConfigMaps) + "/one";

json training_job(const std::string& name, int nodes) {
  return {{"apiVersion", "commgate.io/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"numNodes", nodes},
            {"model", {{"parameters", "5M"}}},
            {"template",
             {{"spec", {{"containers", {{{"name", "t"}, {"image", "registry.example/t:1"}}}}}}}}}},
          {"status", {{"phase", "Running"}}}};
}

PatchOptions forced() {
  PatchOptions o;
  o.force = true;
  return o;
}

template <typename F>
ApiError error_of(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError";
  return ApiError(0, "", "", "");
}

class ApiClientWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    client_ = client_for(api_);
    http_ = std::make_unique<HttpClient>(*client_);
  }
  void install_training_jobs() {
    const auto crds =
        *api_.store().find_resource("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    std::ifstream in(std::string(COMMGATE_SOURCE_DIR) + "/crds/trainingjobs.commgate.io.yaml");
    std::stringstream text;
    text << in.rdbuf();
    for (const auto& doc : yaml_documents_to_json(text.str())) api_.store().create(crds, "", doc);
  }
  sim::ApiServer api_;
  std::unique_ptr<ApiClient> client_;
  std::unique_ptr<HttpClient> http_;
  Writer& writer() { return *http_; }
  Reader& reader() { return *http_; }
  StatusWriter& status_writer() { return *http_; }
};

TEST_F(ApiClientWriteTest, CreatesAndAnswersAlreadyExistsForADuplicate) {
  json created = writer().create(kConfigMaps, configmap("one", "1"));
  EXPECT_FALSE(created["metadata"]["resourceVersion"].get<std::string>().empty());
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());
  EXPECT_EQ(reader().get(kCm)["data"]["k"], "1");
  ApiError dup = error_of([&] { writer().create(kConfigMaps, configmap("one", "2")); });
  EXPECT_EQ(dup.code(), 409);
  EXPECT_TRUE(dup.already_exists()) << dup.what();
  EXPECT_NE(std::string(dup.what()).find("POST " + std::string(kConfigMaps)), std::string::npos);
}

TEST_F(ApiClientWriteTest, AnUpdateFromAStaleResourceVersionIsAConflict) {
  json first = writer().create(kConfigMaps, configmap("one", "1"));
  json mine = first;
  mine["data"]["k"] = "2";
  json second = writer().update(kCm, mine);
  EXPECT_EQ(second["data"]["k"], "2");
  EXPECT_NE(second["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"]);

  json stale = first;  // still carries the first resourceVersion
  stale["data"]["k"] = "3";
  ApiError e = error_of([&] { writer().update(kCm, stale); });
  EXPECT_EQ(e.code(), 409);
  EXPECT_EQ(e.reason(), "Conflict");
  EXPECT_TRUE(e.conflict());
  EXPECT_EQ(reader().get(kCm)["data"]["k"], "2") << "the stale write changed nothing";
}

TEST_F(ApiClientWriteTest, MergeAndJsonPatches) {
  writer().create(kConfigMaps, configmap("one", "1"));
  json merged =
      writer().patch(kCm, PatchType::kMerge, {{"data", {{"extra", "x"}, {"k", nullptr}}}});
  EXPECT_EQ(merged["data"], (json{{"extra", "x"}})) << "null removes a field";
  json patched =
      writer().patch(kCm, PatchType::kJson,
                     json::array({{{"op", "test"}, {"path", "/data/extra"}, {"value", "x"}},
                                  {{"op", "add"}, {"path", "/data/k"}, {"value", "back"}}}));
  EXPECT_EQ(patched["data"]["k"], "back");
  ApiError failed = error_of([&] {
    writer().patch(kCm, PatchType::kJson,
                   json::array({{{"op", "test"}, {"path", "/data/k"}, {"value", "other"}}}));
  });
  EXPECT_EQ(failed.code(), 422);
  EXPECT_TRUE(failed.invalid()) << failed.what();
  ApiError precondition = error_of([&] {
    writer().patch(kCm, PatchType::kMerge, {{"metadata", {{"resourceVersion", "1"}}}});
  });
  EXPECT_TRUE(precondition.conflict())
      << "a resourceVersion in a merge patch is a precondition: " << precondition.what();
}

TEST_F(ApiClientWriteTest, ServerSideApplyCreatesThenMergesAndNeedsAFieldManager) {
  PatchOptions apply;
  apply.field_manager = "commgate-operator";
  json created = writer().patch(kCm, PatchType::kApply, configmap("one", "1"), apply);
  EXPECT_EQ(created["data"]["k"], "1");
  json cm = configmap("one", "2");
  cm["data"]["more"] = "y";
  apply.force = true;
  json applied = writer().patch(kCm, PatchType::kApply, cm, apply);
  EXPECT_EQ(applied["data"], (json{{"k", "2"}, {"more", "y"}}));
  EXPECT_THROW(writer().patch(kCm, PatchType::kApply, cm), std::invalid_argument);
  EXPECT_THROW(writer().patch(kCm, PatchType::kMerge, cm, forced()), std::invalid_argument);
}

TEST_F(ApiClientWriteTest, DeleteAnswersAStatusOrTheObjectByResource) {
  install_training_jobs();
  writer().create(kJobs, training_job("tj", 2));
  writer().create(kConfigMaps, configmap("one", "1"));
  const std::string accounts = "/api/v1/namespaces/default/serviceaccounts";
  writer().create(accounts, {{"metadata", {{"name", "sa"}}}});

  struct Case {
    std::string path;
    std::string policy;
    bool answers_object;
  };
  for (const Case& c : {Case{kJobs + "/tj", "Foreground", false}, Case{kCm, "Background", false},
                        Case{accounts + "/sa", "", true}}) {
    SCOPED_TRACE(c.path);
    json answer = writer().remove(c.path, {.propagation_policy = c.policy, .precondition_uid = ""});
    if (c.answers_object) {
      EXPECT_EQ(answer["metadata"]["name"], "sa");
    } else {
      EXPECT_EQ(answer["kind"], "Status");
      EXPECT_EQ(answer["status"], "Success");
    }
    EXPECT_TRUE(error_of([&] { reader().get(c.path); }).not_found());
    EXPECT_TRUE(error_of([&] { writer().remove(c.path); }).not_found());
  }
  writer().create(kConfigMaps, configmap("one", "1"));
  ApiError bad = error_of(
      [&] { writer().remove(kCm, {.propagation_policy = "Sometimes", .precondition_uid = ""}); });
  EXPECT_EQ(bad.code(), 422) << bad.what();
}

// A delete with preconditions.uid removes only the object it read: the name deleted and
// created again since is a 409 Conflict in upstream's words, and stays.
TEST_F(ApiClientWriteTest, DeleteWithAUidPreconditionSparesANewerObjectOfTheName) {
  const std::string old_uid =
      writer().create(kConfigMaps, configmap("one", "1"))["metadata"]["uid"];
  writer().remove(kCm);
  const std::string new_uid =
      writer().create(kConfigMaps, configmap("one", "2"))["metadata"]["uid"];
  ASSERT_NE(old_uid, new_uid);

  const ApiError stale = error_of([&] {
    writer().remove(kCm, {.propagation_policy = "Background", .precondition_uid = old_uid});
  });
  EXPECT_TRUE(stale.conflict()) << stale.what();
  EXPECT_EQ(stale.reason(), "Conflict");
  EXPECT_NE(std::string(stale.what())
                .find("Operation cannot be fulfilled on ConfigMap \"one\": the UID in the "
                      "precondition (" +
                      old_uid + ") does not match the UID in record (" + new_uid +
                      "). The object might have been deleted and then recreated"),
            std::string::npos)
      << stale.what();
  EXPECT_EQ(reader().get(kCm)["data"]["k"], "2") << "the newer one stays";

  writer().remove(kCm, {.propagation_policy = "Background", .precondition_uid = new_uid});
  EXPECT_TRUE(error_of([&] { reader().get(kCm); }).not_found());
}

TEST_F(ApiClientWriteTest, TheStatusSubresourceWritesOnlyStatusAndChecksTheVersion) {
  install_training_jobs();
  const std::string tj = kJobs + "/tj";
  json created = writer().create(kJobs, training_job("tj", 2));
  EXPECT_FALSE(created.contains("status")) << "create ignores status";

  json with_status = created;
  with_status["status"] = {{"phase", "Running"}, {"admittedNodes", 2}};
  with_status["spec"]["numNodes"] = 7;
  json written = status_writer().update_status(tj, with_status);
  EXPECT_EQ(written["status"]["phase"], "Running");
  EXPECT_EQ(written["spec"]["numNodes"], 2) << "the status subresource leaves spec alone";

  ApiError stale = error_of([&] { status_writer().update_status(tj, with_status); });
  EXPECT_TRUE(stale.conflict()) << stale.what();

  json patched =
      status_writer().patch_status(tj, PatchType::kMerge, {{"status", {{"phase", "Succeeded"}}}});
  EXPECT_EQ(patched["status"]["phase"], "Succeeded");
  json main = writer().patch(tj, PatchType::kMerge, {{"status", {{"phase", "Failed"}}}});
  EXPECT_EQ(main["status"]["phase"], "Succeeded") << "the main resource leaves status alone";

  ApiError invalid = error_of([&] {
    status_writer().patch_status(tj, PatchType::kMerge, {{"status", {{"phase", "Sideways"}}}});
  });
  EXPECT_EQ(invalid.code(), 422) << invalid.what();
}

TEST_F(ApiClientWriteTest, TheScaleSubresourceReadsAndWritesNumNodes) {
  install_training_jobs();
  const std::string tj = kJobs + "/tj";
  writer().create(kJobs, training_job("tj", 2));
  json scale = reader().get(tj + "/scale");
  EXPECT_EQ(scale["kind"], "Scale");
  EXPECT_EQ(scale["spec"]["replicas"], 2);
  scale["spec"]["replicas"] = 4;
  json updated = client_->update(tj + "/scale", scale);
  EXPECT_EQ(updated["spec"]["replicas"], 4);
  EXPECT_EQ(reader().get(tj)["spec"]["numNodes"], 4);
  json patched = client_->patch(tj + "/scale", PatchType::kMerge, {{"spec", {{"replicas", 3}}}});
  EXPECT_EQ(patched["spec"]["replicas"], 3);
  EXPECT_EQ(reader().get(tj)["spec"]["numNodes"], 3);
}

TEST_F(ApiClientWriteTest, A429OnAWriteCarriesRetryAfterWhenNotRetried) {
  ApiClient::Options no_retries;
  no_retries.max_retries = 0;
  ApiClient once(config_for(api_), no_retries);
  api_.fail_next_requests(1, 429, std::chrono::seconds(7), "configmaps");
  ApiError e = error_of([&] { once.create(kConfigMaps, configmap("one", "1")); });
  EXPECT_TRUE(e.too_many_requests()) << e.what();
  EXPECT_EQ(e.retry_after(), std::chrono::seconds(7));
  EXPECT_NO_THROW(once.create(kConfigMaps, configmap("one", "1")));
}

// As client-go's rest client: a 429 (or 5xx) with Retry-After is sent again after the
// wait the server asked for, up to max_retries times; a 500 without it is an error at once.
TEST_F(ApiClientWriteTest, ThrottledRequestsGoAgainAfterRetryAfterUpToMaxRetries) {
  auto clock = std::make_shared<FakeClock>();
  ApiClient::Options options;
  options.qps = 0;  // no client-side limit: the clock's waits are the retries'
  options.clock = clock;
  options.max_retries = 2;
  ApiClient retrying(config_for(api_), options);

  api_.fail_next_requests(2, 429, std::chrono::seconds(3), "configmaps");
  std::atomic<bool> created{false};
  std::thread writer_thread([&] {
    retrying.create(kConfigMaps, configmap("one", "1"));
    created = true;
  });
  for (size_t i = 1; i <= 2; ++i) {
    ASSERT_TRUE(wait_until([&] { return clock->waits().size() == i && clock->waiting() == 1; }))
        << "retry " << i;
    EXPECT_FALSE(created.load());
    clock->advance(std::chrono::seconds(3));
  }
  writer_thread.join();
  EXPECT_TRUE(created.load());
  EXPECT_EQ(clock->waits(),
            (std::vector<Clock::duration>{std::chrono::seconds(3), std::chrono::seconds(3)}));
  EXPECT_EQ(api_.injected_failures(), 2u);

  // One more 429 than the retries: the last answer is the error.
  api_.fail_next_requests(3, 503, std::chrono::seconds(1), "configmaps");
  std::thread gives_up([&] {
    ApiError e = error_of([&] { retrying.get(kCm); });
    EXPECT_EQ(e.code(), 503);
    EXPECT_EQ(e.retry_after(), std::chrono::seconds(1));
  });
  for (size_t i = 3; i <= 4; ++i) {
    ASSERT_TRUE(wait_until([&] { return clock->waits().size() == i && clock->waiting() == 1; }));
    clock->advance(std::chrono::seconds(1));
  }
  gives_up.join();

  // A 500 without Retry-After: not retried.
  api_.fail_next_requests(1, 500, std::chrono::seconds(0), "configmaps");
  EXPECT_EQ(error_of([&] { retrying.get(kCm); }).code(), 500);
  EXPECT_EQ(clock->waits().size(), 4u);
}

// Issue #19 item 9: an operator replica that is not sure it leads sends no write, even a
// write that was already under way: here one throttled with Retry-After while it led, and
// the Lease lost during that wait. Reads still go (a standby keeps its caches).
TEST_F(ApiClientWriteTest, AReplicaThatIsNotSureItLeadsSendsNoWrite) {
  auto clock = std::make_shared<FakeClock>();
  std::atomic<bool> leading{false};
  ApiClient::Options options;
  options.qps = 0;
  options.clock = clock;
  options.may_write = [&] { return leading.load(); };
  ApiClient fenced(config_for(api_), options);

  for (const auto& write : std::vector<std::function<void()>>{
           [&] { fenced.create(kConfigMaps, configmap("one", "1")); },
           [&] { fenced.update(kCm, configmap("one", "2")); },
           [&] {
             fenced.patch(kCm, PatchType::kMerge, {{"data", {{"k", "3"}}}});
           },
           [&] { fenced.remove(kCm); }}) {
    try {
      write();
      ADD_FAILURE() << "a write was sent while not leading";
    } catch (const ApiError& e) {
      ADD_FAILURE() << "the write reached the server: " << e.what();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("not sure that it leads"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(error_of([&] { reader().get(kCm); }).code(), 404) << "nothing was created";
  EXPECT_NO_THROW(fenced.get(kConfigMaps)) << "reads are not fenced";

  leading = true;
  fenced.create(kConfigMaps, configmap("one", "1"));
  api_.fail_next_requests(1, 429, std::chrono::seconds(3), "configmaps");
  std::string outcome;
  std::thread writer_thread([&] {
    try {
      fenced.update(kCm, configmap("one", "2"));
      outcome = "sent";
    } catch (const std::exception& e) {
      outcome = e.what();
    }
  });
  ASSERT_TRUE(wait_until([&] { return clock->waiting() == 1; }));
  leading = false;  // the renew deadline passed while the write waited
  clock->advance(std::chrono::seconds(3));
  writer_thread.join();
  EXPECT_NE(outcome.find("not sure that it leads"), std::string::npos) << outcome;
  EXPECT_EQ(reader().get(kCm)["data"], json({{"k", "1"}})) << "the retry was not sent";
}

TEST_F(ApiClientWriteTest, RequestsBeyondTheBurstWaitForATokenOnTheClientsClock) {
  auto clock = std::make_shared<FakeClock>();
  ApiClient::Options options;
  options.qps = 2;
  options.burst = 2;
  options.clock = clock;
  ApiClient limited(config_for(api_), options);
  limited.create(kConfigMaps, configmap("one", "1"));
  limited.get(kCm);
  std::atomic<bool> done{false};
  std::thread third([&] {
    limited.remove(kCm);
    done = true;
  });
  ASSERT_TRUE(wait_until([&] { return clock->waiting() == 1; }));
  EXPECT_FALSE(done.load());
  EXPECT_NO_THROW(reader().get(kCm)) << "the third request has not been sent";
  clock->advance(std::chrono::milliseconds(500));
  ASSERT_TRUE(wait_until([&] { return done.load(); }));
  third.join();
  EXPECT_EQ(clock->waits(), std::vector<Clock::duration>{std::chrono::milliseconds(500)});
  EXPECT_TRUE(error_of([&] { reader().get(kCm); }).not_found());
}

TEST_F(ApiClientWriteTest, ACancelWhileWaitingForATokenEndsTheCallUnsent) {
  auto clock = std::make_shared<FakeClock>();
  ApiClient::Options options;
  options.qps = 1;
  options.burst = 1;
  options.clock = clock;
  ApiClient limited(config_for(api_), options);
  limited.create(kConfigMaps, configmap("one", "1"));
  Cancel cancel;
  std::atomic<bool> done{false};
  std::string error;
  std::thread waiting([&] {
    try {
      limited.remove(kCm, {}, cancel);
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    done = true;
  });
  ASSERT_TRUE(wait_until([&] { return clock->waiting() == 1; }));
  cancel.cancel();
  ASSERT_TRUE(wait_until([&] { return done.load(); })) << "no fake time passed";
  waiting.join();
  EXPECT_NE(error.find("DELETE " + kCm + ": cancelled"), std::string::npos) << error;
  EXPECT_NO_THROW(reader().get(kCm)) << "the cancelled delete was never sent";
}

TEST_F(ApiClientWriteTest, TheLeaseClientAndEventSinkOverHttpMapTheServersAnswers) {
  ApiLeaseClient leases(*http_, *http_);
  const json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                      {"kind", "Lease"},
                      {"metadata", {{"name", "commgate-operator"}, {"namespace", "default"}}},
                      {"spec", {{"holderIdentity", "a"}, {"leaseDurationSeconds", 15}}}};
  using Outcome = LeaseClient::Outcome;
  EXPECT_EQ(leases.get("default", "commgate-operator").outcome, Outcome::kNotFound);
  const auto created = leases.create(lease);
  ASSERT_EQ(created.outcome, Outcome::kOk) << created.message;
  EXPECT_EQ(leases.create(lease).outcome, Outcome::kConflict);
  json first = created.object, second = created.object;
  second["spec"]["holderIdentity"] = "b";
  ASSERT_EQ(leases.update(second).outcome, Outcome::kOk);
  EXPECT_EQ(leases.update(first).outcome, Outcome::kConflict) << "a stale resourceVersion";
  api_.fail_next_requests(1, 500, std::chrono::seconds(0), "leases");
  EXPECT_EQ(leases.get("default", "commgate-operator").outcome, Outcome::kError);

  ApiEventSink events(*http_);
  const json event = {{"apiVersion", "events.k8s.io/v1"},
                      {"kind", "Event"},
                      {"metadata", {{"name", "tj.1"}, {"namespace", "default"}}},
                      {"eventTime", "2026-12-01T00:00:00.000000Z"},
                      {"reportingController", "commgate.io/operator"},
                      {"reportingInstance", "op-0"},
                      {"action", "Decide"},
                      {"reason", "Downsized"},
                      {"type", "Normal"},
                      {"regarding", {{"kind", "TrainingJob"}, {"name", "tj"}}}};
  EXPECT_TRUE(events.create(event));
  EXPECT_TRUE(events.patch(
      "default", "tj.1",
      {{"series", {{"count", 2}, {"lastObservedTime", "2026-12-01T00:00:01.000000Z"}}}}));
  EXPECT_EQ(reader().get(ApiEventSink::collection("default") + "/tj.1")["series"]["count"], 2);
  EXPECT_FALSE(events.patch("default", "absent", {{"series", {{"count", 2}}}}));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::kube
