// A measurement as the decision sees it: the pool's link (from a probe result or a
// CommProfile) and the compute step of the job's model (measured, or the job's hint).
#pragma once

#include <optional>
#include <string>

#include "core/comm_model.h"
#include "core/comm_profile.h"
#include "core/probe_result.h"
#include "core/time_format.h"
#include "core/training_job.h"

namespace commgate {

enum class ComputeSource { kMeasured, kHint };

struct Measurement {
  std::string source;       // where it came from, for messages ("CommProfile pool-all")
  TimePoint measured_at{};  // of the link; staleness is judged on this
  int nodes_probed = 0;
  int procs_per_node = 1;
  LinkFit link;
  std::string backend, transport, interface_name, device, gpu_product;

  std::optional<ComputeProfile> compute;
  ComputeSource compute_source = ComputeSource::kMeasured;
  std::string compute_missing_reason;  // set when compute is absent
  // The directly measured DDP-style step at nodes_probed, when the probe ran the job's model.
  std::optional<DdpStepResult> measured_ddp_step;
};

// The compute profile a probe measured for its model: the forward, backward and
// optimizer medians, scaled to add up to the DDP-style step without communication when
// the probe ran one. That step ran interleaved with the communicating step, under the
// same load and with the same bucket copies, so the model's baseline and the measured
// step compare like with like (on a shared host the separate compute phase can differ
// from it by tens of percent).
ComputeProfile compute_profile_of(const ComputeResult& compute, const DdpStepResult* ddp_step);

// The link of a probe result, and its compute step when the probe ran the job's model
// (same parameter count and gradient dtype); otherwise the job's stepTimeHintMs.
Measurement measurement_from_probe(const ProbeResult& result, const ModelSpec& model,
                                   std::string source);
// The same from a pool's CommProfile. Returns nullopt when the profile holds no link.
std::optional<Measurement> measurement_from_profile(const CommProfile& profile,
                                                    const ModelSpec& model);

}  // namespace commgate
