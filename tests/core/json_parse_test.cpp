// parse_json must read every document exactly as nlohmann::json::parse does (the parsers
// downstream depend on its types and error messages); only faster.
#include "core/json_parse.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

struct SameAsNlohmann {
  const char* name;
  const char* text;
};

class JsonParseAgrees : public ::testing::TestWithParam<SameAsNlohmann> {};

TEST_P(JsonParseAgrees, with_nlohmann_on_value_and_type) {
  const json expected = json::parse(GetParam().text);
  const json got = parse_json(GetParam().text);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(got.dump(), expected.dump());  // types too: 1 vs 1.0, signed vs unsigned
}

INSTANTIATE_TEST_SUITE_P(
    Documents, JsonParseAgrees,
    ::testing::Values(
        SameAsNlohmann{"scalars", R"([1, -1, 1.5, -0.0, 1e3, true, false, null, "s"])"},
        SameAsNlohmann{"integer_limits",
                       R"([9223372036854775807, -9223372036854775808, 18446744073709551615])"},
        SameAsNlohmann{"integer_beyond_64_bits_becomes_a_double", "[18446744073709551616]"},
        SameAsNlohmann{"duplicate_keys_keep_the_last", R"({"a": 1, "a": 2})"},
        SameAsNlohmann{"escapes_and_unicode", R"({"k\"ey": "tab\tnl\n\u00e9\ud83d\ude00"})"},
        SameAsNlohmann{"nested", R"({"a": [{"b": {"c": [[], {}]}}], "d": {}})"},
        SameAsNlohmann{"whitespace_around", " \n\t{\"a\" : [ 1 , 2 ] }\r\n "},
        SameAsNlohmann{"top_level_scalar", "42"}),
    [](const ::testing::TestParamInfo<SameAsNlohmann>& p) { return std::string(p.param.name); });

TEST(JsonParse, agrees_with_nlohmann_on_every_json_file_in_the_repo_testdata) {
  int files = 0;
  for (const char* dir : {"tests/webhook/testdata", "examples/measurements"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(std::filesystem::path(COMMGATE_SOURCE_DIR) / dir)) {
      if (entry.path().extension() != ".json") continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      EXPECT_EQ(parse_json(text.str()).dump(), json::parse(text.str()).dump()) << entry.path();
      ++files;
    }
  }
  EXPECT_GE(files, 5);
}

TEST(JsonParse, malformed_text_throws_nlohmanns_error_with_the_byte_offset) {
  for (const char* text : {"{\"apiVersion\": ", "[1, 2", "{\"a\" 1}", "", "nul", "[1e999]"}) {
    try {
      parse_json(text);
      ADD_FAILURE() << "parsed: " << text;
    } catch (const json::parse_error& e) {
      std::string expected;
      try {
        const json ignored = json::parse(text);
        ADD_FAILURE() << "nlohmann parsed: " << ignored.dump();
      } catch (const json::exception& n) {
        expected = n.what();
      }
      EXPECT_EQ(std::string(e.what()), expected) << text;
    } catch (const json::out_of_range& e) {
      // nlohmann reports 1e999 as out_of_range ("number overflow"); parse_json passes it on.
      EXPECT_NE(std::string(e.what()).find("number overflow"), std::string::npos) << text;
    }
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
