#include "core/link_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace commgate {

double allreduce_bus_factor(int ranks) {
  if (ranks <= 1) return 0.0;
  return 2.0 * (ranks - 1) / ranks;
}

LinkFit fit_ring_allreduce(const std::vector<AllReduceSample>& samples, int ranks) {
  LinkFit fit;
  fit.ranks = ranks;
  const double factor = allreduce_bus_factor(ranks);
  if (factor == 0) {
    fit.poor = true;
    fit.note = "a single rank moves no data between nodes; probe at least 2 nodes";
    return fit;
  }
  // Regress T on x = S * factor: T = alpha + x * (1/B).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  size_t usable = 0;
  double min_x = INFINITY, max_x = 0;
  for (const auto& s : samples) {
    if (!(s.seconds > 0) || !(s.bytes > 0)) continue;
    const double x = s.bytes * factor;
    const double w = 1.0 / (s.seconds * s.seconds);
    sw += w;
    sx += w * x;
    sy += w * s.seconds;
    sxx += w * x * x;
    sxy += w * x * s.seconds;
    min_x = std::min(min_x, x);
    max_x = std::max(max_x, x);
    ++usable;
  }
  const double det = sw * sxx - sx * sx;
  if (usable < 2 || max_x <= min_x || !(std::fabs(det) > 0)) {
    fit.poor = true;
    fit.note = "need at least two distinct message sizes to separate latency from bandwidth";
    if (usable >= 1) {
      // Best effort: all time attributed to bandwidth.
      const auto& s = samples.back();
      fit.busbw_bytes_per_s = s.bytes * factor / s.seconds;
    }
    return fit;
  }
  double slope = (sw * sxy - sx * sy) / det;
  double intercept = (sy - slope * sx) / sw;
  if (!(slope > 0)) {
    fit.poor = true;
    fit.note = "time does not grow with message size; the sizes swept are all latency-bound";
    slope = 0;
  }
  if (intercept < 0) {
    // Negative latency is unphysical: refit the bandwidth with alpha pinned at 0.
    intercept = 0;
    slope = sxy / sxx;
  }
  fit.latency_s = intercept;
  fit.busbw_bytes_per_s = slope > 0 ? 1.0 / slope : 0;
  for (const auto& s : samples) {
    if (!(s.seconds > 0) || !(s.bytes > 0)) {
      fit.relative_residuals.push_back(0);
      continue;
    }
    const double transfer = s.bytes * factor * slope;
    const double predicted = intercept + transfer;
    const double r = (s.seconds - predicted) / s.seconds;
    fit.relative_residuals.push_back(r);
    fit.max_relative_residual = std::max(fit.max_relative_residual, std::fabs(r));
    // Latency-bound messages jitter by multiples on a shared host (a 4 KiB all-reduce
    // takes 0.1 ms or 3 ms); they say little about what DDP's MiB-sized buckets cost.
    // The fit is judged on the sizes where moving bytes takes at least as long as alpha.
    if (transfer >= intercept) {
      fit.max_bandwidth_residual = std::max(fit.max_bandwidth_residual, std::fabs(r));
    }
  }
  if (!fit.poor && fit.max_bandwidth_residual > kPoorFitRelativeResidual) {
    fit.poor = true;
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "the ring model misses a bandwidth-bound size by %.0f%% (limit %.0f%%); the link "
                  "may be shared or congested",
                  fit.max_bandwidth_residual * 100, kPoorFitRelativeResidual * 100);
    fit.note = buf;
  }
  return fit;
}

}  // namespace commgate
