// Numbers commgate stores for people to read, rounded to significant digits: a printer
// column and a status read 0.01314, not 0.013136288998357884 (issue #10 follow-up). Only
// what is written is rounded; a decision compares the unrounded values, so a stored
// predictedCommShare of 0.3 may belong to a share just above a policy's 0.30.
#pragma once

#include <cmath>

namespace commgate {

// The significant digits of a stored share or ratio (status.decision.predictedCommShare);
// the probe's compact result keeps 4 as well (core/probe_result.cpp).
inline constexpr int kStoredSignificantDigits = 4;

// `v` rounded to `digits` significant digits, half away from zero; 0, infinities and NaN
// as they are.
inline double round_significant(double v, int digits = kStoredSignificantDigits) {
  if (!std::isfinite(v) || v == 0) return v;
  const double scale =
      std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(v)))));
  const double rounded = std::round(v * scale) / scale;
  // Next to the largest double, rounding up overflows: round towards zero there, so a
  // finite number stays finite (the probe's and the profile's paths then read alike).
  return std::isfinite(rounded) ? rounded : std::trunc(v * scale) / scale;
}

}  // namespace commgate
