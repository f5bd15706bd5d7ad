#include "core/measurement.h"

#include <cmath>

#include "core/quantity.h"

namespace commgate {
namespace {

// The compute step depends on the model and on the per-process batch; a record with
// batch 0 (unknown) matches any batch.
bool same_model(double parameters, const std::string& dtype, int batch_size,
                const ModelSpec& model) {
  // Parameter counts are written rounded ("340M"); 0.5% is the same model.
  return std::fabs(parameters - model.parameters) <= 0.005 * model.parameters &&
         dtype == model.gradient_dtype && (batch_size == 0 || batch_size == model.batch_size);
}

ComputeProfile profile_from_ms(double step_ms, double fwd_ms, double bwd_ms, double opt_ms) {
  if (fwd_ms > 0 && bwd_ms > 0) return ComputeProfile{fwd_ms / 1e3, bwd_ms / 1e3, opt_ms / 1e3};
  return ComputeProfile::from_step_time(step_ms / 1e3);
}

void use_hint_or_explain(Measurement& m, const ModelSpec& model, const std::string& measured_what) {
  if (model.step_time_hint_ms) {
    m.compute = ComputeProfile::from_step_time(*model.step_time_hint_ms / 1e3);
    m.compute_source = ComputeSource::kHint;
    return;
  }
  m.compute_missing_reason = "no compute measurement for a " + format_count(model.parameters) +
                             "-parameter " + model.gradient_dtype + " model at batch " +
                             std::to_string(model.batch_size) + " (" + measured_what +
                             ") and no spec.model.stepTimeHintMs";
}

}  // namespace

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
  Measurement m;
  m.source = std::move(source);
  m.measured_at = r.start_time;
  m.nodes_probed = r.nodes;
  m.procs_per_node = r.procs_per_node;
  m.link = r.fit;
  m.backend = r.backend;
  m.transport = r.transport;
  m.interface_name = r.interface_name;
  m.device = r.device;
  m.gpu_product = r.gpu_product;
  if (r.compute &&
      same_model(r.compute->parameters, r.compute->gradient_dtype, r.compute->batch_size, model)) {
    m.compute = compute_profile_of(*r.compute, r.ddp_step ? &*r.ddp_step : nullptr);
    m.measured_ddp_step = r.ddp_step;
  } else {
    use_hint_or_explain(m, model,
                        r.compute ? "the probe measured " + format_count(r.compute->parameters) +
                                        " " + r.compute->gradient_dtype + " at batch " +
                                        std::to_string(r.compute->batch_size)
                                  : "the probe measured no compute step");
  }
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
  const ComputeStepRecord* best = nullptr;
  for (const auto& c : p.status.compute_steps) {
    if (!same_model(c.parameters, c.gradient_dtype, c.batch_size, model)) continue;
    if (!best || c.measured_at > best->measured_at) best = &c;
  }
  if (best) {
    m.compute = profile_from_ms(best->step_time_ms, best->forward_ms, best->backward_ms,
                                best->optimizer_ms);
    // Compute older than the link makes the whole measurement as old as the compute.
    m.measured_at = std::min(m.measured_at, best->measured_at);
  } else {
    use_hint_or_explain(m, model, "the pool's profile has none for it");
  }
  return m;
}

}  // namespace commgate
