// What would make a request pass (issue #24): counterfactuals computed from the same model
// and measurement that decide() used, one sentence each, with numbers. They never change a
// verdict: decide() fills Decision::advice after it has decided. docs/model.md "Advice".
//
// Each counterfactual changes one input of the model and keeps the rest as measured:
// - the link: the all-reduce bus bandwidth at which the count passes (bisection; the
//   model's share falls as bandwidth grows), or why none can (the all-reduces' latency
//   alone, which no bandwidth removes);
// - gradient compression: DDP's fp16/bf16 compression hooks halve the bytes all-reduced,
//   only from fp32 gradients;
// - a larger per-GPU batch: the batch at which the count passes, taking forward and
//   backward to grow linearly with the batch and the all-reduce and optimizer step not to;
// - the largest count that passes, with its speedup and efficiency over one node.
// Where a counterfactual cannot help, its line says so instead of being left out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/comm_model.h"
#include "core/comm_policy.h"
#include "core/link_rate.h"
#include "core/training_job.h"

namespace commgate {

namespace advice_kind {
inline constexpr const char* kLink = "link";
inline constexpr const char* kCompression = "compression";
inline constexpr const char* kBatch = "batch";
inline constexpr const char* kLargestCount = "largestCount";
inline constexpr const char* kLinkRate = "linkRate";
}  // namespace advice_kind

struct Advice {
  std::string kind;  // one of advice_kind::*
  std::string text;  // one sentence with the numbers
  bool operator==(const Advice&) const = default;
};

// The all-reduce bus bandwidth (bytes/s) at which `nodes` meet the policy under `model`
// (its other inputs as they are), rounded up to 2 significant digits; nullopt when no
// bandwidth does (the latency alone exposes too much).
std::optional<double> busbw_needed(const ModelInputs& model, const CommPolicySpec& policy,
                                   int nodes);

// The smallest factor >= 1 on the forward and backward passes (a per-GPU batch that many
// times larger) at which `nodes` meet the policy; nullopt beyond kMaxBatchFactor.
std::optional<double> batch_factor_needed(const ModelInputs& model, const CommPolicySpec& policy,
                                          int nodes);
inline constexpr double kMaxBatchFactor = 1024;

// The advice for a request of `requested` nodes that the policy refuses at that count
// (`largest_passing` is the largest that passes, >= 1). `model` is what decide() evaluated
// (corrected by the probe's DDP step where it ran one); `job` names the dtype and batch.
std::vector<Advice> advise(const ModelInputs& model, const CommPolicySpec& policy,
                           const ModelSpec& job, int requested, int largest_passing);

// When the measured link is slower than its hardware (issue #24): the nodes have
// InfiniBand but the backend ran over sockets, or the all-reduce's bus bandwidth is under
// kLinkRateShortfall of the slowest node's rated speed (a ring all-reduce approaches the
// link's rate). One sentence naming the settings to check; nullopt when neither holds or
// the probe read no rate (`links` nullopt, or no node's interface is physical).
std::optional<Advice> link_rate_advice(double busbw_bytes_per_s, const std::string& backend,
                                       const std::string& transport,
                                       const std::string& interface_name,
                                       const std::optional<PoolLink>& links);
inline constexpr double kLinkRateShortfall = 0.5;

}  // namespace commgate
