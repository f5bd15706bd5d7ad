// Renders one evaluation for people (a table) or for programs (JSON).
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/comm_policy.h"
#include "core/decision.h"
#include "core/measurement.h"
#include "core/training_job.h"

namespace commgate {

struct Evaluation {
  const TrainingJob* job = nullptr;
  const CommPolicy* policy = nullptr;
  const Measurement* measurement = nullptr;  // may be null
  Decision decision;
  std::string note;  // e.g. "measurement TTL not applied to a file"
};

void print_evaluation_table(const Evaluation& e, std::ostream& out);
nlohmann::json evaluation_to_json(const Evaluation& e);

}  // namespace commgate
