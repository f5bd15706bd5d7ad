// sim/cel_rules.h: the CEL subset of CRD rules, table-driven, then every rule of the
// shipped CRDs read by it (none may fall outside the subset).
#include "sim/cel_rules.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/yaml_json.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

struct RuleCase {
  const char* rule;
  json self;
  // "true", "false", or the start of the error.
  const char* want;
};

std::string outcome(const CelResult& r) {
  if (r.passed) return *r.passed ? "true" : "false";
  return r.error;
}

class CelRuleTable : public ::testing::TestWithParam<RuleCase> {};

TEST_P(CelRuleTable, evaluates_as_cel_does) {
  const auto& c = GetParam();
  const std::string got = outcome(evaluate_cel_rule(c.rule, c.self));
  EXPECT_EQ(got.substr(0, std::string(c.want).size()), c.want) << c.rule << " on " << c.self;
}

const json kNodes = {{"numNodes", 4}, {"minNodes", 2}};

const RuleCase kRuleCases[] = {
    // The TrainingJob's spec rule.
    {"!has(self.minNodes) || self.minNodes <= self.numNodes", kNodes, "true"},
    {"!has(self.minNodes) || self.minNodes <= self.numNodes",
     {{"numNodes", 1}, {"minNodes", 2}},
     "false"},
    {"!has(self.minNodes) || self.minNodes <= self.numNodes", {{"numNodes", 1}}, "true"},
    // An absent field is an error unless `||` / `&&` decide without it (commutatively).
    {"self.minNodes <= self.numNodes", {{"numNodes", 1}}, "no such key: minNodes"},
    {"self.minNodes <= 3 || true", {{"numNodes", 1}}, "true"},
    {"true || self.minNodes <= 3", {{"numNodes", 1}}, "true"},
    {"self.minNodes <= 3 && false", {{"numNodes", 1}}, "false"},
    {"self.minNodes <= 3 && true", {{"numNodes", 1}}, "no such key: minNodes"},
    // Ternary, `in`, list literals, size() in both forms, quotes of both kinds.
    {"self.operator in ['Exists', 'DoesNotExist'] ? !has(self.values) || size(self.values) == 0 "
     ": has(self.values) && size(self.values) > 0",
     {{"operator", "In"}, {"values", json::array()}},
     "false"},
    {"self.operator in [\"Exists\", 'DoesNotExist'] ? !has(self.values) || self.values.size() == 0 "
     ": has(self.values) && self.values.size() > 0",
     {{"operator", "Exists"}},
     "true"},
    {"has(self.a.b)", {{"a", {{"b", 1}}}}, "true"},
    {"has(self.a.c)", {{"a", {{"b", 1}}}}, "false"},
    {"has(self.x.c)", {{"a", 1}}, "no such key: x"},
    {"self['key-with-dash'] == 'v'", {{"key-with-dash", "v"}}, "true"},
    {"self.items[1] == 2", {{"items", {1, 2}}}, "true"},
    {"self.items[2] == 2", {{"items", {1, 2}}}, "index out of bounds: 2"},
    // Numbers: ints exactly, across int and double, arithmetic with overflow and zero.
    {"self.a + 1 == 5 && self.a * 2 == 8 && self.a / 3 == 1 && self.a % 3 == 1 && -self.a < 0",
     {{"a", 4}},
     "true"},
    {"self.f > 1 && self.f < 2 && self.f == 1.5", {{"f", 1.5}}, "true"},
    {"self.a / 0 == 1", {{"a", 4}}, "division by zero"},
    {"self.a * 4 > 0", {{"a", 4611686018427387904LL}}, "integer overflow"},
    {"size(self.s) == 3 && self.s.startsWith('h') && self.s.endsWith('\xc3\xa9') && "
     "self.s.contains('e')",
     {{"s", "he\xc3\xa9"}},
     "true"},
    {"self.s + 'x' == 'abx'", {{"s", "ab"}}, "true"},
    {"'a' in self.m && !('b' in self.m)", {{"m", {{"a", 1}}}}, "true"},
    // Type errors are errors, not false.
    {"self.s < 3", {{"s", "x"}}, "no such overload"},
    {"!self.s", {{"s", "x"}}, "no such overload"},
    {"self.s", {{"s", "x"}}, "the rule yields string"},
    // Outside the subset: said, never skipped.
    {"self.items.all(i, i > 0)",
     {{"items", {1}}},
     "the simulated cluster cannot evaluate this rule (the method all()"},
    {"self.x == oldSelf.x",
     {{"x", 1}},
     "the simulated cluster cannot evaluate this rule (\"oldSelf\" (transition rules)"},
    {"self.x == ",
     {{"x", 1}},
     "the simulated cluster cannot evaluate this rule (the rule ends early"},
    {"self.x == 'open",
     {{"x", 1}},
     "the simulated cluster cannot evaluate this rule (an unterminated string"},
    {"self.x ~ 1",
     {{"x", 1}},
     "the simulated cluster cannot evaluate this rule (the character '~'"},
};

INSTANTIATE_TEST_SUITE_P(Rules, CelRuleTable, ::testing::ValuesIn(kRuleCases));

// What a CRD write checks: syntax errors refuse the CRD; valid CEL outside the subset is
// accepted and marked unsupported when evaluated (not checked).
TEST(CelRules, only_syntax_errors_fail_to_compile_and_unmodelled_cel_is_marked) {
  EXPECT_EQ(cel_rule_compile_error("self.x == "), "Syntax error: the rule ends early");
  EXPECT_EQ(cel_rule_compile_error("self.x == 'open"), "Syntax error: an unterminated string");
  EXPECT_EQ(cel_rule_compile_error("!has(self.minNodes) || self.minNodes <= self.numNodes"), "");
  EXPECT_EQ(cel_rule_compile_error("self.items.all(i, i > 0)"), "");
  EXPECT_EQ(cel_rule_compile_error("self.x == oldSelf.x"), "");
  EXPECT_TRUE(evaluate_cel_rule("self.items.all(i, i > 0)", {{"items", {1}}}).unsupported);
  EXPECT_TRUE(evaluate_cel_rule("self.x == oldSelf.x", {{"x", 1}}).unsupported);
  EXPECT_FALSE(evaluate_cel_rule("self.x == ", {{"x", 1}}).unsupported);
  EXPECT_FALSE(evaluate_cel_rule("self.y > 1", {{"x", 1}}).unsupported);
}

TEST(CelRules, nesting_past_the_guard_is_refused_not_a_stack_overflow) {
  const std::string deep = std::string(5000, '(') + "true" + std::string(5000, ')');
  EXPECT_EQ(
      outcome(evaluate_cel_rule(deep, json::object())).rfind("the simulated cluster cannot", 0),
      0u);
}

// Every rule in the shipped CRDs is inside the subset: on each CRD's own example objects
// no rule fails to evaluate for want of syntax.
void collect_rules(const json& schema, std::vector<std::string>& rules) {
  if (schema.is_object()) {
    if (schema.contains("x-kubernetes-validations"))
      for (const auto& r : schema["x-kubernetes-validations"]) rules.push_back(r["rule"]);
    for (const auto& [k, v] : schema.items()) collect_rules(v, rules);
  } else if (schema.is_array()) {
    for (const auto& v : schema) collect_rules(v, rules);
  }
}

TEST(CelRules, every_rule_of_the_shipped_crds_is_inside_the_subset) {
  int seen = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(COMMGATE_SOURCE_DIR) + "/crds")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    std::vector<std::string> rules;
    collect_rules(yaml_documents_to_json(text.str()).at(0), rules);
    for (const auto& rule : rules) {
      ++seen;
      // On an empty object every field access is "no such key", never a syntax failure.
      const CelResult r = evaluate_cel_rule(rule, json::object());
      EXPECT_EQ(r.error.find("cannot evaluate"), std::string::npos)
          << entry.path() << ": " << rule << ": " << r.error;
    }
  }
  EXPECT_GE(seen, 6);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
