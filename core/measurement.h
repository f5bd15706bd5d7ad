// A measurement as the decision sees it: the pool's link (from a probe result or a
// CommProfile) and the compute step of the job's model (measured, or the job's hint).
#pragma once

#include <nlohmann/json.hpp>
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
  std::string source;  // where it came from, for messages ("CommProfile pool-all")
  // When the link was probed (the CommProfile's link.measuredAt, the probe's start):
  // status.measurement.probeTime. The link's staleness is judged on it.
  TimePoint measured_at{};
  // When the compute step of the job's model was measured (its record's measuredAt);
  // nullopt when the compute is the job's stepTimeHintMs or missing. Its staleness is
  // judged on it separately: a fresh link does not make an old compute record fresh.
  std::optional<TimePoint> compute_measured_at;
  int nodes_probed = 0;
  int procs_per_node = 1;
  LinkFit link;
  std::string backend, transport, interface_name, device, gpu_product;
  // The rated speed of the probed interface (core/link_rate.h); nullopt when not read.
  std::optional<PoolLink> links;

  std::optional<ComputeProfile> compute;
  ComputeSource compute_source = ComputeSource::kMeasured;
  std::string compute_missing_reason;  // set when compute is absent
  // The directly measured DDP-style step of the job's model, when the probe ran it, and
  // where: measured_ddp_nodes x measured_ddp_procs_per_node. It calibrates the model, so
  // it is set only when it ran on the link above (the same probe): a step measured on a
  // link since re-probed says nothing about the new one.
  std::optional<DdpStepResult> measured_ddp_step;
  int measured_ddp_nodes = 0;
  int measured_ddp_procs_per_node = 1;
  // Set when that step ran on an earlier link than `link` (a probe of another model has
  // measured the pool since; the record kept the link it ran on): the step calibrates the
  // model against that link, and the factor found applies to today's (docs/model.md);
  // no count is then shown as measured. nullopt: it ran on `link`.
  std::optional<LinkFit> measured_ddp_link;
  // Set when the compute record holds a DDP step that was left out because the link was
  // probed again since: why, for the decision's message and correction fields.
  std::string ddp_step_not_used;
  // How steady the measured compute step was (its record's spread); nullopt for a hint or
  // a record written before spreads were kept.
  std::optional<ComputeSpread> compute_spread;

  // The older of the link's and the compute record's times: as of when the whole
  // measurement holds (`commgate evaluate` of a file without --now judges it then).
  TimePoint oldest_measured_at() const;
};

// The compute profile a probe measured for its model: the forward, backward and
// optimizer medians, scaled to add up to the DDP-style step without communication when
// the probe ran one. That step ran interleaved with the communicating step, under the
// same load and with the same bucket copies, so the model's baseline and the measured
// step compare like with like (on a shared host the separate compute phase can differ
// from it by tens of percent).
ComputeProfile compute_profile_of(const ComputeResult& compute, const DdpStepResult* ddp_step);

// The compute step a measurement uses depends on the job's model (parameter count),
// gradient dtype, per-process batch and optimizer: a record matches a job only when all
// four agree (a record with batch 0, written before batches were recorded, matches any
// batch). Otherwise the job's stepTimeHintMs stands in, or the compute is missing.
bool compute_matches(const ComputeStepRecord& record, const ModelSpec& model);

// The link of a probe result, and its compute step when the probe ran the job's model;
// otherwise the job's stepTimeHintMs. It goes through the records a CommProfile stores
// (record_probe_result), so it equals measurement_from_profile of the profile the probe
// result makes, source aside: one probe, one decision, whichever path reads it.
Measurement measurement_from_probe(const ProbeResult& result, const ModelSpec& model,
                                   std::string source);
// The same from a pool's CommProfile: the newest matching compute record. Returns
// nullopt when the profile holds no link.
std::optional<Measurement> measurement_from_profile(const CommProfile& profile,
                                                    const ModelSpec& model);

// A measurement as a TrainingJob's status.measurement holds it (crds/, docs/api.md), and as
// `commgate evaluate -o json` and `kubectl commgate` print it: numbers rounded to 4
// significant digits (core/significant_digits.h), where people read them.
nlohmann::json measurement_to_json(const Measurement& m);

}  // namespace commgate
