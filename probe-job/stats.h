// Order statistics of timed repetitions: the probe reports medians and a p10/p90 spread,
// which one slow outlier (a page fault, a GC in a neighbour) does not move.
#pragma once

#include <chrono>
#include <vector>

namespace commgate::probe {

// Linear interpolation between closest ranks (numpy's default). q in [0, 1]. 0 for no samples.
double quantile(std::vector<double> samples, double q);
inline double median(const std::vector<double>& samples) {
  return quantile(samples, 0.5);
}

// Seconds on the steady clock since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace commgate::probe
