// The watch cache: synced after the first list, immutable snapshots, versions that move
// only on real changes, the change callback.
#include "kube/store.h"

#include <gtest/gtest.h>

namespace commgate::kube {
namespace {

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
  EXPECT_EQ(before->at("a")["metadata"]["resourceVersion"], "1");
  EXPECT_EQ((*a)["metadata"]["resourceVersion"], "1") << "held object outlives the change";
  EXPECT_TRUE(store.snapshot()->empty());
}

TEST(Store, VersionAndCallbackMoveOnlyOnChange) {
  Store store;
  int calls = 0;
  store.on_change([&] {
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

}  // namespace
}  // namespace commgate::kube
