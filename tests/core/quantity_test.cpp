#include "core/quantity.h"

#include <gtest/gtest.h>

#include "core/time_format.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

struct QuantityCase {
  std::string text;
  std::optional<double> want;
};

TEST(Quantity, parses_kubernetes_notations) {
  const std::vector<QuantityCase> cases = {
      {"340M", 340e6},       {"7G", 7e9},         {"1.5G", 1.5e9},        {"25Mi", 25.0 * 1048576},
      {"4Ki", 4096},         {"100", 100},        {"1e9", 1e9},           {"2E3", 2000},
      {"500m", 0.5},         {"+3k", 3000},       {".5M", 500000},        {"7B", std::nullopt},
      {"", std::nullopt},    {"M", std::nullopt}, {"12 M", std::nullopt}, {"1.2.3", std::nullopt},
      {"3KB", std::nullopt}, {"1e", std::nullopt}};
  for (const auto& c : cases) {
    std::string err;
    auto got = parse_quantity(c.text, &err);
    if (c.want) {
      ASSERT_TRUE(got) << c.text << ": " << err;
      EXPECT_DOUBLE_EQ(*got, *c.want) << c.text;
    } else {
      EXPECT_FALSE(got) << c.text << " parsed as " << *got;
      EXPECT_FALSE(err.empty()) << c.text;
    }
  }
}

// Issue 12: "350 million" was refused with no word on how to write it.
TEST(Quantity, an_unknown_suffix_says_how_to_write_it) {
  struct Case {
    std::string text;
    std::string want_hint;
  };
  const std::vector<Case> cases = {
      {"350 million", "(write 350M)"},
      {"350million", "(write 350M)"},
      {"7 billion", "(write 7G)"},
      {"7B", "(write 7G: billions are G)"},
      {"-2 thousand", "(write -2k)"},
      {"3K", "(write 3k: thousands are lower-case k)"},
      {"12 M", "(no space between the number and its suffix: write 12M)"},
      {"1.5 Gi", "(no space between the number and its suffix: write 1.5Gi)"},
  };
  for (const auto& c : cases) {
    std::string err;
    EXPECT_FALSE(parse_quantity(c.text, &err)) << c.text;
    EXPECT_NE(err.find(c.want_hint), std::string::npos) << c.text << ": " << err;
  }
  std::string err;
  EXPECT_FALSE(parse_quantity("3 furlongs", &err));
  EXPECT_EQ(err.find("(write"), std::string::npos) << err;
}

// Issue 12: "got -3.5e+08" for a field written as -350M.
TEST(Quantity, formats_numbers_as_the_quantities_users_write) {
  const std::vector<std::pair<double, std::string>> cases = {
      {-3.5e8, "-350M"}, {350e6, "350M"},        {1, "1"},     {0, "0"},
      {0.5, "0.5"},      {1234567, "1.234567M"}, {7e9, "7G"},  {-1, "-1"},
      {1500, "1.5k"},    {1e15, "1P"},           {999, "999"}, {25.0 * 1048576, "26.2144M"}};
  for (const auto& [value, want] : cases) {
    EXPECT_EQ(format_quantity(value), want) << value;
    EXPECT_DOUBLE_EQ(*parse_quantity(format_quantity(value), nullptr), value) << want;
  }
}

TEST(Duration, parses_go_durations) {
  using namespace std::chrono;
  const std::vector<std::pair<std::string, std::optional<nanoseconds>>> cases = {
      {"24h", hours(24)},           {"1h30m", minutes(90)}, {"90s", seconds(90)},
      {"250ms", milliseconds(250)}, {"1.5h", minutes(90)},  {"10us", microseconds(10)},
      {"0", nanoseconds(0)},        {"1d", std::nullopt},   {"h", std::nullopt},
      {"", std::nullopt},           {"10", std::nullopt},   {"5 m", std::nullopt}};
  for (const auto& [text, want] : cases) {
    auto got = parse_duration(text, nullptr);
    if (want) {
      ASSERT_TRUE(got) << text;
      EXPECT_EQ(got->count(), want->count()) << text;
    } else {
      EXPECT_FALSE(got) << text;
    }
  }
}

TEST(Duration, formats_round_trip) {
  using namespace std::chrono;
  for (auto d : {nanoseconds(hours(24)), nanoseconds(minutes(90)), nanoseconds(seconds(45)),
                 nanoseconds(milliseconds(250))}) {
    auto back = parse_duration(format_duration(d), nullptr);
    ASSERT_TRUE(back) << format_duration(d);
    EXPECT_EQ(back->count(), d.count()) << format_duration(d);
  }
  EXPECT_EQ(format_duration(std::chrono::hours(24)), "24h");
  EXPECT_EQ(format_duration(std::chrono::minutes(90)), "1h30m");
}

TEST(Rfc3339, parses_and_formats) {
  auto t = parse_rfc3339("2026-11-30T17:30:11Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(format_rfc3339(*t), "2026-11-30T17:30:11Z");
  auto offset = parse_rfc3339("2026-11-30T18:30:11+01:00");
  ASSERT_TRUE(offset);
  EXPECT_EQ(*offset, *t);
  auto frac = parse_rfc3339("2026-11-30T17:30:11.250Z");
  ASSERT_TRUE(frac);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(*frac - *t).count(), 250);
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*parse_rfc3339("1970-01-01T00:00:00Z")), 0);
  for (const char* bad : {"2026-11-30", "2026-13-01T00:00:00Z", "2026-11-30T17:30:11", "yesterday",
                          "2026-11-30T17:30:11Zjunk"}) {
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
  }
}

TEST(Format, counts_and_bytes) {
  EXPECT_EQ(format_count(340e6), "340M");
  EXPECT_EQ(format_count(7e9), "7G");
  EXPECT_EQ(format_bytes(25.0 * 1048576), "25 MiB");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_byte_quantity(64.0 * 1048576), "64Mi");
  EXPECT_EQ(format_byte_quantity(8192), "8Ki");
  EXPECT_EQ(format_byte_quantity(1000), "1000");
  EXPECT_EQ(format_byte_quantity(0), "0");
  for (double b : {1.0, 1536.0, 8192.0, 3.0 * 1048576, 1e9}) {
    EXPECT_DOUBLE_EQ(*parse_quantity(format_byte_quantity(b), nullptr), b);
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
