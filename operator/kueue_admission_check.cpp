#include "operator/kueue_admission_check.h"

#include "core/object_reader.h"
#include "operator/kueue_check_state.h"
#include "operator/kueue_workload.h"

namespace commgate::op::kueue {
namespace {

constexpr const char* kAdmissionCheckInactiveEffect =
    " Kueue keeps every ClusterQueue that lists this check inactive until it is fixed.";

Condition admission_check_bad(const AdmissionCheck& check, const std::string& message) {
  return Condition{.type = kActiveCondition,
                   .status = kFalse,
                   .reason = kBadParametersRefReason,
                   .message = message + "." + kAdmissionCheckInactiveEffect,
                   .observed_generation = check.metadata.generation};
}

}  // namespace

bool AdmissionCheck::is_ours() const {
  return controller_name == kControllerName;
}

AdmissionCheck read_admission_check(const nlohmann::json& doc) {
  FieldErrors errors;
  Document d = read_document(doc, kApiVersion, kAdmissionCheckKind, errors);
  AdmissionCheck out;
  out.metadata = std::move(d.metadata);
  auto spec = d.root.object("spec", Presence::kRequired);
  out.controller_name = spec.string("controllerName", Presence::kRequired).value_or("");
  auto params = spec.object("parameters");
  if (params.present()) {
    ParametersReference ref;
    ref.api_group = params.string("apiGroup", Presence::kOptional, true).value_or("");
    ref.kind = params.string("kind", Presence::kOptional, true).value_or("");
    ref.name = params.string("name", Presence::kOptional, true).value_or("");
    out.parameters = std::move(ref);
  }
  errors.throw_if_any("invalid AdmissionCheck");
  return out;
}

Condition admission_check_active(const AdmissionCheck& check,
                                 const std::set<std::string>& comm_policies) {
  if (!check.parameters)
    return Condition{.type = kActiveCondition,
                     .status = kTrue,
                     .reason = kActiveReason,
                     .message =
                         "The admission check is active: each Workload is held to the "
                         "CommPolicy that applies to its namespace",
                     .observed_generation = check.metadata.generation};
  const ParametersReference& ref = *check.parameters;
  if (ref.name.empty())
    return admission_check_bad(check,
                               "spec.parameters.name: empty name: name the CommPolicy "
                               "to hold Workloads to, or leave spec.parameters out");
  if (ref.api_group != kParametersGroup)
    return admission_check_bad(check, "spec.parameters.apiGroup: wrong group \"" + ref.api_group +
                                          "\", expecting \"" + kParametersGroup + "\"");
  if (ref.kind != kParametersKind)
    return admission_check_bad(check, "spec.parameters.kind: wrong kind \"" + ref.kind +
                                          "\", expecting \"" + kParametersKind + "\"");
  if (!comm_policies.contains(ref.name))
    return admission_check_bad(check, "spec.parameters.name: CommPolicy \"" + ref.name +
                                          "\" not found: create it, or name an existing one");
  return Condition{
      .type = kActiveCondition,
      .status = kTrue,
      .reason = kActiveReason,
      .message = "The admission check is active: Workloads are held to CommPolicy " + ref.name,
      .observed_generation = check.metadata.generation};
}

}  // namespace commgate::op::kueue
