#include "core/decision.h"

#include <algorithm>
#include <cstdio>

#include "core/quantity.h"

namespace commgate {
namespace {

// Shares are compared with a small tolerance so a prediction that equals the policy
// to the last printed digit passes, as a user reading the message would expect.
constexpr double kShareTolerance = 1e-9;

std::string ms(double seconds) {
  char buf[32];
  if (seconds < 0.01)
    std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f ms", seconds * 1e3);
  return buf;
}

// "measured busbw 0.118 GB/s (gloo over socket, 2 nodes probed), compute step 180 ms"
std::string evidence(const Measurement& m) {
  std::string transport = m.backend;
  if (!m.transport.empty() && m.transport != "unknown") transport += " over " + m.transport;
  std::string s = "measured all-reduce busbw " + format_gbps(m.link.busbw_bytes_per_s) + " (" +
                  transport + ", " + std::to_string(m.nodes_probed) +
                  " nodes probed), compute step " + ms(m.compute->total_s());
  if (m.compute_source == ComputeSource::kHint) s += " (from spec.model.stepTimeHintMs)";
  return s;
}

std::string policy_limits(const CommPolicySpec& p, const std::string& name) {
  std::string s = "CommPolicy " + name + " allows at most " + format_percent(p.max_comm_share) +
                  " communication";
  if (p.min_scaling_efficiency)
    s += " and requires scaling efficiency >= " + format_percent(*p.min_scaling_efficiency);
  return s;
}

std::string prediction_text(const StepPrediction& p) {
  return "at " + format_nodes(p.nodes) + " the model predicts " + format_percent(p.comm_share) +
         " of each " + ms(p.step_s) + " step in exposed communication (scaling efficiency " +
         format_percent(p.scaling_efficiency) + ")";
}

Decision missing(Decision d, const CommPolicySpec& policy, const char* code,
                 const std::string& why) {
  d.reason = code;
  switch (policy.on_missing_measurement) {
    case MissingMeasurementAction::kGate:
      d.action = Action::kGate;
      d.admitted_nodes = d.requested_nodes;
      d.message = why + "; the job is suspended until commgate has probed the nodes";
      break;
    case MissingMeasurementAction::kAdmit:
      d.action = Action::kAdmit;
      d.admitted_nodes = d.requested_nodes;
      d.message = why + "; admitted unmeasured (onMissingMeasurement: admit)";
      break;
    case MissingMeasurementAction::kDeny:
      d.action = Action::kDeny;
      d.admitted_nodes = 0;
      d.message = why + "; denied (onMissingMeasurement: deny)";
      break;
  }
  return d;
}

// A status holds at most about 64 prediction rows (a 10,000-node table would pass etcd's
// object limit): all of them up to 64 nodes, else 1-8, powers of two, and the counts a
// reader looks for (requested, admitted, largest passing) with their neighbours.
bool keep_prediction_row(const Decision& d, int n) {
  if (d.predictions.size() <= 64) return true;
  if (n <= 8 || (n & (n - 1)) == 0) return true;
  for (int anchor : {d.requested_nodes, d.admitted_nodes, d.largest_passing_nodes}) {
    if (anchor > 0 && n >= anchor - 1 && n <= anchor + 1) return true;
  }
  return false;
}

}  // namespace

const char* to_string(Action a) {
  switch (a) {
    case Action::kAdmit:
      return "Admit";
    case Action::kDownsize:
      return "Downsize";
    case Action::kDeny:
      return "Deny";
    case Action::kWarn:
      return "Warn";
    case Action::kGate:
      return "Gate";
  }
  return "?";
}

const StepPrediction* Decision::prediction_for(int nodes) const {
  for (const auto& p : predictions) {
    if (p.nodes == nodes) return &p;
  }
  return nullptr;
}

bool meets_policy(const StepPrediction& p, const CommPolicySpec& policy) {
  if (p.comm_share > policy.max_comm_share + kShareTolerance) return false;
  if (policy.min_scaling_efficiency &&
      p.scaling_efficiency + kShareTolerance < *policy.min_scaling_efficiency) {
    return false;
  }
  return true;
}

std::string exemption_of(const Requester& who, const Exemptions& ex) {
  if (who.username.empty() && who.groups.empty()) return "";
  for (const auto& u : ex.users) {
    if (!u.empty() && u == who.username) return "user " + u;
  }
  for (const auto& g : ex.groups) {
    if (std::find(who.groups.begin(), who.groups.end(), g) != who.groups.end()) return "group " + g;
  }
  for (const auto& sa : ex.service_accounts) {
    auto slash = sa.find('/');
    if (slash == std::string::npos) continue;
    if (who.username == "system:serviceaccount:" + sa.substr(0, slash) + ":" + sa.substr(slash + 1))
      return "service account " + sa;
  }
  return "";
}

bool is_exempt(const Requester& who, const Exemptions& ex) {
  return !exemption_of(who, ex).empty();
}

Decision decide(const DecisionInput& in) {
  const TrainingJobSpec& job = in.job->spec;
  const CommPolicySpec& policy = in.policy->spec;
  Decision d;
  d.requested_nodes = job.num_nodes;
  d.policy_name = in.policy->metadata.name;

  if (job.num_nodes < 1 || job.min_nodes < 1 || job.min_nodes > job.num_nodes) {
    d.action = Action::kDeny;
    d.reason = reason::kInvalidSpec;
    d.message = "spec.minNodes (" + std::to_string(job.min_nodes) +
                ") must be between 1 and spec.numNodes (" + std::to_string(job.num_nodes) + ")";
    return d;
  }
  if (const std::string exemption = exemption_of(in.requester, policy.exemptions);
      !exemption.empty()) {
    d.action = Action::kAdmit;
    d.reason = reason::kExempt;
    d.admitted_nodes = job.num_nodes;
    // Names the entry that matched: a requester exempt by group may have no user name
    // (`commgate evaluate --group`).
    d.message = "admitted without a communication check: " + exemption +
                " is exempt under CommPolicy " + d.policy_name;
    return d;
  }
  if (job.num_nodes == 1) {
    d.action = Action::kAdmit;
    d.reason = reason::kSingleNode;
    d.admitted_nodes = 1;
    d.largest_passing_nodes = 1;
    d.message = "a single-node job sends no gradients between nodes";
    return d;
  }

  const Measurement* m = in.measurement;
  if (!m)
    return missing(d, policy, reason::kNoMeasurement,
                   "no measurement of the link between these nodes yet");
  if (in.now - m->measured_at > policy.measurement_ttl) {
    return missing(d, policy, reason::kStaleMeasurement,
                   "the link measurement from " + format_rfc3339(m->measured_at) +
                       " is older than measurementTTL " + format_duration(policy.measurement_ttl));
  }
  if (!m->compute) return missing(d, policy, reason::kNoCompute, m->compute_missing_reason);

  ModelInputs inputs;
  inputs.compute = *m->compute;
  inputs.link = LinkModel::from_fit(m->link, m->nodes_probed);
  inputs.gradient_bytes = in.job->spec.model.gradient_bytes();
  inputs.procs_per_node = job.num_proc_per_node;
  d.predictions = predict_table(inputs, job.num_nodes);
  for (const auto& p : d.predictions) {
    if (meets_policy(p, policy)) d.largest_passing_nodes = p.nodes;
  }
  const StepPrediction& requested = d.predictions.back();
  const std::string fit_warning = m->link.poor ? " Caution: " + m->link.note + "." : "";

  if (meets_policy(requested, policy)) {
    d.action = Action::kAdmit;
    d.reason = reason::kWithinPolicy;
    d.admitted_nodes = job.num_nodes;
    d.message = prediction_text(requested);
    d.message[0] = 'A';
    d.message += ", within policy (" + format_percent(policy.max_comm_share) + "); " +
                 evidence(*m) + "." + fit_warning;
    return d;
  }

  // Over policy: the largest count in [minNodes, numNodes) that passes, if any.
  int downsize_to = 0;
  for (const auto& p : d.predictions) {
    if (p.nodes >= job.min_nodes && p.nodes < job.num_nodes && meets_policy(p, policy))
      downsize_to = p.nodes;
  }
  std::string over = prediction_text(requested);
  over[0] = 'A';
  over = over + ", over the limit: " + policy_limits(policy, d.policy_name) + "; " + evidence(*m) +
         ".";
  // One node sends nothing between nodes, so some count always passes.
  const std::string largest =
      " The largest count that passes is " + format_nodes(d.largest_passing_nodes) + ".";
  const Action enforced = downsize_to > 0 ? Action::kDownsize : Action::kDeny;
  auto downsize_or_deny_text = [&]() {
    if (downsize_to > 0) {
      return " Downsized from " + std::to_string(job.num_nodes) + " to " +
             format_nodes(downsize_to) + ": " + prediction_text(*d.prediction_for(downsize_to)) +
             ".";
    }
    return " Even spec.minNodes (" + std::to_string(job.min_nodes) +
           ") does not pass, so it cannot be downsized." + largest;
  };

  switch (policy.enforcement_action) {
    case EnforcementAction::kDownsize:
      d.action = enforced;
      d.reason = downsize_to > 0 ? reason::kDownsized : reason::kNoCountMeetsPolicy;
      d.admitted_nodes = downsize_to;
      d.message = over + downsize_or_deny_text() + fit_warning;
      return d;
    case EnforcementAction::kDeny:
      d.action = Action::kDeny;
      d.reason = reason::kDenied;
      d.admitted_nodes = 0;
      d.message = over + largest + fit_warning;
      return d;
    case EnforcementAction::kWarn:
      d.action = Action::kWarn;
      d.reason = reason::kWarned;
      d.admitted_nodes = job.num_nodes;
      d.would_action = enforced;
      d.would_admit_nodes = downsize_to;
      d.message = over + largest + " Admitted anyway (enforcementAction: warn)." + fit_warning;
      return d;
    case EnforcementAction::kDryRun:
      d.action = Action::kAdmit;
      d.reason = reason::kDryRun;
      d.admitted_nodes = job.num_nodes;
      d.would_action = enforced;
      d.would_admit_nodes = downsize_to;
      d.message =
          over + " Dry run: would " +
          (downsize_to > 0 ? "downsize to " + format_nodes(downsize_to) : std::string("deny")) +
          "; admitted unchanged." + fit_warning;
      return d;
  }
  return d;
}

nlohmann::json decision_to_json(const Decision& d) {
  nlohmann::json j = {{"action", to_string(d.action)},
                      {"reason", d.reason},
                      {"message", d.message},
                      {"policy", d.policy_name},
                      {"requestedNodes", d.requested_nodes},
                      {"admittedNodes", d.admitted_nodes},
                      {"largestPassingNodes", d.largest_passing_nodes}};
  if (d.would_action) j["wouldAction"] = to_string(*d.would_action);
  if (d.would_admit_nodes) j["wouldAdmitNodes"] = *d.would_admit_nodes;
  if (const StepPrediction* p = d.prediction_for(d.requested_nodes))
    j["predictedCommShare"] = p->comm_share;
  nlohmann::json table = nlohmann::json::array();
  for (const auto& p : d.predictions) {
    if (!keep_prediction_row(d, p.nodes)) continue;
    table.push_back({{"nodes", p.nodes},
                     {"stepTimeMs", p.step_s * 1e3},
                     {"computeMs", p.compute_s * 1e3},
                     {"allReduceMs", p.allreduce_s * 1e3},
                     {"exposedCommMs", p.exposed_comm_s * 1e3},
                     {"commShare", p.comm_share},
                     {"speedup", p.speedup},
                     {"scalingEfficiency", p.scaling_efficiency}});
  }
  j["predictions"] = table;
  return j;
}

}  // namespace commgate
