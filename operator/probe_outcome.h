// What a probe came to (issue #10, step "collect"), read from its Job and pods as the API
// server shows them. Pure and total: any Job/pod JSON, however malformed, gives an outcome,
// never an exception; a bad termination message is kInvalidResult naming what is wrong.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/probe_result.h"

namespace commgate::op {

enum class ProbeState { kRunning, kSucceeded, kFailed, kUnschedulable, kInvalidResult };

// Reason strings (CamelCase, for conditions and Events).
inline constexpr const char* kReasonProbeRunning = "ProbeRunning";
inline constexpr const char* kReasonProbeSucceeded = "ProbeSucceeded";
inline constexpr const char* kReasonProbeFailed = "ProbeFailed";
inline constexpr const char* kReasonProbeDeadlineExceeded = "ProbeDeadlineExceeded";
inline constexpr const char* kReasonProbeUnschedulable = "ProbeUnschedulable";
inline constexpr const char* kReasonProbeResultInvalid = "ProbeResultInvalid";
// Not a probe's outcome: the pool's probe waits for a slot (probe_slot_refusal).
inline constexpr const char* kReasonProbeQueued = "ProbeQueued";
// Not a probe's outcome: the pool has fewer usable nodes than a probe of its link needs.
inline constexpr const char* kReasonPoolTooSmall = "PoolTooSmall";

struct ProbeOutcome {
  ProbeState state = ProbeState::kRunning;
  std::optional<ProbeResult> result;  // kSucceeded only: rank 0's termination message, validated
  std::string reason;                 // one of the kReasonProbe* strings
  std::string message;                // what a human needs (scheduler message, exit code...)
  // The Job completed but no pod of rank 0 was given: gone, or not seen yet by a cache of
  // pods behind the one of Jobs (the reconciler asks the API server before believing it).
  bool rank0_pod_missing = false;
};

const char* to_string(ProbeState state);

// `job`: the probe's batch/v1 Job as read; `pods`: its pods (label
// batch.kubernetes.io/job-name=<job>), in any order.
ProbeOutcome read_probe_outcome(const nlohmann::json& job, const std::vector<nlohmann::json>& pods);

// The probe Job has ended: a Complete or Failed condition with status True.
bool probe_finished(const nlohmann::json& job);

// "pool P measured on 2 nodes: all-reduce busbw 1.3 GB/s (gloo, loopback)": a pool's
// measurement in the words of the CommProfile's condition and the jobs' Probed condition.
std::string pool_measured(const std::string& pool, int nodes, double busbw_bytes_per_s,
                          const std::string& backend, const std::string& transport);

// "... node selector." -> "... node selector": a clause that another follows after ";"
// (the scheduler's messages end their sentence; ".;" read badly).
std::string without_final_stop(const std::string& text);

}  // namespace commgate::op
