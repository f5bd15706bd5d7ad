// Whether the scheduler could place a pod, as its status says (PodScheduled=False with
// reason Unschedulable, the message naming why). Read by both the probe's outcome and
// the workload's state: a probe or a training with a pod the scheduler cannot place
// waits for ever unless commgate says so. Pure and total on any JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace commgate::op {

// The scheduler's message when `pod` cannot be placed; nullopt otherwise.
std::optional<std::string> unschedulable_message(const nlohmann::json& pod);

}  // namespace commgate::op
