// Gloo over c10d's ProcessGroupGloo: CPU tensors, TCP between nodes. Built when
// LibTorch's Gloo headers are there; otherwise make_gloo_communicator says so.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "probe-job/communicator.h"

namespace commgate::probe {

// True when this binary carries the Gloo backend (LibTorch's Gloo headers were found).
bool gloo_backend_built();

struct GlooOptions {
  // Bind the Gloo device to this interface when set; else to `bind_address` (the address
  // that routes to MASTER_ADDR), so Gloo never picks an interface that cannot reach peers.
  std::string interface_name;
  std::string bind_address;
  std::string route_interface;                // the interface holding bind_address, for the report
  std::chrono::milliseconds timeout{300000};  // per collective
  int threads = 2;                            // Gloo's worker threads
};

// Throws std::runtime_error naming the interface/address when the device cannot be made,
// or saying this binary has no Gloo.
std::unique_ptr<Communicator> make_gloo_communicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                     int rank, int size, const GlooOptions& opts);

}  // namespace commgate::probe
