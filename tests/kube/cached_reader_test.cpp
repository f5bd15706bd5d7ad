// The cache-backed Reader: which reads a store answers and which go to the live client,
// the 404 a server would give, list filters (namespace, label selector), and the pure
// parsers under it (API paths, query-string label selectors). Stores are fed directly
// with watcher events: no server.
#include "kube/cached_reader.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/api_error.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json object(const std::string& kind, const std::string& ns, const std::string& name,
            json labels = json::object()) {
  json metadata = {{"name", name}, {"resourceVersion", "1"}, {"labels", labels}};
  if (!ns.empty()) metadata["namespace"] = ns;
  return {{"kind", kind}, {"metadata", metadata}};
}

// The live client: records what reached it and answers a marker.
class RecordingReader : public Reader {
 public:
  json get(const std::string& path) const override {
    std::lock_guard lock(mu_);
    calls_.push_back("get " + path);
    return {{"from", "fallback"}};
  }
  ListPage list(const std::string& collection, const ListOptions& options) const override {
    std::lock_guard lock(mu_);
    calls_.push_back("list " + collection + " " + options.label_selector + "|" +
                     options.field_selector);
    ListPage page;
    page.items.push_back({{"from", "fallback"}});
    return page;
  }
  std::vector<std::string> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  mutable std::mutex mu_;
  mutable std::vector<std::string> calls_;
};

class CachedReaderTest : public ::testing::Test {
 protected:
  CachedReaderTest() {
    const auto jobs = WatcherEvent::restarted(
        {object("Job", "a", "train", {{"commgate.io/role", "workload"}}),
         object("Job", "a", "probe", {{"commgate.io/role", "probe"}, {"commgate.io/pool", "p1"}}),
         object("Job", "b", "train", {{"commgate.io/role", "workload"}})});
    jobs_.apply(jobs);
    indexed_jobs_.index_label("commgate.io/role");
    indexed_jobs_.index_label("commgate.io/pool");
    indexed_jobs_.apply(jobs);
    namespaces_.apply(WatcherEvent::restarted(
        {object("Namespace", "", "a", {{"team", "nlp"}}), object("Namespace", "", "b")}));
    one_namespace_.apply(WatcherEvent::restarted({object("ConfigMap", "only", "c")}));
    // pods_ never lists: reads of pods go to the live client until it has.
  }

  // With `indexed`, the jobs come from a store that indexes their role and pool labels: a
  // list must answer the same either way.
  CachedReader reader(bool indexed = false) {
    return CachedReader({{"/apis/batch/v1/jobs", indexed ? &indexed_jobs_ : &jobs_},
                         {"/api/v1/namespaces", &namespaces_},
                         {"/api/v1/namespaces/only/configmaps", &one_namespace_},
                         {"/api/v1/pods", &pods_}},
                        live_);
  }

  Store jobs_, indexed_jobs_, namespaces_, one_namespace_, pods_;
  RecordingReader live_;
};

struct GetCase {
  std::string name;
  std::string path;
  std::string want_name;  // from the cache; "" with want_fallback or want_404
  bool want_fallback = false;
  bool want_404 = false;
};

TEST_F(CachedReaderTest, GetsFromTheStoreThatCoversThePathElseFromTheLiveClient) {
  const std::vector<GetCase> cases = {
      {"namespaced_object_from_a_cluster_wide_store", "/apis/batch/v1/namespaces/b/jobs/train",
       "train"},
      {"absent_object_is_a_404_not_a_live_read", "/apis/batch/v1/namespaces/a/jobs/gone", "", false,
       true},
      {"cluster_scoped_object", "/api/v1/namespaces/a", "a"},
      {"absent_cluster_scoped_object", "/api/v1/namespaces/c", "", false, true},
      {"object_in_the_namespace_of_a_namespaced_store", "/api/v1/namespaces/only/configmaps/c",
       "c"},
      {"another_namespace_than_the_store_holds", "/api/v1/namespaces/other/configmaps/c", "", true},
      {"a_store_not_yet_listed", "/api/v1/namespaces/a/pods/p-0", "", true},
      {"a_subresource", "/apis/batch/v1/namespaces/a/jobs/train/status", "", true},
      {"a_namespace_subresource", "/api/v1/namespaces/a/status", "", true},
      {"a_resource_no_store_holds", "/apis/coordination.k8s.io/v1/namespaces/a/leases/l", "", true},
      {"another_api_version_of_the_same_resource", "/apis/batch/v2/namespaces/a/jobs/train", "",
       true},
      {"no_api_path", "/healthz", "", true},
  };
  const CachedReader r = reader();
  for (const GetCase& c : cases) {
    SCOPED_TRACE(c.name);
    const size_t live_before = live_.calls().size();
    try {
      const json got = r.get(c.path);
      EXPECT_FALSE(c.want_404) << got.dump();
      if (c.want_fallback) {
        EXPECT_EQ(got, json({{"from", "fallback"}}));
        ASSERT_EQ(live_.calls().size(), live_before + 1);
        EXPECT_EQ(live_.calls().back(), "get " + c.path);
      } else {
        EXPECT_EQ(got["metadata"]["name"], c.want_name);
        EXPECT_EQ(live_.calls().size(), live_before);
      }
    } catch (const ApiError& e) {
      EXPECT_TRUE(c.want_404) << e.what();
      EXPECT_TRUE(e.not_found());
      EXPECT_EQ(e.reason(), "NotFound");
      EXPECT_EQ(live_.calls().size(), live_before);
    }
  }
}

TEST_F(CachedReaderTest, NotFoundSaysWhatAServerSays) {
  try {
    reader().get("/apis/batch/v1/namespaces/a/jobs/gone");
    FAIL() << "no 404";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 404);
    EXPECT_EQ(e.message(), "jobs.batch \"gone\" not found");
  }
  try {
    reader().get("/api/v1/namespaces/c");
    FAIL() << "no 404";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.message(), "namespaces \"c\" not found");
  }
}

struct ListCase {
  std::string name;
  std::string collection;
  ListOptions options;
  std::vector<std::string> want_keys;  // "ns/name" of the items, in order
  bool want_fallback = false;
};

ListOptions labels(const std::string& selector) {
  ListOptions o;
  o.label_selector = selector;
  return o;
}
ListOptions fields(const std::string& selector) {
  ListOptions o;
  o.field_selector = selector;
  return o;
}
ListOptions continuing(const std::string& token) {
  ListOptions o;
  o.continue_token = token;
  return o;
}

std::string key_of(const json& item) {
  if (item.contains("from")) return "fallback";
  return object_key(item);
}

TEST_F(CachedReaderTest, ListsFilterByNamespaceAndLabelSelector) {
  const std::vector<ListCase> cases = {
      {"all_namespaces", "/apis/batch/v1/jobs", {}, {"a/probe", "a/train", "b/train"}},
      {"one_namespace", "/apis/batch/v1/namespaces/a/jobs", {}, {"a/probe", "a/train"}},
      {"a_namespace_with_nothing", "/apis/batch/v1/namespaces/z/jobs", {}, {}},
      {"equality_selector",
       "/apis/batch/v1/jobs",
       labels("commgate.io/role=workload"),
       {"a/train", "b/train"}},
      {"double_equals_and_namespace",
       "/apis/batch/v1/namespaces/a/jobs",
       labels("commgate.io/role==probe"),
       {"a/probe"}},
      {"inequality_matches_objects_without_the_label",
       "/apis/batch/v1/jobs",
       labels("commgate.io/pool!=p1"),
       {"a/train", "b/train"}},
      {"set_based_in",
       "/apis/batch/v1/jobs",
       labels("commgate.io/role in (probe,other)"),
       {"a/probe"}},
      {"exists_and_does_not_exist",
       "/apis/batch/v1/jobs",
       labels("commgate.io/role,!commgate.io/pool"),
       {"a/train", "b/train"}},
      {"two_values_for_one_key_match_nothing",
       "/apis/batch/v1/jobs",
       labels("commgate.io/role=probe,commgate.io/role=workload"),
       {}},
      {"an_indexed_label_and_a_term_that_fails",
       "/apis/batch/v1/jobs",
       labels("commgate.io/pool=p1,commgate.io/role=workload"),
       {}},
      {"an_indexed_value_nobody_has", "/apis/batch/v1/jobs", labels("commgate.io/pool=p9"), {}},
      {"cluster_scoped", "/api/v1/namespaces", labels("team=nlp"), {"a"}},
      {"field_selector_goes_live",
       "/apis/batch/v1/jobs",
       fields("metadata.name=x"),
       {"fallback"},
       true},
      {"continue_token_goes_live", "/apis/batch/v1/jobs", continuing("token"), {"fallback"}, true},
      {"a_store_not_yet_listed_goes_live", "/api/v1/pods", {}, {"fallback"}, true},
      {"all_namespaces_of_a_namespaced_store_goes_live",
       "/api/v1/configmaps",
       {},
       {"fallback"},
       true},
  };
  for (const bool indexed : {false, true})
    for (const ListCase& c : cases) {
      SCOPED_TRACE(c.name + (indexed ? " (indexed store)" : ""));
      const CachedReader r = reader(indexed);
      const size_t live_before = live_.calls().size();
      const ListPage page = r.list(c.collection, c.options);
      std::vector<std::string> keys;
      for (const auto& item : page.items) keys.push_back(key_of(item));
      EXPECT_EQ(keys, c.want_keys);
      EXPECT_EQ(live_.calls().size(), live_before + (c.want_fallback ? 1 : 0));
      EXPECT_TRUE(page.continue_token.empty());
    }
}

TEST_F(CachedReaderTest, CountsCacheAndLiveReads) {
  const CachedReader r = reader();
  r.get("/apis/batch/v1/namespaces/a/jobs/train");
  r.list("/apis/batch/v1/jobs");
  r.get("/api/v1/namespaces/a/pods/x");
  EXPECT_EQ(r.counters().cache_reads, 2u);
  EXPECT_EQ(r.counters().fallback_reads, 1u);
}

TEST_F(CachedReaderTest, FollowsTheStoreAsTheWatchUpdatesIt) {
  const CachedReader r = reader();
  EXPECT_THROW(r.get("/apis/batch/v1/namespaces/c/jobs/new"), ApiError);
  jobs_.apply(WatcherEvent::applied(object("Job", "c", "new")));
  EXPECT_EQ(r.get("/apis/batch/v1/namespaces/c/jobs/new")["metadata"]["name"], "new");
  jobs_.apply(WatcherEvent::deleted(object("Job", "c", "new")));
  EXPECT_THROW(r.get("/apis/batch/v1/namespaces/c/jobs/new"), ApiError);
}

TEST_F(CachedReaderTest, AMalformedSelectorIsA400) {
  try {
    reader().list("/apis/batch/v1/jobs", labels("role in (a"));
    FAIL() << "no error";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 400);
    EXPECT_NE(e.message().find("role in (a"), std::string::npos) << e.message();
  }
}

TEST(CachedReaderConstruction, RefusesASourceThatIsNoCollection) {
  RecordingReader live;
  Store store;
  EXPECT_THROW(CachedReader({{"/apis/batch/v1/namespaces/a/jobs/x", &store}}, live),
               std::invalid_argument);
  EXPECT_THROW(CachedReader({{"/healthz", &store}}, live), std::invalid_argument);
  EXPECT_THROW(CachedReader({{"/apis/batch/v1/jobs", nullptr}}, live), std::invalid_argument);
}

struct PathCase {
  std::string path;
  bool want_ok = true;
  ApiPath want;
};

TEST(ParseApiPath, TakesApartCoreGroupNamespacedAndClusterScopedPaths) {
  const std::vector<PathCase> cases = {
      {"/api/v1/pods", true, {"/api/v1", "", "pods", "", ""}},
      {"/api/v1/namespaces", true, {"/api/v1", "", "namespaces", "", ""}},
      {"/api/v1/namespaces/a", true, {"/api/v1", "", "namespaces", "a", ""}},
      {"/api/v1/namespaces/a/status", true, {"/api/v1", "", "namespaces", "a", "status"}},
      {"/api/v1/namespaces/a/pods", true, {"/api/v1", "a", "pods", "", ""}},
      {"/api/v1/namespaces/a/pods/p", true, {"/api/v1", "a", "pods", "p", ""}},
      {"/api/v1/namespaces/a/pods/p/log", true, {"/api/v1", "a", "pods", "p", "log"}},
      {"/apis/batch/v1/jobs", true, {"/apis/batch/v1", "", "jobs", "", ""}},
      {"/apis/batch/v1/namespaces/a/jobs/j/status",
       true,
       {"/apis/batch/v1", "a", "jobs", "j", "status"}},
      {"/apis/commgate.io/v1alpha1/commprofiles/p",
       true,
       {"/apis/commgate.io/v1alpha1", "", "commprofiles", "p", ""}},
      {"/apis/commgate.io/v1alpha1/commprofiles/p/status",
       true,
       {"/apis/commgate.io/v1alpha1", "", "commprofiles", "p", "status"}},
      {"/api/v1", false, {}},
      {"/apis/batch", false, {}},
      {"/apis/batch/v1/namespaces/a/jobs/j/status/x", false, {}},
      {"/apis/batch/v1/jobs/a/b/c", false, {}},
      {"/api/v1//pods", false, {}},
      {"/api/v1/pods?labelSelector=a", false, {}},
      {"api/v1/pods", false, {}},
      {"/healthz", false, {}},
      {"", false, {}},
  };
  for (const PathCase& c : cases) {
    SCOPED_TRACE(c.path);
    const auto got = parse_api_path(c.path);
    ASSERT_EQ(got.has_value(), c.want_ok);
    if (!got) continue;
    EXPECT_EQ(got->prefix, c.want.prefix);
    EXPECT_EQ(got->ns, c.want.ns);
    EXPECT_EQ(got->resource, c.want.resource);
    EXPECT_EQ(got->name, c.want.name);
    EXPECT_EQ(got->subresource, c.want.subresource);
  }
}

struct SelectorCase {
  std::string name;
  std::string selector;
  std::map<std::string, std::string> labels;
  bool want_match = false;
};

TEST(ParseLabelSelectorQuery, MatchesAsTheApiServerDoes) {
  const std::vector<SelectorCase> cases = {
      {"empty_matches_everything", "", {}, true},
      {"blank_matches_everything", "  ", {{"a", "b"}}, true},
      {"equality_holds", "a=b", {{"a", "b"}}, true},
      {"equality_fails_on_another_value", "a=b", {{"a", "c"}}, false},
      {"equality_fails_without_the_label", "a=b", {}, false},
      {"double_equals", "a==b", {{"a", "b"}}, true},
      {"spaces_around_terms", " a = b , c ", {{"a", "b"}, {"c", ""}}, true},
      {"inequality_without_the_label", "a!=b", {}, true},
      {"inequality_with_that_value", "a!=b", {{"a", "b"}}, false},
      {"in_one_of", "a in (x, y)", {{"a", "y"}}, true},
      {"in_none_of", "a in (x,y)", {{"a", "z"}}, false},
      {"notin_without_the_label", "a notin (x)", {}, true},
      {"notin_with_a_listed_value", "a notin (x)", {{"a", "x"}}, false},
      {"exists", "a", {{"a", ""}}, true},
      {"exists_fails", "a", {{"b", "c"}}, false},
      {"does_not_exist", "!a", {{"b", "c"}}, true},
      {"does_not_exist_fails", "!a", {{"a", "c"}}, false},
      {"all_terms_must_hold", "a=b,c in (d),!e", {{"a", "b"}, {"c", "d"}}, true},
      {"one_term_failing_fails", "a=b,c in (d),!e", {{"a", "b"}, {"c", "d"}, {"e", "1"}}, false},
  };
  for (const SelectorCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(parse_label_selector_query(c.selector).matches(c.labels), c.want_match);
  }
}

// A list reads the store's snapshot while the watch replaces it: every object it copies
// must stay alive until copied. (It once iterated `*store->snapshot()`, whose temporary
// shared_ptr died before the loop: the operator read freed objects under load, found by
// AddressSanitizer in operator_faults_test; under `make test-sanitize` this test shows it
// in one run.)
TEST_F(CachedReaderTest, ListsStayWholeWhileTheWatchReplacesObjects) {
  // Through the namespace's key range, and through the label index (the watch moves the
  // object in and out of the index entry the list reads).
  for (const bool indexed : {false, true}) {
    SCOPED_TRACE(indexed ? "indexed store, by label" : "by namespace");
    Store& store = indexed ? indexed_jobs_ : jobs_;
    const CachedReader cached = reader(indexed);
    std::atomic<bool> stop{false};
    std::thread watch([&] {
      for (int i = 0; !stop; ++i) {
        json changed = object("Job", "a", "train", {{"commgate.io/role", "workload"}});
        changed["metadata"]["resourceVersion"] = std::to_string(i + 2);
        changed["spec"] = {{"note", std::string(64, 'x') + std::to_string(i)}};
        store.apply(WatcherEvent::applied(changed));
      }
    });
    for (int i = 0; i < 2000; ++i) {
      const ListPage page =
          indexed ? cached.list("/apis/batch/v1/jobs", labels("commgate.io/role=workload"))
                  : cached.list("/apis/batch/v1/namespaces/a/jobs", {});
      ASSERT_EQ(page.items.size(), 2u);
      for (const json& item : page.items) {
        if (indexed)
          ASSERT_EQ(item["metadata"]["labels"]["commgate.io/role"], "workload");
        else
          ASSERT_EQ(item["metadata"]["namespace"], "a");
      }
    }
    stop = true;
    watch.join();
  }
}

TEST(ParseLabelSelectorQuery, RefusesMalformedSelectorsNamingTheTerm) {
  for (const std::string bad :
       {"a,,b", "a in (x", "a between (x)", "in (x)", "=b", "!", "a b", "!=x"}) {
    SCOPED_TRACE(bad);
    try {
      parse_label_selector_query(bad);
      FAIL() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.code(), 400);
      EXPECT_EQ(e.reason(), "BadRequest");
    }
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::kube
