// The names of a model's training settings that several kinds share (TrainingJob's
// spec.model, ProbeResult's compute, CommProfile's computeSteps): one list each, read by
// every parser and by the probe's flags.
#pragma once

#include <array>

namespace commgate {

// What DDP all-reduces: the gradients' element type.
inline constexpr std::array<const char*, 3> kGradientDtypes = {"fp32", "fp16", "bf16"};

// The optimizers whose step the probe can time, as LibTorch provides them (torch::optim:
// SGD without and with momentum, Adam, AdamW, Adagrad, RMSprop). Their steps differ by
// up to 2x for the same model (docs/model.md), so the optimizer is part of a compute
// measurement's signature.
inline constexpr std::array<const char*, 6> kOptimizers = {"sgd",   "sgd-momentum", "adam",
                                                           "adamw", "adagrad",      "rmsprop"};

// A TrainingJob that names no optimizer: AdamW, the common case for transformers.
inline constexpr const char* kDefaultOptimizer = "adamw";
// A probe result or compute record without the field: the probe timed Adam before the
// field existed, so that is what such a record measured.
inline constexpr const char* kUnrecordedOptimizer = "adam";

}  // namespace commgate
