// NCCL over the CUDA runtime: the unique id travels through the rendezvous store, the
// collectives run on a stream of their own and are timed with CUDA events. Compiled when
// CMake finds CUDA and NCCL (COMMGATE_PROBE_NCCL); otherwise these report "not built".
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "probe-job/communicator.h"

namespace commgate::probe {

// True when this binary carries the NCCL backend.
bool nccl_backend_built();
// CUDA devices this process can see (0 without the NCCL backend or without a GPU).
int visible_cuda_devices();

struct NcclOptions {
  int local_rank = 0;                         // picks the GPU: local_rank % visible devices
  std::chrono::milliseconds timeout{300000};  // waiting for rank 0's unique id
  // Set NCCL_SOCKET_IFNAME to this when the user did not (the interface reaching the master).
  std::string socket_interface;
};

// Throws std::runtime_error (file:line of the failing CUDA/NCCL call) on failure.
std::unique_ptr<Communicator> make_nccl_communicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                     int rank, int size, const NcclOptions& opts);

}  // namespace commgate::probe
