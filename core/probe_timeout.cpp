#include "core/probe_timeout.h"

#include <algorithm>
#include <cmath>

namespace commgate {

int probe_timeout_seconds(int policy_timeout_seconds, const ModelSpec& model, bool times_model) {
  if (policy_timeout_seconds > 0) return policy_timeout_seconds;
  if (!times_model) return kBaseProbeTimeoutSeconds;
  const double batch = std::max(1, model.batch_size);
  const double scale =
      std::max({1.0, model.parameters / kBaseProbeParameters,
                model.parameters * batch / (kBaseProbeParameters * kBaseProbeBatch)});
  if (!std::isfinite(scale)) return kMaxProbeTimeoutSeconds;
  // Capped before the cast (a huge model would overflow an int); the cap is whole minutes.
  const double seconds =
      std::min<double>(kMaxProbeTimeoutSeconds, kBaseProbeTimeoutSeconds * scale);
  static_assert(kMaxProbeTimeoutSeconds % 60 == 0);
  return static_cast<int>(std::ceil(seconds / 60.0)) * 60;
}

}  // namespace commgate
