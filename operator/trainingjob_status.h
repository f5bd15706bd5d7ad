// A TrainingJob's status, typed (docs/operator.md "Status"; the CRD's status schema). The
// operator owns the whole status: each reconcile reads it, its steps change fields, and
// the status step writes it once when it differs from the stored one.
//
// status.decision and status.measurement stay the JSON blocks that core's
// decision_to_json and core/measurement.h's measurement_to_json build (the CRD's
// shape, typed where they are made); the fields the reconciler reads and writes by name are
// typed here. Fields of operators before the measurement controller (probeAttempts,
// nextProbeTime: the pool's CommProfile keeps them now) are not read, so the first write
// drops them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "operator/conditions.h"

namespace commgate::op {

struct TrainingJobStatus {
  std::string phase;  // operator/trainingjob_phases.h; "" before the first write
  std::optional<int64_t> observed_generation;
  // The uid of the training Job this TrainingJob created ("" before it exists).
  std::string workload_uid;
  std::optional<int64_t> admitted_nodes;
  Conditions conditions;
  std::optional<nlohmann::json> decision;     // an object: decision_to_json
  std::optional<nlohmann::json> measurement;  // an object: measurement_to_json

  // From .status as stored (null or absent: empty). Lenient: a field of the wrong type,
  // which only a person or another version can have written, reads as absent and is
  // replaced by the next write.
  static TrainingJobStatus from_json(const nlohmann::json& status);
  nlohmann::json to_json() const;

  // Whether the training workload was created (core's workload_created, typed).
  bool workload_created() const;
  // status.decision.message, or `fallback` when none is shown.
  std::string decision_message(const std::string& fallback) const;

  bool operator==(const TrainingJobStatus&) const = default;
};

}  // namespace commgate::op
