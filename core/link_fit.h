// Fitting the ring all-reduce cost model to a measured size sweep, as nccl-tests
// reports it: T(S, N) = alpha + S * 2(N-1)/N / B, with B the bus bandwidth.
#pragma once

#include <string>
#include <vector>

namespace commgate {

// nccl-tests' bus factor for all-reduce over `ranks` ranks: busbw = algbw * 2(n-1)/n.
// It makes busbw comparable with the link's rate whatever the rank count. 0 for 1 rank.
double allreduce_bus_factor(int ranks);

struct AllReduceSample {
  double bytes = 0;    // message size per rank
  double seconds = 0;  // time for one all-reduce (mean of timed iterations)
};

struct LinkFit {
  int ranks = 0;
  double latency_s = 0;          // alpha: the fixed cost at `ranks`
  double busbw_bytes_per_s = 0;  // B
  // (measured - fitted) / measured, one per sample, in the order given.
  std::vector<double> relative_residuals;
  // The worst over all sizes, latency-bound ones included. It is reported (the
  // CommProfile's maxRelativeResidual) but does not make a fit poor: on a shared host a
  // 4 KiB all-reduce jitters by multiples, so this can exceed 25% on a good fit.
  double max_relative_residual = 0;
  // The same over sizes >= kJudgedMinBytes only: what `poor` judges (docs/model.md).
  double max_bandwidth_residual = 0;
  bool poor = false;  // true when the fit should not be trusted; `note` says why
  std::string note;
};

// What a poor fit's caution says: its note, or, when the probe gave none, the fit's
// numbers (busbw, latency, largest relative residual), never an empty "Caution: .".
std::string poor_fit_note(const LinkFit& fit);

// Weighted least squares over the samples with weights 1/T^2, so small and large
// messages count alike (a plain fit would let the largest size decide alpha too).
// Needs at least two distinct sizes; with fewer the result is `poor`.
LinkFit fit_ring_allreduce(const std::vector<AllReduceSample>& samples, int ranks);

// A fit is called poor when the residual of any size of at least kJudgedMinBytes (the
// range DDP's buckets live in; the largest size when the sweep stops below it) exceeds
// this share of its measurement.
inline constexpr double kJudgedMinBytes = 256 * 1024.0;
inline constexpr double kPoorFitRelativeResidual = 0.25;

}  // namespace commgate
