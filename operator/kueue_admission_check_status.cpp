#include "operator/kueue_admission_check_status.h"

#include "core/field_errors.h"
#include "operator/conditions.h"
#include "operator/kueue_admission_check.h"
#include "operator/kueue_check_state.h"
#include "operator/kueue_workload.h"

namespace commgate::op::kueue {

using nlohmann::json;

std::optional<json> admission_check_status_apply(const json& doc,
                                                 const std::set<std::string>& policies,
                                                 TimePoint now) {
  AdmissionCheck check;
  try {
    check = read_admission_check(doc);
  } catch (const ValidationError&) {
    return std::nullopt;  // not one we can read, so not one we serve
  }
  if (!check.is_ours()) return std::nullopt;
  const Condition wanted = admission_check_active(check, policies);
  const json status = doc.value("status", json::object());
  Conditions conditions = Conditions::from_json(
      status.is_object() ? status.value("conditions", json::array()) : json());
  if (!conditions.set(wanted, now)) return std::nullopt;
  // The apply holds our entry alone, as set (its lastTransitionTime kept while the status
  // holds).
  const json entry = stored_condition_json(*conditions.find(kActiveCondition));
  return json{{"apiVersion", kApiVersion},
              {"kind", kAdmissionCheckKind},
              {"metadata", {{"name", check.metadata.name}, {"uid", check.metadata.uid}}},
              {"status", {{"conditions", json::array({entry})}}}};
}

size_t write_admission_check_statuses(const std::vector<json>& checks,
                                      const std::set<std::string>& policies,
                                      kube::StatusWriter& writer, TimePoint now) {
  size_t written = 0;
  for (const json& doc : checks) {
    const auto apply = admission_check_status_apply(doc, policies, now);
    if (!apply) continue;
    kube::PatchOptions options;
    options.field_manager = kFieldManager;
    options.force = true;
    writer.patch_status(
        std::string(kAdmissionChecks) + "/" + (*apply)["metadata"]["name"].get<std::string>(),
        kube::PatchType::kApply, *apply, options);
    ++written;
  }
  return written;
}

}  // namespace commgate::op::kueue
