#include "core/comm_policy.h"

#include "core/object_reader.h"
#include "core/probe_timeout.h"
#include "core/quantity.h"
#include "core/training_job.h"

namespace commgate {
namespace {
using P = Presence;
}

const char* to_string(EnforcementAction a) {
  return name_of(kEnforcementActions, a);
}

const char* to_string(MissingMeasurementAction a) {
  return name_of(kMissingMeasurementActions, a);
}

const char* to_string(InsufficientNodesAction a) {
  return name_of(kInsufficientNodesActions, a);
}

const char* to_string(WithoutModelAction a) {
  return name_of(kWithoutModelActions, a);
}

const char* to_string(UnmanagedWorkloads a) {
  return name_of(kUnmanagedWorkloadsActions, a);
}

CommPolicy default_comm_policy() {
  CommPolicy p;
  p.metadata.name = kBuiltinPolicyName;
  return p;
}

std::string policy_label(const std::string& name) {
  return name == kBuiltinPolicyName ? "the built-in default policy" : "CommPolicy " + name;
}

CommPolicy parse_comm_policy(const nlohmann::json& doc) {
  FieldErrors errors;
  CommPolicy policy;
  Document d = read_document(doc, kApiVersion, "CommPolicy", errors);
  ObjectReader& root = d.root;
  policy.metadata = std::move(d.metadata);
  if (!policy.metadata.namespace_.empty()) {
    errors.add("metadata.namespace", "must be empty: CommPolicy is cluster-scoped");
  }
  auto spec = root.object("spec", P::kRequired);
  CommPolicySpec& s = policy.spec;
  s.max_comm_share = spec.number("maxCommShare", P::kRequired, 0.0, 1.0).value_or(s.max_comm_share);
  s.min_scaling_efficiency = spec.number("minScalingEfficiency", P::kOptional, 0.0, 1.0);
  s.enforcement_action = spec.enumeration("enforcementAction", P::kOptional, kEnforcementActions)
                             .value_or(s.enforcement_action);
  auto selector = spec.object("namespaceSelector");
  if (selector.present()) s.namespace_selector = read_label_selector(selector);
  if (auto ttl = spec.duration("measurementTTL", P::kOptional)) {
    if (ttl->count() <= 0)
      errors.add("spec.measurementTTL", "must be positive");
    else
      s.measurement_ttl = *ttl;
  }
  s.on_missing_measurement =
      spec.enumeration("onMissingMeasurement", P::kOptional, kMissingMeasurementActions)
          .value_or(s.on_missing_measurement);
  s.max_extrapolation = static_cast<int>(
      spec.integer("maxExtrapolation", P::kOptional, 1, kMaxNodes).value_or(s.max_extrapolation));
  s.unmanaged_workloads =
      spec.enumeration("unmanagedWorkloads", P::kOptional, kUnmanagedWorkloadsActions)
          .value_or(s.unmanaged_workloads);
  s.on_insufficient_nodes =
      spec.enumeration("onInsufficientNodes", P::kOptional, kInsufficientNodesActions)
          .value_or(s.on_insufficient_nodes);

  auto check = spec.object("admissionCheck");
  AdmissionCheckSettings& ac = s.admission_check;
  ac.max_pending_seconds = static_cast<int>(
      check.integer("maxPendingSeconds", P::kOptional, kMinMaxPendingSeconds, kMaxMaxPendingSeconds)
          .value_or(ac.max_pending_seconds));
  ac.without_model = check.enumeration("withoutModel", P::kOptional, kWithoutModelActions)
                         .value_or(ac.without_model);
  check.reject_unknown_fields();

  auto probe = spec.object("probe");
  ProbeSettings& ps = s.probe;
  ps.image = probe.string("image", P::kOptional).value_or("");
  ps.timeout_seconds =
      static_cast<int>(probe.integer("timeoutSeconds", P::kOptional, 10, kMaxProbeTimeoutSeconds)
                           .value_or(ps.timeout_seconds));
  auto sizes = probe.object("sizes");
  ps.min_bytes = sizes.quantity("min", P::kOptional, 4).value_or(ps.min_bytes);
  ps.max_bytes = sizes.quantity("max", P::kOptional, 4).value_or(ps.max_bytes);
  if (ps.min_bytes > ps.max_bytes) {
    errors.add("spec.probe.sizes.min",
               "must be <= spec.probe.sizes.max (" + format_bytes(ps.max_bytes) + ")");
  }
  sizes.reject_unknown_fields();
  ps.iterations =
      static_cast<int>(probe.integer("iterations", P::kOptional, 1, 10000).value_or(ps.iterations));
  ps.warmup_iterations = static_cast<int>(
      probe.integer("warmupIterations", P::kOptional, 0, 10000).value_or(ps.warmup_iterations));
  ps.backend = probe.one_of("backend", P::kOptional, {"auto", "nccl", "gloo"}).value_or(ps.backend);
  ps.max_nodes = static_cast<int>(
      probe.integer("maxNodes", P::kOptional, 2, kMaxNodes).value_or(ps.max_nodes));
  if (auto keys = probe.string_list("tolerationKeys", P::kOptional)) {
    for (size_t i = 0; i < keys->size(); ++i) {
      const std::string& k = (*keys)[i];
      const bool blank = k.empty() || k.find_first_of(" \t\r\n=:") != std::string::npos;
      if (blank || k.size() > 316)
        errors.add(index_path("spec.probe.tolerationKeys", i),
                   "must be a taint key such as nvidia.com/gpu, got \"" + k + "\"");
    }
    ps.toleration_keys = std::move(*keys);
  }
  probe.reject_unknown_fields();

  auto ex = spec.object("exemptions");
  s.exemptions.users = ex.string_list("users", P::kOptional).value_or(std::vector<std::string>{});
  s.exemptions.groups = ex.string_list("groups", P::kOptional).value_or(std::vector<std::string>{});
  s.exemptions.service_accounts =
      ex.string_list("serviceAccounts", P::kOptional).value_or(std::vector<std::string>{});
  for (size_t i = 0; i < s.exemptions.service_accounts.size(); ++i) {
    const auto& sa = s.exemptions.service_accounts[i];
    auto slash = sa.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == sa.size() ||
        sa.find('/', slash + 1) != std::string::npos) {
      errors.add(index_path("spec.exemptions.serviceAccounts", i),
                 "must be \"namespace/name\", got \"" + sa + "\"");
    }
  }
  ex.reject_unknown_fields();

  auto retry = spec.object("retryStrategy");
  RetryStrategy& r = s.retry_strategy;
  r.backoff_limit_count = static_cast<int>(
      retry.integer("backoffLimitCount", P::kOptional, 0, 100).value_or(r.backoff_limit_count));
  r.backoff_base_seconds = static_cast<int>(
      retry.integer("backoffBaseSeconds", P::kOptional, 1, 86400).value_or(r.backoff_base_seconds));
  r.backoff_max_seconds = static_cast<int>(
      retry.integer("backoffMaxSeconds", P::kOptional, 1, 86400).value_or(r.backoff_max_seconds));
  if (r.backoff_max_seconds < r.backoff_base_seconds) {
    errors.add("spec.retryStrategy.backoffMaxSeconds",
               "must be >= backoffBaseSeconds (" + std::to_string(r.backoff_base_seconds) + ")");
  }
  retry.reject_unknown_fields();
  spec.reject_unknown_fields();
  root.allow({"status"});
  root.reject_unknown_fields();
  errors.throw_if_any("invalid CommPolicy");
  return policy;
}

nlohmann::json to_json(const CommPolicy& p) {
  const CommPolicySpec& s = p.spec;
  nlohmann::json spec = {{"maxCommShare", s.max_comm_share},
                         {"enforcementAction", to_string(s.enforcement_action)},
                         {"measurementTTL", format_duration(s.measurement_ttl)},
                         {"onMissingMeasurement", to_string(s.on_missing_measurement)},
                         {"maxExtrapolation", s.max_extrapolation},
                         {"unmanagedWorkloads", to_string(s.unmanaged_workloads)},
                         {"onInsufficientNodes", to_string(s.on_insufficient_nodes)},
                         {"admissionCheck",
                          {{"maxPendingSeconds", s.admission_check.max_pending_seconds},
                           {"withoutModel", to_string(s.admission_check.without_model)}}},
                         {"probe",
                          {{"sizes",
                            {{"min", format_byte_quantity(s.probe.min_bytes)},
                             {"max", format_byte_quantity(s.probe.max_bytes)}}},
                           {"iterations", s.probe.iterations},
                           {"warmupIterations", s.probe.warmup_iterations},
                           {"backend", s.probe.backend},
                           {"maxNodes", s.probe.max_nodes},
                           {"tolerationKeys", s.probe.toleration_keys}}},
                         {"retryStrategy",
                          {{"backoffLimitCount", s.retry_strategy.backoff_limit_count},
                           {"backoffBaseSeconds", s.retry_strategy.backoff_base_seconds},
                           {"backoffMaxSeconds", s.retry_strategy.backoff_max_seconds}}}};
  if (!s.probe.image.empty()) spec["probe"]["image"] = s.probe.image;
  // Absent: sized by each probe's model (core/probe_timeout.h).
  if (s.probe.timeout_seconds > 0) spec["probe"]["timeoutSeconds"] = s.probe.timeout_seconds;
  if (s.min_scaling_efficiency) spec["minScalingEfficiency"] = *s.min_scaling_efficiency;
  if (!s.namespace_selector.empty())
    spec["namespaceSelector"] = label_selector_to_json(s.namespace_selector);
  if (!s.exemptions.users.empty()) spec["exemptions"]["users"] = s.exemptions.users;
  if (!s.exemptions.groups.empty()) spec["exemptions"]["groups"] = s.exemptions.groups;
  if (!s.exemptions.service_accounts.empty())
    spec["exemptions"]["serviceAccounts"] = s.exemptions.service_accounts;
  return {{"apiVersion", kApiVersion},
          {"kind", "CommPolicy"},
          {"metadata", object_meta_to_json(p.metadata)},
          {"spec", spec}};
}

}  // namespace commgate
