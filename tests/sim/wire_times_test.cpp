// Time and MicroTime values canonicalized as kube-apiserver's decode and encode leave them
// (sim/wire_times.h).
#include "sim/wire_times.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

struct TimeCase {
  std::string name;
  std::string text;
  TimeLayout layout;
  std::optional<std::string> want;
};

void PrintTo(const TimeCase& c, std::ostream* os) {
  *os << c.name << " (\"" << c.text << "\")";
}

class CanonicalTime : public ::testing::TestWithParam<TimeCase> {};

TEST_P(CanonicalTime, reads_like_go_and_writes_utc) {
  EXPECT_EQ(canonical_time(GetParam().text, GetParam().layout), GetParam().want);
}

constexpr auto kTime = TimeLayout::kTime;
constexpr auto kMicro = TimeLayout::kMicroTime;

INSTANTIATE_TEST_SUITE_P(
    Values, CanonicalTime,
    ::testing::Values(
        TimeCase{"micro_canonical_stays", "2026-12-01T21:56:51.123456Z", kMicro,
                 "2026-12-01T21:56:51.123456Z"},
        TimeCase{"python_isoformat_utc_offset_becomes_z", "2026-12-01T21:56:51.123456+00:00",
                 kMicro, "2026-12-01T21:56:51.123456Z"},
        TimeCase{"positive_offset_moves_back_across_midnight", "2026-01-01T01:30:00.000001+02:00",
                 kMicro, "2025-12-31T23:30:00.000001Z"},
        TimeCase{"negative_offset_moves_forward", "2026-02-28T23:00:00.500000-01:30", kMicro,
                 "2026-03-01T00:30:00.500000Z"},
        TimeCase{"micro_without_fraction_is_refused_as_go_does", "2026-12-01T21:56:51Z", kMicro,
                 std::nullopt},
        TimeCase{"micro_with_three_digits_is_refused", "2026-12-01T21:56:51.123Z", kMicro,
                 std::nullopt},
        TimeCase{"time_drops_the_fraction", "2026-12-01T21:56:51.999999999Z", kTime,
                 "2026-12-01T21:56:51Z"},
        TimeCase{"time_with_offset", "2026-12-01T23:56:51+02:00", kTime, "2026-12-01T21:56:51Z"},
        TimeCase{"no_zone_is_refused", "2026-12-01T21:56:51", kTime, std::nullopt},
        TimeCase{"space_for_t_is_refused", "2026-12-01 21:56:51Z", kTime, std::nullopt},
        TimeCase{"february_30_is_refused", "2026-02-30T00:00:00Z", kTime, std::nullopt},
        TimeCase{"hour_24_is_refused", "2026-12-01T24:00:00Z", kTime, std::nullopt},
        TimeCase{"trailing_bytes_are_refused", "2026-12-01T21:56:51Zx", kTime, std::nullopt},
        TimeCase{"dot_without_digits_is_refused", "2026-12-01T21:56:51.Z", kTime, std::nullopt}),
    [](const auto& param_info) { return param_info.param.name; });

ResourceInfo resource(const std::string& group, const std::string& plural) {
  ResourceInfo r;
  r.group = group;
  r.version = "v1";
  r.plural = plural;
  return r;
}

TEST(CanonicalizeTimes, rewrites_a_leases_micro_times_and_leaves_bad_ones) {
  nlohmann::json lease = {{"spec",
                           {{"renewTime", "2026-12-01T21:56:51.123456+00:00"},
                            {"acquireTime", "yesterday"},
                            {"holderIdentity", "op-0"}}}};
  canonicalize_times(resource("coordination.k8s.io", "leases"), lease);
  EXPECT_EQ(lease["spec"]["renewTime"], "2026-12-01T21:56:51.123456Z");
  EXPECT_EQ(lease["spec"]["acquireTime"], "yesterday");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "op-0");
}

TEST(CanonicalizeTimes, rewrites_events_of_both_groups_and_nothing_else) {
  nlohmann::json event = {{"eventTime", "2026-12-01T21:56:51.000001+01:00"},
                          {"series", {{"lastObservedTime", "2026-12-01T21:56:52.000001+01:00"}}},
                          {"deprecatedLastTimestamp", "2026-12-01T21:56:51.7+01:00"}};
  nlohmann::json core_event = {{"lastTimestamp", "2026-12-01T21:56:51.7+01:00"}};
  nlohmann::json config_map = {{"data", {{"when", "2026-12-01T21:56:51.7+01:00"}}}};
  canonicalize_times(resource("events.k8s.io", "events"), event);
  canonicalize_times(resource("", "events"), core_event);
  canonicalize_times(resource("", "configmaps"), config_map);
  EXPECT_EQ(event["eventTime"], "2026-12-01T20:56:51.000001Z");
  EXPECT_EQ(event["series"]["lastObservedTime"], "2026-12-01T20:56:52.000001Z");
  EXPECT_EQ(event["deprecatedLastTimestamp"], "2026-12-01T20:56:51Z");
  EXPECT_EQ(core_event["lastTimestamp"], "2026-12-01T20:56:51Z");
  EXPECT_EQ(config_map["data"]["when"], "2026-12-01T21:56:51.7+01:00");
}

}  // namespace
}  // namespace commgate::sim
