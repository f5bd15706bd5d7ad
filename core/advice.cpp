#include "core/advice.h"

#include <cmath>
#include <cstdint>

#include "core/decision.h"
#include "core/quantity.h"
#include "core/significant_digits.h"

namespace commgate {
namespace {

// Bisection bounds: no link is slower than a thousandth of the measured one in these
// counterfactuals, and 1 PB/s stands for "unlimited".
constexpr double kUnlimitedBusbw = 1e15;
constexpr int kBisectionSteps = 80;

bool passes_at(const ModelInputs& model, const CommPolicySpec& policy, int nodes) {
  return meets_policy(predict_step(model, nodes), policy);
}

ModelInputs with_busbw(ModelInputs m, double busbw) {
  m.link.busbw_bytes_per_s = busbw;
  return m;
}

ModelInputs with_batch_factor(ModelInputs m, double factor) {
  m.compute.forward_s *= factor;
  m.compute.backward_s *= factor;
  return m;
}

// The smallest x in [lo, hi] (to a ratio of 1.0001) at which `passes` holds, by geometric
// bisection: `passes` must fail at lo, hold at hi and be monotone between.
template <typename Passes>
double smallest_passing(double lo, double hi, Passes passes) {
  for (int i = 0; i < kBisectionSteps && hi / lo > 1.0001; ++i) {
    const double mid = std::sqrt(lo * hi);
    (passes(mid) ? hi : lo) = mid;
  }
  return hi;
}

double round_up_significant(double v, int digits) {
  const double rounded = round_significant(v, digits);
  if (rounded >= v) return rounded;
  const double step = std::pow(10.0, std::floor(std::log10(v)) - (digits - 1));
  return rounded + step;
}

std::string share_of(const ModelInputs& model, int nodes) {
  return format_percent(predict_step(model, nodes).comm_share);
}

std::string link_advice(const ModelInputs& model, const CommPolicySpec& policy, int n) {
  const std::optional<double> needed = busbw_needed(model, policy, n);
  const std::string at = " at " + format_nodes(n);
  if (!needed) {
    const StepPrediction unlimited = predict_step(with_busbw(model, kUnlimitedBusbw), n);
    if (model.step_overhead_s > 0) {
      // The per-step cost the probe's DDP step measured beyond its all-reduces: when it
      // alone is over the policy, no link, and no latency, would make the count pass.
      ModelInputs overhead_only = with_busbw(model, kUnlimitedBusbw);
      overhead_only.link.hop_latency_s = 0;
      const StepPrediction alone = predict_step(overhead_only, n);
      const std::string overhead =
          format_count(round_significant(model.step_overhead_s * 1e3, 3)) + " ms";
      if (!meets_policy(alone, policy))
        return "No link makes " + format_nodes(n) + " pass: the " + overhead +
               " each step pays beyond its all-reduces (what the probe's DDP step exposed "
               "beyond its buckets all-reduced alone: copies, scaling) is by itself " +
               format_percent(alone.comm_share) + " of the step" + at + ", over the limit.";
      return "No link makes " + format_nodes(n) + " pass: with unlimited bandwidth the " +
             "all-reduces' latency (from the measured hop latency " +
             format_count(model.link.hop_latency_s * 1e6) + " us) and the " + overhead +
             " each step pays beyond them are " + format_percent(unlimited.comm_share) +
             " of the step" + at + ", over the limit.";
    }
    return "No link makes " + format_nodes(n) + " pass: with unlimited bandwidth the " +
           "all-reduces' latency alone (" + format_percent(unlimited.comm_share) + " of the step" +
           at + ", from the measured hop latency " + format_count(model.link.hop_latency_s * 1e6) +
           " us) is over the limit.";
  }
  return "The link: " + format_nodes(n) + " would pass with an all-reduce bus bandwidth of " +
         format_gbps(*needed) + " or more; this pool's effective bandwidth is " +
         format_gbps(model.link.busbw_bytes_per_s) + " (" + share_of(model, n) + at + ").";
}

std::string compression_advice(const ModelInputs& model, const CommPolicySpec& policy,
                               const ModelSpec& job, int n) {
  const std::string powersgd =
      " PowerSGD (powerSGD_hook) compresses further; commgate does not model it.";
  if (job.gradient_dtype != "fp32")
    return "Compression: the gradients are already " + job.gradient_dtype +
           ", and DDP's fp16/bf16 compression hooks halve only fp32 gradients." + powersgd;
  ModelInputs halved = model;
  halved.gradient_bytes /= 2;
  const StepPrediction p = predict_step(halved, n);
  return "Compression: with DDP's fp16 or bf16 compression hook (register_comm_hook, half "
         "the bytes of fp32 gradients, in about half as many buckets) the model predicts " +
         format_percent(p.comm_share) + " at " + format_nodes(n) + ", " +
         (meets_policy(p, policy) ? "within the policy." : "still over the policy.") + powersgd;
}

std::string batch_advice(const ModelInputs& model, const CommPolicySpec& policy,
                         const ModelSpec& job, int n) {
  const std::optional<double> factor = batch_factor_needed(model, policy, n);
  if (!factor)
    return "A larger batch: no per-GPU batch up to " +
           std::to_string(static_cast<int64_t>(kMaxBatchFactor)) + " times " +
           std::to_string(job.batch_size) + " makes " + format_nodes(n) + " pass.";
  const auto batch = static_cast<int64_t>(std::ceil(job.batch_size * *factor));
  return "A larger batch: at a per-GPU batch of " + std::to_string(batch) + " (now " +
         std::to_string(job.batch_size) + ") " + format_nodes(n) +
         " would pass, taking the forward and backward passes to grow linearly with the "
         "batch and the all-reduce not to; check that it fits in GPU memory, and scale the "
         "learning rate with it (spec.model.batchSize is what the probe times).";
}

std::string largest_count_advice(const ModelInputs& model, int largest) {
  if (largest <= 1) return "Fewer nodes: only 1 node passes (no gradients cross the network).";
  const StepPrediction p = predict_step(model, largest);
  return "Fewer nodes: the largest count that passes is " + format_nodes(largest) + ", " +
         format_count(round_significant(p.speedup, 3)) + "x the throughput of one node (" +
         format_percent(p.scaling_efficiency) + " scaling efficiency, " +
         format_percent(p.comm_share) + " in exposed communication).";
}

}  // namespace

std::optional<double> busbw_needed(const ModelInputs& model, const CommPolicySpec& policy,
                                   int nodes) {
  if (!passes_at(with_busbw(model, kUnlimitedBusbw), policy, nodes)) return std::nullopt;
  auto passes = [&](double busbw) { return passes_at(with_busbw(model, busbw), policy, nodes); };
  const double lo = model.link.busbw_bytes_per_s > 0 ? model.link.busbw_bytes_per_s / 1000 : 1;
  if (passes(lo)) return round_up_significant(lo, 2);
  return round_up_significant(smallest_passing(lo, kUnlimitedBusbw, passes), 2);
}

std::optional<double> batch_factor_needed(const ModelInputs& model, const CommPolicySpec& policy,
                                          int nodes) {
  if (passes_at(model, policy, nodes)) return 1.0;
  auto passes = [&](double f) { return passes_at(with_batch_factor(model, f), policy, nodes); };
  if (!passes(kMaxBatchFactor)) return std::nullopt;
  return smallest_passing(1, kMaxBatchFactor, passes);
}

std::vector<Advice> advise(const ModelInputs& model, const CommPolicySpec& policy,
                           const ModelSpec& job, int requested, int largest_passing) {
  return {{advice_kind::kLink, link_advice(model, policy, requested)},
          {advice_kind::kCompression, compression_advice(model, policy, job, requested)},
          {advice_kind::kBatch, batch_advice(model, policy, job, requested)},
          {advice_kind::kLargestCount, largest_count_advice(model, largest_passing)}};
}

std::optional<Advice> link_rate_advice(double busbw_bytes_per_s, const std::string& backend,
                                       const std::string& transport,
                                       const std::string& interface_name,
                                       const std::optional<PoolLink>& links) {
  if (!links) return std::nullopt;
  const std::string backend_name = backend == "nccl"   ? "NCCL"
                                   : backend == "gloo" ? "Gloo"
                                                       : backend;
  const std::string on = interface_name.empty() ? "" : " (interface " + interface_name + ")";
  if (links->infiniband_present && transport == "socket") {
    if (backend == "gloo")
      return Advice{advice_kind::kLinkRate,
                    "The link: the nodes have InfiniBand, but Gloo runs over TCP sockets" + on +
                        " only; NCCL on GPUs would use InfiniBand."};
    return Advice{advice_kind::kLinkRate,
                  "The link: the nodes have InfiniBand, but " + backend_name + " ran over sockets" +
                      on +
                      ": check that NCCL_IB_DISABLE is not 1, that NCCL_NET is unset or IB, "
                      "that NCCL_IB_HCA (if set) names these HCAs, and that the pods get the "
                      "RDMA device; on AWS EFA, FI_PROVIDER=efa with the aws-ofi-nccl plugin."};
  }
  const double rate_bytes = links->rate_bits_per_s / 8;
  if (rate_bytes <= 0 || busbw_bytes_per_s >= kLinkRateShortfall * rate_bytes) return std::nullopt;
  const std::string nodes = links->ranks_known == links->ranks
                                ? "the slowest node's"
                                : "the slowest rate that " + std::to_string(links->ranks_known) +
                                      " of the " + std::to_string(links->ranks) + " ranks report,";
  return Advice{advice_kind::kLinkRate,
                "The link: the all-reduce reached " + format_gbps(busbw_bytes_per_s) + ", " +
                    format_percent(busbw_bytes_per_s / rate_bytes) + " of " + nodes + " rated " +
                    format_count(links->rate_bits_per_s / 1e9) + " Gbit/s" + on +
                    " (a ring all-reduce approaches the rate): check the interface " +
                    backend_name +
                    " uses (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME), NCCL_IB_DISABLE and "
                    "NCCL_NET, and on AWS EFA FI_PROVIDER=efa."};
}

}  // namespace commgate
