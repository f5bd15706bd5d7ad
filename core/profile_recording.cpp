#include "core/profile_recording.h"

#include <algorithm>

#include "core/measurement.h"
#include "core/significant_digits.h"

namespace commgate {

// Recorded to the 4 significant digits a measurement supports (the probe's compact result
// has no more): a unit conversion or the phases' scaling would otherwise store
// 2150.9999999999995 and 6548.8134155849475 (kubectl describe cprof, issue #21). The probe
// path and the profile path both decide from what is recorded here, so they agree.
LinkRecord link_record_of(const ProbeResult& r) {
  LinkRecord l;
  l.latency_us = round_significant(r.fit.latency_s * 1e6);
  l.busbw_gbps = round_significant(to_gbps(r.fit.busbw_bytes_per_s));
  l.algbw_gbps = r.allreduce.empty() ? 0 : round_significant(r.allreduce.back().algbw_gbps);
  l.nodes_probed = r.nodes;
  l.procs_per_node = r.procs_per_node;
  l.max_relative_residual = round_significant(r.fit.max_relative_residual);
  l.poor = r.fit.poor;
  l.note = r.fit.note;
  l.measured_at = r.start_time;
  return l;
}

namespace {

ComputeStepRecord record_of_model(const ProbeResult& r, const ComputeResult& compute,
                                  const DdpStepResult* ddp) {
  const ComputeProfile used = compute_profile_of(compute, ddp);
  ComputeStepRecord c;
  c.parameters = compute.parameters;
  c.gradient_dtype = compute.gradient_dtype;
  c.batch_size = compute.batch_size;
  c.optimizer = compute.optimizer;
  c.gpu_product = r.gpu_product;
  c.forward_ms = round_significant(used.forward_s * 1e3);
  c.backward_ms = round_significant(used.backward_s * 1e3);
  c.optimizer_ms = round_significant(used.optimizer_s * 1e3);
  c.step_time_ms = round_significant(c.forward_ms + c.backward_ms + c.optimizer_ms);
  if (!(c.step_time_ms > 0)) c.step_time_ms = compute.step_time_ms;
  c.measured_at = r.start_time;
  if (compute.p90_ms > 0) {
    // Rounded as the profile stores it, so the probe's and the profile's paths decide alike.
    ComputeSpread s = spread_of(compute);
    for (double* v : {&s.median_ms, &s.p10_ms, &s.p90_ms, &s.slowest_rank_ms})
      *v = round_significant(*v);
    c.spread = s;
  }
  if (ddp && ddp->step_time_ms > 0 && ddp->compute_only_step_time_ms > 0) {
    DdpStepRecord d;
    static_cast<DdpStepResult&>(d) = *ddp;
    d.step_time_ms = round_significant(d.step_time_ms);
    d.compute_only_step_time_ms = round_significant(d.compute_only_step_time_ms);
    d.exposed_comm_ms = round_significant(d.exposed_comm_ms);
    d.comm_share = round_significant(d.comm_share);
    d.allreduce_ms = round_significant(d.allreduce_ms);
    d.nodes = r.nodes;
    d.procs_per_node = r.procs_per_node;
    const LinkRecord link = link_record_of(r);
    d.link_busbw_gbps = link.busbw_gbps;
    d.link_latency_us = link.latency_us;
    c.ddp_step = d;
  }
  return c;
}

}  // namespace

std::vector<ComputeStepRecord> compute_records_of(const ProbeResult& r) {
  std::vector<ComputeStepRecord> records;
  if (r.compute)
    records.push_back(record_of_model(r, *r.compute, r.ddp_step ? &*r.ddp_step : nullptr));
  for (const ModelResult& m : r.additional_models)
    records.push_back(record_of_model(r, m.compute, m.ddp_step ? &*m.ddp_step : nullptr));
  return records;
}

bool same_signature(const ComputeStepRecord& a, const ComputeStepRecord& b) {
  return a.parameters == b.parameters && a.gradient_dtype == b.gradient_dtype &&
         a.batch_size == b.batch_size && a.optimizer == b.optimizer &&
         a.gpu_product == b.gpu_product;
}

void record_probe_result(CommProfile& profile, const ProbeResult& r, size_t max_compute_records) {
  profile.status.link = link_record_of(r);
  profile.status.backend = r.backend;
  profile.status.transport = r.transport;
  profile.status.interface_name = r.interface_name;
  profile.status.device = r.device;
  profile.status.gpu_product = r.gpu_product;
  profile.status.links = r.links;
  auto& steps = profile.status.compute_steps;
  for (const ComputeStepRecord& c : compute_records_of(r)) {
    steps.erase(std::remove_if(steps.begin(), steps.end(),
                               [&](const ComputeStepRecord& s) { return same_signature(s, c); }),
                steps.end());
    steps.push_back(c);
  }
  while (steps.size() > max_compute_records) steps.erase(steps.begin());
}

}  // namespace commgate
