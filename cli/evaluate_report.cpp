#include "cli/evaluate_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <ostream>

#include "core/advice.h"
#include "core/comm_profile.h"
#include "core/job_decision.h"
#include "core/quantity.h"
#include "core/significant_digits.h"

namespace commgate {
namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Milliseconds as the decision's messages print them: whole from 100 ms ("16283 ms", as
// "each 22737 ms step" reads in the message below the table), 1 decimal from 1 ms, 2
// below. The trial of 2026-12-06 read "16280.0 ms" (a step stored to 4 significant
// digits, printed with a decimal) as a measured tenth.
std::string ms(double s) {
  const double v = s * 1e3;
  if (v == 0) return "0 ms";
  if (std::fabs(v) >= 100) return fmt("%.0f ms", v);
  return std::fabs(v) >= 1 ? fmt("%.1f ms", v) : fmt("%.2f ms", v);
}

// "1 proc", "8 procs".
std::string counted(int64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

}  // namespace

std::string prediction_verdict(const StepPrediction& p, const CommPolicySpec& policy,
                               int64_t decided) {
  if (p.nodes > decided) return kNotDecidedVerdict;
  return meets_policy(p, policy) ? "pass" : "over";
}

std::string predictions_table(const std::vector<PredictionRow>& rows, const std::string& indent) {
  std::string out;
  char line[300];
  std::snprintf(line, sizeof line, "%s%5s  %11s  %11s  %11s  %11s  %9s  %7s  %10s  %s\n",
                indent.c_str(), "NODES", "STEP", "COMPUTE", "ALLREDUCE", "EXPOSED", "COMMSHARE",
                "SPEEDUP", "EFFICIENCY", "POLICY");
  out += line;
  int previous = 0;
  for (const PredictionRow& row : rows) {
    const StepPrediction& s = row.prediction;
    if (s.nodes > previous + 1) out += indent + "  ...\n";  // counts not shown
    previous = s.nodes;
    std::snprintf(line, sizeof line,
                  "%s%5d  %11s  %11s  %11s  %11s  %8.1f%%  %6.2fx  %9.1f%%  %s\n", indent.c_str(),
                  s.nodes, ms(s.step_s).c_str(), ms(s.compute_s).c_str(), ms(s.allreduce_s).c_str(),
                  ms(s.exposed_comm_s).c_str(), s.comm_share * 100, s.speedup,
                  s.scaling_efficiency * 100, (row.verdict + row.notes).c_str());
    out += line;
  }
  return out;
}

std::string advice_line(const std::string& kind, const std::string& text, bool fit_poor) {
  if (kind != advice_kind::kLinkRate || !fit_poor) return text;
  return "Uncertain, as the probe's fit of the link is poor (its bandwidth may be off): " + text;
}

std::string job_name(const TrainingJob& j) {
  return (j.metadata.namespace_.empty() ? "default" : j.metadata.namespace_) + "/" +
         j.metadata.name;
}

std::string shown_counts_text(const Decision& d) {
  const int n = d.requested_nodes;
  if (static_cast<int>(d.predictions.size()) >= n)
    return "every count from 1 to " + std::to_string(n);
  std::string named;
  auto name = [&](const char* what, int count) {
    // Counts up to kAllCountsShownUpTo are all shown anyway.
    if (count <= kAllCountsShownUpTo || count > n || !d.prediction_for(count)) return;
    if (named.find("(" + std::to_string(count) + ")") != std::string::npos) return;
    named += std::string(named.empty() ? "" : ", ") + what + " (" + std::to_string(count) + ")";
  };
  name("requested", n);
  if (d.admitted_nodes != n) name("admitted", d.admitted_nodes);
  if (d.largest_passing_nodes != d.admitted_nodes) name("largest passing", d.largest_passing_nodes);
  if (d.largest_passing_nodes + 1 != n) name("first failing", d.largest_passing_nodes + 1);
  name("probed", d.nodes_probed);
  return "1-" + std::to_string(kAllCountsShownUpTo) + ", powers of two, and the " + named +
         " counts: " + std::to_string(d.predictions.size()) + " of " + std::to_string(n);
}

void print_evaluation_table(const Evaluation& e, std::ostream& out) {
  const TrainingJob& job = *e.job;
  const ModelSpec& model = job.spec.model;
  // The closed form: listing every bucket of a 1e15-parameter model would take gigabytes.
  const BucketSchedule buckets = ddp_buckets(model.gradient_bytes(), DdpConfig{});
  out << "TrainingJob " << job_name(job) << ": " << format_nodes(job.spec.num_nodes) << " x "
      << counted(job.spec.num_proc_per_node, "proc") << ", " << format_count(model.parameters)
      << " parameters, " << model.gradient_dtype << " gradients ("
      << format_bytes(model.gradient_bytes()) << " per step in " << buckets.count()
      << " DDP buckets)\n";
  const CommPolicySpec& p = e.policy->spec;
  out << "Policy      " << e.policy->metadata.name << ": maxCommShare "
      << fmt("%.0f%%", p.max_comm_share * 100);
  if (p.min_scaling_efficiency)
    out << ", minScalingEfficiency " << fmt("%.0f%%", *p.min_scaling_efficiency * 100);
  out << ", enforcementAction " << to_string(p.enforcement_action) << ", onMissingMeasurement "
      << to_string(p.on_missing_measurement) << "\n";
  if (!e.policy_chosen.empty()) out << "            " << e.policy_chosen << "\n";
  if (const Measurement* m = e.measurement) {
    out << "Measurement " << m->source << " (link measured at " << format_rfc3339(m->measured_at)
        << "): " << format_nodes(m->nodes_probed) << " probed, " << m->backend;
    if (!m->transport.empty()) out << " over " << m->transport;
    out << ", busbw " << fmt("%.3g GB/s", m->link.busbw_bytes_per_s / 1e9) << ", latency "
        << fmt("%.3g us", m->link.latency_s * 1e6);  // as the chart's header writes it
    if (m->link.poor)
      out << " (poor fit" << (m->link.note.empty() ? "" : ": " + m->link.note) << ")";
    out << "\n";
    if (m->compute) {
      out << "            compute step " << ms(m->compute->total_s()) << " (forward "
          << ms(m->compute->forward_s) << ", backward " << ms(m->compute->backward_s)
          << ", optimizer " << ms(m->compute->optimizer_s) << ")"
          << (m->compute_source == ComputeSource::kHint ? " from spec.model.stepTimeHintMs"
              : m->measured_ddp_step ? " measured (the DDP-style step without communication)"
                                     : " measured");
      if (m->compute_measured_at) out << " at " << format_rfc3339(*m->compute_measured_at);
      out << "\n";
    }
    if (m->measured_ddp_step) {
      // The share as the table's measured row computes it (beyond the compute step above),
      // so the two agree to the last digit (the user trial of 2026-12-07 saw 69.7 and 69.6).
      const double step_s = m->measured_ddp_step->step_time_ms / 1e3;
      const double share = m->compute && step_s > 0
                               ? std::max(0.0, 1 - m->compute->total_s() / step_s)
                               : m->measured_ddp_step->comm_share;
      out << "            measured DDP step at " << format_nodes(m->measured_ddp_nodes) << ": "
          << ms(step_s) << ", comm share " << fmt("%.1f%%", share * 100);
      // Why no row is marked measured (the same trial: a job of 8 processes per node was
      // not told).
      if (m->measured_ddp_procs_per_node != job.spec.num_proc_per_node)
        out << " (at " << counted(m->measured_ddp_procs_per_node, "proc") << " per node; this job "
            << "runs " << counted(job.spec.num_proc_per_node, "proc")
            << ", so no row is that step: it corrects the model, which decides every count)";
      out << "\n";
    } else if (!m->ddp_step_not_used.empty()) {
      out << "            not calibrated: " << m->ddp_step_not_used << "\n";
    }
  } else {
    out << "Measurement none\n";
  }
  if (!e.note.empty()) out << "Note        " << e.note << "\n";

  const Decision& d = e.decision;
  if (!d.predictions.empty()) {
    const int64_t decided = e.measurement ? counts_decided(p, e.measurement->nodes_probed)
                                          : std::numeric_limits<int64_t>::max();
    std::vector<PredictionRow> rows;
    for (const auto& s : d.predictions) {
      PredictionRow row{s, prediction_verdict(s, p, decided), ""};
      if (s.measured) row.notes += "  (measured)";
      if (s.nodes == d.requested_nodes) row.notes += "  <- requested";
      if (s.nodes == d.admitted_nodes && d.admitted_nodes != d.requested_nodes)
        row.notes += "  <- admitted";
      rows.push_back(row);
    }
    out << "\n" << predictions_table(rows, "") << "Shown: " << shown_counts_text(d) << "\n";
  }
  out << "\nDecision: " << to_string(d.action);
  if (d.action == Action::kDownsize)
    out << " to " << d.admitted_nodes << (d.admitted_nodes == 1 ? " node" : " nodes");
  if (d.would_action) out << " (would " << to_string(*d.would_action) << ")";
  out << " [" << d.reason << "]\n  " << d.message << "\n";
  if (!d.advice.empty()) {
    out << "\nWhat would make " << d.requested_nodes << " nodes pass (the verdict stands):\n";
    const bool fit_poor = e.measurement && e.measurement->link.poor;
    for (const Advice& a : d.advice) out << "  - " << advice_line(a.kind, a.text, fit_poor) << "\n";
  }
}

std::vector<ScalingPoint> scaling_points(const Evaluation& e) {
  const Decision& d = e.decision;
  if (d.predictions.empty() || e.measurement == nullptr) return {};
  const int requested = d.requested_nodes;
  const int top = std::max(requested, std::min(std::max({2 * requested, 8, d.nodes_probed}),
                                               kScalingChartAllCountsUpTo));
  std::vector<int> counts;
  if (top <= kScalingChartAllCountsUpTo) {
    for (int n = 1; n <= top; ++n) counts.push_back(n);
  } else {
    for (const auto& p : d.predictions) counts.push_back(p.nodes);
  }
  const CommPolicySpec& policy = e.policy->spec;
  const int64_t decided = counts_decided(policy, e.measurement->nodes_probed);
  std::vector<ScalingPoint> points;
  for (const StepPrediction& p : predict_counts(*e.measurement, e.job->spec, counts)) {
    ScalingPoint s;
    s.nodes = p.nodes;
    s.compute_ms = p.compute_s * 1e3;
    s.exposed_comm_ms = p.exposed_comm_s * 1e3;
    s.step_ms = p.step_s * 1e3;
    s.comm_share = p.comm_share;
    s.speedup = p.speedup;
    s.efficiency = p.scaling_efficiency;
    s.measured = p.measured;
    s.beyond_max_extrapolation = p.nodes > decided;
    // The policy judges no count past maxExtrapolation: the decision trusts no prediction
    // there (the trial of 2026-12-06 read "within policy" at 64 nodes of a 2-node probe).
    if (!s.beyond_max_extrapolation) s.within_policy = meets_policy(p, policy);
    points.push_back(s);
  }
  return points;
}

ScalingChart scaling_chart_of(const Evaluation& e) {
  const Decision& d = e.decision;
  const TrainingJob& job = *e.job;
  ScalingChart c;
  c.job = job_name(job);
  c.pool = pool_name(job.spec.node_selector);
  c.node_selector = format_node_selector(job.spec.node_selector);
  if (const Measurement* m = e.measurement) {
    std::string transport = m->backend;
    if (!m->transport.empty() && m->transport != "unknown") transport += " over " + m->transport;
    c.link_short = format_gbps(m->link.busbw_bytes_per_s) + " all-reduce busbw";
    c.link = "all-reduce busbw " + format_gbps(m->link.busbw_bytes_per_s) + " (" + transport +
             ", " + format_nodes(m->nodes_probed) + " probed), latency " +
             fmt("%.3g us", m->link.latency_s * 1e6);
    if (d.correction && (d.correction->exact || d.correction->factor != 1))
      c.link += calibration_note(m->link.busbw_bytes_per_s, d.correction->factor,
                                 d.correction->overlap, d.correction->step_overhead_s);
    else if (d.correction || !d.correction_not_applied.empty())
      c.link += kUncalibratedNote;
  } else {
    c.link = "not measured";
  }
  c.policy = policy_label(e.policy->metadata.name);
  c.max_comm_share = e.policy->spec.max_comm_share;
  c.min_scaling_efficiency = e.policy->spec.min_scaling_efficiency;
  c.max_extrapolation = std::max(1, e.policy->spec.max_extrapolation);
  c.action = to_string(d.action);
  c.reason = d.reason;
  c.requested_nodes = d.requested_nodes;
  c.admitted_nodes = d.admitted_nodes;
  c.nodes_probed = d.nodes_probed;
  c.points = scaling_points(e);
  if (c.points.empty()) {
    c.notes.push_back("No prediction to draw: " + d.message);
    return c;
  }
  const ScalingPoint& last = c.points.back();
  const bool every = static_cast<int>(c.points.size()) == last.nodes;
  c.notes.push_back(
      every ? "Counts 1 to " + std::to_string(last.nodes) + " (at least 8, twice the " +
                  format_nodes(d.requested_nodes) + " requested and the probed count; at most " +
                  std::to_string(kScalingChartAllCountsUpTo) + " unless more were requested)."
            : "Counts: " + shown_counts_text(d) + ".");
  if (std::any_of(c.points.begin(), c.points.end(),
                  [](const ScalingPoint& p) { return p.beyond_max_extrapolation; })) {
    c.notes.push_back(
        "Hatched: past maxExtrapolation " + std::to_string(c.max_extrapolation) + " x the " +
        format_nodes(d.nodes_probed) +
        " probed = " + std::to_string(counts_decided(e.policy->spec, d.nodes_probed)) +
        "; the policy decides none of these counts from this measurement (drawn as the model "
        "extrapolates).");
  }
  if (e.measurement)
    c.notes.push_back("Measurement: " + e.measurement->source + " (link measured at " +
                      format_rfc3339(e.measurement->measured_at) +
                      "). The numbers: commgate evaluate -o json, \"scaling\".");
  if (!e.note.empty()) c.notes.push_back("Note: " + e.note + ".");
  return c;
}

nlohmann::json decision_document(const std::string& job, nlohmann::json decision,
                                 const nlohmann::json& measurement) {
  std::string policy;
  if (decision.is_object()) {
    const auto p = decision.find("policy");
    if (p != decision.end() && p->is_string()) policy = p->get<std::string>();
    const auto action = decision.find("action");
    const std::string verdict =
        action != decision.end() && action->is_string() ? action->get<std::string>() : "";
    if (verdict == "Gate") decision["admittedNodes"] = nullptr;  // nothing admitted yet
    if (verdict == "Deny") decision["admittedNodes"] = 0;
    for (const char* list : {"predictions", "advice"})
      if (!decision.contains(list) || !decision[list].is_array())
        decision[list] = nlohmann::json::array();
  } else {
    decision = nullptr;
  }
  return {{"job", job},
          {"policy", policy},
          {"measurement", measurement.is_object() ? measurement : nlohmann::json()},
          {"decision", std::move(decision)}};
}

nlohmann::json evaluation_to_json(const Evaluation& e) {
  nlohmann::json j =
      decision_document(job_name(*e.job), decision_to_json(e.decision),
                        e.measurement ? measurement_to_json(*e.measurement) : nlohmann::json());
  if (!e.policy_chosen.empty()) j["policyChosen"] = e.policy_chosen;
  if (!e.note.empty()) j["note"] = e.note;
  if (!e.decision.predictions.empty()) j["predictionsShown"] = shown_counts_text(e.decision);
  // The chart's rows (--plot), past the request: cli/evaluate_report.h scaling_points.
  if (auto points = scaling_points(e); !points.empty()) j["scaling"] = scaling_points_json(points);
  return j;
}

void explain_poor_fit(Measurement& m) {
  if (m.link.poor) m.link.note = poor_fit_note(m.link);
}

}  // namespace commgate
