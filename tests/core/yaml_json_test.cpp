#include "core/yaml_json.h"

#include <gtest/gtest.h>

namespace commgate {
namespace COMMGATE_TEST_UNIT {

TEST(YamlJson, resolves_plain_scalars_like_kubernetes) {
  auto docs = parse_manifests(R"(
int: 4
neg: -3
float: 0.30
exp: 1e3
yes_bool: true
null_value: ~
quantity: 340M
quoted_int: "4"
single_quoted: 'true'
version: 1.13.1
hex: 0x10
)");
  ASSERT_EQ(docs.size(), 1u);
  const auto& d = docs[0];
  EXPECT_EQ(d["int"], 4);
  EXPECT_TRUE(d["int"].is_number_integer());
  EXPECT_EQ(d["neg"], -3);
  EXPECT_DOUBLE_EQ(d["float"].get<double>(), 0.30);
  EXPECT_DOUBLE_EQ(d["exp"].get<double>(), 1000);
  EXPECT_EQ(d["yes_bool"], true);
  EXPECT_TRUE(d["null_value"].is_null());
  EXPECT_EQ(d["quantity"], "340M");
  EXPECT_EQ(d["quoted_int"], "4");
  EXPECT_EQ(d["single_quoted"], "true");
  EXPECT_EQ(d["version"], "1.13.1");
  EXPECT_EQ(d["hex"], 16);
}

TEST(YamlJson, reads_every_document_and_skips_empty_ones) {
  auto docs = parse_manifests("---\na: 1\n---\n---\nb: [1, 2]\n");
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[1]["b"][1], 2);
}

TEST(YamlJson, json_lists_expand) {
  auto docs = parse_manifests(R"({"kind":"List","items":[{"a":1},{"b":2}]})");
  EXPECT_EQ(docs.size(), 2u);
}

TEST(YamlJson, syntax_errors_name_the_line) {
  try {
    parse_manifests("a: 1\nb: [1, 2\nc: 3\n");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("line"), std::string::npos) << e.what();
  }
  try {
    parse_manifests("{\"a\": }");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid JSON"), std::string::npos) << e.what();
  }
}

TEST(YamlJson, deeply_nested_input_does_not_crash) {
  EXPECT_ANY_THROW(parse_manifests(std::string(5000, '[')));          // JSON path
  EXPECT_ANY_THROW(parse_manifests("a: " + std::string(5000, '[')));  // YAML path
}

}  // namespace
}  // namespace commgate
