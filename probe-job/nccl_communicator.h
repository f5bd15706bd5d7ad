// NCCL over the CUDA runtime: the unique id travels through the rendezvous store, the
// collectives run on a stream of their own from LibTorch's pool (ordered after the
// current stream, as ProcessGroupNCCL does) and are timed with CUDA events. The host
// never blocks inside CUDA or NCCL: it polls the work's event and
// ncclCommGetAsyncError until the deadline, and aborts the communicator on an error or a
// timeout, so a dead peer is an NCCL error (with NCCL's own last error and where its log
// is), not a watchdog exit. Compiled when CMake finds CUDA and NCCL
// (COMMGATE_PROBE_NCCL); otherwise these report "not built".
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "probe-job/communicator.h"
#include "probe-job/gpu_diagnostics.h"

namespace commgate::probe {

// True when this binary carries the NCCL backend.
bool nccl_backend_built();
// What the CUDA runtime says about devices (count 0 and why, without the NCCL backend
// or a usable GPU).
CudaDeviceQuery query_cuda_devices();
// CUDA devices this process can use.
inline int visible_cuda_devices() {
  return query_cuda_devices().count;
}
// NCCL's version: the library loaded (ncclGetVersion) and the header compiled against
// (NCCL_VERSION_CODE); 0 without the NCCL backend.
int nccl_runtime_version();
int nccl_header_version();

struct NcclOptions {
  int local_rank = 0;                         // picks the GPU: local_rank % visible devices
  std::chrono::milliseconds timeout{300000};  // waiting for rank 0's unique id
  // Every wait for NCCL work ends by then (an NCCL error naming the wait), before the
  // watchdog would.
  std::chrono::steady_clock::time_point deadline =
      std::chrono::steady_clock::now() + std::chrono::minutes(5);
  // Set NCCL_SOCKET_IFNAME to this when the user did not (the interface reaching the master).
  std::string socket_interface;
  std::string hostname;  // expands %h in NCCL_DEBUG_FILE
};

// Throws std::runtime_error (file:line of the failing CUDA/NCCL call, NCCL's last error,
// where its log is) on failure.
std::unique_ptr<Communicator> make_nccl_communicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                     int rank, int size, const NcclOptions& opts);

}  // namespace commgate::probe
