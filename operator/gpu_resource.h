// The GPU resource the probe's and the workload's pods request.
#pragma once

namespace commgate::op {

// The extended resource NVIDIA's device plugin advertises on GPU nodes.
inline constexpr const char* kGpuResource = "nvidia.com/gpu";

}  // namespace commgate::op
