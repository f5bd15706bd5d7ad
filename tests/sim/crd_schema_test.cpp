// sim/crd_schema.h: defaulting, pruning and validation against CRD schemas, table-driven,
// with upstream's wording; then the shipped TrainingJob schema on the repository's examples.
#include "sim/crd_schema.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/yaml_json.h"

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json read_yaml(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return yaml_documents_to_json(text.str()).at(0);
}

json trainingjob_schema() {
  const json crd =
      read_yaml(std::string(COMMGATE_SOURCE_DIR) + "/crds/trainingjobs.commgate.io.yaml");
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
}

std::vector<std::string> texts(const std::vector<FieldError>& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.reason + " " + e.field + ": " + e.message);
  return out;
}

struct ValidationCase {
  const char* name;
  json schema;
  json value;
  std::vector<std::string> want;  // "reason field: message"
};

class ValidateTable : public ::testing::TestWithParam<ValidationCase> {};

TEST_P(ValidateTable, reports_upstreams_field_errors) {
  const auto& c = GetParam();
  EXPECT_EQ(texts(validate(c.schema, c.value)), c.want);
}

json in_spec(const json& property, const json& extra = json::object()) {
  json spec = {{"type", "object"}, {"properties", {{"x", property}}}};
  spec.update(extra);
  return json{{"type", "object"}, {"properties", {{"spec", spec}}}};
}

const ValidationCase kValidationCases[] = {
    {"minimum",
     in_spec({{"type", "integer"}, {"minimum", 1}}),
     {{"spec", {{"x", 0}}}},
     {"FieldValueInvalid spec.x: Invalid value: 0: spec.x in body should be greater than or equal "
      "to 1"}},
    {"exclusive_minimum",
     in_spec({{"type", "number"}, {"minimum", 0}, {"exclusiveMinimum", true}}),
     {{"spec", {{"x", 0}}}},
     {"FieldValueInvalid spec.x: Invalid value: 0: spec.x in body should be greater than 0"}},
    {"maximum_of_a_float",
     in_spec({{"type", "number"}, {"maximum", 1}}),
     {{"spec", {{"x", 1.5}}}},
     {"FieldValueInvalid spec.x: Invalid value: 1.5: spec.x in body should be less than or equal "
      "to 1"}},
    {"exclusive_maximum",
     in_spec({{"type", "integer"}, {"maximum", 10}, {"exclusiveMaximum", true}}),
     {{"spec", {{"x", 10}}}},
     {"FieldValueInvalid spec.x: Invalid value: 10: spec.x in body should be less than 10"}},
    {"wrong_type",
     in_spec({{"type", "integer"}, {"minimum", 1}}),
     {{"spec", {{"x", "three"}}}},
     {"FieldValueTypeInvalid spec.x: Invalid value: \"string\": spec.x in body must be of type "
      "integer: \"string\""}},
    {"float_is_not_an_integer",
     in_spec({{"type", "integer"}}),
     {{"spec", {{"x", 2.5}}}},
     {"FieldValueTypeInvalid spec.x: Invalid value: \"number\": spec.x in body must be of type "
      "integer: \"number\""}},
    {"integer_is_a_number", in_spec({{"type", "number"}}), {{"spec", {{"x", 2}}}}, {}},
    {"null_not_nullable",
     in_spec({{"type", "string"}}),
     {{"spec", {{"x", nullptr}}}},
     {"FieldValueTypeInvalid spec.x: Invalid value: \"null\": spec.x in body must be of type "
      "string: \"null\""}},
    {"null_nullable",
     in_spec({{"type", "string"}, {"nullable", true}}),
     {{"spec", {{"x", nullptr}}}},
     {}},
    {"enum",
     in_spec({{"type", "string"}, {"enum", {"fp32", "fp16", ""}}}),
     {{"spec", {{"x", "fp8"}}}},
     {"FieldValueNotSupported spec.x: Unsupported value: \"fp8\": supported values: \"fp32\", "
      "\"fp16\", \"\""}},
    {"min_length",
     in_spec({{"type", "string"}, {"minLength", 1}}),
     {{"spec", {{"x", ""}}}},
     {"FieldValueInvalid spec.x: Invalid value: \"\": spec.x in body should be at least 1 chars "
      "long"}},
    {"max_length_counts_characters",
     in_spec({{"type", "string"}, {"maxLength", 2}}),
     {{"spec", {{"x", "\xc3\xa9\xc3\xa9"}}}},
     {}},
    {"max_length",
     in_spec({{"type", "string"}, {"maxLength", 2}}),
     {{"spec", {{"x", "abc"}}}},
     {"FieldValueTooLong spec.x: Too long: may not be more than 2 bytes"}},
    {"pattern",
     in_spec({{"type", "string"}, {"pattern", "^[A-Z][a-z]*$"}}),
     {{"spec", {{"x", "lower"}}}},
     {"FieldValueInvalid spec.x: Invalid value: \"lower\": spec.x in body should match "
      "'^[A-Z][a-z]*$'"}},
    {"unanchored_pattern_searches",
     in_spec({{"type", "string"}, {"pattern", "b+"}}),
     {{"spec", {{"x", "abba"}}}},
     {}},
    {"min_items_and_item_errors",
     in_spec(
         {{"type", "array"}, {"minItems", 3}, {"items", {{"type", "integer"}, {"minimum", 1}}}}),
     {{"spec", {{"x", {1, 0}}}}},
     {"FieldValueInvalid spec.x: Invalid value: [1,0]: spec.x in body should have at least 3 items",
      "FieldValueInvalid spec.x[1]: Invalid value: 0: spec.x[1] in body should be greater than or "
      "equal to 1"}},
    {"max_items",
     in_spec({{"type", "array"}, {"maxItems", 1}}),
     {{"spec", {{"x", {1, 2, 3}}}}},
     {"FieldValueTooMany spec.x: Too many: 3: must have at most 1 items"}},
    {"properties_bounds",
     in_spec({{"type", "object"},
              {"minProperties", 2},
              {"additionalProperties", {{"type", "string"}}}}),
     {{"spec", {{"x", {{"a", 1}}}}}},
     {"FieldValueInvalid spec.x: Invalid value: {\"a\":1}: spec.x in body should have at least 2 "
      "properties",
      "FieldValueTypeInvalid spec.x.a: Invalid value: \"integer\": spec.x.a in body must be of "
      "type string: \"integer\""}},
    {"required_after_properties",
     in_spec({{"type", "integer"}, {"minimum", 1}}, {{"required", {"x", "model"}}}),
     {{"spec", {{"x", 0}}}},
     {"FieldValueInvalid spec.x: Invalid value: 0: spec.x in body should be greater than or equal "
      "to 1",
      "FieldValueRequired spec.model: Required value"}},
    {"int_or_string_takes_both",
     in_spec({{"x-kubernetes-int-or-string", true},
              {"anyOf", {{{"type", "integer"}}, {{"type", "string"}}}},
              {"minimum", 1},
              {"pattern", "^[0-9]+[MG]?$"}}),
     {{"spec", {{"x", "340M"}}}},
     {}},
    {"int_or_string_checks_numbers_as_numbers",
     in_spec({{"x-kubernetes-int-or-string", true},
              {"anyOf", {{{"type", "integer"}}, {{"type", "string"}}}},
              {"minimum", 1},
              {"pattern", "^[0-9]+[MG]?$"}}),
     {{"spec", {{"x", 0}}}},
     {"FieldValueInvalid spec.x: Invalid value: 0: spec.x in body should be greater than or equal "
      "to 1"}},
    {"int_or_string_refuses_others",
     in_spec({{"x-kubernetes-int-or-string", true},
              {"anyOf", {{{"type", "integer"}}, {{"type", "string"}}}}}),
     {{"spec", {{"x", true}}}},
     {"FieldValueTypeInvalid spec.x: Invalid value: \"boolean\": spec.x in body must be of type "
      "integer-or-string: \"boolean\""}},
    {"any_of",
     in_spec({{"anyOf", {{{"type", "integer"}}, {{"type", "string"}, {"maxLength", 1}}}}}),
     {{"spec", {{"x", "ab"}}}},
     {"FieldValueInvalid spec.x: Invalid value: \"ab\": spec.x in body must validate at least one "
      "schema (anyOf)"}},
    {"metadata_at_the_root_is_not_checked",
     json{{"type", "object"},
          {"properties", {{"metadata", {{"type", "object"}, {"maxProperties", 0}}}}}},
     {{"metadata", {{"name", "a"}}}},
     {}},
    {"cel_rules_are_evaluated",
     in_spec({{"type", "integer"}},
             {{"x-kubernetes-validations", {{{"rule", "self.x > 5"}, {"message", "m"}}}}}),
     {{"spec", {{"x", 1}}}},
     {"FieldValueInvalid spec: Invalid value: \"object\": m"}},
    {"cel_rules_wait_for_the_types",
     in_spec({{"type", "integer"}},
             {{"x-kubernetes-validations", {{{"rule", "self.x > 5"}, {"message", "m"}}}}}),
     {{"spec", {{"x", "one"}}}},
     {"FieldValueTypeInvalid spec.x: Invalid value: \"string\": spec.x in body must be of type "
      "integer: \"string\""}},
};

INSTANTIATE_TEST_SUITE_P(Cases, ValidateTable, ::testing::ValuesIn(kValidationCases),
                         [](const auto& p) { return std::string(p.param.name); });

struct PruneCase {
  const char* name;
  json schema;
  json object;
  json want;
  std::vector<std::string> dropped;
};

class PruneTable : public ::testing::TestWithParam<PruneCase> {};

TEST_P(PruneTable, defaults_then_prunes) {
  const auto& c = GetParam();
  json object = c.object;
  EXPECT_EQ(unknown_fields(c.schema, object), c.dropped);
  EXPECT_EQ(prune_and_default(c.schema, object), c.dropped);
  EXPECT_EQ(object, c.want) << object.dump();
}

const json kSpecSchema = {
    {"type", "object"},
    {"properties",
     {{"spec",
       {{"type", "object"},
        {"properties",
         {{"n", {{"type", "integer"}, {"default", 1}}},
          {"list",
           {{"type", "array"},
            {"items",
             {{"type", "object"},
              {"properties", {{"k", {{"type", "string"}, {"default", "d"}}}}}}}}},
          {"free", {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}}},
          {"map", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
          {"opt",
           {{"type", "object"},
            {"nullable", true},
            {"default", {{"a", 1}}},
            {"properties", {{"a", {{"type", "integer"}}}}}}},
          {"inner",
           {{"type", "object"},
            {"default", json::object()},
            {"properties", {{"z", {{"type", "integer"}, {"default", 3}}}}}}},
          {"embedded",
           {{"type", "object"},
            {"x-kubernetes-embedded-resource", true},
            {"properties", {{"spec", {{"type", "object"}}}}}}}}}}}}}};

const PruneCase kPruneCases[] = {
    {"unknown_fields_dropped_with_paths",
     kSpecSchema,
     {{"apiVersion", "g/v1"},
      {"kind", "K"},
      {"metadata", {{"name", "a"}, {"labels", {{"x", "y"}}}}},
      {"extra", 1},
      {"spec",
       {{"n", 2}, {"foo", 1}, {"list", {{{"k", "a"}, {"bar", 2}}}}, {"inner", {{"z", 1}}}}}},
     {{"apiVersion", "g/v1"},
      {"kind", "K"},
      {"metadata", {{"name", "a"}, {"labels", {{"x", "y"}}}}},
      {"spec", {{"n", 2}, {"list", {{{"k", "a"}}}}, {"opt", {{"a", 1}}}, {"inner", {{"z", 1}}}}}},
     {"extra", "spec.foo", "spec.list[0].bar"}},
    {"defaults_fill_absent_fields_and_recurse",
     kSpecSchema,
     {{"spec", {{"list", {json::object()}}}}},
     {{"spec", {{"n", 1}, {"list", {{{"k", "d"}}}}, {"opt", {{"a", 1}}}, {"inner", {{"z", 3}}}}}},
     {}},
    {"null_defaulted_unless_nullable",
     kSpecSchema,
     {{"spec", {{"n", nullptr}, {"opt", nullptr}, {"inner", {{"z", 0}}}}}},
     {{"spec", {{"n", 1}, {"opt", nullptr}, {"inner", {{"z", 0}}}}}},
     {}},
    {"preserve_unknown_fields_and_maps_kept",
     kSpecSchema,
     {{"spec",
       {{"n", 1},
        {"opt", {{"a", 2}}},
        {"inner", {{"z", 3}}},
        {"free", {{"anything", {{"deep", true}}}}},
        {"map", {{"a", "b"}, {"c", "d"}}}}}},
     {{"spec",
       {{"n", 1},
        {"opt", {{"a", 2}}},
        {"inner", {{"z", 3}}},
        {"free", {{"anything", {{"deep", true}}}}},
        {"map", {{"a", "b"}, {"c", "d"}}}}}},
     {}},
    {"embedded_resource_keeps_type_meta",
     kSpecSchema,
     {{"spec",
       {{"n", 1},
        {"opt", {{"a", 2}}},
        {"inner", {{"z", 3}}},
        {"embedded",
         {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "p"}}},
          {"spec", json::object()},
          {"status", json::object()}}}}}},
     {{"spec",
       {{"n", 1},
        {"opt", {{"a", 2}}},
        {"inner", {{"z", 3}}},
        {"embedded",
         {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "p"}}},
          {"spec", json::object()}}}}}},
     {"spec.embedded.status"}},
};

INSTANTIATE_TEST_SUITE_P(Cases, PruneTable, ::testing::ValuesIn(kPruneCases),
                         [](const auto& p) { return std::string(p.param.name); });

TEST(TrainingJobSchema, every_example_job_is_valid_and_gets_the_crd_defaults) {
  const json schema = trainingjob_schema();
  int seen = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs")) {
    json job = read_yaml(entry.path().string());
    EXPECT_EQ(prune_and_default(schema, job), std::vector<std::string>{}) << entry.path();
    EXPECT_EQ(texts(validate(schema, job)), std::vector<std::string>{}) << entry.path();
    EXPECT_TRUE(job["spec"].contains("minNodes")) << entry.path();
    EXPECT_EQ(job["spec"]["suspend"], false) << entry.path();
    EXPECT_TRUE(job["spec"]["model"].contains("batchSize")) << entry.path();
    ++seen;
  }
  EXPECT_GE(seen, 3);
}

TEST(TrainingJobSchema, refuses_zero_nodes_and_a_missing_model_in_one_list) {
  const json schema = trainingjob_schema();
  json job = {{"apiVersion", "commgate.io/v1alpha1"},
              {"kind", "TrainingJob"},
              {"metadata", {{"name", "bert"}}},
              {"spec",
               {{"numNodes", 0},
                {"template", {{"spec", {{"containers", {{{"name", "t"}, {"image", "i"}}}}}}}}}}};
  prune_and_default(schema, job);
  EXPECT_EQ(
      texts(validate(schema, job)),
      (std::vector<std::string>{
          "FieldValueInvalid spec.numNodes: Invalid value: 0: spec.numNodes in body should be "
          "greater than or equal to 1",
          "FieldValueRequired spec.model: Required value",
          // minNodes defaulted to 1: the CRD's rule, as a cluster reports it.
          "FieldValueInvalid spec: Invalid value: \"object\": spec.minNodes must be <= "
          "spec.numNodes"}));
}

// The CRD's x-kubernetes-validations (sim/cel_rules.h): what `kubectl scale tj
// --replicas=1` below spec.minNodes meets on a cluster (issue #20), and a rule on each
// item of a list; a type error anywhere leaves the rules unchecked, as upstream.
TEST(TrainingJobSchema, its_cel_rules_refuse_min_nodes_above_num_nodes_and_bad_tolerations) {
  const json schema = trainingjob_schema();
  json job = read_yaml(std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/resnet50-5m.yaml");
  prune_and_default(schema, job);
  job["spec"]["minNodes"] = 3;
  job["spec"]["numNodes"] = 2;
  job["spec"]["tolerations"] = {{{"key", "gpu"}, {"operator", "Exists"}, {"value", "x"}}};
  EXPECT_EQ(texts(validate(schema, job)),
            (std::vector<std::string>{
                "FieldValueInvalid spec: Invalid value: \"object\": spec.minNodes must be <= "
                "spec.numNodes",
                "FieldValueInvalid spec.tolerations[0]: Invalid value: \"object\": value must be "
                "empty when operator is Exists"}));
  job["spec"]["numNodes"] = "two";
  const auto typed = texts(validate(schema, job));
  ASSERT_EQ(typed.size(), 1u);
  EXPECT_EQ(typed[0].rfind("FieldValueTypeInvalid spec.numNodes", 0), 0u) << typed[0];
}

TEST(CrdRules, a_rule_without_message_and_one_that_fails_to_evaluate_say_which_rule) {
  const json schema = {
      {"type", "object"},
      {"properties",
       {{"spec",
         {{"type", "object"},
          {"x-kubernetes-validations",
           {{{"rule", "self.a > 1"}}, {{"rule", "self.b > 1"}, {"message", "b must exceed 1"}}}},
          {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}}}}}}}};
  EXPECT_EQ(texts(validate(schema, {{"spec", {{"a", 1}}}})),
            (std::vector<std::string>{
                "FieldValueInvalid spec: Invalid value: \"object\": failed rule: self.a > 1",
                "FieldValueInvalid spec: Invalid value: \"object\": no such key: b evaluating "
                "rule: self.b > 1"}));
  EXPECT_EQ(texts(validate(schema, {{"spec", {{"a", 2}, {"b", 2}}}})), std::vector<std::string>{});
}

TEST(TrainingJobSchema, the_pod_template_keeps_unknown_fields_but_the_spec_does_not) {
  const json schema = trainingjob_schema();
  json job = read_yaml(std::string(COMMGATE_SOURCE_DIR) + "/examples/jobs/resnet50-5m.yaml");
  job["spec"]["numNodez"] = 3;
  job["spec"]["template"]["spec"]["volumes"] = json::array({{{"name", "v"}}});
  EXPECT_EQ(prune_and_default(schema, job), std::vector<std::string>{"spec.numNodez"});
  EXPECT_EQ(job["spec"]["template"]["spec"]["volumes"][0]["name"], "v");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::sim
