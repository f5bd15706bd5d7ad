#include "probe-job/gpu_diagnostics.h"

#include <thread>

namespace commgate::probe {

std::string cuda_version_text(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string cuda_unusable_text(const CudaDeviceQuery& q) {
  if (q.error_name.empty() && q.count > 0) return "";
  std::string out = "no usable GPU: ";
  if (q.error_name.empty()) {
    out += "cudaGetDeviceCount found no CUDA device";
  } else {
    out += "cudaGetDeviceCount failed with " + q.error_name;
    if (!q.error_string.empty()) out += " (" + q.error_string + ")";
  }
  if (q.driver_version == 0) {
    out += "; no NVIDIA driver was found";
  } else {
    out += "; the driver supports CUDA " + cuda_version_text(q.driver_version);
  }
  out += ", this binary's runtime is CUDA " + cuda_version_text(q.runtime_version);
  if (q.driver_version > 0 && q.runtime_version > q.driver_version) {
    out += " (the driver is too old for it)";
  }
  if (!q.visible_devices.empty()) out += "; CUDA_VISIBLE_DEVICES=" + q.visible_devices;
  return out;
}

std::string nccl_unavailable_reason(bool nccl_built, const CudaDeviceQuery& devices,
                                    bool torch_cuda) {
  if (!nccl_built) return "this binary was built without the NCCL backend";
  if (std::string why = cuda_unusable_text(devices); !why.empty()) return why;
  if (!torch_cuda) {
    return "the CUDA runtime sees " + std::to_string(devices.count) +
           " GPU(s) but this LibTorch has no CUDA (build against the LibTorch of a CUDA "
           "PyTorch: scripts/gpu-first-run.sh does)";
  }
  return "";
}

LocalRanksBackend choose_local_ranks_backend(BackendChoice requested, int ranks, int gpus,
                                             bool nccl_built) {
  LocalRanksBackend out;
  if (requested == BackendChoice::kGloo) return out;
  const bool enough = nccl_built && gpus >= ranks;
  if (enough) {
    out.backend = BackendChoice::kNccl;
    return out;
  }
  if (requested == BackendChoice::kAuto) {
    if (nccl_built && gpus > 0) {
      out.note = "--local-ranks " + std::to_string(ranks) + " with " + std::to_string(gpus) +
                 " GPU(s): NCCL cannot run two ranks on one GPU of one host, so this measures "
                 "with Gloo on the CPU (docs/probe.md: two ranks on one GPU)";
    }
    return out;
  }
  if (!nccl_built) {
    out.error = "--backend nccl: this binary was built without the NCCL backend";
  } else {
    out.error = "--local-ranks " + std::to_string(ranks) + " --backend nccl needs " +
                std::to_string(ranks) + " GPUs, " + std::to_string(gpus) +
                " visible: NCCL cannot run two ranks on one GPU of one host (it stops with "
                "\"Duplicate GPU detected\"); use --backend gloo, or start the ranks yourself "
                "with a different NCCL_HOSTID each (docs/probe.md: two ranks on one GPU)";
  }
  return out;
}

PollOutcome poll_until(const std::function<PollState(std::string* error)>& check,
                       std::chrono::steady_clock::time_point deadline) {
  using namespace std::chrono;
  const auto start = steady_clock::now();
  for (;;) {
    PollOutcome out;
    out.state = check(&out.error);
    if (out.state != PollState::kPending) return out;
    const auto now = steady_clock::now();
    if (now >= deadline) return PollOutcome{};
    // Spin for the first millisecond (a step's waits are short), then back off.
    if (now - start < milliseconds(1)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(microseconds(100));
    }
  }
}

}  // namespace commgate::probe
