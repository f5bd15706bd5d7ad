// The link rate a probe reads (core/link_rate.h): sysfs texts parsed, a rank's report on
// the wire and back, the pool's from its ranks', and its JSON read with field paths.
#include "core/link_rate.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/field_errors.h"
#include "core/object_reader.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

struct SpeedCase {
  const char* text;
  std::optional<double> bits;
};

TEST(LinkRate, ethernet_speed_in_mbps_to_bits) {
  const SpeedCase cases[] = {
      {"10000\n", 1e10},   {"100000", 1e11},   {" 25000 \n", 2.5e10},  {"-1\n", std::nullopt},
      {"0", std::nullopt}, {"", std::nullopt}, {"fast", std::nullopt}, {"100 Mb", std::nullopt},
  };
  for (const auto& c : cases) EXPECT_EQ(parse_ethernet_speed(c.text), c.bits) << c.text;
}

TEST(LinkRate, infiniband_rate_in_gbps_to_bits) {
  const SpeedCase cases[] = {
      {"100 Gb/sec (4X EDR)\n", 1e11}, {"200 Gb/sec (4X HDR)", 2e11},
      {"56 Gb/sec (4X FDR)", 5.6e10},  {"2.5 Gb/sec (1X SDR)", 2.5e9},
      {"100", std::nullopt},           {"100 Mb/sec", std::nullopt},
      {"0 Gb/sec", std::nullopt},      {"", std::nullopt},
  };
  for (const auto& c : cases) EXPECT_EQ(parse_infiniband_rate(c.text), c.bits) << c.text;
}

TEST(LinkRate, a_ranks_report_round_trips_and_junk_is_refused) {
  for (const NodeLink& link : {NodeLink{1e11, true}, NodeLink{0, false}, NodeLink{2.5e10, false}})
    EXPECT_EQ(decode_node_link(encode_node_link(link)), link) << encode_node_link(link);
  for (const char* bad : {"", "100", "1e11,2", "x,1", "-5,0", ",1", "1e11,"})
    EXPECT_EQ(decode_node_link(bad), std::nullopt) << bad;
}

TEST(LinkRate, the_pool_goes_at_its_slowest_known_link) {
  EXPECT_EQ(combine_node_links({{1e11, false}, {2.5e10, false}, {1e11, false}}),
            (PoolLink{2.5e10, 3, 3, false}));
  EXPECT_EQ(combine_node_links({{0, true}, {1e11, false}}), (PoolLink{1e11, 1, 2, true}));
  EXPECT_EQ(combine_node_links({{0, false}, {0, false}}), (PoolLink{0, 0, 2, false}));
  EXPECT_EQ(combine_node_links({}), (PoolLink{}));
}

TEST(LinkRate, json_round_trips_and_names_the_bad_field) {
  const PoolLink link{2.5e10, 2, 3, true};
  const nlohmann::json j = to_json(link);
  FieldErrors errors;
  ObjectReader reader(&j, "status.links", errors);
  EXPECT_EQ(read_pool_link(reader), link);
  EXPECT_TRUE(errors.empty());

  const nlohmann::json bad = {{"rateBitsPerSecond", -1}, {"ranksKnown", -4}, {"ranks", 3}};
  FieldErrors bad_errors;
  ObjectReader bad_reader(&bad, "status.links", bad_errors);
  read_pool_link(bad_reader);
  const std::string text = bad_errors.to_string();
  EXPECT_NE(text.find("status.links.rateBitsPerSecond"), std::string::npos) << text;
  EXPECT_NE(text.find("status.links.ranksKnown"), std::string::npos) << text;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
