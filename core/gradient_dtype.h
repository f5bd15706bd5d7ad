// A gradient dtype commgate does not model, said as what it is: fp64 names 8-byte
// gradients, and the did-you-mean of a field's allowed values (fp32, fp16, bf16) would
// offer fp16, a different thing (the trial of 2026-12-06). spec.model.gradientDtype and
// the Kueue check's commgate.io/gradient-dtype annotation both use it.
#pragma once

#include <string>

namespace commgate {

// The message for `dtype` when it names a type commgate does not model, "" for any other
// value (the reader's own one-of message says what it is).
inline std::string unmodelled_gradient_dtype_problem(const std::string& dtype) {
  if (dtype != "fp64" && dtype != "float64" && dtype != "double") return "";
  return "must be one of fp32, fp16, bf16, got \"" + dtype +
         "\": 8-byte gradients are not modelled (commgate's probe and model know fp32, 4 bytes, "
         "and fp16/bf16, 2 bytes); fp16 and bf16 are what fp32 training all-reduces under mixed "
         "precision or DDP's compression hooks, not a smaller fp64";
}

}  // namespace commgate
