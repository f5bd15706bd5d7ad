#include "core/profile_recording.h"

#include <algorithm>

namespace commgate {

void record_probe_result(CommProfile& profile, const ProbeResult& r, size_t max_compute_records) {
  LinkRecord l;
  l.latency_us = r.fit.latency_s * 1e6;
  l.busbw_gbps = to_gbps(r.fit.busbw_bytes_per_s);
  l.algbw_gbps = r.allreduce.empty() ? 0 : r.allreduce.back().algbw_gbps;
  l.nodes_probed = r.nodes;
  l.procs_per_node = r.procs_per_node;
  l.max_relative_residual = r.fit.max_relative_residual;
  l.poor = r.fit.poor;
  l.note = r.fit.note;
  l.measured_at = r.start_time;
  profile.status.link = l;
  profile.status.backend = r.backend;
  profile.status.transport = r.transport;
  profile.status.interface_name = r.interface_name;
  profile.status.device = r.device;
  profile.status.gpu_product = r.gpu_product;
  if (!r.compute) return;
  ComputeStepRecord c;
  c.parameters = r.compute->parameters;
  c.gradient_dtype = r.compute->gradient_dtype;
  c.batch_size = r.compute->batch_size;
  c.gpu_product = r.gpu_product;
  c.step_time_ms = r.compute->step_time_ms;
  c.forward_ms = r.compute->forward_ms;
  c.backward_ms = r.compute->backward_ms;
  c.optimizer_ms = r.compute->optimizer_ms;
  c.measured_at = r.start_time;
  auto& steps = profile.status.compute_steps;
  steps.erase(std::remove_if(steps.begin(), steps.end(),
                             [&](const ComputeStepRecord& s) {
                               return s.parameters == c.parameters &&
                                      s.gradient_dtype == c.gradient_dtype &&
                                      s.batch_size == c.batch_size &&
                                      s.gpu_product == c.gpu_product;
                             }),
              steps.end());
  steps.push_back(c);
  while (steps.size() > max_compute_records) steps.erase(steps.begin());
}

}  // namespace commgate
