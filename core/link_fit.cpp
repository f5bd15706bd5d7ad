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
  struct Point {
    double x;  // S * factor: the bytes each rank's link carries
    double t;
  };
  std::vector<Point> points;
  double min_x = INFINITY, max_x = 0;
  for (const auto& s : samples) {
    if (!(s.seconds > 0) || !(s.bytes > 0)) continue;
    points.push_back({s.bytes * factor, s.seconds});
    min_x = std::min(min_x, points.back().x);
    max_x = std::max(max_x, points.back().x);
  }
  if (points.size() < 2 || max_x <= min_x) {
    fit.poor = true;
    fit.note = "need at least two distinct message sizes to separate latency from bandwidth";
    if (!points.empty()) {
      // Best effort: all time attributed to bandwidth.
      fit.busbw_bytes_per_s = points.back().x / points.back().t;
    }
    return fit;
  }

  // Regress T on x: T = alpha + x * (1/B), weighted by 1/T^2 so every size counts by
  // its relative error. Then reweight (Huber, on the relative residual) so a size that
  // one stall slowed by a multiple cannot drag the line: on a shared host a 4 KiB
  // all-reduce takes 0.1 ms or 3 ms, and a plain fit then misses B by 15%.
  constexpr double kHuberRelative = 0.10;
  std::vector<double> weight(points.size());
  for (size_t i = 0; i < points.size(); ++i) weight[i] = 1.0 / (points[i].t * points[i].t);
  double slope = 0, intercept = 0;
  bool grows = true;
  for (int iteration = 0; iteration < 20; ++iteration) {
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < points.size(); ++i) {
      const double w = weight[i], x = points[i].x, t = points[i].t;
      sw += w;
      sx += w * x;
      sy += w * t;
      sxx += w * x * x;
      sxy += w * x * t;
    }
    const double det = sw * sxx - sx * sx;
    slope = det > 0 ? (sw * sxy - sx * sy) / det : 0;
    intercept = sw > 0 ? (sy - slope * sx) / sw : 0;
    grows = slope > 0;
    if (intercept < 0 || !grows) {
      // Negative latency is unphysical: refit the bandwidth with alpha pinned at 0.
      intercept = 0;
      slope = sxx > 0 ? sxy / sxx : 0;
    }
    for (size_t i = 0; i < points.size(); ++i) {
      const double r = std::fabs(points[i].t - (intercept + points[i].x * slope)) / points[i].t;
      weight[i] =
          (1.0 / (points[i].t * points[i].t)) * (r > kHuberRelative ? kHuberRelative / r : 1.0);
    }
  }
  if (!grows) {
    fit.poor = true;
    fit.note = "time does not grow with message size; the sizes swept are all latency-bound";
  }
  double largest_bytes = 0;
  for (const auto& s : samples) largest_bytes = std::max(largest_bytes, s.bytes);
  fit.latency_s = intercept;
  fit.busbw_bytes_per_s = slope > 0 ? 1.0 / slope : 0;
  for (const auto& s : samples) {
    if (!(s.seconds > 0) || !(s.bytes > 0)) {
      fit.relative_residuals.push_back(0);
      continue;
    }
    const double predicted = intercept + s.bytes * factor * slope;
    const double r = (s.seconds - predicted) / s.seconds;
    fit.relative_residuals.push_back(r);
    fit.max_relative_residual = std::max(fit.max_relative_residual, std::fabs(r));
    // Small messages jitter by multiples on a shared host (a 4 KiB all-reduce takes
    // 0.1 ms or 3 ms); they say little about what DDP's buckets (1 MiB and up) cost.
    // The fit is judged on the sizes in that range, or on the largest when none is.
    if (s.bytes >= std::min(kJudgedMinBytes, largest_bytes)) {
      fit.max_bandwidth_residual = std::max(fit.max_bandwidth_residual, std::fabs(r));
    }
  }
  if (!fit.poor && fit.max_bandwidth_residual > kPoorFitRelativeResidual) {
    fit.poor = true;
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "the ring model misses a size of 256 KiB or more by %.0f%% (limit %.0f%%); the "
                  "link may be shared or congested",
                  fit.max_bandwidth_residual * 100, kPoorFitRelativeResidual * 100);
    fit.note = buf;
  }
  return fit;
}

std::string poor_fit_note(const LinkFit& fit) {
  if (!fit.note.empty()) return fit.note;
  char numbers[160];
  std::snprintf(numbers, sizeof numbers,
                "busbw %.3g GB/s, latency %.3g us, largest relative residual %.0f%%",
                fit.busbw_bytes_per_s / 1e9, fit.latency_s * 1e6, fit.max_relative_residual * 100);
  return std::string("the probe marked its fit of the link poor without saying why (") + numbers +
         ")";
}

}  // namespace commgate
