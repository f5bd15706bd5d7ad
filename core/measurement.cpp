#include "core/measurement.h"

#include <algorithm>
#include <cmath>

#include "core/profile_recording.h"
#include "core/quantity.h"
#include "core/significant_digits.h"

namespace commgate {
namespace {

ComputeProfile profile_from_ms(double step_ms, double fwd_ms, double bwd_ms, double opt_ms) {
  if (fwd_ms > 0 && bwd_ms > 0) return ComputeProfile{fwd_ms / 1e3, bwd_ms / 1e3, opt_ms / 1e3};
  return ComputeProfile::from_step_time(step_ms / 1e3);
}

std::string signature(double parameters, const std::string& dtype, int batch_size,
                      const std::string& optimizer) {
  return format_count(parameters) + " " + dtype + " at batch " + std::to_string(batch_size) +
         " with " + optimizer;
}

// "the probe measured 340M fp32 at batch 16 with adam", or every signature the profile
// holds: the same words whichever path the measurement came through.
std::string what_was_measured(const std::vector<ComputeStepRecord>& records) {
  if (records.empty()) return "the probe measured no compute step";
  std::string s = records.size() == 1 ? "the probe measured " : "the probes measured ";
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& c = records[i];
    if (i > 0) s += "; ";
    s += signature(c.parameters, c.gradient_dtype, c.batch_size, c.optimizer);
  }
  return s;
}

void use_hint_or_explain(Measurement& m, const ModelSpec& model,
                         const std::vector<ComputeStepRecord>& records) {
  if (model.step_time_hint_ms) {
    m.compute = ComputeProfile::from_step_time(*model.step_time_hint_ms / 1e3);
    m.compute_source = ComputeSource::kHint;
    return;
  }
  m.compute_missing_reason = "no compute measurement for a " + format_count(model.parameters) +
                             "-parameter " + model.gradient_dtype + " model at batch " +
                             std::to_string(model.batch_size) + " with " + model.optimizer + " (" +
                             what_was_measured(records) + ")";
}

}  // namespace

bool compute_matches(const ComputeStepRecord& c, const ModelSpec& model) {
  // Parameter counts are written rounded ("340M"); 0.5% is the same model.
  return std::fabs(c.parameters - model.parameters) <= 0.005 * model.parameters &&
         c.gradient_dtype == model.gradient_dtype &&
         (c.batch_size == 0 || c.batch_size == model.batch_size) && c.optimizer == model.optimizer;
}

ComputeProfile compute_profile_of(const ComputeResult& c, const DdpStepResult* ddp) {
  ComputeProfile p = profile_from_ms(c.step_time_ms, c.forward_ms, c.backward_ms, c.optimizer_ms);
  if (ddp && ddp->compute_only_step_time_ms > 0 && p.total_s() > 0) {
    const double scale = ddp->compute_only_step_time_ms / 1e3 / p.total_s();
    p.forward_s *= scale;
    p.backward_s *= scale;
    p.optimizer_s *= scale;
  }
  return p;
}

Measurement measurement_from_probe(const ProbeResult& r, const ModelSpec& model,
                                   std::string source) {
  CommProfile profile;
  record_probe_result(profile, r);
  Measurement m = *measurement_from_profile(profile, model);  // a probe always has a link
  m.source = std::move(source);
  return m;
}

std::optional<Measurement> measurement_from_profile(const CommProfile& p, const ModelSpec& model) {
  if (!p.status.link) return std::nullopt;
  const LinkRecord& l = *p.status.link;
  Measurement m;
  m.source = "CommProfile " + p.metadata.name;
  m.measured_at = l.measured_at;
  m.nodes_probed = l.nodes_probed;
  m.procs_per_node = l.procs_per_node;
  m.link.ranks = l.nodes_probed * l.procs_per_node;
  m.link.latency_s = l.latency_us * 1e-6;
  m.link.busbw_bytes_per_s = l.busbw_gbps * 1e9;
  m.link.max_relative_residual = l.max_relative_residual;
  m.link.poor = l.poor;
  m.link.note = l.note;
  m.backend = p.status.backend;
  m.transport = p.status.transport;
  m.interface_name = p.status.interface_name;
  m.device = p.status.device;
  m.gpu_product = p.status.gpu_product;
  m.links = p.status.links;
  const ComputeStepRecord* best = nullptr;
  for (const auto& c : p.status.compute_steps) {
    if (!compute_matches(c, model)) continue;
    if (!best || c.measured_at > best->measured_at) best = &c;
  }
  if (!best) {
    use_hint_or_explain(m, model, p.status.compute_steps);
    return m;
  }
  m.compute =
      profile_from_ms(best->step_time_ms, best->forward_ms, best->backward_ms, best->optimizer_ms);
  m.compute_measured_at = best->measured_at;
  m.compute_spread = best->spread;
  if (const auto& d = best->ddp_step) {
    // One probe writes the link and its model's record with the same time; a record older
    // than the link ran its DDP step on a link that has been probed again since.
    if (best->measured_at == l.measured_at || d->link_busbw_gbps > 0) {
      m.measured_ddp_step = static_cast<const DdpStepResult&>(*d);
      m.measured_ddp_nodes = d->nodes;
      m.measured_ddp_procs_per_node = d->procs_per_node;
      if (best->measured_at != l.measured_at) {
        LinkFit then;
        then.busbw_bytes_per_s = d->link_busbw_gbps * 1e9;
        then.latency_s = d->link_latency_us * 1e-6;
        m.measured_ddp_link = then;
      }
    } else {
      m.ddp_step_not_used = "the probe's DDP step at " + format_nodes(d->nodes) + " (" +
                            format_rfc3339(best->measured_at) +
                            ") ran on the link as it was then, not on the link measured at " +
                            format_rfc3339(l.measured_at);
    }
  }
  return m;
}

TimePoint Measurement::oldest_measured_at() const {
  return compute_measured_at ? std::min(measured_at, *compute_measured_at) : measured_at;
}

nlohmann::json measurement_to_json(const Measurement& m) {
  // Rounded where people read them (kubectl describe): a measurement supports 4
  // significant digits, not 676.3000000000001 (core/significant_digits.h).
  const auto r = [](double v) { return round_significant(v); };
  nlohmann::json j = {{"source", m.source},
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

}  // namespace commgate
