// What rank 0 hands back: the full ProbeResult JSON on stdout and in --output, the
// compact form (<= 4096 bytes) in the termination-message file, a human summary on
// stderr. The writer is shared by the main thread and the watchdog and writes once.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>

#include "core/comm_model.h"
#include "core/probe_result.h"
#include "probe-job/probe_config.h"

namespace commgate::probe {

// The termination-message path: the flag when given ("" disables), else
// /dev/termination-log when it exists and is writable (a Kubernetes container).
std::optional<std::string> resolve_termination_log(const std::optional<std::string>& flag);

// What core's model predicts at the probed node count from the probe's own fit and
// compute profile: the check against the measured DDP-style step. Needs a compute
// result and at least 2 ranks.
std::optional<StepPrediction> predict_at_probe(const ProbeResult& result, const ProbeConfig& cfg);
// The same for one of the result's timed models.
std::optional<StepPrediction> predict_at_probe(const ProbeResult& result,
                                               const ComputeResult& compute,
                                               const DdpStepResult* ddp, const ProbeConfig& cfg);

std::string human_summary(const ProbeResult& result, const ProbeConfig& cfg);

// The compact form, or, should it ever exceed the limit, a minimal document that still
// parses and carries the error.
std::string termination_message(const ProbeResult& result);

class ReportWriter {
 public:
  ReportWriter(const ProbeConfig& cfg, std::ostream& out, std::ostream& err);

  void update(const std::function<void(ProbeResult&)>& change);
  ProbeResult snapshot() const;
  // ncclGetVersion's, written as the full form's top-level "ncclVersion" (core's reader
  // ignores it; it is there for whoever reads the result).
  void set_nccl_version(const std::string& version);
  // Sets duration_seconds, applies `last_change`, writes every output. Only the first
  // call writes; later calls return false.
  bool publish(const std::function<void(ProbeResult&)>& last_change = {});
  // The --output file could not be written by publish(): the run then exits 1 (the
  // result is on stdout, but the file the user asked for is not there).
  bool output_failed() const { return output_failed_; }

 private:
  const ProbeConfig& cfg_;
  std::ostream& out_;
  std::ostream& err_;
  const std::chrono::steady_clock::time_point start_;
  mutable std::mutex mu_;
  ProbeResult result_;
  std::string nccl_version_;
  bool published_ = false;
  bool output_failed_ = false;
};

}  // namespace commgate::probe
