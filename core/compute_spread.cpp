#include "core/compute_spread.h"

#include <cstdio>

namespace commgate {
namespace {

// "4.9 s" at a second and above, "312 ms" below.
std::string step_text(double ms) {
  char buf[32];
  if (ms >= 1000)
    std::snprintf(buf, sizeof buf, "%.1f s", ms / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f ms", ms);
  return buf;
}

}  // namespace

double relative_spread(double p10, double p90, double median) {
  if (!(median > 0)) return 0;
  return (p90 - p10) / median;
}

bool steady(double p10, double p90, double median) {
  return relative_spread(p10, p90, median) <= kSteadySpread;
}

std::string compute_noise_caution(const ComputeSpread& s) {
  if (!(s.median_ms > 0)) return "";
  std::string what;
  if (s.p90_ms > 0 && !steady(s.p10_ms, s.p90_ms, s.median_ms)) {
    what = "the probe's compute step was unsteady (p10 " + step_text(s.p10_ms) + ", median " +
           step_text(s.median_ms) + ", p90 " + step_text(s.p90_ms);
    if (s.samples > 0) what += " over " + std::to_string(s.samples) + " steps";
    if (s.rounds > 1) what += ", still after " + std::to_string(s.rounds) + " rounds";
    what += ")";
  }
  if (s.slowest_rank >= 0 && s.slowest_rank_ms > kUnevenRanks * s.median_ms) {
    char ratio[16];
    std::snprintf(ratio, sizeof ratio, "%.1fx", s.slowest_rank_ms / s.median_ms);
    what += std::string(what.empty() ? "" : " and ") + "its rank " +
            std::to_string(s.slowest_rank) + " computed " + ratio + " the ranks' mean (" +
            step_text(s.slowest_rank_ms) + " against " + step_text(s.median_ms) + ")";
  }
  if (what.empty()) return "";
  // The same words whichever path the measurement came through (a probe file, a
  // CommProfile): one probe, one decision (tests/core/measurement_parity_test.cpp). How to
  // measure again is in docs/troubleshooting.md.
  return " Caution: " + what +
         ": other work on the probe's nodes may have slowed it, and the prediction with it; "
         "have the pool measured again when it is quiet.";
}

}  // namespace commgate
