// cli/manifest_yaml.h: what `commgate profile` prints must read back as the same JSON,
// through commgate's reader (core/yaml_json.h) as through kubectl's.
#include "cli/manifest_yaml.h"

#include <gtest/gtest.h>

#include "core/yaml_json.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

TEST(ManifestYaml, strings_that_yaml_would_read_as_something_else_are_quoted) {
  const std::vector<std::string> tricky = {"",
                                           "yes",
                                           "No",
                                           "on",
                                           "true",
                                           "null",
                                           "~",
                                           "1.0",
                                           "42",
                                           "0x1F",
                                           "1e9",
                                           ".inf",
                                           "-",
                                           "- item",
                                           "a: b",
                                           "#note",
                                           "key #x",
                                           "2026-11-30T18:43:13Z",
                                           "@at",
                                           "*star",
                                           "&anchor",
                                           "!tag",
                                           "{flow}",
                                           "[list]",
                                           "'quote",
                                           "\"dq",
                                           "line\nbreak",
                                           "tab\tx",
                                           " lead",
                                           "trail ",
                                           "%percent",
                                           "|",
                                           ">",
                                           "é unicode",
                                           "a,b",
                                           "?q",
                                           "pool-all",
                                           "commgate.io/pool"};
  for (const auto& s : tricky) {
    const json doc = {{"value", s}, {"list", json::array({s})}, {s.empty() ? "k" : s, 1}};
    const std::string yaml = to_yaml(doc);
    std::vector<json> back;
    ASSERT_NO_THROW(back = parse_manifests(yaml)) << "\"" << s << "\"\n" << yaml;
    ASSERT_EQ(back.size(), 1u) << yaml;
    EXPECT_EQ(back[0], doc) << "\"" << s << "\"\n" << yaml;
  }
}

TEST(ManifestYaml, nesting_numbers_and_empty_collections_round_trip) {
  const json doc = {
      {"apiVersion", "commgate.io/v1alpha1"},
      {"metadata", {{"name", "pool-all"}, {"labels", json::object()}}},
      {"status",
       {{"link", {{"busbwGBps", 0.1209073747793292}, {"nodesProbed", 2}, {"poor", false}}},
        {"computeSteps",
         json::array({{{"parameters", 349999602.0}, {"ddpStep", {{"buckets", 24}}}},
                      {{"parameters", 1e-7}, {"list", json::array({1, json::array({2, 3})})}}})},
        {"empty", json::array()},
        {"nothing", nullptr},
        {"big", 1e300},
        {"negative", -3.5e8}}}};
  const std::string yaml = to_yaml(doc);
  const auto back = parse_manifests(yaml);
  ASSERT_EQ(back.size(), 1u) << yaml;
  EXPECT_EQ(back[0], doc) << yaml;
  EXPECT_NE(yaml.find("apiVersion: commgate.io/v1alpha1\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("    busbwGBps: 0.1209073747793292\n"), std::string::npos) << yaml;
}

}  // namespace
}  // namespace commgate
