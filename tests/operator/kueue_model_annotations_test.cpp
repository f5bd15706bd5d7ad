// operator/kueue_model_annotations.h: the model of a job Kueue queues, from its
// commgate.io/* annotations, held to the rules of a TrainingJob's spec.model.
#include "operator/kueue_model_annotations.h"

#include <gtest/gtest.h>

#include "tests/support/builders.h"

namespace commgate::op::kueue {
namespace COMMGATE_TEST_UNIT {

using Annotations = std::map<std::string, std::string>;
using Kind = ModelFromAnnotations::Kind;

struct ModelCase {
  std::string name;
  Annotations annotations;
  double want_parameters;
  std::string want_dtype;
  int want_batch_size;
  std::string want_optimizer;
  std::string want_torch_script = "";
  std::vector<int64_t> want_input_shape = {};
};

void PrintTo(const ModelCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<ModelCase> model_cases() {
  return {
      {.name = "every_annotation",
       .annotations = {{"commgate.io/parameters", "350M"},
                       {"commgate.io/gradient-dtype", "bf16"},
                       {"commgate.io/batch-size", "64"},
                       {"commgate.io/optimizer", "sgd-momentum"}},
       .want_parameters = 350e6,
       .want_dtype = "bf16",
       .want_batch_size = 64,
       .want_optimizer = "sgd-momentum"},
      {.name = "parameters_alone_take_the_training_job_defaults",
       .annotations = {{"commgate.io/parameters", "7G"}},
       .want_parameters = 7e9,
       .want_dtype = "fp32",
       .want_batch_size = 32,
       .want_optimizer = "adamw"},
      {.name = "parameters_in_exponent_notation",
       .annotations = {{"commgate.io/parameters", "1.3e9"}},
       .want_parameters = 1.3e9,
       .want_dtype = "fp32",
       .want_batch_size = 32,
       .want_optimizer = "adamw"},
      {.name = "a_torchscript_model_with_its_input_shape",
       .annotations = {{"commgate.io/parameters", "25M"},
                       {"commgate.io/torchscript", "/models/resnet50.pt"},
                       {"commgate.io/input-shape", "3,224,224"}},
       .want_parameters = 25e6,
       .want_dtype = "fp32",
       .want_batch_size = 32,
       .want_optimizer = "adamw",
       .want_torch_script = "/models/resnet50.pt",
       .want_input_shape = {3, 224, 224}},
      {.name = "other_annotations_are_not_read",
       .annotations = {{"commgate.io/parameters", "350M"},
                       {"commgate.io/decision", "Admit"},
                       {"kueue.x-k8s.io/queue-name", "user-queue"}},
       .want_parameters = 350e6,
       .want_dtype = "fp32",
       .want_batch_size = 32,
       .want_optimizer = "adamw"},
  };
}

class ModelAnnotationsTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ModelAnnotationsTest, reads_the_model) {
  const ModelCase& c = GetParam();
  const ModelFromAnnotations m = model_from_annotations(c.annotations);
  ASSERT_EQ(static_cast<int>(m.kind), static_cast<int>(Kind::kModel)) << m.errors.to_string();
  EXPECT_DOUBLE_EQ(m.model.parameters, c.want_parameters);
  EXPECT_EQ(m.model.gradient_dtype, c.want_dtype);
  EXPECT_EQ(m.model.batch_size, c.want_batch_size);
  EXPECT_EQ(m.model.optimizer, c.want_optimizer);
  EXPECT_EQ(m.model.torch_script, c.want_torch_script);
  EXPECT_EQ(m.model.input_shape, c.want_input_shape);
}

INSTANTIATE_TEST_SUITE_P(KueueModelAnnotations, ModelAnnotationsTest,
                         ::testing::ValuesIn(model_cases()),
                         [](const ::testing::TestParamInfo<ModelCase>& p) { return p.param.name; });

TEST(KueueModelAnnotations, a_job_without_model_annotations_names_no_model) {
  for (const Annotations& a : {Annotations{}, Annotations{{"commgate.io/decision", "Admit"},
                                                          {"commgate.io/requested-nodes", "4"},
                                                          {"kubeflow.org/foo", "bar"}}}) {
    const ModelFromAnnotations m = model_from_annotations(a);
    EXPECT_EQ(static_cast<int>(m.kind), static_cast<int>(Kind::kNone)) << m.errors.to_string();
    EXPECT_TRUE(m.errors.empty());
  }
}

// The defaults and the reading of parameters are those of a TrainingJob's spec.model.
TEST(KueueModelAnnotations, agrees_with_the_training_job_parser) {
  const ModelSpec tj =
      commgate::testing::a_training_job("bert").params(340e6).dtype("fp16").build().spec.model;
  const ModelFromAnnotations m = model_from_annotations(
      {{"commgate.io/parameters", "340M"}, {"commgate.io/gradient-dtype", "fp16"}});
  ASSERT_EQ(static_cast<int>(m.kind), static_cast<int>(Kind::kModel)) << m.errors.to_string();
  EXPECT_EQ(m.model.parameters, tj.parameters);
  EXPECT_EQ(m.model.gradient_dtype, tj.gradient_dtype);
  EXPECT_EQ(m.model.optimizer, tj.optimizer);
  EXPECT_EQ(m.model.batch_size, tj.batch_size);
  EXPECT_EQ(m.model.gradient_bytes(), tj.gradient_bytes());
}

struct BadCase {
  std::string name;
  Annotations annotations;
  std::string want_path;
  std::string want_message;  // substring
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<BadCase> bad_cases() {
  return {
      {"parameters_in_words",
       {{"commgate.io/parameters", "350 million"}},
       "metadata.annotations[commgate.io/parameters]",
       "350M"},
      {"parameters_in_milli",
       {{"commgate.io/parameters", "5m"}},
       "metadata.annotations[commgate.io/parameters]",
       "m is milli, a thousandth: for 5 million write 5M"},
      {"fractional_parameters",
       {{"commgate.io/parameters", "1.5"}},
       "metadata.annotations[commgate.io/parameters]",
       "must be a whole number of gradient elements"},
      {"parameters_past_a_peta",
       {{"commgate.io/parameters", "2P"}},
       "metadata.annotations[commgate.io/parameters]",
       "must be <= 1P (1e15)"},
      {"an_unknown_dtype",
       {{"commgate.io/parameters", "350M"}, {"commgate.io/gradient-dtype", "fp8"}},
       "metadata.annotations[commgate.io/gradient-dtype]",
       "must be one of fp32, fp16, bf16, got \"fp8\""},
      {"fp64_is_said_to_be_unmodelled_not_a_misspelt_fp16",
       {{"commgate.io/parameters", "350M"}, {"commgate.io/gradient-dtype", "fp64"}},
       "metadata.annotations[commgate.io/gradient-dtype]",
       "got \"fp64\": 8-byte gradients are not modelled"},
      {"an_optimizer_in_the_wrong_case",
       {{"commgate.io/parameters", "350M"}, {"commgate.io/optimizer", "AdamW"}},
       "metadata.annotations[commgate.io/optimizer]",
       "(did you mean \"adamw\"?)"},
      {"a_batch_size_of_zero",
       {{"commgate.io/parameters", "350M"}, {"commgate.io/batch-size", "0"}},
       "metadata.annotations[commgate.io/batch-size]",
       "a whole number from 1 to 1048576, got \"0\""},
      {"a_batch_size_that_is_not_a_number",
       {{"commgate.io/parameters", "350M"}, {"commgate.io/batch-size", "64k"}},
       "metadata.annotations[commgate.io/batch-size]",
       "got \"64k\""},
      {"a_model_annotation_without_the_parameters",
       {{"commgate.io/gradient-dtype", "bf16"}},
       "metadata.annotations[commgate.io/parameters]",
       "required with any commgate.io model annotation"},
      {"a_torchscript_model_without_its_input_shape",
       {{"commgate.io/parameters", "25M"}, {"commgate.io/torchscript", "/m.pt"}},
       "metadata.annotations[commgate.io/input-shape]",
       "required with commgate.io/torchscript"},
      {"an_input_shape_that_is_not_numbers",
       {{"commgate.io/parameters", "25M"},
        {"commgate.io/torchscript", "/m.pt"},
        {"commgate.io/input-shape", "3,x,224"}},
       "metadata.annotations[commgate.io/input-shape]",
       "separated by commas, such as 3,224,224, got \"3,x,224\""},
      {"an_empty_torchscript_path",
       {{"commgate.io/parameters", "25M"}, {"commgate.io/torchscript", ""}},
       "metadata.annotations[commgate.io/torchscript]",
       "must not be empty"},
      {"a_misspelt_opt_in_is_not_read_as_none",
       {{"commgate.io/parameter", "350M"}},
       "metadata.annotations[commgate.io/parameter]",
       "is not a commgate model annotation (did you mean \"commgate.io/parameters\"?)"},
  };
}

class ModelAnnotationsBadInputTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ModelAnnotationsBadInputTest, names_the_annotation_and_what_is_valid) {
  const BadCase& c = GetParam();
  const ModelFromAnnotations m = model_from_annotations(c.annotations);
  ASSERT_EQ(static_cast<int>(m.kind), static_cast<int>(Kind::kInvalid));
  bool found = false;
  for (const FieldError& e : m.errors.all())
    found = found || (e.path == c.want_path && e.message.find(c.want_message) != std::string::npos);
  EXPECT_TRUE(found) << "want " << c.want_path << ": ..." << c.want_message << "...\ngot "
                     << m.errors.to_string();
  EXPECT_EQ(m.model.parameters, 0) << "an invalid model is not half-read";
}

INSTANTIATE_TEST_SUITE_P(KueueModelAnnotations, ModelAnnotationsBadInputTest,
                         ::testing::ValuesIn(bad_cases()),
                         [](const ::testing::TestParamInfo<BadCase>& p) { return p.param.name; });

TEST(KueueModelAnnotations, every_bad_annotation_is_reported_at_once) {
  const ModelFromAnnotations m = model_from_annotations({{"commgate.io/parameters", "lots"},
                                                         {"commgate.io/gradient-dtype", "fp64"},
                                                         {"commgate.io/batch-size", "-1"}});
  ASSERT_EQ(static_cast<int>(m.kind), static_cast<int>(Kind::kInvalid));
  EXPECT_EQ(m.errors.size(), 3u) << m.errors.to_string();
  // As a check message would print it: one line per annotation, the path first.
  EXPECT_EQ(m.errors.to_string().rfind("metadata.annotations[commgate.io/", 0), 0u)
      << m.errors.to_string();
}

// ---- the Namespace's annotations as defaults ----

struct DefaultsCase {
  std::string name;
  Annotations job;
  Annotations ns;
  Kind want_kind;
  double want_parameters = 0;
  int want_batch_size = 0;
  std::string want_optimizer = "";
  std::string want_errors = "";  // the errors' text, for kInvalid
};

TEST(KueueModelAnnotations, a_namespaces_annotations_stand_for_those_the_job_lacks) {
  const Annotations team = {{"commgate.io/parameters", "7G"},
                            {"commgate.io/batch-size", "8"},
                            {"commgate.io/optimizer", "adam"}};
  const std::vector<DefaultsCase> cases = {
      {.name = "the_namespace_opts_a_bare_job_in",
       .job = {},
       .ns = team,
       .want_kind = Kind::kModel,
       .want_parameters = 7e9,
       .want_batch_size = 8,
       .want_optimizer = "adam"},
      {.name = "the_jobs_own_win_key_by_key",
       .job = {{"commgate.io/parameters", "350M"}, {"commgate.io/optimizer", "sgd"}},
       .ns = team,
       .want_kind = Kind::kModel,
       .want_parameters = 350e6,
       .want_batch_size = 8,
       .want_optimizer = "sgd"},
      {.name = "defaults_without_parameters_opt_nobody_in",
       .job = {},
       .ns = {{"commgate.io/batch-size", "8"}},
       .want_kind = Kind::kNone},
      {.name = "defaults_without_parameters_complete_a_job_that_opts_in",
       .job = {{"commgate.io/parameters", "1M"}},
       .ns = {{"commgate.io/batch-size", "8"}, {"team.example/owner", "nlp"}},
       .want_kind = Kind::kModel,
       .want_parameters = 1e6,
       .want_batch_size = 8,
       .want_optimizer = "adamw"},
      {.name = "a_bad_namespace_value_is_named_on_the_namespace",
       .job = {{"commgate.io/parameters", "1M"}},
       .ns = {{"commgate.io/batch-size", "eight"}},
       .want_kind = Kind::kInvalid,
       .want_errors = "Namespace nlp metadata.annotations[commgate.io/batch-size]: must be the "
                      "per-process batch size, a whole number from 1 to 1048576, got \"eight\""},
      {.name = "a_bad_value_the_job_overrides_is_not_read",
       .job = {{"commgate.io/parameters", "1M"}, {"commgate.io/batch-size", "16"}},
       .ns = {{"commgate.io/batch-size", "eight"}},
       .want_kind = Kind::kModel,
       .want_parameters = 1e6,
       .want_batch_size = 16,
       .want_optimizer = "adamw"},
      {.name = "a_misspelt_namespace_annotation_is_named_on_the_namespace",
       .job = {{"commgate.io/parameters", "1M"}},
       .ns = {{"commgate.io/batchsize", "8"}},
       .want_kind = Kind::kInvalid,
       .want_errors = "Namespace nlp metadata.annotations[commgate.io/batchsize]: is not a "
                      "commgate model annotation (did you mean \"commgate.io/batch-size\"?)"},
      {.name = "a_jobs_error_stays_the_jobs",
       .job = {{"commgate.io/batch-size", "16"}},
       .ns = {{"commgate.io/optimizer", "sgd"}},
       .want_kind = Kind::kInvalid,
       .want_errors = "metadata.annotations[commgate.io/parameters]: required with any "
                      "commgate.io model annotation: the model's gradient element count, a "
                      "quantity such as 350M or 7G"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const ModelFromAnnotations m = model_from_annotations(c.job, c.ns, "nlp");
    ASSERT_EQ(static_cast<int>(m.kind), static_cast<int>(c.want_kind)) << m.errors.to_string();
    if (c.want_kind == Kind::kInvalid) {
      EXPECT_EQ(m.errors.to_string(), c.want_errors);
      continue;
    }
    if (c.want_kind != Kind::kModel) continue;
    EXPECT_EQ(m.model.parameters, c.want_parameters);
    EXPECT_EQ(m.model.batch_size, c.want_batch_size);
    EXPECT_EQ(m.model.optimizer, c.want_optimizer);
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::op::kueue
