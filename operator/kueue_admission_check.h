// A Kueue AdmissionCheck (kueue.x-k8s.io/v1beta2, cluster-scoped) as commgate reads it,
// and the `Active` condition commgate keeps on each of its own: those whose
// spec.controllerName is kControllerName. Kueue treats a ClusterQueue that lists a check
// that is missing or not Active as inactive: its Workloads wait.
//
// spec.parameters is {apiGroup: commgate.io, kind: CommPolicy, name} (CommPolicy is
// cluster-scoped, as Kueue requires of parameters) or absent: then each Workload is held
// to the CommPolicy that applies to its namespace, which is valid.
//
// Models (kubernetes-sigs/kueue v0.19.2):
//   apis/kueue/v1beta2/admissioncheck_types.go  AdmissionCheckSpec (controllerName,
//     parameters {apiGroup, kind, name}), AdmissionCheckActive;
//   pkg/controller/admissionchecks/provisioning/admissioncheck_reconciler.go  the Active
//     condition: True/"Active" or False/"BadParametersRef" with the lookup's error, and
//     observedGeneration;
//   pkg/util/admissioncheck/admissioncheck.go  refValidForGK (empty name, wrong group,
//     wrong kind) and ConfigFromRef (the object must exist).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "core/object_meta.h"
#include "operator/conditions.h"

namespace commgate::op::kueue {

inline constexpr const char* kAdmissionCheckKind = "AdmissionCheck";
// The collection (cluster-scoped).
inline constexpr const char* kAdmissionChecks = "/apis/kueue.x-k8s.io/v1beta2/admissionchecks";
// The condition type Kueue reads on an AdmissionCheck, and its reasons.
inline constexpr const char* kActiveCondition = "Active";
inline constexpr const char* kActiveReason = "Active";
inline constexpr const char* kBadParametersRefReason = "BadParametersRef";
// What spec.parameters of a commgate check refers to.
inline constexpr const char* kParametersGroup = "commgate.io";
inline constexpr const char* kParametersKind = "CommPolicy";

struct ParametersReference {
  std::string api_group;
  std::string kind;
  std::string name;
};

struct AdmissionCheck {
  ObjectMeta metadata;
  std::string controller_name;
  std::optional<ParametersReference> parameters;

  // Whether commgate serves this check (spec.controllerName is kControllerName).
  bool is_ours() const;
};

// Reads an AdmissionCheck as the API server returns it; throws ValidationError naming each
// malformed field (another apiVersion or kind included). A parameters reference is read
// as written: whether it is usable is the Active condition's to say.
AdmissionCheck read_admission_check(const nlohmann::json& doc);

// The Active condition of one of our checks, given the names of the CommPolicies that
// exist: True/Active, or False/BadParametersRef naming the field at fault and what is
// missing; observedGeneration is the check's metadata.generation. The caller writes it
// with set_condition (operator/conditions.h), which keeps lastTransitionTime while the
// status holds.
Condition admission_check_active(const AdmissionCheck& check,
                                 const std::set<std::string>& comm_policies);

}  // namespace commgate::op::kueue
