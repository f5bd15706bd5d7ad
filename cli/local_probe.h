// Runs commgate-probe on this machine (`--local-ranks`), for `commgate evaluate` when
// no measurement is given.
#pragma once

#include <string>

#include "core/probe_result.h"
#include "core/training_job.h"

namespace commgate {

struct LocalProbeOptions {
  std::string probe_path;  // empty: next to this executable, then $PATH
  int ranks = 2;
  int timeout_seconds = 180;
  // The largest model whose compute step is measured here; larger ones are measured
  // for the link only (their compute then comes from spec.model.stepTimeHintMs).
  double max_compute_parameters = 400e6;
};

// Locates the probe binary; returns "" when it cannot be found.
std::string find_probe_binary(const std::string& explicit_path);

// Runs the probe for `model` (its parameter count, batch size and optimizer). Throws
// std::runtime_error with a message that says what is missing or what failed (including the probe's
// stderr tail).
ProbeResult run_local_probe(const ModelSpec& model, const LocalProbeOptions& options);

}  // namespace commgate
