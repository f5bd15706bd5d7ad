// The one small interface the probe measures through. Gloo (CPU, c10d's
// ProcessGroupGloo) and NCCL (GPU, raw NCCL + CUDA runtime) implement it; the sweep
// harness, the data check and the DDP-style step only see this.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>

namespace commgate::probe {

// An all-reduce in flight. wait() orders later work after it: on the CPU it returns once
// the result is in place, on a GPU it makes the compute stream wait for it.
class PendingAllReduce {
 public:
  virtual ~PendingAllReduce() = default;
  virtual void wait() = 0;
};

// "" when `tensor` can be handed to a collective on `device`, else what is wrong with it.
inline std::string collective_input_problem(const at::Tensor& tensor, const at::Device& device) {
  if (!tensor.defined()) return "the tensor is undefined";
  if (!tensor.is_contiguous()) return "the tensor is not contiguous";
  if (tensor.device() != device) {
    return "the tensor is on " + tensor.device().str() + ", the communicator on " + device.str();
  }
  return "";
}

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual std::string backend_name() const = 0;  // "gloo" | "nccl"
  virtual std::string transport() const = 0;     // "socket", "ib", "p2p/nvlink", "shm", "unknown"
  virtual std::string interface_name() const = 0;
  virtual at::Device device() const = 0;
  virtual std::string device_product() const { return ""; }
  // The collective library's version as it runs (NCCL: ncclGetVersion, "2.27.7"); "" when
  // it has none of its own (Gloo is part of LibTorch).
  virtual std::string library_version() const { return ""; }
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Sums `tensor` (contiguous, on device()) across ranks, in place.
  virtual std::unique_ptr<PendingAllReduce> allreduce_sum_async(at::Tensor& tensor) = 0;
  void allreduce_sum(at::Tensor& tensor) { allreduce_sum_async(tensor)->wait(); }

  // Seconds per all-reduce on this rank over `iterations` back-to-back all-reduces of
  // `tensor`, as nccl-tests times them (GPU: CUDA events on the communication stream).
  virtual double time_allreduce(at::Tensor& tensor, int iterations) = 0;

  virtual void barrier() = 0;
  // Waits until everything this rank queued (compute and communication) has finished.
  virtual void synchronize() {}
  // Called once after the first collectives: backends that learn their transport lazily
  // (NCCL connects on first use) refresh transport() here.
  virtual void refresh_transport() {}
};

}  // namespace commgate::probe
