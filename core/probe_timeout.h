// How long a probe may run when the policy does not say (#20: a 350M-parameter probe took
// 599 s of the 600 it was given, Probing the whole time; a 25M one takes under a minute).
// The probe's time grows with its model: the compute and DDP steps with parameters x batch,
// the DDP step's all-reduces and the model's set-up with the parameters.
#pragma once

#include "core/training_job.h"

namespace commgate {

// The timeout a policy gets without probe.timeoutSeconds, for models up to this size (and
// this parameters x batch): the value every policy had before it was sized.
inline constexpr int kBaseProbeTimeoutSeconds = 300;
inline constexpr double kBaseProbeParameters = 100e6;
inline constexpr double kBaseProbeBatch = 32;
// probe.timeoutSeconds' own bound (the CRD's maximum).
inline constexpr int kMaxProbeTimeoutSeconds = 3600;

// `policy_timeout_seconds` when the policy set it (> 0); otherwise the base timeout scaled
// by max(parameters / 100M, parameters x batch / (100M x 32)), at least the base, rounded
// up to a whole minute, at most an hour. A link-only probe (the job gave stepTimeHintMs)
// times no model: the base.
int probe_timeout_seconds(int policy_timeout_seconds, const ModelSpec& model, bool times_model);

}  // namespace commgate
