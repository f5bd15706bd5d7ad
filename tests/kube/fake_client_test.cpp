// The in-memory fake behind kube/client.h: the server's resourceVersion and 409 rules that
// reconcilers depend on, status written only through the status writer, deletion with
// finalizers, and per-method error injection.
#include "kube/testing/fake_client.h"

#include <gtest/gtest.h>

namespace commgate::kube::testing {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

constexpr const char* kJobs = "/apis/commgate.io/v1alpha1/namespaces/team/trainingjobs";
const std::string kJob = std::string(kJobs) + "/a";

json job(int nodes) {
  return {{"apiVersion", "commgate.io/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", "a"}}},
          {"spec", {{"numNodes", nodes}}},
          {"status", {{"phase", "Ignored"}}}};
}

ListOptions selector(const std::string& s) {
  ListOptions o;
  o.label_selector = s;
  return o;
}

PatchOptions manager(const std::string& m) {
  PatchOptions o;
  o.field_manager = m;
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

TEST(FakeClient, CreateSetsMetadataDropsStatusAndRefusesADuplicate) {
  FakeClient fake;
  json created = fake.create(kJobs, job(4));
  EXPECT_EQ(created["metadata"]["namespace"], "team");
  EXPECT_EQ(created["metadata"]["generation"], 1);
  EXPECT_EQ(created["metadata"]["resourceVersion"], "1");
  EXPECT_FALSE(created["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE(created.contains("status")) << "status is written through the status writer";
  EXPECT_EQ(fake.get(kJob), created);

  ApiError dup = error_of([&] { fake.create(kJobs, job(4)); });
  EXPECT_TRUE(dup.already_exists()) << dup.what();
  EXPECT_FALSE(dup.conflict());
  EXPECT_EQ(fake.actions(), std::vector<std::string>{"create " + kJob});
}

TEST(FakeClient, AStaleResourceVersionIsAConflictOnEveryWrite) {
  struct Case {
    const char* name;
    std::function<void(FakeClient&, const std::string& stale)> write;
  };
  const std::vector<Case> cases = {
      {"update",
       [](FakeClient& f, const std::string& rv) {
         json j = job(8);
         j["metadata"]["resourceVersion"] = rv;
         f.update(kJob, j);
       }},
      {"update_status",
       [](FakeClient& f, const std::string& rv) {
         json j = job(8);
         j["metadata"]["resourceVersion"] = rv;
         f.update_status(kJob, j);
       }},
      {"merge patch with a resourceVersion precondition",
       [](FakeClient& f, const std::string& rv) {
         f.patch(kJob, PatchType::kMerge,
                 {{"metadata", {{"resourceVersion", rv}}}, {"spec", {{"numNodes", 8}}}});
       }},
      {"status merge patch with a precondition",
       [](FakeClient& f, const std::string& rv) {
         f.patch_status(kJob, PatchType::kMerge,
                        {{"metadata", {{"resourceVersion", rv}}}, {"status", {{"phase", "X"}}}});
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeClient fake;
    const std::string stale = fake.create(kJobs, job(4))["metadata"]["resourceVersion"];
    fake.patch(kJob, PatchType::kMerge, {{"spec", {{"numNodes", 5}}}});  // someone else
    const json before = fake.get(kJob);
    ApiError e = error_of([&] { c.write(fake, stale); });
    EXPECT_EQ(e.code(), 409);
    EXPECT_TRUE(e.conflict()) << e.what();
    EXPECT_NE(std::string(e.what()).find("the object has been modified"), std::string::npos);
    EXPECT_EQ(fake.get(kJob), before) << "a refused write changes nothing";
  }
}

TEST(FakeClient, UpdateKeepsStatusAndStatusWriterKeepsSpec) {
  FakeClient fake;
  json current = fake.create(kJobs, job(4));
  current["spec"]["numNodes"] = 2;
  current["status"] = {{"phase", "Hacked"}};
  json updated = fake.update(kJob, current);
  EXPECT_EQ(updated["spec"]["numNodes"], 2);
  EXPECT_FALSE(updated.contains("status")) << "the main resource does not write status";
  EXPECT_EQ(updated["metadata"]["generation"], 2);

  json with_status = updated;
  with_status["status"] = {{"phase", "Running"}};
  with_status["spec"]["numNodes"] = 99;
  json after = fake.update_status(kJob, with_status);
  EXPECT_EQ(after["status"]["phase"], "Running");
  EXPECT_EQ(after["spec"]["numNodes"], 2) << "the status writer does not write spec";
  EXPECT_EQ(after["metadata"]["generation"], 2) << "a status write is not a new generation";
  EXPECT_NE(after["metadata"]["resourceVersion"], updated["metadata"]["resourceVersion"]);
}

TEST(FakeClient, AWriteThatChangesNothingKeepsTheResourceVersion) {
  FakeClient fake;
  json created = fake.create(kJobs, job(4));
  json same = fake.patch(kJob, PatchType::kMerge, {{"spec", {{"numNodes", 4}}}});
  EXPECT_EQ(same["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"]);
  EXPECT_EQ(fake.resource_version(), 1);
}

TEST(FakeClient, JsonPatchAndApply) {
  FakeClient fake;
  EXPECT_EQ(error_of([&] { fake.patch(kJob, PatchType::kApply, job(3)); }).code(), 422)
      << "apply needs a field manager";
  json applied = fake.patch(kJob, PatchType::kApply, job(3), manager("commgate"));
  EXPECT_EQ(applied["metadata"]["generation"], 1) << "apply created it";
  json patched =
      fake.patch(kJob, PatchType::kJson,
                 json::array({{{"op", "replace"}, {"path", "/spec/numNodes"}, {"value", 6}}}));
  EXPECT_EQ(patched["spec"]["numNodes"], 6);
  ApiError bad = error_of([&] {
    fake.patch(kJob, PatchType::kJson,
               json::array({{{"op", "test"}, {"path", "/spec/numNodes"}, {"value", 1}}}));
  });
  EXPECT_EQ(bad.code(), 422) << bad.what();
  EXPECT_EQ(fake.actions(), (std::vector<std::string>{"create " + kJob, "patch " + kJob}));
}

TEST(FakeClient, RemoveAnswersAStatusOrTheObjectAndFinalizersHoldIt) {
  FakeClient fake;
  fake.create(kJobs, job(4));
  json status = fake.remove(kJob, {.propagation_policy = "Foreground", .precondition_uid = ""});
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["status"], "Success");
  EXPECT_TRUE(error_of([&] { fake.get(kJob); }).not_found());
  EXPECT_TRUE(error_of([&] { fake.remove(kJob); }).not_found());

  const std::string pods = "/api/v1/namespaces/team/pods";
  fake.create(pods, {{"metadata", {{"name", "p"}}}});
  EXPECT_EQ(fake.remove(pods + "/p")["metadata"]["name"], "p") << "pods answer with the object";

  json held = job(4);
  held["metadata"]["finalizers"] = {"commgate.io/probe"};
  fake.create(kJobs, held);
  json deleting = fake.remove(kJob);
  EXPECT_TRUE(deleting["metadata"].contains("deletionTimestamp"));
  EXPECT_TRUE(fake.peek(kJob).has_value()) << "held by its finalizer";
  fake.patch(kJob, PatchType::kMerge, {{"metadata", {{"finalizers", nullptr}}}});
  EXPECT_FALSE(fake.peek(kJob).has_value()) << "gone with its last finalizer";
  EXPECT_EQ(error_of([&] {
              fake.remove(kJob, {.propagation_policy = "Sometimes", .precondition_uid = ""});
            }).code(),
            422);
}

TEST(FakeClient, InjectedErrorsFailTheNextCallsOfOneMethodOnly) {
  FakeClient fake;
  fake.create(kJobs, job(4));
  fake.fail_next(Method::kUpdateStatus, FakeClient::conflict("trainingjobs", "a"), 2);
  fake.fail_next(Method::kGet,
                 ApiError(429, "TooManyRequests", "slow down", "", std::chrono::seconds(3)));
  ApiError limited = error_of([&] { fake.get(kJob); });
  EXPECT_TRUE(limited.too_many_requests());
  EXPECT_EQ(limited.retry_after(), std::chrono::seconds(3));
  EXPECT_NO_THROW(fake.get(kJob)) << "only the next call failed";
  EXPECT_EQ(fake.calls(Method::kGet), 2);
  json j = job(4);
  for (int i = 0; i < 2; ++i)
    EXPECT_TRUE(error_of([&] { fake.update_status(kJob, j); }).conflict());
  EXPECT_EQ(fake.update_status(kJob, j)["status"]["phase"], "Ignored");
  EXPECT_EQ(fake.calls(Method::kUpdateStatus), 3);
  EXPECT_EQ(fake.calls(Method::kUpdate), 0);
}

TEST(FakeClient, ListsACollectionInNameOrderWithAnEqualitySelector) {
  FakeClient fake;
  for (const char* name : {"c", "a", "b"}) {
    json j = job(1);
    j["metadata"]["name"] = name;
    j["metadata"]["labels"] = {{"pool", std::string(name) == "b" ? "slow" : "fast"}};
    fake.create(kJobs, j);
  }
  fake.create("/apis/commgate.io/v1alpha1/namespaces/other/trainingjobs", job(1));
  std::vector<std::string> names;
  for (const auto& item : fake.list(kJobs, selector("pool=fast")).items)
    names.push_back(item["metadata"]["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(fake.list(kJobs).items.size(), 3u);
  EXPECT_EQ(fake.list(kJobs).resource_version, "4");
  EXPECT_THROW(fake.list(kJobs, selector("pool in (fast)")), std::invalid_argument);
}

TEST(FakeClient, AHookBeforeAWriteMakesARealConflictForAReadModifyWriteLoop) {
  FakeClient fake;
  fake.create(kJobs, job(4));
  fake.before_next(Method::kUpdateStatus, [&] {
    fake.patch(kJob, PatchType::kMerge, {{"metadata", {{"labels", {{"touched", "yes"}}}}}});
  });
  // What a reconciler's status write does: read, change, write; on 409 read again.
  int attempts = 0;
  json written;
  for (;;) {
    ++attempts;
    json current = fake.get(kJob);
    current["status"] = {{"phase", "Probing"}};
    try {
      written = fake.update_status(kJob, current);
      break;
    } catch (const ApiError& e) {
      ASSERT_TRUE(e.conflict()) << e.what();
      ASSERT_LT(attempts, 3);
    }
  }
  EXPECT_EQ(attempts, 2) << "the first write met the other writer's change";
  EXPECT_EQ(written["status"]["phase"], "Probing");
  EXPECT_EQ(written["metadata"]["labels"]["touched"], "yes");
  EXPECT_EQ(fake.calls(Method::kUpdateStatus), 2);
}

TEST(FakeClient, RefusesPathsItDoesNotModelInsteadOfAnsweringWrongly) {
  FakeClient fake;
  fake.create(kJobs, job(4));
  struct Case {
    const char* name;
    std::function<void()> call;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"the scale subresource", [&] { fake.get(kJob + "/scale"); }, "subresource"},
      {"a status path on the main writer", [&] { fake.update(kJob + "/status", job(4)); },
       "StatusWriter"},
      {"an object path as a collection", [&] { fake.list(kJob); }, "not a collection"},
      {"a collection as an object", [&] { fake.get(kJobs); }, "not an object"},
      {"not an API path", [&] { fake.get("/healthz/x"); }, "not an API path"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      c.call();
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::kube::testing
