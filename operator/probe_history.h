// A pool's probing as the measurement controller keeps it (CommProfile status.probe, typed):
// the failures in a row and the backoff they earned, and which probe Job's outcome was last
// recorded. In the CommProfile, not in the jobs that wait, so it survives a restart, a
// 409 and the jobs' own edits, and is one for the pool whoever asked (issue #21).
//
// The webhook does not read it (core/comm_profile.cpp ignores status fields it does not
// know): it is the controller's bookkeeping, not a measurement.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/time_format.h"

namespace commgate::op {

struct ProbeHistory {
  // Probes of the pool that failed in a row, since the last success or since no job
  // waited on the pool.
  int failed_attempts = 0;
  // No new probe before this time (the backoff after the last failure).
  std::optional<TimePoint> next_probe_time;
  std::string last_failure_reason;  // a kReasonProbe* (operator/probe_outcome.h)
  std::string last_failure_message;
  std::optional<TimePoint> last_failure_time;
  // The metadata.uid of the last probe Job whose outcome was recorded: a copy of it that a
  // lagging cache still shows is not recorded (or counted) twice.
  std::string last_probe_uid;

  bool operator==(const ProbeHistory&) const = default;
};

// status.probe of a CommProfile (the whole object). Lenient: a member that does not read
// as written by to_json is left at its default (the history restarts; the measurements
// themselves are not affected).
ProbeHistory probe_history_of(const nlohmann::json& profile);

// status.probe as to_json writes it: members at their default are left out.
nlohmann::json to_json(const ProbeHistory& history);

}  // namespace commgate::op
