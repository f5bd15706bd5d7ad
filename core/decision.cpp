#include "core/decision.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>

#include "core/compute_spread.h"
#include "core/quantity.h"
#include "core/significant_digits.h"

namespace commgate {
namespace {

// Shares are compared with a small tolerance so a prediction that equals the policy
// to the last printed digit passes, as a user reading the message would expect.
constexpr double kShareTolerance = 1e-9;

std::string ms(double seconds) {
  char buf[48];
  if (seconds < 0.01)
    std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  else if (seconds < 1e9)
    std::snprintf(buf, sizeof buf, "%.0f ms", seconds * 1e3);
  else  // beyond any real step: the digits would be noise, and once overflowed the buffer
    std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
  return buf;
}

// The model, corrected by the probe's own DDP step when it ran one, and at the count the
// probe ran the measurement itself. What decide() evaluates, one count at a time.
struct Predictor {
  ModelInputs raw;
  ModelInputs corrected;
  std::optional<StepCalibration> correction;
  int measured_nodes = 0;  // 0: no count has a measured row
  double measured_step_s = 0;

  StepPrediction at(int nodes) const {
    if (nodes == measured_nodes)
      return measured_step(corrected, nodes, corrected.compute.total_s(), measured_step_s);
    return predict_step(corrected, nodes);
  }
};

Predictor predictor_for(const Measurement& m, const TrainingJobSpec& job) {
  Predictor p;
  p.raw.compute = *m.compute;
  p.raw.link = LinkModel::from_fit(m.link, m.nodes_probed);
  p.raw.gradient_bytes = job.model.gradient_bytes();
  p.raw.procs_per_node = job.num_proc_per_node;
  p.corrected = p.raw;
  const int nodes = m.measured_ddp_nodes;
  if (!m.measured_ddp_step || nodes < 2) return p;
  const DdpStepResult& step = *m.measured_ddp_step;
  // Solve where the probe ran: its node and process counts, its bucket sizes, and the link
  // it ran on when that is not today's: the factor (effective over swept bandwidth) is
  // the pool's DDP overhead and applies to today's link as well.
  ModelInputs probed = p.raw;
  if (m.measured_ddp_link) probed.link = LinkModel::from_fit(*m.measured_ddp_link, nodes);
  probed.procs_per_node = m.measured_ddp_procs_per_node;
  if (step.bucket_cap_bytes > 0) probed.ddp.bucket_cap_bytes = step.bucket_cap_bytes;
  if (step.first_bucket_bytes > 0) probed.ddp.first_bucket_bytes = step.first_bucket_bytes;
  const double step_s = step.step_time_ms / 1e3;
  p.correction = calibrate_to_ddp_step(probed, nodes, step_s - p.raw.compute.total_s(),
                                       step.allreduce_ms / 1e3);
  p.corrected.link.busbw_bytes_per_s *= p.correction->factor;
  p.corrected.overlap = p.correction->overlap;
  p.corrected.step_overhead_s = p.correction->step_overhead_s;
  // The measured step is this job's step only when the job runs as many processes per
  // node as the probe did, on today's link, and when the model can explain it: a step
  // faster than full overlap at 4x the bandwidth gives (noise, or a step that did not
  // run as timed) decides nothing, not even its own count, or the count it admitted
  // would be over the policy in the model that everything else is decided by (the user
  // trial of 2026-12-07: admitted at 17.6% measured, advised at 66.9%).
  const bool unexplained_fast = !p.correction->exact && p.correction->factor == 1;
  if (job.num_proc_per_node == m.measured_ddp_procs_per_node && !m.measured_ddp_link &&
      !unexplained_fast) {
    p.measured_nodes = nodes;
    p.measured_step_s = step_s;
  }
  return p;
}

// The largest count in [1, hi] that meets the policy. The model's share never falls and
// its efficiency never rises as nodes are added (docs/model.md), so the passing counts
// are a prefix: a binary search finds its end in O(log hi) evaluations. The measured row
// may differ from the model at its one count; that count is judged on its own.
int largest_passing(const Predictor& p, const CommPolicySpec& policy, int hi) {
  auto model_passes = [&](int n) { return meets_policy(predict_step(p.corrected, n), policy); };
  const int top = hi;
  int lo = 1;  // one node sends nothing between nodes: always passes
  if (model_passes(hi)) {
    lo = hi;
  } else {
    while (hi - lo > 1) {  // lo passes, hi fails
      const int mid = lo + (hi - lo) / 2;
      (model_passes(mid) ? lo : hi) = mid;
    }
  }
  // A measured count that fails bounds every larger count too: they send more, and the
  // model that passes them could not reproduce the step measured (a correction at its
  // floor), so the passing counts stay a prefix (the user trial of 2026-12-07 saw 3 pass
  // beside a measured 2 that failed).
  const int m = p.measured_nodes;
  if (m >= 2 && m <= top) {
    if (meets_policy(p.at(m), policy))
      lo = std::max(lo, m);
    else if (lo >= m)
      lo = m - 1;
  }
  return lo;
}

// "40.0% of what DDP's schedule would hide behind backward": the overlap in words, for the
// decision's message and the chart's link line alike.
std::string share_of_schedule_hidden(double overlap) {
  return format_percent(overlap) + " of what DDP's schedule would hide behind backward";
}

// "measured all-reduce busbw 0.118 GB/s (gloo over socket, 2 nodes probed), compute step
// 180 ms", and the DDP step with the bandwidth it implies when the probe ran one.
std::string evidence(const Measurement& m, const Predictor& p) {
  std::string transport = m.backend;
  if (!m.transport.empty() && m.transport != "unknown") transport += " over " + m.transport;
  // A profile written without its backend (by hand, or an old one) says none.
  std::string s = "measured all-reduce busbw " + format_gbps(m.link.busbw_bytes_per_s) + " (" +
                  (transport.empty() ? "" : transport + ", ") + std::to_string(m.nodes_probed) +
                  " nodes probed), compute step " + ms(m.compute->total_s());
  if (m.compute_source == ComputeSource::kHint) s += " (from spec.model.stepTimeHintMs)";
  if (m.measured_ddp_step && p.correction) {
    s += ", DDP step " + ms(m.measured_ddp_step->step_time_ms / 1e3) + " at " +
         format_nodes(m.measured_ddp_nodes);
    // What the model takes from the step, in one parenthesis with the link it ran on (the
    // admin trial of 2026-12-07 read two busbw values in two parentheses in a row).
    std::string uses;
    const std::string buckets_alone =
        "its buckets all-reduced alone in " + ms(m.measured_ddp_step->allreduce_ms / 1e3);
    if (p.correction->from_buckets_alone)
      uses = buckets_alone + ": effective busbw " +
             format_gbps(p.corrected.link.busbw_bytes_per_s) +
             (p.correction->step_overhead_s > 0
                  ? ", no communication hidden behind backward, and " +
                        ms(p.correction->step_overhead_s) +
                        " a step beyond the all-reduce that does not grow with nodes"
                  : ", and it hid " + share_of_schedule_hidden(p.correction->overlap)) +
             ", which the model uses";
    else if (p.correction->exact && p.correction->factor != 1)
      uses = "effective busbw " + format_gbps(p.corrected.link.busbw_bytes_per_s) +
             (p.correction->overlap < 1 ? ", no communication hidden behind backward" : "") +
             ", which the model uses";
    else if (p.correction->exact && !m.measured_ddp_link)  // that one says its overlap
      uses = "it hid " + share_of_schedule_hidden(p.correction->overlap) + ", which the model uses";
    else if (p.correction->factor < 1)
      uses =
          "slower than any bandwidth down to 5% of the swept one explains; the model uses "
          "that floor, effective busbw " +
          format_gbps(p.corrected.link.busbw_bytes_per_s);
    else if (!p.correction->exact)
      uses = "no bandwidth reproduces it; the model is used as it is";
    // A time of the buckets alone that the calibration left out is said, not dropped.
    using Unused = StepCalibration::BucketsUnused;
    if (p.correction->buckets_unused != Unused::kNo) {
      uses = (uses.empty() ? "" : uses + "; ") + buckets_alone + " are not used (" +
             (p.correction->buckets_unused == Unused::kNoBandwidthGivesIt
                  ? "no bandwidth within 0.05-4x of the swept one gives that time"
                  : "at the bandwidth they give, the step would have exposed more than it did") +
             "): the step alone calibrates";
    }
    if (m.measured_ddp_link)
      s += " on the link as probed with it (busbw " +
           format_gbps(m.measured_ddp_link->busbw_bytes_per_s) + "; its factor " +
           format_count(round_significant(p.correction->factor, 3)) +
           (p.correction->overlap < 1 ? " and overlap " + format_percent(p.correction->overlap)
                                      : std::string()) +
           " applied to today's" + (uses.empty() ? "" : ": " + uses) + ")";
    else if (!uses.empty())
      s += " (" + uses + ")";
  } else if (!m.ddp_step_not_used.empty()) {
    s += "; the model is used uncorrected: " + m.ddp_step_not_used;
  }
  return s;
}

// Why the measurement is too old for the policy, naming the part that is (the link, or
// this model's compute step, each with its own time); "" when both are fresh.
std::string staleness(const Measurement& m, TimePoint now, std::chrono::nanoseconds ttl) {
  const std::string older = " is older than measurementTTL " + format_duration(ttl);
  if (now - m.measured_at > ttl)
    return "the link measurement from " + format_rfc3339(m.measured_at) + older;
  if (m.compute_measured_at && now - *m.compute_measured_at > ttl) {
    return "the compute measurement of this model from " + format_rfc3339(*m.compute_measured_at) +
           older + " (the link, measured at " + format_rfc3339(m.measured_at) + ", is fresh)";
  }
  return "";
}

std::string policy_limits(const CommPolicySpec& p, const std::string& name) {
  std::string s =
      policy_label(name) + " allows at most " + format_percent(p.max_comm_share) + " communication";
  if (p.min_scaling_efficiency)
    s += " and requires scaling efficiency >= " + format_percent(*p.min_scaling_efficiency);
  return s;
}

// "at 4 nodes the model predicts 35.9% of each 468 ms step in exposed communication
// (scaling efficiency 64.1%, extrapolated from 2 probed nodes)"; a measured row says
// "the probe measured".
std::string prediction_text(const StepPrediction& p, int nodes_probed) {
  std::string s = "at " + format_nodes(p.nodes) +
                  (p.measured ? " the probe measured " : " the model predicts ") +
                  format_percent(p.comm_share) + " of each " + ms(p.step_s) +
                  " step in exposed communication (scaling efficiency " +
                  format_percent(p.scaling_efficiency);
  if (!p.measured && nodes_probed > 0 && p.nodes > 1 && p.nodes != nodes_probed)
    s += ", extrapolated from " + format_nodes(nodes_probed) + " probed";
  return s + ")";
}

// Said when the request is far beyond the probed count but within the policy's limit.
inline constexpr int kFarExtrapolation = 4;

std::string extrapolation_caution(int requested, int nodes_probed) {
  if (nodes_probed < 1 || requested <= kFarExtrapolation * nodes_probed) return "";
  return " Caution: " + std::to_string(requested) + " nodes is " +
         std::to_string(requested / nodes_probed) + "x the " + format_nodes(nodes_probed) +
         " probed; latency and contention the probe could not see grow with the count.";
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

// How many nodes can be decided: from this measurement, and from the largest probe the
// policy allows (probe.maxNodes, or the probe already made if that was larger).
struct Reach {
  int64_t k = 1;             // maxExtrapolation
  int64_t decided = 1;       // k x the nodes probed
  int largest_probe = 1;     // max(nodes probed, probe.maxNodes)
  int64_t by_any_probe = 1;  // k x largest_probe
};

Reach reach_of(const CommPolicySpec& policy, int nodes_probed) {
  Reach r;
  r.k = std::max(1, policy.max_extrapolation);
  r.decided = r.k * std::max(1, nodes_probed);
  r.largest_probe = std::max(nodes_probed, policy.probe.max_nodes);
  r.by_any_probe = r.k * r.largest_probe;
  return r;
}

// "spec.numNodes 10000 is more than any probe the built-in default policy allows can decide:
// maxExtrapolation 4 x probe.maxNodes 4 = 16 nodes"
std::string beyond_reach_text(int requested, const CommPolicySpec& policy,
                              const std::string& policy_name, const Reach& reach) {
  std::string s = "spec.numNodes " + std::to_string(requested) + " is more than any probe " +
                  policy_label(policy_name) + " allows can decide: maxExtrapolation " +
                  std::to_string(reach.k) + " x ";
  s += reach.largest_probe > policy.probe.max_nodes
           ? "the " + format_nodes(reach.largest_probe) + " probed"
           : "probe.maxNodes " + std::to_string(policy.probe.max_nodes);
  return s + " = " + format_nodes(reach.by_any_probe);
}

// A request no allowed probe can decide, while a larger allowed probe would decide more
// counts than this measurement does. Where enforcement leaves no way to admit any count
// in [minNodes, numNodes] it is denied now; otherwise it is gated until the largest
// probe, and then decided as a request over the policy.
Decision beyond_any_probe_before_largest_probe(Decision d, const TrainingJobSpec& job,
                                               const CommPolicySpec& policy, const Reach& reach,
                                               const std::string& fit_warning) {
  const std::string beyond = beyond_reach_text(job.num_nodes, policy, d.policy_name, reach);
  const std::string ask = "ask for at most " + format_nodes(reach.by_any_probe) +
                          ", or have an admin raise probe.maxNodes or maxExtrapolation";
  if (policy.enforcement_action == EnforcementAction::kDeny) {
    d.action = Action::kDeny;
    d.reason = reason::kDenied;
    d.admitted_nodes = 0;
    d.message = beyond + ". Denied (enforcementAction: deny): " + ask + "." + fit_warning;
    return d;
  }
  if (policy.enforcement_action == EnforcementAction::kDownsize &&
      job.min_nodes > reach.by_any_probe) {
    d.action = Action::kDeny;
    d.reason = reason::kNoCountMeetsPolicy;
    d.admitted_nodes = 0;
    d.message = beyond + ", and " + job.min_nodes_field + " (" + std::to_string(job.min_nodes) +
                ") is more than that, so it cannot be downsized: " + ask + "." + fit_warning;
    return d;
  }
  d.action = Action::kGate;
  d.reason = reason::kExtrapolationTooFar;
  d.admitted_nodes = d.requested_nodes;
  std::string then;
  switch (policy.enforcement_action) {
    case EnforcementAction::kWarn:
      then = "admitted over the policy with a warning (enforcementAction: warn)";
      break;
    case EnforcementAction::kDryRun:
      then = "admitted unchanged (enforcementAction: dryrun)";
      break;
    default:
      then = "downsized to the largest count from " + job.min_nodes_field + " (" +
             std::to_string(job.min_nodes) + ") to " + std::to_string(reach.by_any_probe) +
             " that passes, or denied if none does";
  }
  d.message = beyond + ". The job is suspended until a probe of " +
              format_nodes(reach.largest_probe) + " measures the link; then it is " + then + "." +
              fit_warning;
  return d;
}

// A missing, stale or incomplete measurement: the policy's onMissingMeasurement. A gate
// waits for a probe of at most probe.maxNodes nodes, so a request beyond what such a
// probe can decide is said to be so now (and denied now where nothing could be admitted).
Decision missing_measurement(Decision d, const TrainingJobSpec& job, const CommPolicySpec& policy,
                             const char* code, const std::string& why) {
  Decision out = missing(d, policy, code, why);
  const Reach next_probe = reach_of(policy, 0);
  if (out.action != Action::kGate || job.num_nodes <= next_probe.by_any_probe) return out;
  out = beyond_any_probe_before_largest_probe(d, job, policy, next_probe, "");
  out.message = why + ". " + out.message;
  if (out.action == Action::kGate) out.reason = code;
  return out;
}

}  // namespace

std::vector<StepPrediction> predict_counts(const Measurement& m, const TrainingJobSpec& job,
                                           const std::vector<int>& counts) {
  if (!m.compute) return {};
  const Predictor predictor = predictor_for(m, job);
  std::vector<StepPrediction> out;
  out.reserve(counts.size());
  for (int n : counts) out.push_back(predictor.at(n));
  return out;
}

int64_t counts_decided(const CommPolicySpec& policy, int nodes_probed) {
  return reach_of(policy, nodes_probed).decided;
}

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
    d.message = "admitted without a communication check: " + exemption + " is exempt under " +
                policy_label(d.policy_name);
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
    return missing_measurement(d, job, policy, reason::kNoMeasurement,
                               "no measurement of the link between these nodes yet");
  if (const std::string why = staleness(*m, in.now, policy.measurement_ttl); !why.empty())
    return missing_measurement(d, job, policy, reason::kStaleMeasurement, why);
  if (!m->compute)
    return missing_measurement(
        d, job, policy, reason::kNoCompute,
        m->compute_missing_reason +
            (job.step_time_hint_field.empty() ? "" : " and no " + job.step_time_hint_field));

  d.nodes_probed = m->nodes_probed;
  const Predictor predictor = predictor_for(*m, job);
  if (predictor.correction) d.correction = predictor.correction;
  if (!m->measured_ddp_step) d.correction_not_applied = m->ddp_step_not_used;
  const Reach reach = reach_of(policy, m->nodes_probed);
  // The counts this measurement decides: beyond them a larger probe decides, or none can.
  const int top = static_cast<int>(std::min<int64_t>(job.num_nodes, reach.decided));
  const bool too_far = job.num_nodes > reach.decided;
  const bool beyond_any_probe = job.num_nodes > reach.by_any_probe;
  d.largest_passing_nodes = largest_passing(predictor, policy, top);
  // A count no allowed probe can decide cannot be shown to meet the policy: it is judged
  // as one over it (and has no prediction).
  const std::optional<StepPrediction> requested =
      beyond_any_probe ? std::nullopt : std::optional(predictor.at(job.num_nodes));
  const bool passes = requested && meets_policy(*requested, policy);
  // Over policy: the largest passing count in [minNodes, numNodes), if any.
  const int downsize_to =
      !passes && d.largest_passing_nodes >= job.min_nodes ? d.largest_passing_nodes : 0;
  const int admitted_if_decided = passes ? job.num_nodes : downsize_to;
  // Until the largest allowed probe the rows reach the request, as the model extrapolates
  // it (for information: a gate); once decided, a count that no probe can decide shows
  // only the counts that can be.
  const bool decided_within_reach = beyond_any_probe && reach.decided >= reach.by_any_probe;
  const int shown_up_to = decided_within_reach ? top : job.num_nodes;
  for (int n : shown_node_counts(shown_up_to, too_far ? 0 : admitted_if_decided,
                                 d.largest_passing_nodes, d.nodes_probed)) {
    d.predictions.push_back(predictor.at(n));
    if (predictor.correction) d.raw_predictions.push_back(predict_step(predictor.raw, n));
  }
  const std::string fit_warning =
      (m->link.poor ? " Caution: " + poor_fit_note(m->link) + "." : "") +
      (m->compute_spread ? compute_noise_caution(*m->compute_spread) : "");

  if (too_far && !beyond_any_probe) {
    d.action = Action::kGate;
    d.reason = reason::kExtrapolationTooFar;
    d.admitted_nodes = d.requested_nodes;
    const int needed = static_cast<int>((job.num_nodes + reach.k - 1) / reach.k);
    d.message =
        "spec.numNodes " + std::to_string(job.num_nodes) + " is more than " +
        policy_label(d.policy_name) + "'s maxExtrapolation " + std::to_string(reach.k) + " x the " +
        format_nodes(m->nodes_probed) + " probed (" + std::to_string(reach.decided) +
        "); the job is suspended until a probe of at least " + format_nodes(needed) +
        " measures the link (" + prediction_text(*requested, d.nodes_probed) + ")." + fit_warning;
    return d;
  }
  if (beyond_any_probe && reach.decided < reach.by_any_probe)
    return beyond_any_probe_before_largest_probe(d, job, policy, reach, fit_warning);
  const std::string caution = extrapolation_caution(top, m->nodes_probed) + fit_warning;

  if (passes) {
    d.action = Action::kAdmit;
    d.reason = reason::kWithinPolicy;
    d.admitted_nodes = job.num_nodes;
    d.message = prediction_text(*requested, d.nodes_probed);
    d.message[0] = 'A';
    // Which policy, as a refusal names it (the admin trial of 2026-12-07: "within policy
    // (20.0%)" named none).
    d.message += ", within the limit: " + policy_limits(policy, d.policy_name) + "; " +
                 evidence(*m, predictor) + "." + caution;
    return d;
  }

  std::string over;
  if (requested) {
    over = prediction_text(*requested, d.nodes_probed);
    over[0] = 'A';
    over += ", over the limit: " + policy_limits(policy, d.policy_name);
  } else {
    over = beyond_reach_text(job.num_nodes, policy, d.policy_name, reach) +
           "; nothing beyond it can be shown to meet the policy";
  }
  over += "; " + evidence(*m, predictor) + ".";
  if (requested) {
    d.advice =
        advise(predictor.corrected, policy, job.model, job.num_nodes, d.largest_passing_nodes);
    if (auto link = link_rate_advice(m->link.busbw_bytes_per_s, m->backend, m->transport,
                                     m->interface_name, m->links))
      d.advice.push_back(*link);
  }
  // One node sends nothing between nodes, so some count always passes.
  const std::string largest = largest_passing_sentence(d.largest_passing_nodes);
  const Action enforced = downsize_to > 0 ? Action::kDownsize : Action::kDeny;
  auto downsize_or_deny_text = [&]() {
    if (downsize_to > 0) {
      return " Downsized from " + std::to_string(job.num_nodes) + " to " +
             format_nodes(downsize_to) + ": " +
             prediction_text(*d.prediction_for(downsize_to), d.nodes_probed) + ".";
    }
    if (!job.resizable) return largest;  // admitted at its count or not: nothing to downsize
    if (job.min_nodes > top) {
      return " Even " + job.min_nodes_field + " (" + std::to_string(job.min_nodes) +
             ") is more than " + std::to_string(top) + ", so it cannot be downsized." + largest;
    }
    return " Even " + job.min_nodes_field + " (" + std::to_string(job.min_nodes) +
           ") does not pass, so it cannot be downsized." + largest;
  };

  switch (policy.enforcement_action) {
    case EnforcementAction::kDownsize:
      d.action = enforced;
      d.reason = downsize_to > 0 ? reason::kDownsized : reason::kNoCountMeetsPolicy;
      d.admitted_nodes = downsize_to;
      d.message = over + downsize_or_deny_text() + caution;
      return d;
    case EnforcementAction::kDeny:
      d.action = Action::kDeny;
      d.reason = reason::kDenied;
      d.admitted_nodes = 0;
      d.message = over + largest + caution;
      return d;
    case EnforcementAction::kWarn:
      d.action = Action::kWarn;
      d.reason = reason::kWarned;
      d.admitted_nodes = job.num_nodes;
      d.would_action = enforced;
      d.would_admit_nodes = downsize_to;
      d.message = over + largest + " Admitted anyway (enforcementAction: warn)." + caution;
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
          "; admitted unchanged." + caution;
      return d;
  }
  return d;
}

namespace {

// Rounded to what a measurement supports (4 significant digits): the status and
// `evaluate -o json` show 2641, not 2640.973962199576 (issue #21). The decision compared
// the unrounded values.
nlohmann::json prediction_rows(const std::vector<StepPrediction>& rows) {
  const auto r = [](double v) { return round_significant(v); };
  nlohmann::json table = nlohmann::json::array();
  for (const auto& p : rows) {
    table.push_back({{"nodes", p.nodes},
                     {"measured", p.measured},
                     {"stepTimeMs", r(p.step_s * 1e3)},
                     {"computeMs", r(p.compute_s * 1e3)},
                     {"allReduceMs", r(p.allreduce_s * 1e3)},
                     {"exposedCommMs", r(p.exposed_comm_s * 1e3)},
                     {"commShare", r(p.comm_share)},
                     {"speedup", r(p.speedup)},
                     {"scalingEfficiency", r(p.scaling_efficiency)}});
  }
  return table;
}

}  // namespace

std::vector<int> shown_node_counts(int requested, int admitted, int largest_passing,
                                   int nodes_probed) {
  std::vector<int> out;
  auto add = [&](int n) {
    if (n >= 1 && n <= requested) out.push_back(n);
  };
  for (int n = 1; n <= std::min(requested, kAllCountsShownUpTo); ++n) add(n);
  for (int n = 2 * kAllCountsShownUpTo; n <= requested; n *= 2) add(n);
  for (int n : {requested, admitted, largest_passing, largest_passing + 1, nodes_probed}) add(n);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
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
    j["predictedCommShare"] = round_significant(p->comm_share);  // as columns show it
  if (d.nodes_probed > 0) j["nodesProbed"] = d.nodes_probed;
  j["predictions"] = prediction_rows(d.predictions);
  if (d.correction) {
    // Applied when it changed the bandwidth: the exact factor, or the floor of a step
    // slower than any factor explains; one faster than the model allows is not applied.
    j["correction"] = {{"applied", d.correction->exact || d.correction->factor != 1},
                       {"busbwFactor", round_significant(d.correction->factor)},
                       {"overlap", round_significant(d.correction->overlap)},
                       {"reproducesMeasuredStep", d.correction->exact}};
    // Where the probe timed its buckets alone: whether the calibration took the bandwidth
    // from them (then with the overhead beyond them) or from the step alone.
    if (d.correction->from_buckets_alone) {
      j["correction"]["fromBucketsAlone"] = true;
      j["correction"]["stepOverheadMs"] = round_significant(d.correction->step_overhead_s * 1e3);
    } else if (d.correction->buckets_unused != StepCalibration::BucketsUnused::kNo) {
      j["correction"]["fromBucketsAlone"] = false;
    }
    j["rawPredictions"] = prediction_rows(d.raw_predictions);
  } else if (!d.correction_not_applied.empty()) {
    j["correction"] = {{"applied", false}, {"note", d.correction_not_applied}};
  }
  if (!d.advice.empty()) {
    j["advice"] = nlohmann::json::array();
    for (const Advice& a : d.advice) j["advice"].push_back({{"kind", a.kind}, {"text", a.text}});
  }
  return j;
}

std::string largest_passing_sentence(int nodes) {
  return " The largest count that passes is " + format_nodes(nodes) + ".";
}

std::string calibration_note(double swept_busbw_bytes_per_s, double factor, double overlap,
                             double step_overhead_s) {
  std::string s;
  if (factor != 1)
    s += "; the model uses the effective " + format_gbps(swept_busbw_bytes_per_s * factor) +
         " its DDP step implies";
  if (overlap < 1) {
    if (factor == 1)
      s += "; the model hides " + share_of_schedule_hidden(overlap) + ", as its DDP step implies";
    else
      s += overlap > 0 ? ", and hides " + share_of_schedule_hidden(overlap)
                       : ", and hides nothing behind backward";
  }
  if (step_overhead_s > 0) s += ", plus " + ms(step_overhead_s) + " a step that does not grow";
  return s;
}

}  // namespace commgate
