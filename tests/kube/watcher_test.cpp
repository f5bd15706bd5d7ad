// The watcher against the simulated API server: paged initial list, adds, updates and
// deletes, and the faults a real control plane shows (closed watches, compaction and 410,
// 500 and 429 with Retry-After, restarts), each ending with the store equal to the server.
#include "kube/watcher.h"

#include <gtest/gtest.h>

#include <map>

#include "kube/store.h"
#include "sim/api_server.h"
#include "tests/kube/kube_test_support.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using testing::client_for;
using testing::configmap;
using testing::configmaps;
using testing::kConfigMaps;
using testing::wait_until;

// name -> data.k, of every configmap in `objects`.
std::map<std::string, std::string> contents(const Store::Objects& objects) {
  std::map<std::string, std::string> out;
  for (const auto& [key, o] : objects) out[(*o)["metadata"]["name"]] = (*o)["data"]["k"];
  return out;
}

class WatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    client_ = client_for(api_);
  }
  void TearDown() override {
    if (watcher_) watcher_->stop();
  }

  void start_watcher(int watch_timeout_seconds = 300, std::shared_ptr<Clock> clock = nullptr) {
    Watcher::Options o;
    o.clock = std::move(clock);
    o.path = kConfigMaps;
    o.page_size = 2;
    o.watch_timeout_seconds = watch_timeout_seconds;
    o.backoff_initial = std::chrono::milliseconds(20);
    o.backoff_max = std::chrono::milliseconds(200);
    watcher_ = std::make_unique<Watcher>(*client_, o, [this](const WatcherEvent& e) {
      // A list arrives as Init, one InitApply per object, InitDone.
      if (e.type == WatcherEvent::Type::kInit) listing_ = 0;
      if (e.type == WatcherEvent::Type::kInitApply) ++listing_;
      if (e.type == WatcherEvent::Type::kInitDone) restarted_sizes_.push_back(listing_);
      store_.apply(e);
    });
    watcher_->start();
  }

  void put(const std::string& name, const std::string& value) {
    const auto cms = configmaps(api_);
    try {
      json current = api_.store().get(cms, "default", name);
      current["data"]["k"] = value;
      api_.store().update(cms, "default", name, current, sim::WritePart::kMain);
    } catch (const std::exception&) {
      api_.store().create(cms, "default", configmap(name, value));
    }
  }
  void remove(const std::string& name) { api_.store().remove(configmaps(api_), "default", name); }

  // What the server holds now.
  std::map<std::string, std::string> server_contents() {
    std::map<std::string, std::string> out;
    for (const auto& o : api_.store().list(configmaps(api_), "default", {}).items)
      out[o["metadata"]["name"]] = o["data"]["k"];
    return out;
  }
  // Waits until the store equals the server; on failure says how they differ.
  ::testing::AssertionResult converges(
      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto want = server_contents();
    if (wait_until([&] { return store_.synced() && contents(*store_.snapshot()) == want; },
                   timeout))
      return ::testing::AssertionSuccess();
    std::string have;
    for (const auto& [k, v] : contents(*store_.snapshot())) have += k + "=" + v + " ";
    std::string wanted;
    for (const auto& [k, v] : want) wanted += k + "=" + v + " ";
    return ::testing::AssertionFailure() << "store: " << have << "\nserver: " << wanted
                                         << "\nstate: " << to_string(watcher_->state());
  }

  sim::ApiServer api_;
  std::unique_ptr<ApiClient> client_;
  Store store_;
  std::vector<size_t> restarted_sizes_;  // written on the watcher's thread; read after stop
  size_t listing_ = 0;                   // objects of the list being delivered
  std::unique_ptr<Watcher> watcher_;
};

TEST_F(WatcherTest, ListsInPagesThenAppliesAddsUpdatesAndDeletes) {
  for (int i = 0; i < 5; ++i) put("cm" + std::to_string(i), "v1");
  start_watcher();
  ASSERT_TRUE(converges());
  EXPECT_EQ(watcher_->counters().lists, 1u);
  ASSERT_TRUE(wait_until([&] { return watcher_->state() == WatcherState::kWatching; }));

  put("new", "v1");
  put("cm0", "v2");
  remove("cm1");
  ASSERT_TRUE(converges());
  EXPECT_TRUE(wait_until([&] { return watcher_->counters().events == 3; }))
      << watcher_->counters().events;
  EXPECT_EQ(watcher_->resource_version(), std::to_string(api_.store().resource_version()));
  const auto c = watcher_->counters();
  EXPECT_EQ(c.relists, 0u);
  EXPECT_EQ(c.errors, 0u);
  watcher_->stop();
  EXPECT_EQ(restarted_sizes_, std::vector<size_t>{5}) << "one list of 5, read in 3 pages";
}

TEST_F(WatcherTest, WatchesOnFromTheLastVersionWhenTheServerEndsAWatch) {
  put("a", "1");
  start_watcher(/*watch_timeout_seconds=*/1);
  ASSERT_TRUE(converges());
  ASSERT_TRUE(wait_until([&] { return watcher_->counters().restarts >= 2; }));
  put("b", "1");
  ASSERT_TRUE(converges());
  EXPECT_EQ(watcher_->counters().relists, 0u);
  EXPECT_EQ(watcher_->counters().errors, 0u);
}

TEST_F(WatcherTest, SurvivesClosedWatchesWithoutLosingAnEventOrRelisting) {
  start_watcher();
  ASSERT_TRUE(converges());
  int writes = 0;
  for (uint64_t round = 1; round <= 5; ++round) {
    // Writes before the close may still be in flight on the old watch; writes right after
    // it happen while the watcher is between watches. Both must arrive exactly once.
    ASSERT_TRUE(wait_until([&] { return api_.open_watches() == 1; })) << "round " << round;
    put("cm" + std::to_string(round), "before");
    api_.close_all_watches();
    put("cm" + std::to_string(round), "after");
    remove("cm" + std::to_string(round));
    put("gone" + std::to_string(round), "x");
    writes += 4;
    ASSERT_TRUE(wait_until([&] { return watcher_->counters().restarts >= round; }))
        << "round " << round;
  }
  ASSERT_TRUE(converges());
  ASSERT_TRUE(wait_until([&] { return watcher_->counters().events == uint64_t(writes); }))
      << watcher_->counters().events << " events for " << writes << " writes";
  const auto c = watcher_->counters();
  EXPECT_EQ(c.relists, 0u) << "every closed watch resumed from its resourceVersion";
  EXPECT_EQ(c.errors, 0u) << "a closed watch is not an error";
}

TEST_F(WatcherTest, RelistsAfter410AndDropsWhatWasDeletedWhileAway) {
  for (const char* n : {"a", "b", "c"}) put(n, "1");
  start_watcher();
  ASSERT_TRUE(converges());
  ASSERT_TRUE(wait_until([&] { return watcher_->state() == WatcherState::kWatching; }));
  // Keep the watcher away: its watches fail until the failures are disarmed.
  api_.fail_next_requests(1'000'000, 500, std::chrono::seconds(0), "configmaps");
  api_.close_all_watches();
  ASSERT_TRUE(wait_until([&] { return api_.injected_failures() >= 1; }));
  remove("b");
  put("c", "2");
  put("d", "1");
  api_.compact_history();
  api_.fail_next_requests(0, 500);
  ASSERT_TRUE(converges());
  const auto c = watcher_->counters();
  EXPECT_EQ(c.relists, 1u) << "410 on the watch from the compacted version";
  EXPECT_GE(c.errors, 2u) << "the 500s and the 410";
  EXPECT_EQ(contents(*store_.snapshot()),
            (std::map<std::string, std::string>{{"a", "1"}, {"c", "2"}, {"d", "1"}}));
}

// Backoff runs on an injected clock: the test reads how long each wait asked for and
// moves time on by hand, so nothing here depends on how fast this machine is.
TEST_F(WatcherTest, BacksOffOn500sAndRecovers) {
  auto clock = std::make_shared<FakeClock>();
  start_watcher(300, clock);
  ASSERT_TRUE(converges());
  ASSERT_TRUE(wait_until([&] { return watcher_->state() == WatcherState::kWatching; }));
  const auto errors_before = watcher_->counters().errors;
  api_.fail_next_requests(4, 500, std::chrono::seconds(0), "configmaps");
  api_.close_all_watches();
  put("after", "1");
  for (size_t i = 1; i <= 4; ++i) {
    ASSERT_TRUE(wait_until([&] { return clock->waits().size() == i; })) << "wait " << i;
    EXPECT_EQ(watcher_->state(), WatcherState::kBackoff);
    clock->advance(std::chrono::seconds(1));  // longer than any step here
  }
  ASSERT_TRUE(converges());
  EXPECT_EQ(api_.injected_failures(), 4u);
  EXPECT_EQ(watcher_->counters().errors - errors_before, 4u);
  EXPECT_EQ(watcher_->counters().relists, 0u) << "a 500 on a watch means: watch again";
  // Steps 20, 40, 80, 160 ms, each waited between half and all of it (equal jitter).
  const auto waits = clock->waits();
  ASSERT_EQ(waits.size(), 4u) << "no wait after the recovery";
  for (size_t i = 0; i < waits.size(); ++i) {
    const auto step = std::chrono::milliseconds(20 << i);
    EXPECT_GE(waits[i], step / 2) << "wait " << i;
    EXPECT_LE(waits[i], step) << "wait " << i;
  }
}

// The default transform: what no cache reader uses and can be most of an object's size
// (managedFields, kubectl's last-applied copy of the spec) never reaches the store, from
// the list or from the watch; everything else does.
TEST_F(WatcherTest, TheStoreKeepsNeitherManagedFieldsNorTheLastAppliedCopy) {
  auto heavy = [](const std::string& name, const std::string& value) {
    json cm = configmap(name, value);
    cm["metadata"]["managedFields"] = json::array({{{"manager", "kubectl"},
                                                    {"operation", "Apply"},
                                                    {"fieldsV1", {{"f:data", json::object()}}}}});
    cm["metadata"]["annotations"] = {
        {"kubectl.kubernetes.io/last-applied-configuration", cm.dump()}, {"team", "nlp"}};
    return cm;
  };
  const auto cms = configmaps(api_);
  api_.store().create(cms, "default", heavy("listed", "1"));
  start_watcher();
  ASSERT_TRUE(converges());
  ASSERT_TRUE(wait_until([&] { return watcher_->state() == WatcherState::kWatching; }));
  api_.store().create(cms, "default", heavy("watched", "2"));
  ASSERT_TRUE(converges());
  for (const char* name : {"listed", "watched"}) {
    SCOPED_TRACE(name);
    const auto object = store_.get(std::string("default/") + name);
    ASSERT_TRUE(object);
    const json& meta = (*object)["metadata"];
    EXPECT_FALSE(meta.contains("managedFields"));
    EXPECT_EQ(meta["annotations"], json({{"team", "nlp"}}));
    EXPECT_FALSE(meta.value("resourceVersion", "").empty());
  }
  json bare = {{"metadata",
                {{"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", "{}"}}}}}};
  strip_unread_metadata(bare);
  EXPECT_EQ(bare, json({{"metadata", json::object()}})) << "no empty annotations left";
  for (json odd : {json(nullptr), json("x"), json({{"metadata", 5}})}) strip_unread_metadata(odd);
}

TEST_F(WatcherTest, HonoursRetryAfterOn429) {
  auto clock = std::make_shared<FakeClock>();
  start_watcher(300, clock);
  ASSERT_TRUE(converges());
  ASSERT_TRUE(wait_until([&] { return watcher_->state() == WatcherState::kWatching; }));
  api_.fail_next_requests(1, 429, std::chrono::seconds(1), "configmaps");
  api_.close_all_watches();
  put("after", "1");
  ASSERT_TRUE(wait_until([&] { return clock->waits().size() == 1; }));
  EXPECT_GE(clock->waits()[0], std::chrono::seconds(1)) << "Retry-After: 1 was not honoured";
  clock->advance(std::chrono::seconds(1));
  ASSERT_TRUE(converges());
  EXPECT_EQ(api_.injected_failures(), 1u);
}

TEST_F(WatcherTest, StopsPromptlyDuringABackoff) {
  auto clock = std::make_shared<FakeClock>();  // never advanced: the wait would be forever
  api_.fail_next_requests(1'000'000, 500, std::chrono::seconds(0), "configmaps");
  start_watcher(300, clock);
  ASSERT_TRUE(wait_until([&] { return clock->waiting() == 1; }));
  watcher_->stop();
  EXPECT_EQ(watcher_->state(), WatcherState::kStopped);
  EXPECT_EQ(clock->waiting(), 0u);
}

TEST_F(WatcherTest, TheFirstListRetriesUntilTheServerAnswers) {
  api_.fail_next_requests(3, 503, std::chrono::seconds(0), "configmaps");
  put("a", "1");
  start_watcher();
  ASSERT_TRUE(converges());
  EXPECT_EQ(watcher_->counters().errors, 3u);
  EXPECT_EQ(watcher_->counters().lists, 1u);
}

TEST_F(WatcherTest, ResumesAfterARestartThatKeptHistoryAndRelistsAfterOneThatDidNot) {
  put("a", "1");
  start_watcher();
  ASSERT_TRUE(converges());
  api_.restart(/*keep_history=*/true);
  put("b", "1");
  ASSERT_TRUE(converges());
  EXPECT_EQ(watcher_->counters().relists, 0u);

  // A write the watcher cannot have seen before the restart compacts it away.
  api_.fail_next_requests(1'000'000, 500, std::chrono::seconds(0), "configmaps");
  api_.close_all_watches();
  ASSERT_TRUE(wait_until([&] { return api_.injected_failures() >= 1; }));
  remove("a");
  api_.restart(/*keep_history=*/false);
  api_.fail_next_requests(0, 500);
  ASSERT_TRUE(converges());
  EXPECT_EQ(watcher_->counters().relists, 1u);
}

TEST_F(WatcherTest, KeepsServingSlowResponses) {
  put("a", "1");
  api_.set_response_delay(std::chrono::milliseconds(100));
  start_watcher();
  ASSERT_TRUE(converges());
  put("b", "1");
  ASSERT_TRUE(converges());
  api_.set_response_delay(std::chrono::milliseconds(0));
  EXPECT_EQ(watcher_->counters().errors, 0u);
}

TEST_F(WatcherTest, StopsPromptlyDuringAWatch) {
  start_watcher();
  ASSERT_TRUE(wait_until([&] { return watcher_->state() == WatcherState::kWatching; }));
  auto start = std::chrono::steady_clock::now();
  watcher_->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(watcher_->state(), WatcherState::kStopped);
  EXPECT_TRUE(wait_until([&] { return api_.open_watches() == 0; }));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::kube
