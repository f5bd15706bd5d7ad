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

json labelled(const std::string& ns, const std::string& name, const std::string& rv,
              const json& labels) {
  json o = obj(name, rv, ns);
  o["metadata"]["labels"] = labels;
  return o;
}

std::string names(const std::vector<Store::Object>& objects) {
  std::string out;
  for (const auto& o : objects)
    out += (*o)["metadata"].value("namespace", "") + "/" +
           (*o)["metadata"]["name"].get<std::string>() + " ";
  return out;
}

// A namespace's objects are one key range: a namespace whose name is a prefix of another's
// ("ns" and "ns2") or that sorts beside it must not leak into it.
TEST(Store, ListsOneNamespaceByItsKeyRange) {
  Store store;
  store.apply(
      WatcherEvent::restarted({obj("a", "1", "ns"), obj("b", "1", "ns2"), obj("c", "1", "n"),
                               obj("d", "1", "ns"), obj("e", "1", "ns-x"), obj("f", "1", "nt")}));
  EXPECT_EQ(names(store.list("ns")), "ns/a ns/d ");
  EXPECT_EQ(names(store.list("n")), "n/c ");
  EXPECT_EQ(names(store.list("ns2")), "ns2/b ");
  EXPECT_EQ(names(store.list("absent")), "");
  EXPECT_EQ(store.list("").size(), 6u) << "no namespace: every object";
  EXPECT_EQ(store.size(), 6u);
}

// The label index follows every kind of change: an add, a label's value changed or
// removed, a delete, a relist; a list by index is what a scan would find.
TEST(Store, TheLabelIndexFollowsEveryChange) {
  Store store;
  store.index_label("job");
  EXPECT_TRUE(store.with_label("", "job", "a"));
  EXPECT_FALSE(store.with_label("", "other", "a")) << "not indexed";
  store.apply(WatcherEvent::restarted(
      {labelled("ns", "p1", "1", {{"job", "a"}}), labelled("ns", "p2", "1", {{"job", "b"}}),
       labelled("ns2", "p3", "1", {{"job", "a"}}), obj("p4", "1", "ns")}));
  EXPECT_EQ(names(*store.with_label("ns", "job", "a")), "ns/p1 ");
  EXPECT_EQ(names(*store.with_label("", "job", "a")), "ns/p1 ns2/p3 ");
  store.apply(WatcherEvent::applied(labelled("ns", "p2", "2", {{"job", "a"}})));
  EXPECT_EQ(names(*store.with_label("ns", "job", "a")), "ns/p1 ns/p2 ");
  EXPECT_EQ(names(*store.with_label("ns", "job", "b")), "") << "the old value lets go";
  store.apply(WatcherEvent::applied(labelled("ns", "p1", "2", {{"other", "a"}})));
  EXPECT_EQ(names(*store.with_label("ns", "job", "a")), "ns/p2 ") << "the label removed";
  store.apply(WatcherEvent::applied(labelled("ns", "p4", "2", {{"job", 7}})));
  EXPECT_EQ(names(*store.with_label("ns", "job", "7")), "") << "not a string: not indexed";
  store.apply(WatcherEvent::deleted(labelled("ns", "p2", "3", {{"job", "a"}})));
  EXPECT_EQ(names(*store.with_label("", "job", "a")), "ns2/p3 ");
  store.apply(WatcherEvent::restarted({labelled("ns", "p5", "4", {{"job", "a"}})}));
  EXPECT_EQ(names(*store.with_label("", "job", "a")), "ns/p5 ") << "a relist rebuilds it";
  EXPECT_FALSE(store.with_label("ns", "other", "a"));
  EXPECT_THROW(store.index_label("late"), std::logic_error) << "only before objects";
}

// A streamed list (Init, InitApply..., InitDone) replaces what is known only when it is
// complete: readers see the old objects while it arrives, and a list that failed half way
// (a new Init, no InitDone) leaves nothing of itself behind.
TEST(Store, AStreamedListReplacesTheObjectsOnlyWhenItIsDone) {
  Store store;
  std::vector<std::string> seen;
  store.subscribe(
      [&](const std::vector<StoreChange>& changes) { seen.push_back(describe(changes)); });
  store.apply(WatcherEvent::restarted({obj("a", "1"), obj("b", "1")}));
  store.apply(WatcherEvent::init());
  store.apply(WatcherEvent::init_apply(obj("a", "2")));
  store.apply(WatcherEvent::init_apply(obj("zz", "2")));
  EXPECT_EQ((*store.get("a"))["metadata"]["resourceVersion"], "1") << "not yet done";
  EXPECT_EQ(store.get("zz"), nullptr);
  store.apply(WatcherEvent::init());  // the list failed and starts again
  store.apply(WatcherEvent::init_apply(obj("a", "2")));
  store.apply(WatcherEvent::init_apply(obj("c", "2")));
  EXPECT_EQ(seen.size(), 1u) << "nothing notified while the list arrives";
  store.apply(WatcherEvent::init_done());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], "modified a; deleted b; added c; ");
  EXPECT_EQ(store.get("zz"), nullptr) << "the abandoned list left nothing";
  EXPECT_EQ(store.size(), 2u);
  EXPECT_THROW(store.apply(WatcherEvent::init_apply(obj("d", "3"))), std::logic_error);
  EXPECT_THROW(store.apply(WatcherEvent::init_done()), std::logic_error);
}

// Objects are held packed: what a reader gets back is the object that was applied, every
// JSON type included, and its own copy.
TEST(Store, ReadsGiveBackTheObjectAsApplied) {
  const json object = {{"metadata", {{"name", "a"}, {"resourceVersion", "1"}}},
                       {"spec",
                        {{"int", -3},
                         {"big", 18446744073709551615ULL},
                         {"float", 0.1},
                         {"bool", true},
                         {"null", nullptr},
                         {"text", "GPU \u00e9\u00e8 \"quoted\""},
                         {"list", json::array({1, "two", json::object()})}}}};
  Store store;
  store.apply(WatcherEvent::restarted({object}));
  EXPECT_EQ(*store.get("a"), object);
  EXPECT_NE(store.get("a"), store.get("a")) << "each read unpacks its own copy";
  EXPECT_EQ(*store.list("").at(0), object);
  EXPECT_EQ(*store.snapshot()->at("a"), object);
}

TEST(Store, EverySubscriberHearsEveryChangeInOrder) {
  Store store;
  std::vector<std::string> order;
  store.subscribe([&](const std::vector<StoreChange>&) { order.push_back("first"); });
  store.subscribe([&](const std::vector<StoreChange>&) { order.push_back("second"); });
  store.apply(WatcherEvent::restarted({obj("a", "1")}));
  EXPECT_EQ(order, (std::vector<std::string>{"first", "second"}));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::kube
