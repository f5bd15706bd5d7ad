// The GPU resource the probe's and the workload's pods request.
#pragma once

#include "core/pool_nodes.h"

namespace commgate::op {

// The extended resource NVIDIA's device plugin advertises on GPU nodes.
inline constexpr const char* kGpuResource = commgate::kNvidiaGpu;

}  // namespace commgate::op
