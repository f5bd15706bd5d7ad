// Whether the scheduler could place a pod, as its status says (PodScheduled=False with
// reason Unschedulable, the message naming why). Read by both the probe's outcome and
// the workload's state: a probe or a training with a pod the scheduler cannot place
// waits for ever unless commgate says so. Pure and total on any JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/time_format.h"

namespace commgate::op {

// The scheduler's message when `pod` cannot be placed; nullopt otherwise.
std::optional<std::string> unschedulable_message(const nlohmann::json& pod);

// Since when the scheduler has not placed `pod`: its PodScheduled=False condition's
// lastTransitionTime, else its creationTimestamp; nullopt when it is not unschedulable or
// neither time reads.
std::optional<TimePoint> unschedulable_since(const nlohmann::json& pod);

}  // namespace commgate::op
