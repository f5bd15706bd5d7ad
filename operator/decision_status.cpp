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
  if (m) status.measurement = measurement_to_json(*m);
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
