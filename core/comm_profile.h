// CommProfile (commgate.io/v1alpha1, cluster-scoped): the measurements of one node pool
// (one canonical nodeSelector), reused within the policy's TTL so repeat submissions
// are decided at admission without a probe. The operator writes it; the webhook reads.
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/link_fit.h"
#include "core/link_rate.h"
#include "core/model_names.h"
#include "core/object_meta.h"
#include "core/probe_result.h"

namespace commgate {

// The probe's DDP-style step of a compute record's model: buckets all-reduced during
// backward at `nodes` x `procs_per_node`. It calibrates the model (docs/model.md).
// The probe's measured DDP step (core/probe_result.h) and where it was measured.
struct DdpStepRecord : DdpStepResult {
  int nodes = 0;
  int procs_per_node = 1;
  // The link it ran on (its probe's fit, as the link record holds it): a probe of another
  // model replaces the profile's link, and the step still calibrates the model against the
  // link it ran on (the trial of 2026-12-06). 0: a record written before they were kept.
  double link_busbw_gbps = 0;
  double link_latency_us = 0;
};

struct ComputeStepRecord {
  double parameters = 0;
  std::string gradient_dtype = "fp32";
  int batch_size = 0;
  // Part of the model signature; a record without it timed Adam (kUnrecordedOptimizer).
  std::string optimizer = kUnrecordedOptimizer;
  std::string gpu_product;
  double step_time_ms = 0;
  double forward_ms = 0;
  double backward_ms = 0;
  double optimizer_ms = 0;
  TimePoint measured_at{};
  // How steady the probe's step was (its raw median, not scaled like the phases above);
  // nullopt in records written before it was kept.
  std::optional<ComputeSpread> spread;
  // The phases above are what the decision uses: when the probe ran its DDP step they
  // are scaled to add up to that step without communication (core/measurement.h), and
  // the step itself is kept here.
  std::optional<DdpStepRecord> ddp_step;
};

struct LinkRecord {
  double latency_us = 0;
  double busbw_gbps = 0;
  double algbw_gbps = 0;  // at the largest size probed
  int nodes_probed = 0;
  int procs_per_node = 1;
  double max_relative_residual = 0;
  bool poor = false;
  std::string note;
  TimePoint measured_at{};
};

struct CommProfileStatus {
  std::optional<LinkRecord> link;
  std::string backend, transport, interface_name, device, gpu_product;
  // The rated speed of the probed interface (status.links); nullopt before it was read.
  std::optional<PoolLink> links;
  std::vector<ComputeStepRecord> compute_steps;  // newest per model signature
};

// The most hostnames a pool may list (spec.hostnames): commgate decides for at most
// 10000 nodes (kMaxNodes).
inline constexpr size_t kMaxPoolHostnames = 10000;

struct CommProfile {
  ObjectMeta metadata;
  std::map<std::string, std::string> node_selector;  // spec.nodeSelector: the pool
  // spec.hostnames: when not empty, the pool is only the selector's nodes whose
  // kubernetes.io/hostname label is one of these, sorted (the hosts Kueue's
  // topology-aware scheduling assigned to one Workload, issue #23).
  std::vector<std::string> hostnames;
  CommProfileStatus status;
};

// The profile name for a pool: "pool-" + a stable hash of the canonical (sorted)
// nodeSelector and the hostnames (sorted, each once), or "pool-all" for an empty
// selector and no names. Deterministic across replicas; a selector without names names
// the pool it always did.
std::string pool_name(const std::map<std::string, std::string>& node_selector,
                      const std::vector<std::string>& hostnames = {});

// How far in the future a measurement's time may lie: clocks of the probe's node and the
// reader's differ by seconds, not minutes. A later time would keep the measurement fresh
// past its TTL (a CommProfile "measured" in 2099 would never expire), so it is an error.
inline constexpr std::chrono::minutes kClockSkewTolerance{5};

// Throws ValidationError naming the field path of every problem, status included: a
// profile drives admission decisions, so its measurements are held to what a probe can
// report (bandwidth and step times > 0, at least 2 nodes probed, the fit's latency and
// residual >= 0, times no later than `now` + kClockSkewTolerance). `now` is the reader's
// clock: the time the profile is read (webhook) or the decision's time (CLI).
CommProfile parse_comm_profile(const nlohmann::json& doc, TimePoint now);
nlohmann::json to_json(const CommProfile& profile);

}  // namespace commgate
