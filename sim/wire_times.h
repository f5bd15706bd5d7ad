// Timestamps in built-in objects as kube-apiserver stores them. It decodes metav1.Time and
// metav1.MicroTime fields into Go times and encodes them again, so a time a client sent in
// another offset or precision comes back in UTC in one canonical form:
//   Time       RFC 3339 to the second, "Z"         "2026-12-01T21:56:51Z"
//   MicroTime  RFC 3339 with 6 fraction digits, "Z"  "2026-12-01T21:56:51.123456Z"
// The Python client sends datetime.isoformat() ("...51.123456+00:00"); client-go sends
// the canonical form already.
//
// Modelled: the time fields of the kinds commgate writes besides its own: Lease
// (spec.acquireTime, spec.renewTime), events.k8s.io/v1 Event (eventTime,
// series.lastObservedTime, deprecatedFirstTimestamp, deprecatedLastTimestamp) and core/v1
// Event (eventTime, series.lastObservedTime, firstTimestamp, lastTimestamp).
// Parsing as Go's time.Parse with the two layouts: Time takes any number of fraction
// digits (dropped), MicroTime exactly six.
// Shortcut: a value that does not parse is stored as given (upstream: 400, the body
// cannot be decoded); other kinds' time fields are not rewritten.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "sim/resource.h"

namespace commgate::sim {

enum class TimeLayout { kTime, kMicroTime };

// The canonical UTC form of `text` read with `layout`, or nullopt when Go would refuse it.
std::optional<std::string> canonical_time(std::string_view text, TimeLayout layout);

// Rewrites the known time fields of `object` (a `r` object) in place.
void canonicalize_times(const ResourceInfo& r, nlohmann::json& object);

}  // namespace commgate::sim
