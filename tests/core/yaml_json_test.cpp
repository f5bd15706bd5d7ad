#include "core/yaml_json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/object_reader.h"
#include "tests/support/sanitizers.h"

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

// YAML 1.2's core schema: .inf, -.inf and .nan in their three spellings are numbers
// (kept non-finite for the parsers to name), quoted ones strings.
TEST(YamlJson, non_finite_plain_scalars_are_numbers) {
  auto docs = parse_manifests(
      "a: .inf\nb: +.Inf\nc: .INF\nd: -.inf\ne: -.INF\nf: .nan\ng: .NaN\nh: .NAN\n"
      "i: '.inf'\nj: .infinity\n");
  ASSERT_EQ(docs.size(), 1u);
  const auto& d = docs[0];
  for (const char* k : {"a", "b", "c"}) EXPECT_EQ(d[k].get<double>(), HUGE_VAL) << k;
  for (const char* k : {"d", "e"}) EXPECT_EQ(d[k].get<double>(), -HUGE_VAL) << k;
  for (const char* k : {"f", "g", "h"}) {
    ASSERT_TRUE(d[k].is_number_float()) << k;
    EXPECT_TRUE(std::isnan(d[k].get<double>())) << k;
  }
  EXPECT_EQ(d["i"], ".inf");
  EXPECT_EQ(d["j"], ".infinity");
  EXPECT_EQ(describe_json(d["a"]), ".inf");
  EXPECT_EQ(describe_json(d["d"]), "-.inf");
  EXPECT_EQ(describe_json(d["f"]), ".nan");
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

// A number beyond a double's range: in YAML it reads as an infinity (which the parsers
// reject by name) or 0, in JSON "invalid JSON"; neither reports a bare "stod" (the attacker
// trial of 2026-12-07).
TEST(YamlJson, numbers_beyond_a_double_read_as_infinity_or_say_invalid_json) {
  auto docs = parse_manifests("a: 1e400\nb: -1e400\nc: 1e-400\n");
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0]["a"].get<double>(), HUGE_VAL);
  EXPECT_EQ(docs[0]["b"].get<double>(), -HUGE_VAL);
  EXPECT_EQ(docs[0]["c"].get<double>(), 0.0);
  try {
    parse_manifests("{\"a\": 1e400}");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid JSON"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1e400"), std::string::npos) << e.what();
  }
}

TEST(YamlJson, deeply_nested_input_does_not_crash) {
  EXPECT_ANY_THROW(parse_manifests(std::string(5000, '[')));          // JSON path
  EXPECT_ANY_THROW(parse_manifests("a: " + std::string(5000, '[')));  // YAML path
}

// Nine levels of nine aliases: 9^9 (387 million) values from about 700 bytes, the file
// of the user trial that grew `commgate evaluate` by 300 MB/s.
std::string alias_bomb() {
  std::string text =
      "apiVersion: v1\nkind: ConfigMap\nlevel0: &a0 [lol, lol, lol, lol, lol, lol, "
      "lol, lol, lol]\n";
  for (int level = 1; level <= 8; ++level) {
    const std::string prev = "*a" + std::to_string(level - 1);
    text += "level" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 9; ++i) text += (i ? ", " : "") + prev;
    text += "]\n";
  }
  return text;
}

// One 60 KiB string repeated by 2,000 aliases: few values, 120 MB of text.
std::string aliased_long_strings() {
  std::string text = "kind: ConfigMap\nbig: &s " + std::string(60 * 1024, 'x') + "\nmany: [";
  for (int i = 0; i < 2000; ++i) text += (i ? ", " : "") + std::string("*s");
  return text + "]\n";
}

std::string nested_flow_sequences(int depth) {
  return "kind: ConfigMap\ndeep: " + std::string(depth, '[') + std::string(depth, ']') + "\n";
}

std::string nested_block_sequences(int depth) {
  std::string text = "kind: ConfigMap\ndeep:\n";
  for (int i = 0; i < depth; ++i) text += std::string(2 * i, ' ') + "-\n";
  return text;
}

std::string nested_json_arrays(int depth) {
  return R"({"kind": "ConfigMap", "deep": )" + std::string(depth, '[') + std::string(depth, ']') +
         "}";
}

std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::filesystem::path(COMMGATE_SOURCE_DIR) / relative);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every CRD of the chart, one stream, 20 times over: about 1.2 MB and 60 documents with
// the nesting of real OpenAPI schemas (Kubernetes stores no object over 1.5 MB).
std::string big_manifest_stream() {
  std::string crds;
  for (const char* crd : {"commpolicies.commgate.io.yaml", "commprofiles.commgate.io.yaml",
                          "trainingjobs.commgate.io.yaml"}) {
    crds += "---\n" + read_source_file(std::string("charts/commgate/crds/") + crd);
  }
  std::string out;
  for (int i = 0; i < 20; ++i) out += crds;
  return out;
}

// Anchors and aliases as people use them: shared defaults merged or repeated a few times.
constexpr const char* kOrdinaryAliases = R"(kind: ConfigMap
defaults: &defaults {cpu: 1, memory: 1Gi}
a: *defaults
b: *defaults
list: &l [1, 2, 3]
again: [*l, *l]
)";

// The text is made when the case runs, not when it is registered: gtest builds every
// case's parameters in every process of this binary, and ctest runs each case in its own
// process, so megabytes of text made at registration cost each of core_tests' 450
// processes a third of a second under the sanitizers (perf, 2026-12-05).
struct LimitCase {
  std::string name;
  std::function<std::string()> text;
  std::string want_error;  // a part of the message; "" = parses
};

void PrintTo(const LimitCase& c, std::ostream* os) {
  *os << c.name;
}

class YamlLimitsTest : public ::testing::TestWithParam<LimitCase> {};

TEST_P(YamlLimitsTest, bounds_what_a_manifest_may_expand_to) {
  const LimitCase& c = GetParam();
  const std::string text = c.text();
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  size_t documents = 0;
  try {
    documents = parse_manifests(text).size();
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (c.want_error.empty()) {
    EXPECT_EQ(error, "");
    EXPECT_GT(documents, 0u);
  } else {
    EXPECT_NE(error.find(c.want_error), std::string::npos)
        << "want an error with \"" << c.want_error << "\", got \"" << error << "\"";
  }
  // An unbounded expansion would run for minutes and exhaust memory. Under the sanitizers
  // (clang's ASan at -O0: 12 s for the alias bomb) the bound is wider, not gone.
  EXPECT_LT(seconds, COMMGATE_UNDER_SANITIZER ? 60.0 : 10.0)
      << "a bounded parse should not take long";
}

INSTANTIATE_TEST_SUITE_P(
    YamlJson, YamlLimitsTest,
    ::testing::Values(
        LimitCase{"alias_bomb_is_refused_as_one", [] { return alias_bomb(); },
                  "the YAML expands to more than 1000"},
        LimitCase{"aliased_long_strings_are_refused_by_their_bytes",
                  [] { return aliased_long_strings(); }, "bytes of strings"},
        LimitCase{"flow_sequences_100k_deep_are_refused",
                  [] { return nested_flow_sequences(100'000); }, "nested deeper than 256 levels"},
        LimitCase{"flow_sequences_300_deep_are_refused_by_commgate_not_yaml_cpp",
                  [] { return nested_flow_sequences(300); },
                  "line 2: nested deeper than 256 levels"},
        LimitCase{"block_sequences_1000_deep_are_refused",
                  [] { return nested_block_sequences(1000); }, "nested deeper than 256 levels"},
        LimitCase{"json_arrays_100k_deep_are_refused", [] { return nested_json_arrays(100'000); },
                  "invalid JSON: nested deeper than 256 levels"},
        LimitCase{"nesting_of_200_levels_passes", [] { return nested_flow_sequences(200); }, ""},
        LimitCase{"json_nesting_of_200_levels_passes", [] { return nested_json_arrays(200); }, ""},
        LimitCase{"ordinary_anchors_and_aliases_pass", [] { return std::string(kOrdinaryAliases); },
                  ""},
        LimitCase{"a_megabyte_of_real_crds_passes", [] { return big_manifest_stream(); }, ""}),
    [](const ::testing::TestParamInfo<LimitCase>& p) { return p.param.name; });

TEST(YamlJson, limits_scale_with_the_text_so_aliases_are_what_is_bounded) {
  const std::string text(1000, ' ');
  const YamlLimits l = YamlLimits::for_text(text);
  EXPECT_EQ(l.max_nodes, YamlLimits::kAliasNodeAllowance + 1000);
  EXPECT_EQ(l.max_scalar_bytes, YamlLimits::kAliasByteAllowance + 1000);

  YamlLimits tight;
  tight.max_nodes = 5;
  EXPECT_NO_THROW(yaml_documents_to_json("[1, 2, 3, 4]", tight));  // 5 values
  EXPECT_THROW(yaml_documents_to_json("[1, 2, 3, 4, 5]", tight), std::runtime_error);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
