// RFC 3339 timestamps as Kubernetes writes them (metav1.Time: "2026-11-30T17:30:11Z").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace commgate {

using Clock = std::chrono::system_clock;
using TimePoint = Clock::time_point;

// Accepts "YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)" with a real calendar date (no
// February 30th). Parsers read times through ObjectReader::time, which names the field.
std::optional<TimePoint> parse_rfc3339(std::string_view text);
// Seconds precision, UTC, "Z" suffix: the form metav1.Time marshals to.
std::string format_rfc3339(TimePoint t);

}  // namespace commgate
