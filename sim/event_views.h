// kube-apiserver keeps one Event storage served as core/v1 and as events.k8s.io/v1, so an
// Event a controller writes through events.k8s.io/v1 (client-go's new recorder, commgate's
// kube/event_recorder) shows in `kubectl describe`, `kubectl get events` and
// `kubectl events`, which list core/v1 Events. The sim stores the two resources apart and
// gives core/v1 lists that view: the events.k8s.io/v1 Events converted as upstream
// converts them (pkg/apis/events/v1/conversion.go) and filtered by the same selectors.
// Shortcuts (docs/testing.md): lists only (not gets or watches of core/v1 Events), and
// not the other way round.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "sim/selectors.h"

namespace commgate::sim {

// An events.k8s.io/v1 Event as core/v1 shows it: regarding → involvedObject, note →
// message, reportingController → reportingComponent, deprecatedSource → source,
// deprecatedFirstTimestamp/LastTimestamp/Count → firstTimestamp/lastTimestamp/count;
// eventTime, series, related, action, reason, type, reportingInstance and metadata kept.
nlohmann::json core_event_from_events_v1(const nlohmann::json& event);

// `core` (a core/v1 list's items) plus the events.k8s.io/v1 Events `events_v1` (already
// in the namespace asked for) that, converted, match `labels` and `fields`; ordered by
// namespace and name as the store orders a list. An Event stored under both (same
// namespace and name) is listed once, as stored in core/v1.
std::vector<nlohmann::json> core_events_view(std::vector<nlohmann::json> core,
                                             const std::vector<nlohmann::json>& events_v1,
                                             const LabelSelectorQuery& labels,
                                             const FieldSelectorQuery& fields);

}  // namespace commgate::sim
