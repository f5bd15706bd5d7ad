#include "probe-job/stats.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace commgate::probe {

double quantile(std::vector<double> samples, double q) {
  assert(q >= 0 && q <= 1);
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const double pos = q * static_cast<double>(samples.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, samples.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return samples[lo] + (samples[hi] - samples[lo]) * frac;
}

}  // namespace commgate::probe
