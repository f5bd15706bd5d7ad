// OwnWrites: this process's writes are held against the copies a lagging cache shows
// until a copy shows them (operator/own_writes.h).
#include "operator/own_writes.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace commgate::op {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

constexpr const char* kPath = "/apis/commgate.io/v1alpha1/commprofiles/pool-a";

json at_version(const std::string& rv, double busbw = 0) {
  return {{"metadata", {{"name", "pool-a"}, {"resourceVersion", rv}}},
          {"status", {{"busbwGBps", busbw}}}};
}

struct NewerCase {
  std::string name;
  std::optional<std::string> written_rv{};  // nullopt: nothing written
  OwnWrites::Keep keep = OwnWrites::Keep::kVersion;
  std::string seen_rv;
  bool want_newer = false;
  json want_object{};         // what newer_than returns when newer
  std::size_t want_kept = 0;  // writes still remembered after the call
};

void PrintTo(const NewerCase& c, std::ostream* os) {
  *os << c.name;
}

class OwnWritesNewerThan : public ::testing::TestWithParam<NewerCase> {};

TEST_P(OwnWritesNewerThan, holds_a_write_until_a_read_shows_it) {
  const NewerCase& c = GetParam();
  OwnWrites writes;
  if (c.written_rv) writes.remember(kPath, at_version(*c.written_rv, 2.5), c.keep);
  const std::optional<json> got = writes.newer_than(kPath, at_version(c.seen_rv));
  EXPECT_EQ(got.has_value(), c.want_newer);
  if (got && c.want_newer) {
    EXPECT_EQ(*got, c.want_object) << got->dump();
  }
  EXPECT_EQ(writes.size(), c.want_kept);
}

INSTANTIATE_TEST_SUITE_P(
    OwnWrites, OwnWritesNewerThan,
    ::testing::Values(
        NewerCase{.name = "nothing_written_nothing_newer", .seen_rv = "7"},
        NewerCase{.name = "a_stale_echo_of_a_version_write_reads_as_newer_without_the_object",
                  .written_rv = "12",
                  .seen_rv = "7",
                  .want_newer = true,
                  .want_object = json(),
                  .want_kept = 1},
        NewerCase{.name = "a_stale_echo_of_an_object_write_gives_the_object_written",
                  .written_rv = "12",
                  .keep = OwnWrites::Keep::kObject,
                  .seen_rv = "7",
                  .want_newer = true,
                  .want_object = at_version("12", 2.5),
                  .want_kept = 1},
        NewerCase{.name = "a_read_of_the_same_version_has_caught_up_and_forgets_the_write",
                  .written_rv = "12",
                  .keep = OwnWrites::Keep::kObject,
                  .seen_rv = "12"},
        NewerCase{.name = "a_read_of_a_later_version_has_caught_up_and_forgets_the_write",
                  .written_rv = "12",
                  .seen_rv = "13"},
        NewerCase{.name = "versions_compare_as_numbers_not_as_text",
                  .written_rv = "100",
                  .seen_rv = "99",
                  .want_newer = true,
                  .want_object = json(),
                  .want_kept = 1}),
    [](const ::testing::TestParamInfo<NewerCase>& param_info) { return param_info.param.name; });

TEST(OwnWrites, a_forgotten_write_no_longer_holds_back_an_older_copy) {
  OwnWrites writes;
  writes.remember(kPath, at_version("12"), OwnWrites::Keep::kVersion);
  writes.forget(kPath);
  EXPECT_FALSE(writes.newer_than(kPath, at_version("7")).has_value());
  EXPECT_EQ(writes.size(), 0u);
}

TEST(OwnWrites, once_caught_up_an_older_copy_read_later_is_not_held_back) {
  // The write is forgotten when a read shows it: a copy older still (another reader, a
  // relist in progress) is not this process's concern any more.
  OwnWrites writes;
  writes.remember(kPath, at_version("12"), OwnWrites::Keep::kVersion);
  EXPECT_FALSE(writes.newer_than(kPath, at_version("12")).has_value());
  EXPECT_FALSE(writes.newer_than(kPath, at_version("7")).has_value());
}

TEST(OwnWrites, writes_of_other_paths_are_apart) {
  OwnWrites writes;
  writes.remember(kPath, at_version("12"), OwnWrites::Keep::kVersion);
  EXPECT_FALSE(writes.newer_than("/apis/commgate.io/v1alpha1/commprofiles/pool-b", at_version("7"))
                   .has_value());
  EXPECT_TRUE(writes.newer_than(kPath, at_version("7")).has_value());
}

TEST(OwnWrites, the_last_write_of_a_path_wins) {
  OwnWrites writes;
  writes.remember(kPath, at_version("12", 1.0), OwnWrites::Keep::kObject);
  writes.remember(kPath, at_version("15", 2.0), OwnWrites::Keep::kObject);
  const std::optional<json> got = writes.newer_than(kPath, at_version("13"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ((*got)["status"]["busbwGBps"], 2.0);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op
