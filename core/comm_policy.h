// CommPolicy (commgate.io/v1alpha1, cluster-scoped): what admins set. docs/api.md
// documents every field.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_table.h"
#include "core/label_selector.h"
#include "core/object_meta.h"

namespace commgate {

enum class EnforcementAction { kDownsize, kDeny, kWarn, kDryRun };
enum class MissingMeasurementAction { kGate, kAdmit, kDeny };
// spec.unmanagedWorkloads: whether multi-node GPU workloads that commgate did not create
// (Jobs, CronJobs, JobSets, PyTorchJobs, bare Pods: core/workload_shape.h) may be created
// in the namespaces the policy applies to (issue #19 item 4; Kueue's
// manageJobsWithoutQueueName plays this part there).
// In order of strictness (policy_selection.cpp compares them).
enum class UnmanagedWorkloads { kAllow, kWarn, kDeny };
// spec.onInsufficientNodes: what happens to a job its pool cannot hold (fewer usable nodes
// than it would run, core/pool_nodes.h; issue #20 defect 2). gate: admitted suspended until
// the pool has the nodes; deny: refused; ignore: not checked (a pool that a cluster
// autoscaler grows from pending pods, which a gated job never creates).
enum class InsufficientNodesAction { kGate, kDeny, kIgnore };
// spec.admissionCheck.withoutModel: what commgate's Kueue admission check
// (operator/kueue_check_reconciler.h) writes for a job that names no model (no
// commgate.io/parameters annotation): Ready (not checked, the message saying how to opt in)
// or Rejected (Kueue deactivates the Workload; the message names the annotations to add).
// Named as the check states they write.
enum class WithoutModelAction { kReady, kRejected };

// The names spec.enforcementAction and spec.onMissingMeasurement take: the parser reads
// and to_string prints from these tables, and the CRD's enums must list the same names.
inline constexpr std::array<EnumName<EnforcementAction>, 4> kEnforcementActions = {{
    {EnforcementAction::kDownsize, "downsize"},
    {EnforcementAction::kDeny, "deny"},
    {EnforcementAction::kWarn, "warn"},
    {EnforcementAction::kDryRun, "dryrun"},
}};
inline constexpr std::array<EnumName<MissingMeasurementAction>, 3> kMissingMeasurementActions = {{
    {MissingMeasurementAction::kGate, "gate"},
    {MissingMeasurementAction::kAdmit, "admit"},
    {MissingMeasurementAction::kDeny, "deny"},
}};

inline constexpr std::array<EnumName<UnmanagedWorkloads>, 3> kUnmanagedWorkloadsActions = {{
    {UnmanagedWorkloads::kAllow, "allow"},
    {UnmanagedWorkloads::kWarn, "warn"},
    {UnmanagedWorkloads::kDeny, "deny"},
}};

inline constexpr std::array<EnumName<InsufficientNodesAction>, 3> kInsufficientNodesActions = {{
    {InsufficientNodesAction::kGate, "gate"},
    {InsufficientNodesAction::kDeny, "deny"},
    {InsufficientNodesAction::kIgnore, "ignore"},
}};

inline constexpr std::array<EnumName<WithoutModelAction>, 2> kWithoutModelActions = {{
    {WithoutModelAction::kReady, "Ready"},
    {WithoutModelAction::kRejected, "Rejected"},
}};

const char* to_string(EnforcementAction a);
const char* to_string(WithoutModelAction a);
const char* to_string(InsufficientNodesAction a);
const char* to_string(UnmanagedWorkloads a);
const char* to_string(MissingMeasurementAction a);

struct ProbeSettings {
  std::string image;  // empty: the operator's default probe image
  // 0 (probe.timeoutSeconds absent): sized by the model the probe times
  // (core/probe_timeout.h), 300 s for models up to 100M parameters at batch 32.
  int timeout_seconds = 0;
  double min_bytes = 8 * 1024.0;       // smallest all-reduce message swept
  double max_bytes = 256 * 1048576.0;  // largest (also capped at the job's gradient size)
  int iterations = 20;
  int warmup_iterations = 5;
  std::string backend = "auto";  // auto | nccl | gloo
  int max_nodes = 4;             // nodes a probe may take at most
  // The taint keys whose tolerations a probe takes from the job that asked for it
  // (spec.probe.tolerationKeys). The probe runs in the release namespace, outside the
  // job's namespace's PodTolerationRestriction: without this list a researcher's
  // toleration of any taint (the control plane's, say) would follow it there (issue #19
  // item 7). A toleration without a key (every taint) is never taken.
  std::vector<std::string> toleration_keys = {"nvidia.com/gpu"};
};

struct Exemptions {
  std::vector<std::string> users;
  std::vector<std::string> groups;
  std::vector<std::string> service_accounts;  // "namespace/name"
};

struct RetryStrategy {
  int backoff_limit_count = 3;
  int backoff_base_seconds = 30;
  int backoff_max_seconds = 600;
};

// spec.admissionCheck.maxPendingSeconds: its default and bounds. The default is six times
// the base probe timeout (core/probe_timeout.h, 300 s): room for a probe that waits for its
// pods, runs and is retried once, as the default retryStrategy backs off.
inline constexpr int kDefaultMaxPendingSeconds = 1800;
inline constexpr int kMinMaxPendingSeconds = 60;
inline constexpr int kMaxMaxPendingSeconds = 86400;

// spec.admissionCheck: how commgate's Kueue admission check treats the Workloads it holds to
// this policy (issue #23; docs/kueue.md). The TrainingJob path reads none of it.
struct AdmissionCheckSettings {
  // The longest a Workload's check entry stays Pending, holding its quota, while the pool's
  // probe is needed or running; past it the check writes Retry (Kueue evicts the Workload,
  // releases the quota and requeues it after the retryStrategy backoff). Kueue has no
  // timeout on Pending of its own.
  int max_pending_seconds = kDefaultMaxPendingSeconds;
  WithoutModelAction without_model = WithoutModelAction::kReady;
};

// spec.maxExtrapolation when absent: decide node counts up to 4x the probed count.
inline constexpr int kDefaultMaxExtrapolation = 4;

struct CommPolicySpec {
  double max_comm_share = 0.30;
  std::optional<double> min_scaling_efficiency;
  EnforcementAction enforcement_action = EnforcementAction::kDownsize;
  LabelSelector namespace_selector;
  std::chrono::nanoseconds measurement_ttl = std::chrono::hours(24);
  MissingMeasurementAction on_missing_measurement = MissingMeasurementAction::kGate;
  ProbeSettings probe;
  Exemptions exemptions;
  RetryStrategy retry_strategy;
  // How far the model may extrapolate: node counts up to max_extrapolation x the probed
  // node count are decided from the measurement; beyond that the job is gated until a
  // probe at a larger count (spec.maxExtrapolation, >= 1).
  int max_extrapolation = kDefaultMaxExtrapolation;
  // allow (the default): commgate decides TrainingJobs only. deny: a multi-node GPU
  // workload of another kind is refused in every namespace this policy applies to, unless
  // commgate's operator created it or its requester is exempt here (docs/policy.md).
  // warn: admitted with the warning a refusal would give (to roll the gate out).
  UnmanagedWorkloads unmanaged_workloads = UnmanagedWorkloads::kAllow;
  InsufficientNodesAction on_insufficient_nodes = InsufficientNodesAction::kGate;
  AdmissionCheckSettings admission_check;
};

struct CommPolicy {
  ObjectMeta metadata;
  CommPolicySpec spec;
};

// The built-in default policy's name: one no CommPolicy object can have (a space is not
// allowed in object names), so decisions, records and counters never confuse it with an
// admin's CommPolicy named `default`.
inline constexpr const char* kBuiltinPolicyName = "built-in default";

// The policy commgate applies where no CommPolicy selects a namespace: at most 30% of each
// step spent exposed in communication, downsize when over, gate until measured, 24h TTL.
CommPolicy default_comm_policy();

// How messages name a policy: "CommPolicy team-nlp", or "the built-in default policy".
std::string policy_label(const std::string& name);

// Throws ValidationError naming the field path of every problem.
CommPolicy parse_comm_policy(const nlohmann::json& doc);
nlohmann::json to_json(const CommPolicy& policy);

}  // namespace commgate
