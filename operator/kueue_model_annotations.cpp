#include "operator/kueue_model_annotations.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <set>

#include "core/gradient_dtype.h"
#include "core/model_names.h"
#include "core/object_reader.h"

namespace commgate::op::kueue {
namespace {

namespace ma = model_annotation;

constexpr std::array<const char*, 6> kModelAnnotationKeys = {ma::kParameters,  ma::kGradientDtype,
                                                             ma::kBatchSize,   ma::kOptimizer,
                                                             ma::kTorchScript, ma::kInputShape};
constexpr const char* kModelAnnotationsPath = "metadata.annotations";

std::string model_annotation_path(const std::string& key) {
  return std::string(kModelAnnotationsPath) + "[" + key + "]";
}

// ObjectReader names a key as join_path does (metadata.annotations["commgate.io/x"]);
// Kubernetes' field.Path, and the messages users are told to look for, without quotes.
FieldError model_annotation_error(const FieldError& e) {
  const std::string quoted = std::string(kModelAnnotationsPath) + "[\"";
  if (e.path.rfind(quoted, 0) != 0 || e.path.size() < quoted.size() + 2) return e;
  const std::string key = e.path.substr(quoted.size(), e.path.size() - quoted.size() - 2);
  return {model_annotation_path(key), e.message};
}

// A whole number from `text` (digits only), or nullopt.
std::optional<int64_t> model_whole_number(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

void model_read_parameters(ObjectReader& r, ModelSpec& m) {
  if (!r.raw(ma::kParameters)) {
    r.errors().add(model_annotation_path(ma::kParameters),
                   "required with any commgate.io model annotation: the model's gradient "
                   "element count, a quantity such as 350M or 7G");
    return;
  }
  auto params = r.quantity(ma::kParameters, Presence::kOptional, 1);
  if (!params) return;
  if (const std::string problem = model_parameters_problem(*params); !problem.empty())
    r.errors().add(model_annotation_path(ma::kParameters), problem);
  else
    m.parameters = *params;
}

void model_read_batch_size(ObjectReader& r, ModelSpec& m) {
  auto text = r.string(ma::kBatchSize, Presence::kOptional, true);
  if (!text) return;
  const auto v = model_whole_number(*text);
  if (!v || *v < 1 || *v > kMaxModelBatchSize)
    r.errors().add(model_annotation_path(ma::kBatchSize),
                   "must be the per-process batch size, a whole number from 1 to " +
                       std::to_string(kMaxModelBatchSize) + ", got \"" + *text + "\"");
  else
    m.batch_size = static_cast<int>(*v);
}

void model_read_input_shape(ObjectReader& r, ModelSpec& m) {
  auto text = r.string(ma::kInputShape, Presence::kOptional, true);
  if (!text) {
    if (!m.torch_script.empty())
      r.errors().add(model_annotation_path(ma::kInputShape),
                     std::string("required with ") + ma::kTorchScript +
                         ": the model's per-sample input shape, such as 3,224,224");
    return;
  }
  std::vector<int64_t> shape;
  size_t start = 0;
  bool ok = true;
  while (ok) {
    const size_t comma = text->find(',', start);
    const auto d = model_whole_number(text->substr(start, comma - start));
    ok = d && *d >= 1;
    if (ok) shape.push_back(*d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (!ok)
    r.errors().add(model_annotation_path(ma::kInputShape),
                   "must be positive whole numbers separated by commas, such as 3,224,224, got "
                   "\"" +
                       *text + "\"");
  else
    m.input_shape = std::move(shape);
}

// Unknown commgate.io/ annotations that are a near miss of a model annotation.
void model_reject_near_misses(const std::map<std::string, std::string>& annotations,
                              FieldErrors& errors) {
  const std::set<std::string> keys(kModelAnnotationKeys.begin(), kModelAnnotationKeys.end());
  for (const auto& [key, value] : annotations) {
    if (key.rfind("commgate.io/", 0) != 0 || keys.contains(key)) continue;
    if (const std::string hint = did_you_mean(key, keys); !hint.empty())
      errors.add(model_annotation_path(key), "is not a commgate model annotation" + hint);
  }
}

}  // namespace

ModelFromAnnotations model_from_annotations(
    const std::map<std::string, std::string>& job_annotations,
    const std::map<std::string, std::string>& namespace_defaults,
    const std::string& namespace_name) {
  ModelFromAnnotations out;
  FieldErrors errors;
  model_reject_near_misses(job_annotations, errors);
  bool any = !errors.empty() || namespace_defaults.contains(ma::kParameters);
  for (const char* key : kModelAnnotationKeys) any = any || job_annotations.contains(key);
  // The Namespace's near misses count only where its values are read.
  FieldErrors namespace_errors;
  if (any) model_reject_near_misses(namespace_defaults, namespace_errors);
  if (!any) return out;

  // The job's annotations, and the Namespace's model annotations it does not carry.
  std::map<std::string, std::string> annotations = job_annotations;
  std::set<std::string> from_namespace;
  for (const char* key : kModelAnnotationKeys) {
    const auto d = namespace_defaults.find(key);
    if (d != namespace_defaults.end() && annotations.emplace(key, d->second).second)
      from_namespace.insert(key);
  }

  const Json values(annotations);
  ObjectReader r(&values, kModelAnnotationsPath, errors);
  ModelSpec& m = out.model;
  model_read_parameters(r, m);
  const auto dtype = annotations.find(ma::kGradientDtype);
  const std::string unmodelled =
      dtype == annotations.end() ? std::string() : unmodelled_gradient_dtype_problem(dtype->second);
  if (!unmodelled.empty())
    errors.add(r.path_of(ma::kGradientDtype), unmodelled);
  else
    m.gradient_dtype =
        r.one_of(ma::kGradientDtype, Presence::kOptional, kGradientDtypes).value_or("fp32");
  m.optimizer =
      r.one_of(ma::kOptimizer, Presence::kOptional, kOptimizers).value_or(kDefaultOptimizer);
  model_read_batch_size(r, m);
  m.torch_script = r.string(ma::kTorchScript, Presence::kOptional).value_or("");
  model_read_input_shape(r, m);

  // A value the Namespace gave is named on the Namespace, where it is to be fixed.
  const std::string namespace_prefix = "Namespace " + namespace_name + " ";
  for (const FieldError& e : errors.all()) {
    const FieldError named = model_annotation_error(e);
    const bool namespaces = std::any_of(
        from_namespace.begin(), from_namespace.end(),
        [&](const std::string& key) { return named.path == model_annotation_path(key); });
    out.errors.add(namespaces ? namespace_prefix + named.path : named.path, named.message);
  }
  for (const FieldError& e : namespace_errors.all())
    out.errors.add(namespace_prefix + e.path, e.message);
  out.kind = out.errors.empty() ? ModelFromAnnotations::Kind::kModel
                                : ModelFromAnnotations::Kind::kInvalid;
  if (out.kind == ModelFromAnnotations::Kind::kInvalid) out.model = ModelSpec{};
  return out;
}

}  // namespace commgate::op::kueue
