// The watch cache: synced after the first list, immutable snapshots, versions that move
// only on real changes, and notifications that name the keys that changed.
#include "kube/store.h"

#include <gtest/gtest.h>

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json obj(const std::string& name, const std::string& rv, const std::string& ns = "") {
  json meta = {{"name", name}, {"resourceVersion", rv}};
  if (!ns.empty()) meta["namespace"] = ns;
  return {{"metadata", meta}};
}

TEST(Store, SyncsOnTheFirstListAndKeysByNamespaceAndName) {
  Store store;
  EXPECT_FALSE(store.synced());
  EXPECT_EQ(store.version(), 0u);
  store.apply(WatcherEvent::restarted({}));
  EXPECT_TRUE(store.synced()) << "an empty list is a complete list";
  EXPECT_EQ(store.version(), 1u);
  store.apply(WatcherEvent::applied(obj("a", "2", "ns1")));
  store.apply(WatcherEvent::applied(obj("b", "3")));
  ASSERT_NE(store.get("ns1/a"), nullptr);
  EXPECT_NE(store.get("b"), nullptr);
  EXPECT_EQ(store.get("a"), nullptr);
}

TEST(Store, SnapshotsStayAsTheyWereWhenTheStoreMovesOn) {
  Store store;
  store.apply(WatcherEvent::restarted({obj("a", "1")}));
  const auto before = store.snapshot();
  const auto a = store.get("a");
  store.apply(WatcherEvent::applied(obj("a", "2")));
  store.apply(WatcherEvent::deleted(obj("a", "3")));
  EXPECT_EQ((*before->at("a"))["metadata"]["resourceVersion"], "1");
  EXPECT_EQ((*a)["metadata"]["resourceVersion"], "1") << "held object outlives the change";
  EXPECT_TRUE(store.snapshot()->empty());
}

TEST(Store, VersionAndCallbackMoveOnlyOnChange) {
  Store store;
  int calls = 0;
  store.subscribe([&](const std::vector<StoreChange>&) {
    ++calls;
    EXPECT_TRUE(store.synced()) << "the callback may read the store";
  });
  store.apply(WatcherEvent::restarted({obj("a", "1"), obj("b", "1")}));
  EXPECT_EQ(calls, 1);
  store.apply(WatcherEvent::applied(obj("a", "1")));
  EXPECT_EQ(calls, 1) << "same resourceVersion: nothing new";
  store.apply(WatcherEvent::deleted(obj("zz", "5")));
  EXPECT_EQ(calls, 1) << "deleting what is not there";
  store.apply(WatcherEvent::restarted({obj("a", "1"), obj("b", "1")}));
  EXPECT_EQ(calls, 1) << "a relist that found the same objects";
  store.apply(WatcherEvent::restarted({obj("a", "1")}));
  EXPECT_EQ(calls, 2) << "a relist that lost b";
  EXPECT_EQ(store.get("b"), nullptr);
  EXPECT_EQ(store.version(), 2u);
}

std::string describe(const std::vector<StoreChange>& changes) {
  std::string out;
  for (const auto& c : changes) out += std::string(to_string(c.type)) + " " + c.key + "; ";
  return out;
}

// What each notification says, event by event: a work queue fed from it sees every key
// that changed, once, and nothing else.
TEST(Store, NotificationsNameTheKeysThatChanged) {
  struct Step {
    const char* name;
    WatcherEvent event;
    std::string want;  // describe() of the notification; "-" for none
  };
  const std::vector<Step> steps = {
      {"the first list notifies even when empty", WatcherEvent::restarted({}), ""},
      {"an add", WatcherEvent::applied(obj("a", "1", "ns")), "added ns/a; "},
      {"a change of an object", WatcherEvent::applied(obj("a", "2", "ns")), "modified ns/a; "},
      {"the same resourceVersion again", WatcherEvent::applied(obj("a", "2", "ns")), "-"},
      {"a second object", WatcherEvent::applied(obj("b", "3")), "added b; "},
      {"a delete", WatcherEvent::deleted(obj("b", "4")), "deleted b; "},
      {"a delete of what is not there", WatcherEvent::deleted(obj("b", "4")), "-"},
      {"a relist: one new, one changed, in key order",
       WatcherEvent::restarted({obj("c", "5"), obj("a", "5", "ns")}), "added c; modified ns/a; "},
      {"a relist that found the same objects",
       WatcherEvent::restarted({obj("a", "5", "ns"), obj("c", "5")}), "-"},
      {"a relist that lost everything", WatcherEvent::restarted({}), "deleted c; deleted ns/a; "},
  };
  Store store;
  std::vector<std::string> seen;
  store.subscribe(
      [&](const std::vector<StoreChange>& changes) { seen.push_back(describe(changes)); });
  for (const Step& step : steps) {
    seen.clear();
    store.apply(step.event);
    if (std::string(step.want) == "-") {
      EXPECT_TRUE(seen.empty()) << step.name << ": notified " << seen[0];
    } else {
      ASSERT_EQ(seen.size(), 1u) << step.name;
      EXPECT_EQ(seen[0], step.want) << step.name;
    }
  }
}

TEST(Store, EverySubscriberHearsEveryChangeInOrder) {
  Store store;
  std::vector<std::string> order;
  store.subscribe([&](const std::vector<StoreChange>&) { order.push_back("first"); });
  store.subscribe([&](const std::vector<StoreChange>&) { order.push_back("second"); });
  store.apply(WatcherEvent::restarted({obj("a", "1")}));
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second"}));
}

}  // namespace
}  // namespace commgate::kube
