#include "sim/job_update_validation.h"

#include "sim/json_fields.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

// Upstream's field.Invalid(path, value, "field is immutable") as ErrorBody() writes it.
// A struct value (the template, the selector) is printed by Go as its whole type dump;
// this names the type and elides the fields.
FieldError immutable(const std::string& path, const json& value, const char* go_type = nullptr) {
  const std::string shown = go_type ? std::string(go_type) + "{...}" : value.dump();
  return {"FieldValueInvalid", path, "Invalid value: " + shown + ": field is immutable"};
}

}  // namespace

std::vector<FieldError> job_update_errors(const json& old_job, const json& new_job) {
  const json& old_spec = at(old_job, "spec");
  const json& spec = at(new_job, "spec");
  std::vector<FieldError> errors;
  const bool indexed = str(at(spec, "completionMode")) == "Indexed";
  const json& completions = at(spec, "completions");
  if (completions != at(old_spec, "completions")) {
    if (!indexed) {
      errors.push_back(immutable("spec.completions", completions));
    } else if (!completions.is_null() && completions != at(spec, "parallelism")) {
      errors.push_back({"FieldValueInvalid", "spec.completions",
                        "Invalid value: " + completions.dump() +
                            ": can only be modified in tandem with spec.parallelism"});
    }
  }
  if (at(spec, "selector") != at(old_spec, "selector"))
    errors.push_back(immutable("spec.selector", at(spec, "selector"), "&v1.LabelSelector"));
  const bool suspended = at(old_spec, "suspend").is_boolean() && old_spec["suspend"].get<bool>();
  if (!suspended && at(spec, "template") != at(old_spec, "template"))
    errors.push_back(immutable("spec.template", at(spec, "template"), "core.PodTemplateSpec"));
  if (at(spec, "completionMode") != at(old_spec, "completionMode"))
    errors.push_back(immutable("spec.completionMode", at(spec, "completionMode")));
  return errors;
}

}  // namespace commgate::sim
