#include "probe-job/gloo_communicator.h"

#include <stdexcept>

// pip's LibTorch carries ProcessGroupGloo.hpp but not the Gloo headers it includes, and
// declares nothing without USE_C10D_GLOO: Gloo is built only when all of it is there
// (COMMGATE_PROBE_WITHOUT_GLOO forces it out, for the test of that build).
#if !defined(COMMGATE_PROBE_WITHOUT_GLOO) && defined(USE_C10D_GLOO) && __has_include(<gloo/algorithm.h>) &&                                  \
    __has_include(<torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>)
#define COMMGATE_PROBE_HAS_GLOO 1
#endif

#ifdef COMMGATE_PROBE_HAS_GLOO

#include <chrono>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <vector>

namespace commgate::probe {
namespace {

class GlooPending final : public PendingAllReduce {
 public:
  explicit GlooPending(c10::intrusive_ptr<c10d::Work> work) : work_(std::move(work)) {}
  void wait() override { work_->wait(); }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
};

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, std::string iface, int rank,
                   int size)
      : pg_(std::move(pg)), iface_(std::move(iface)), rank_(rank), size_(size) {}

  std::string backend_name() const override { return "gloo"; }
  std::string transport() const override { return iface_ == "lo" ? "loopback" : "socket"; }
  std::string interface_name() const override { return iface_; }
  at::Device device() const override { return at::Device(at::kCPU); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::unique_ptr<PendingAllReduce> allreduce_sum_async(at::Tensor& tensor) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    return std::make_unique<GlooPending>(pg_->allreduce(tensors, opts));
  }

  double time_allreduce(at::Tensor& tensor, int iterations) override {
    std::vector<at::Tensor> tensors{tensor};
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) pg_->allreduce(tensors)->wait();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return elapsed.count() / iterations;
  }

  void barrier() override { pg_->barrier()->wait(); }

 private:
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  std::string iface_;
  int rank_;
  int size_;
};

}  // namespace

bool gloo_backend_built() {
  return true;
}

std::unique_ptr<Communicator> make_gloo_communicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                     int rank, int size, const GlooOptions& opts) {
  auto options = c10d::ProcessGroupGloo::Options::create(opts.timeout);
  options->threads = opts.threads;
  std::string iface = opts.interface_name.empty() ? opts.route_interface : opts.interface_name;
  try {
    if (!opts.interface_name.empty()) {
      options->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForInterface(opts.interface_name));
    } else if (!opts.bind_address.empty()) {
      options->devices.push_back(
          c10d::ProcessGroupGloo::createDeviceForHostname(opts.bind_address));
    } else {
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
  } catch (const std::exception& e) {
    const std::string what = !opts.interface_name.empty() ? "interface " + opts.interface_name
                                                          : "address " + opts.bind_address;
    throw std::runtime_error("gloo: cannot create a device on " + what + ": " + e.what());
  }
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>("commgate/gloo", store);
  auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, options);
  return std::make_unique<GlooCommunicator>(std::move(pg), iface, rank, size);
}

}  // namespace commgate::probe

#else  // !COMMGATE_PROBE_HAS_GLOO

namespace commgate::probe {

bool gloo_backend_built() {
  return false;
}

std::unique_ptr<Communicator> make_gloo_communicator(const c10::intrusive_ptr<c10d::Store>&, int,
                                                     int, const GlooOptions&) {
  throw std::runtime_error(
      "gloo: this commgate-probe was built without Gloo (LibTorch's Gloo headers, "
      "<gloo/algorithm.h>, were not found; pip's LibTorch does not ship them)");
}

}  // namespace commgate::probe

#endif
