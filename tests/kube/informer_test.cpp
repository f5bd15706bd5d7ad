// The informer against the simulated API server: synced only after the first list, a
// notification with the key of every object that changed (what a controller's work queue
// is fed from), nothing for what did not change across a relist, and the watch's health
// under the caller's metric prefix.
#include "kube/informer.h"

#include <gtest/gtest.h>

#include <mutex>

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

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_.start();
    client_ = client_for(api_);
  }
  void TearDown() override {
    if (informer_) informer_->stop();
  }

  void start_informer() {
    Watcher::Options o;
    o.path = kConfigMaps;
    o.backoff_initial = std::chrono::milliseconds(20);
    o.backoff_max = std::chrono::milliseconds(200);
    o.log = Logger::discard();
    informer_ = std::make_unique<Informer>(*client_, o);
    informer_->on_change([this](const std::vector<StoreChange>& changes) {
      std::lock_guard lock(mu_);
      ++notifications_;
      for (const auto& c : changes) seen_.push_back(std::string(to_string(c.type)) + " " + c.key);
    });
    informer_->start();
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

  // The changes heard since the last call, and forgets them.
  std::vector<std::string> take_seen() {
    std::lock_guard lock(mu_);
    return std::exchange(seen_, {});
  }
  bool heard(size_t n) {
    std::lock_guard lock(mu_);
    return seen_.size() >= n;
  }
  int notifications() {
    std::lock_guard lock(mu_);
    return notifications_;
  }

  sim::ApiServer api_;
  std::unique_ptr<ApiClient> client_;
  std::unique_ptr<Informer> informer_;
  std::mutex mu_;
  std::vector<std::string> seen_;
  int notifications_ = 0;
};

TEST_F(InformerTest, SyncsOnTheFirstListAndNamesEveryListedObject) {
  put("a", "1");
  put("b", "1");
  start_informer();
  // The store is synced before its handlers hear the list (they are called outside its
  // lock): wait for both, or a loaded machine sees the flag between the two.
  ASSERT_TRUE(wait_until([&] { return informer_->has_synced() && notifications() >= 1; }));
  EXPECT_EQ(take_seen(), (std::vector<std::string>{"added default/a", "added default/b"}));
  EXPECT_EQ(notifications(), 1) << "one notification for the whole list";
  ASSERT_NE(informer_->store().get("default/a"), nullptr);
  EXPECT_EQ((*informer_->store().get("default/a"))["data"]["k"], "1");
}

TEST_F(InformerTest, AnEmptyCollectionIsSyncedAndSaysSo) {
  start_informer();
  ASSERT_TRUE(wait_until([&] { return informer_->has_synced(); }));
  EXPECT_TRUE(wait_until([&] { return notifications() == 1; }))
      << "a consumer waiting for the first list hears it even when it found nothing";
  EXPECT_TRUE(take_seen().empty());
}

TEST_F(InformerTest, NotifiesTheKeyOfEachAddChangeAndDelete) {
  put("a", "1");
  put("b", "1");
  start_informer();
  ASSERT_TRUE(wait_until([&] { return informer_->state() == WatcherState::kWatching; }));
  ASSERT_TRUE(wait_until([&] { return heard(2); }));
  take_seen();

  put("c", "1");
  put("a", "2");
  remove("b");
  ASSERT_TRUE(wait_until([&] { return heard(3); }));
  EXPECT_EQ(take_seen(), (std::vector<std::string>{"added default/c", "modified default/a",
                                                   "deleted default/b"}));
  EXPECT_EQ(informer_->store().get("default/b"), nullptr);
}

TEST_F(InformerTest, ARelistAfter410NotifiesOnlyWhatChangedWhileAway) {
  for (const char* n : {"a", "b", "c"}) put(n, "1");
  start_informer();
  ASSERT_TRUE(wait_until([&] { return informer_->state() == WatcherState::kWatching; }));
  ASSERT_TRUE(wait_until([&] { return heard(3); }));
  take_seen();

  // Keep the informer away while b goes, c changes and d comes; then the history it
  // would resume from is gone (410), so it lists again.
  api_.fail_next_requests(1'000'000, 500, std::chrono::seconds(0), "configmaps");
  api_.close_all_watches();
  ASSERT_TRUE(wait_until([&] { return api_.injected_failures() >= 1; }));
  remove("b");
  put("c", "2");
  put("d", "1");
  api_.compact_history();
  api_.fail_next_requests(0, 500);

  ASSERT_TRUE(wait_until([&] { return informer_->counters().relists == 1 && heard(3); }));
  EXPECT_EQ(take_seen(), (std::vector<std::string>{"deleted default/b", "modified default/c",
                                                   "added default/d"}))
      << "the difference, in key order; a, unchanged, is not named";
}

TEST_F(InformerTest, ReportsItsWatchUnderTheCallersPrefix) {
  put("a", "1");
  put("b", "1");
  start_informer();
  ASSERT_TRUE(wait_until([&] { return informer_->state() == WatcherState::kWatching; }));
  const std::string text = informer_metrics_text({informer_.get()}, "commgate_operator");
  const std::string collection = "{collection=\"" + std::string(kConfigMaps) + "\"}";
  for (const std::string& want :
       std::vector<std::string>{"# TYPE commgate_operator_watch_lists_total counter\n",
                                "commgate_operator_watch_lists_total" + collection + " 1\n",
                                "commgate_operator_watch_relists_total" + collection + " 0\n",
                                "commgate_operator_watch_errors_total" + collection + " 0\n",
                                "commgate_operator_watch_objects" + collection + " 2\n",
                                "# TYPE commgate_operator_watch_state gauge\n",
                                "commgate_operator_watch_state{collection=\"" +
                                    std::string(kConfigMaps) + "\",state=\"watching\"} 1\n"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "in\n" << text;
  EXPECT_EQ(text.find("commgate_webhook"), std::string::npos) << "no name baked in";
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::kube
