#include "operator/decision_status.h"

#include <algorithm>
#include <cstdio>

#include "core/job_decision.h"
#include "core/quantity.h"
#include "core/significant_digits.h"
#include "core/time_format.h"
#include "operator/trainingjob_phases.h"

namespace commgate::op {

using nlohmann::json;

namespace {

std::string two_decimals(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// What identifies a decision for counting: a new one differs in one of these.
bool same_decision(const json& a, const json& b) {
  if (!a.is_object() || !b.is_object()) return false;
  for (const char* k : {"action", "reason", "requestedNodes", "admittedNodes", "policy"}) {
    if (a.value(k, json()) != b.value(k, json())) return false;
  }
  return true;
}

}  // namespace

bool is_measurement_gate(const std::string& why) {
  return why == reason::kNoMeasurement || why == reason::kStaleMeasurement ||
         why == reason::kNoCompute || why == reason::kExtrapolationTooFar;
}

const char* decision_phase(commgate::Action action) {
  switch (action) {
    case commgate::Action::kDownsize:
      return phase::kDownsized;
    case commgate::Action::kDeny:
      return phase::kRejected;
    case commgate::Action::kGate:
      return phase::kGated;
    case commgate::Action::kAdmit:
    case commgate::Action::kWarn:
      break;
  }
  return phase::kAdmitted;
}

bool admits(commgate::Action a) {
  return a == commgate::Action::kAdmit || a == commgate::Action::kDownsize ||
         a == commgate::Action::kWarn;
}

Decision decision_of_record(const DecisionRecord& r) {
  Decision d;
  d.action = r.action;
  d.reason = r.reason;
  d.message =
      r.message.empty() ? std::string("decided at admission by commgate's webhook") : r.message;
  d.requested_nodes = r.requested_nodes;
  d.admitted_nodes = r.admitted_nodes;
  d.policy_name = r.policy.name.empty() ? kBuiltinPolicyName : r.policy.name;
  return d;
}

void put_decision(TrainingJobStatus& status, const Decision& d, const Measurement* m,
                  std::optional<Decision>& to_count) {
  json dj = decision_to_json(d);
  if (!same_decision(status.decision.value_or(json()), dj)) to_count = d;
  status.decision = std::move(dj);
  if (m) status.measurement = measurement_to_status(*m);
}

json measurement_to_status(const Measurement& m) {
  // Rounded where people read them (kubectl describe): a measurement supports 4
  // significant digits, not 676.3000000000001 (core/significant_digits.h).
  const auto r = [](double v) { return round_significant(v); };
  json j = {{"source", m.source},
            {"probeTime", format_rfc3339(m.measured_at)},
            {"busbwGBps", r(m.link.busbw_bytes_per_s / 1e9)},
            {"latencyUs", r(m.link.latency_s * 1e6)},
            {"fitPoor", m.link.poor}};
  if (m.nodes_probed > 0) j["nodesProbed"] = m.nodes_probed;
  if (m.procs_per_node > 0) j["procsPerNode"] = m.procs_per_node;
  auto text = [&](const char* key, const std::string& value) {
    if (!value.empty()) j[key] = value;
  };
  text("backend", m.backend);
  text("transport", m.transport);
  text("interface", m.interface_name);
  text("device", m.device);
  text("gpuProduct", m.gpu_product);
  if (m.link.poor) text("fitNote", m.link.note);
  if (m.compute_measured_at) j["computeMeasuredAt"] = format_rfc3339(*m.compute_measured_at);
  if (m.compute) {
    j["computeStepMs"] = r(m.compute->total_s() * 1e3);
    j["computeSource"] = m.compute_source == ComputeSource::kHint ? "hint" : "measured";
  }
  if (m.measured_ddp_step) {
    j["measuredStepMs"] = r(m.measured_ddp_step->step_time_ms);
    j["exposedCommMs"] = r(m.measured_ddp_step->exposed_comm_ms);
    j["measuredCommShare"] = r(std::clamp(m.measured_ddp_step->comm_share, 0.0, 1.0));
  }
  return j;
}

std::string decision_event_note(const Decision& d, const CommPolicy& policy, const Measurement* m) {
  const std::string busbw =
      m ? "; measured all-reduce busbw " + format_gbps(m->link.busbw_bytes_per_s) : "";
  switch (d.action) {
    case commgate::Action::kDownsize: {
      std::string note = "downsized from " + std::to_string(d.requested_nodes) + " to " +
                         format_nodes(d.admitted_nodes);
      // To the pool's size: the message says why (the pool, minNodes, the share there).
      if (d.reason == reason::kPoolTooSmall) return note + ": " + d.message;
      const StepPrediction* asked = d.prediction_for(d.requested_nodes);
      const StepPrediction* given = d.prediction_for(d.admitted_nodes);
      if (asked && given) {
        const double max = policy.spec.max_comm_share;
        if (asked->comm_share > max || !policy.spec.min_scaling_efficiency) {
          note += ": predicted communication share " + two_decimals(asked->comm_share) + " > " +
                  two_decimals(max) + " at " + format_nodes(d.requested_nodes) + ", " +
                  two_decimals(given->comm_share) + " at " + format_nodes(d.admitted_nodes);
        } else {
          note += ": predicted scaling efficiency " + two_decimals(asked->scaling_efficiency) +
                  " < " + two_decimals(*policy.spec.min_scaling_efficiency) + " at " +
                  format_nodes(d.requested_nodes) + ", " + two_decimals(given->scaling_efficiency) +
                  " at " + format_nodes(d.admitted_nodes);
        }
      }
      return note + " (" + policy_label(d.policy_name) + busbw + ")";
    }
    case commgate::Action::kAdmit:
      return "admitted at " + format_nodes(d.admitted_nodes) + ": " + d.message;
    case commgate::Action::kWarn:
      return "admitted at " + format_nodes(d.admitted_nodes) + " over policy: " + d.message;
    case commgate::Action::kDeny:
      return "denied: " + d.message;
    case commgate::Action::kGate:
      break;
  }
  return "suspended until measured: " + d.message;
}

}  // namespace commgate::op
