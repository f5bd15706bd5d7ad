// What the probe says about GPUs it cannot use, and which backend `--local-ranks` runs
// with. No CUDA here: the NCCL backend feeds these from the CUDA runtime, and the tests
// feed them directly.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "probe-job/probe_config.h"

namespace commgate::probe {

// What cudaGetDeviceCount said, with the versions that explain a failure.
struct CudaDeviceQuery {
  int count = 0;
  std::string error_name;       // cudaGetErrorName, empty on success
  std::string error_string;     // cudaGetErrorString
  int driver_version = 0;       // cudaDriverGetVersion: 12020 = CUDA 12.2; 0 = no driver
  int runtime_version = 0;      // cudaRuntimeGetVersion
  std::string visible_devices;  // CUDA_VISIBLE_DEVICES as set, "" when unset
};

// "" when at least one device is usable, else why none is, e.g. "no usable GPU:
// cudaGetDeviceCount failed with cudaErrorInsufficientDriver (CUDA driver version is
// insufficient for CUDA runtime version); the driver supports CUDA 12.2, this binary's
// runtime is CUDA 13.0". A too-old driver never reads as "no GPU is visible".
std::string cuda_unusable_text(const CudaDeviceQuery& q);
// 13000 -> "13.0", 12020 -> "12.2".
std::string cuda_version_text(int version);

// "" when the NCCL backend can run here, else why not (for --backend nccl's error).
std::string nccl_unavailable_reason(bool nccl_built, const CudaDeviceQuery& devices,
                                    bool torch_cuda);

// --local-ranks N runs N ranks on this machine. NCCL refuses two ranks on one GPU of one
// host ("Duplicate GPU detected"), so with fewer GPUs than ranks: --backend nccl is an
// error that says so, and auto measures with Gloo and says why.
struct LocalRanksBackend {
  BackendChoice backend = BackendChoice::kGloo;
  std::string error;  // set: refuse (exit 2)
  std::string note;   // set: print on stderr
};
LocalRanksBackend choose_local_ranks_backend(BackendChoice requested, int ranks, int gpus,
                                             bool nccl_built);

// Polls `check` until it says done or failed, or until `deadline`: how the probe waits for
// NCCL work (cudaEventQuery + ncclCommGetAsyncError, as nccl-tests does) instead of
// blocking in the CUDA runtime, where a dead peer would hold it until the watchdog.
enum class PollState { kPending, kDone, kFailed };
struct PollOutcome {
  PollState state = PollState::kPending;  // kPending: the deadline passed
  std::string error;                      // kFailed: what check said
};
PollOutcome poll_until(const std::function<PollState(std::string* error)>& check,
                       std::chrono::steady_clock::time_point deadline);

}  // namespace commgate::probe
