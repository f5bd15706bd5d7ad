// The deletion rules as tables (sim/garbage_collection.h), and ObjectStore applying them:
// finalizers, deletionTimestamp, and Background / Foreground / Orphan propagation.
#include "sim/garbage_collection.h"

#include <gtest/gtest.h>

#include "sim/api_status.h"
#include "sim/object_store.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

// DeleteOptions with only a propagation policy (the preconditions unset).
DeleteOptions policy(std::optional<Propagation> propagation) {
  DeleteOptions o;
  o.propagation = propagation;
  return o;
}

using nlohmann::json;

ResourceInfo resource(const ObjectStore& store, const std::string& group,
                      const std::string& plural) {
  auto r = store.find_resource(group, "v1", plural);
  EXPECT_TRUE(r.has_value()) << plural;
  return r.value_or(ResourceInfo{});
}

TEST(ParseDeleteOptions, maps_policy_and_legacy_orphan_flag) {
  struct Case {
    std::string policy;
    std::optional<bool> orphan;
    std::optional<Propagation> want;
  };
  const Case cases[] = {
      {"", std::nullopt, std::nullopt},
      {"Orphan", std::nullopt, Propagation::kOrphan},
      {"Background", std::nullopt, Propagation::kBackground},
      {"Foreground", std::nullopt, Propagation::kForeground},
      {"", true, Propagation::kOrphan},
      {"", false, Propagation::kBackground},
  };
  for (const auto& c : cases)
    EXPECT_EQ(parse_delete_options(c.policy, c.orphan).propagation, c.want) << c.policy;
}

TEST(ParseDeleteOptions, rejects_unknown_policy_and_both_set_with_422) {
  for (const auto& [policy, orphan] : std::vector<std::pair<std::string, std::optional<bool>>>{
           {"Sideways", std::nullopt}, {"Orphan", true}}) {
    try {
      parse_delete_options(policy, orphan);
      ADD_FAILURE() << policy;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.code(), 422);
      EXPECT_NE(e.status()["message"].get<std::string>().find("propagationPolicy"),
                std::string::npos);
    }
  }
}

TEST(EffectivePropagation, defaults_per_resource_and_finalizer) {
  ObjectStore store;
  const auto jobs = resource(store, "batch", "jobs");
  const auto pods = resource(store, "", "pods");
  const json plain = {{"metadata", {{"name", "x"}}}};
  const json orphaning = {{"metadata", {{"finalizers", {"orphan"}}}}};
  const json foreground = {{"metadata", {{"finalizers", {"foregroundDeletion"}}}}};
  struct Case {
    const ResourceInfo* r;
    std::optional<Propagation> asked;
    json object;
    Propagation want;
  };
  const Case cases[] = {
      {&pods, std::nullopt, plain, Propagation::kBackground},
      {&jobs, std::nullopt, plain, Propagation::kOrphan},  // batch/v1 legacy default
      {&jobs, Propagation::kBackground, plain, Propagation::kBackground},  // kubectl
      {&pods, std::nullopt, orphaning, Propagation::kOrphan},
      {&pods, std::nullopt, foreground, Propagation::kForeground},
      {&pods, Propagation::kBackground, foreground, Propagation::kBackground},
  };
  for (const auto& c : cases)
    EXPECT_EQ(effective_propagation(*c.r, policy(c.asked), c.object), c.want)
        << c.r->plural << " " << c.object.dump();
}

TEST(OwnerReferences, read_block_and_strip) {
  const json dep = {
      {"metadata",
       {{"ownerReferences", {{{"uid", "a"}, {"blockOwnerDeletion", true}}, {{"uid", "b"}}}}}}};
  EXPECT_EQ(owner_uids(dep), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(blocks_owner_deletion(dep, "a"));
  EXPECT_FALSE(blocks_owner_deletion(dep, "b"));
  EXPECT_EQ(owner_uids(without_owner(dep, "a")), (std::vector<std::string>{"b"}));
  EXPECT_FALSE(without_owner(without_owner(dep, "a"), "b")["metadata"].contains("ownerReferences"));
}

TEST(Finalizers, added_ones_are_the_new_names) {
  const json before = {{"metadata", {{"finalizers", {"a"}}}}};
  const json after = {{"metadata", {{"finalizers", {"a", "b"}}}}};
  EXPECT_EQ(added_finalizers(before, after), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(added_finalizers(after, before).empty());
}

// A store with a configmap "owner" and dependents "d0".."d<n-1>" owned by it.
struct Family {
  ObjectStore store;
  ResourceInfo cm = resource(store, "", "configmaps");
  std::string owner_uid;
  std::vector<WatchEvent> events;
  explicit Family(int n, bool block = true, json owner_finalizers = nullptr) {
    json owner = {{"metadata", {{"name", "owner"}}}};
    if (!owner_finalizers.is_null()) owner["metadata"]["finalizers"] = owner_finalizers;
    owner_uid = store.create(cm, "default", owner)["metadata"]["uid"];
    for (int i = 0; i < n; ++i)
      store.create(cm, "default",
                   {{"metadata",
                     {{"name", "d" + std::to_string(i)},
                      {"ownerReferences",
                       {{{"apiVersion", "v1"},
                         {"kind", "ConfigMap"},
                         {"name", "owner"},
                         {"uid", owner_uid},
                         {"blockOwnerDeletion", block}}}}}}});
    WatchRequest w;
    w.from = store.resource_version();
    w.deliver = [this](const WatchEvent& e) {
      events.push_back(e);
      return true;
    };
    store.watch(cm, std::move(w));
  }
  bool exists(const std::string& name) {
    try {
      store.get(cm, "default", name);
      return true;
    } catch (const ApiError&) {
      return false;
    }
  }
  std::vector<std::string> trace() {
    std::vector<std::string> out;
    for (const auto& e : events)
      out.push_back(e.type + " " + e.object["metadata"].value("name", ""));
    return out;
  }
};

TEST(StoreDeletion, finalizer_keeps_object_with_deletion_timestamp_until_removed) {
  Family f(0, true, json::array({"example.com/hold"}));
  json held = f.store.remove(f.cm, "default", "owner");
  EXPECT_TRUE(held["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(held["metadata"]["deletionGracePeriodSeconds"], 0);
  EXPECT_TRUE(f.exists("owner"));
  // Deleting again answers the object as it is; adding a finalizer now is a 422.
  EXPECT_EQ(f.store.remove(f.cm, "default", "owner")["metadata"]["resourceVersion"],
            held["metadata"]["resourceVersion"]);
  try {
    f.store.mutate(f.cm, "default", "owner", WritePart::kMain, [](const json& cur) {
      json next = cur;
      next["metadata"]["finalizers"].push_back("example.com/late");
      return next;
    });
    ADD_FAILURE() << "a finalizer was added to a deleting object";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), 422);
    EXPECT_NE(std::string(e.what()).find("no new finalizers can be added"), std::string::npos);
  }
  f.store.mutate(f.cm, "default", "owner", WritePart::kMain, [](const json& cur) {
    json next = cur;
    next["metadata"].erase("finalizers");
    return next;
  });
  EXPECT_FALSE(f.exists("owner"));
  EXPECT_EQ(f.trace(), (std::vector<std::string>{"MODIFIED owner", "DELETED owner"}));
}

TEST(StoreDeletion, background_deletes_dependents_after_the_owner) {
  Family f(2);
  f.store.remove(f.cm, "default", "owner", policy(Propagation::kBackground));
  EXPECT_EQ(f.trace(), (std::vector<std::string>{"DELETED owner", "DELETED d0", "DELETED d1"}));
}

TEST(StoreDeletion, a_dependent_created_after_its_owner_is_gone_is_collected_at_once) {
  Family f(0);
  f.store.remove(f.cm, "default", "owner", policy(Propagation::kBackground));
  // A controller with a stale cache creates a dependent of the deleted owner: the garbage
  // collector would delete it, so the store does at once (ADDED, then DELETED).
  f.store.create(f.cm, "default",
                 {{"metadata",
                   {{"name", "late"},
                    {"ownerReferences",
                     {{{"apiVersion", "v1"},
                       {"kind", "ConfigMap"},
                       {"name", "owner"},
                       {"uid", f.owner_uid}}}}}}});
  EXPECT_FALSE(f.exists("late"));
  EXPECT_EQ(f.trace(), (std::vector<std::string>{"DELETED owner", "ADDED late", "DELETED late"}));
}

TEST(StoreDeletion, dependent_with_another_live_owner_only_loses_the_reference) {
  Family f(1);
  const std::string other =
      f.store.create(f.cm, "default", {{"metadata", {{"name", "other"}}}})["metadata"]["uid"];
  f.store.mutate(f.cm, "default", "d0", WritePart::kMain, [&](const json& cur) {
    json next = cur;
    next["metadata"]["ownerReferences"].push_back(
        {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"name", "other"}, {"uid", other}});
    return next;
  });
  f.store.remove(f.cm, "default", "owner");
  ASSERT_TRUE(f.exists("d0"));
  EXPECT_EQ(owner_uids(f.store.get(f.cm, "default", "d0")), (std::vector<std::string>{other}));
}

TEST(StoreDeletion, foreground_deletes_dependents_first_then_the_owner) {
  Family f(2);
  json marked = f.store.remove(f.cm, "default", "owner", policy(Propagation::kForeground));
  EXPECT_EQ(finalizers_of(marked), (std::vector<std::string>{"foregroundDeletion"}));
  EXPECT_FALSE(f.exists("owner"));
  EXPECT_EQ(f.trace(), (std::vector<std::string>{"MODIFIED owner", "DELETED d0", "DELETED d1",
                                                 "DELETED owner"}));
}

TEST(StoreDeletion, foreground_waits_for_a_blocking_dependent_held_by_a_finalizer) {
  Family f(1);
  f.store.mutate(f.cm, "default", "d0", WritePart::kMain, [](const json& cur) {
    json next = cur;
    next["metadata"]["finalizers"] = {"example.com/hold"};
    return next;
  });
  f.events.clear();
  f.store.remove(f.cm, "default", "owner", policy(Propagation::kForeground));
  EXPECT_TRUE(f.exists("owner"));
  EXPECT_TRUE(is_deleting(f.store.get(f.cm, "default", "d0")));
  f.store.mutate(f.cm, "default", "d0", WritePart::kMain, [](const json& cur) {
    json next = cur;
    next["metadata"].erase("finalizers");
    return next;
  });
  EXPECT_FALSE(f.exists("d0"));
  EXPECT_FALSE(f.exists("owner"));
  EXPECT_EQ(f.trace(), (std::vector<std::string>{"MODIFIED owner", "MODIFIED d0", "DELETED d0",
                                                 "DELETED owner"}));
}

TEST(StoreDeletion, foreground_does_not_wait_for_non_blocking_dependents) {
  Family f(1, /*block=*/false);
  f.store.mutate(f.cm, "default", "d0", WritePart::kMain, [](const json& cur) {
    json next = cur;
    next["metadata"]["finalizers"] = {"example.com/hold"};
    return next;
  });
  f.store.remove(f.cm, "default", "owner", policy(Propagation::kForeground));
  EXPECT_FALSE(f.exists("owner"));
  EXPECT_TRUE(f.exists("d0"));
}

TEST(StoreDeletion, orphan_strips_references_and_keeps_dependents) {
  Family f(2);
  f.store.remove(f.cm, "default", "owner", policy(Propagation::kOrphan));
  EXPECT_FALSE(f.exists("owner"));
  for (const char* d : {"d0", "d1"}) {
    ASSERT_TRUE(f.exists(d));
    EXPECT_TRUE(owner_uids(f.store.get(f.cm, "default", d)).empty());
  }
  EXPECT_EQ(f.trace(), (std::vector<std::string>{"MODIFIED d0", "MODIFIED d1", "DELETED owner"}));
}

TEST(StoreDeletion, jobs_deleted_without_a_policy_orphan_their_pods) {
  ObjectStore store;
  const auto jobs = resource(store, "batch", "jobs");
  const auto pods = resource(store, "", "pods");
  const std::string uid =
      store.create(jobs, "default", {{"metadata", {{"name", "j"}}}})["metadata"]["uid"];
  store.create(
      pods, "default",
      {{"metadata",
        {{"name", "p"}, {"ownerReferences", {{{"kind", "Job"}, {"name", "j"}, {"uid", uid}}}}}}});
  store.remove(jobs, "default", "j");
  EXPECT_NO_THROW(store.get(pods, "default", "p"));
  const std::string uid2 =
      store.create(jobs, "default", {{"metadata", {{"name", "j"}}}})["metadata"]["uid"];
  store.create(
      pods, "default",
      {{"metadata",
        {{"name", "q"}, {"ownerReferences", {{{"kind", "Job"}, {"name", "j"}, {"uid", uid2}}}}}}});
  store.remove(jobs, "default", "j", policy(Propagation::kBackground));
  EXPECT_THROW(store.get(pods, "default", "q"), ApiError);
}

}  // namespace
}  // namespace commgate::sim
