// build_snapshot, the pure part of kube/snapshot_cache.h: the three collections' objects
// become one Snapshot; an object that does not parse is left out and reported with its
// kind, key, resourceVersion and the parser's field path, never stopping the others.
// The informer side (null until listed, follows changes, logs a bad object once) is
// tested through the webhook's KubePolicySource against the sim (kube_sim_test).
#include "kube/snapshot_cache.h"

#include <gtest/gtest.h>

#include "tests/support/builders.h"
#include "tests/webhook/webhook_test_support.h"

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json policy(const std::string& name, json max_share) {
  return {{"apiVersion", "commgate.io/v1alpha1"},
          {"kind", "CommPolicy"},
          {"metadata", {{"name", name}, {"resourceVersion", "7"}}},
          {"spec", {{"maxCommShare", max_share}}}};
}

json a_namespace(const std::string& name, json labels) {
  json metadata = {{"name", name}};
  if (!labels.is_null()) metadata["labels"] = labels;
  return {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", metadata}};
}

struct BuildCase {
  std::string name;
  std::map<std::string, json> policies, profiles, namespaces;
  std::vector<std::string> want_policies;
  std::vector<std::string> want_profiles;
  std::map<std::string, std::map<std::string, std::string>> want_labels;
  std::vector<std::string> want_rejected;  // "kind key rv"
  std::string want_why;                    // in the first rejection's message
};

TEST(BuildSnapshot, ParsesEachCollectionAndLeavesOutWhatDoesNotParse) {
  const TimePoint now = commgate::testing::test_now();
  const json profile = webhook::testing::a_profile(1.0, now, "pool-a");
  json future_profile = webhook::testing::a_profile(1.0, now + std::chrono::hours(24), "pool-b");
  future_profile["metadata"]["resourceVersion"] = "9";
  const std::vector<BuildCase> cases = {
      {"empty_cluster", {}, {}, {}, {}, {}, {}, {}, ""},
      {"one_of_each",
       {{"strict", policy("strict", 0.1)}},
       {{"pool-a", profile}},
       {{"research", a_namespace("research", {{"team", "nlp"}, {"tier", "1"}})}},
       {"strict"},
       {"pool-a"},
       {{"research", {{"team", "nlp"}, {"tier", "1"}}}},
       {},
       ""},
      {"malformed_policy_left_out_others_kept",
       {{"bad", policy("bad", "high")}, {"strict", policy("strict", 0.1)}},
       {{"pool-a", profile}},
       {},
       {"strict"},
       {"pool-a"},
       {},
       {"CommPolicy bad 7"},
       "maxCommShare"},
      {"profile_measured_in_the_future_left_out",
       {},
       {{"pool-a", profile}, {"pool-b", future_profile}},
       {},
       {},
       {"pool-a"},
       {},
       {"CommProfile pool-b 9"},
       ""},
      {"namespace_without_labels_and_non_string_labels",
       {},
       {},
       {{"plain", a_namespace("plain", nullptr)},
        {"odd", a_namespace("odd", {{"n", 1}, {"s", "x"}})}},
       {},
       {},
       {{"plain", {}}, {"odd", {{"s", "x"}}}},
       {},
       ""},
  };
  for (const BuildCase& c : cases) {
    SCOPED_TRACE(c.name);
    const SnapshotBuild got = build_snapshot(stored_objects(c.policies), stored_objects(c.profiles),
                                             stored_objects(c.namespaces), now);
    ASSERT_NE(got.snapshot, nullptr);
    std::vector<std::string> policies, profiles, rejected;
    for (const auto& p : got.snapshot->policies) policies.push_back(p.metadata.name);
    for (const auto& [name, p] : got.snapshot->profiles) profiles.push_back(name);
    for (const auto& r : got.rejected)
      rejected.push_back(r.kind + " " + r.key + " " + r.resource_version);
    EXPECT_EQ(policies, c.want_policies);
    EXPECT_EQ(profiles, c.want_profiles);
    EXPECT_EQ(got.snapshot->namespace_labels, c.want_labels);
    EXPECT_EQ(rejected, c.want_rejected);
    if (!c.want_why.empty() && !got.rejected.empty()) {
      EXPECT_NE(got.rejected[0].why.find(c.want_why), std::string::npos) << got.rejected[0].why;
    }
    EXPECT_EQ(got.snapshot->loaded_at, now);
  }
}

// A Namespace's commgate.io/ annotations are its jobs' model defaults (the Kueue check);
// its other annotations are not kept.
TEST(BuildSnapshot, KeepsOnlyANamespacesCommgateAnnotations) {
  json team = a_namespace("team", nullptr);
  team["metadata"]["annotations"] = {{"commgate.io/parameters", "7G"},
                                     {"commgate.io/batch-size", "8"},
                                     {"kubectl.kubernetes.io/last-applied-configuration", "{}"},
                                     {"commgate.io/odd", 1}};
  json plain = a_namespace("plain", nullptr);
  plain["metadata"]["annotations"] = {{"owner", "nlp"}};
  const SnapshotBuild got = build_snapshot(stored_objects({}), stored_objects({}),
                                           stored_objects({{"team", team}, {"plain", plain}}),
                                           commgate::testing::test_now());
  const std::map<std::string, std::map<std::string, std::string>> want = {
      {"team", {{"commgate.io/parameters", "7G"}, {"commgate.io/batch-size", "8"}}}};
  EXPECT_EQ(got.snapshot->namespace_commgate_annotations, want);
  EXPECT_TRUE(got.snapshot->commgate_annotations_of("plain").empty());
  EXPECT_TRUE(got.snapshot->commgate_annotations_of("nowhere").empty());
}

// Issue #19 item 6: a policy made invalid (stored while its validating webhook, which fails
// open, was down) was dropped, and a milder one admitted the job. Its last valid version
// now governs in its place, said in stale_policies and the rejection; a new object of the
// same name (another uid) that is invalid from the start keeps nothing.
// ... and after a restart (no memory of this process's), as the version the operator
// recorded in status.lastValid; a recorded spec that does not parse either keeps nothing.
TEST(BuildSnapshot, AfterARestartAnInvalidPolicyGovernsAsTheVersionRecordedInItsStatus) {
  const TimePoint now = commgate::testing::test_now();
  json broken = policy("team", "high");
  broken["metadata"]["uid"] = "uid-1";
  broken["metadata"]["resourceVersion"] = "9";
  broken["status"]["lastValid"] = {
      {"generation", 2}, {"resourceVersion", "7"}, {"spec", policy("team", 0.1)["spec"]}};
  const SnapshotBuild restarted = build_snapshot(stored_objects({{"team", broken}}),
                                                 stored_objects({}), stored_objects({}), now);
  ASSERT_EQ(restarted.snapshot->policies.size(), 1u);
  EXPECT_DOUBLE_EQ(restarted.snapshot->policies[0].spec.max_comm_share, 0.1);
  EXPECT_EQ(restarted.snapshot->invalid_policies.count("team"), 0u);
  ASSERT_EQ(restarted.snapshot->stale_policies.count("team"), 1u);
  EXPECT_NE(restarted.snapshot->stale_policies.at("team").find("resourceVersion 7, stays in force"),
            std::string::npos)
      << restarted.snapshot->stale_policies.at("team");
  EXPECT_EQ(restarted.rejected.at(0).kept_resource_version, "7");
  EXPECT_EQ(restarted.valid.count("team"), 1u);

  broken["status"]["lastValid"]["spec"]["maxCommShare"] = "also high";
  const SnapshotBuild unrecorded = build_snapshot(stored_objects({{"team", broken}}),
                                                  stored_objects({}), stored_objects({}), now);
  EXPECT_TRUE(unrecorded.snapshot->policies.empty());
  EXPECT_EQ(unrecorded.snapshot->invalid_policies.count("team"), 1u);
}

TEST(BuildSnapshot, APolicyMadeInvalidGovernsAsItsLastValidVersion) {
  const TimePoint now = commgate::testing::test_now();
  json strict = policy("team", 0.1);
  strict["metadata"]["uid"] = "uid-1";
  const SnapshotBuild first = build_snapshot(stored_objects({{"team", strict}}), stored_objects({}),
                                             stored_objects({}), now);
  ASSERT_EQ(first.valid.count("team"), 1u);

  json broken = policy("team", "high");
  broken["metadata"]["uid"] = "uid-1";
  broken["metadata"]["resourceVersion"] = "8";
  const SnapshotBuild second = build_snapshot(
      stored_objects({{"team", broken}}), stored_objects({}), stored_objects({}), now, first.valid);
  ASSERT_EQ(second.snapshot->policies.size(), 1u);
  EXPECT_DOUBLE_EQ(second.snapshot->policies[0].spec.max_comm_share, 0.1);
  EXPECT_EQ(second.snapshot->invalid_policies.count("team"), 0u)
      << "a policyRef to it still resolves, to the version in force";
  ASSERT_EQ(second.snapshot->stale_policies.count("team"), 1u);
  EXPECT_NE(second.snapshot->stale_policies.at("team").find("resourceVersion 7, stays in force"),
            std::string::npos)
      << second.snapshot->stale_policies.at("team");
  ASSERT_EQ(second.rejected.size(), 1u);
  EXPECT_EQ(second.rejected[0].resource_version, "8");
  EXPECT_EQ(second.rejected[0].kept_resource_version, "7");
  // Still broken on the next rebuild: still kept (the kept version carries over).
  const SnapshotBuild third = build_snapshot(stored_objects({{"team", broken}}), stored_objects({}),
                                             stored_objects({}), now, second.valid);
  EXPECT_EQ(third.snapshot->policies.size(), 1u);

  // Deleted and created again, invalid: not the same policy, nothing kept.
  broken["metadata"]["uid"] = "uid-2";
  const SnapshotBuild recreated = build_snapshot(
      stored_objects({{"team", broken}}), stored_objects({}), stored_objects({}), now, first.valid);
  EXPECT_TRUE(recreated.snapshot->policies.empty());
  EXPECT_EQ(recreated.snapshot->invalid_policies.count("team"), 1u);
  EXPECT_EQ(recreated.rejected[0].kept_resource_version, "");
  // Deleted: gone from the next build's memory too.
  const SnapshotBuild deleted =
      build_snapshot(stored_objects({}), stored_objects({}), stored_objects({}), now, first.valid);
  EXPECT_TRUE(deleted.valid.empty());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::kube
