#include "probe-job/nccl_communicator.h"

#include <stdexcept>

#ifdef COMMGATE_PROBE_WITH_NCCL

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "probe-job/nccl_log.h"

namespace commgate::probe {
namespace detail {

[[noreturn]] void throw_foreign(const char* api, const char* expr, const char* file, int line,
                                const std::string& why) {
  std::ostringstream m;
  m << file << ":" << line << ": " << api << " call " << expr << " failed: " << why;
  throw std::runtime_error(m.str());
}

inline void cuda_check(cudaError_t rc, const char* expr, const char* file, int line) {
  if (rc != cudaSuccess) {
    throw_foreign("CUDA", expr, file, line,
                  std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc));
  }
}

inline void nccl_check(ncclResult_t rc, const char* expr, const char* file, int line) {
  if (rc != ncclSuccess) {
    std::string why = ncclGetErrorString(rc);
    if (rc == ncclSystemError || rc == ncclRemoteError || rc == ncclInternalError) {
      why += " (NCCL_DEBUG=WARN tells more)";
    }
    throw_foreign("NCCL", expr, file, line, why);
  }
}

}  // namespace detail

// One checking macro per foreign C API; the error carries file:line and the call.
#define CUDA_CHECK(expr) ::commgate::probe::detail::cuda_check((expr), #expr, __FILE__, __LINE__)
#define NCCL_CHECK(expr) ::commgate::probe::detail::nccl_check((expr), #expr, __FILE__, __LINE__)

namespace {

ncclDataType_t nccl_dtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return ncclFloat32;
    case at::kHalf:
      return ncclFloat16;
    case at::kBFloat16:
      return ncclBfloat16;
    case at::kDouble:
      return ncclFloat64;
    default:
      throw std::runtime_error("nccl: unsupported all-reduce dtype " +
                               std::string(c10::toString(t.scalar_type())));
  }
}

// The stream LibTorch computes on when nobody changed it: the legacy default stream.
cudaStream_t compute_stream() {
  return cudaStreamLegacy;
}

class NcclPending final : public PendingAllReduce {
 public:
  explicit NcclPending(cudaEvent_t done) : done_(done) {}
  ~NcclPending() override { cudaEventDestroy(done_); }
  // As DDP does for NCCL: the compute stream waits for the all-reduce; the host does not.
  void wait() override { CUDA_CHECK(cudaStreamWaitEvent(compute_stream(), done_, 0)); }

 private:
  cudaEvent_t done_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   const NcclOptions& opts)
      : rank_(rank), size_(size) {
    int count = 0;
    CUDA_CHECK(cudaGetDeviceCount(&count));
    if (count <= 0) throw std::runtime_error("nccl: no CUDA device is visible");
    device_ = opts.local_rank % count;
    CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    product_ = prop.name;

    if (std::getenv("NCCL_SOCKET_IFNAME") == nullptr && !opts.socket_interface.empty() &&
        opts.socket_interface != "lo") {
      setenv("NCCL_SOCKET_IFNAME", opts.socket_interface.c_str(), 0);
    }
    // NCCL has no API that says which transport it chose; its INFO log does.
    if (std::getenv("NCCL_DEBUG") == nullptr) {
      log_path_ = "/tmp/commgate-nccl." + std::to_string(getpid()) + ".log";
      setenv("NCCL_DEBUG", "INFO", 1);
      setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
      setenv("NCCL_DEBUG_FILE", log_path_.c_str(), 1);
      owns_log_ = true;
    } else if (const char* f = std::getenv("NCCL_DEBUG_FILE")) {
      log_path_ = f;
    }

    ncclUniqueId id;
    const std::string key = "commgate/nccl/unique-id";
    if (rank == 0) {
      NCCL_CHECK(ncclGetUniqueId(&id));
      const auto* p = reinterpret_cast<const uint8_t*>(&id);
      store->set(key, std::vector<uint8_t>(p, p + sizeof id));
    } else {
      store->wait({key}, opts.timeout);
      auto bytes = store->get(key);
      if (bytes.size() != sizeof id)
        throw std::runtime_error("nccl: malformed unique id in the store");
      std::memcpy(&id, bytes.data(), sizeof id);
    }
    NCCL_CHECK(ncclCommInitRank(&comm_, size, id, rank));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
    CUDA_CHECK(cudaMalloc(&scratch_, sizeof(float)));
    refresh_transport();
  }

  ~NcclCommunicator() override {
    if (scratch_ != nullptr) cudaFree(scratch_);
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (owns_log_) unlink(log_path_.c_str());
  }

  std::string backend_name() const override { return "nccl"; }
  std::string transport() const override { return transport_.transport; }
  std::string interface_name() const override { return transport_.interface_name; }
  at::Device device() const override {
    return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_));
  }
  std::string device_product() const override { return product_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::unique_ptr<PendingAllReduce> allreduce_sum_async(at::Tensor& t) override {
    CUDA_CHECK(cudaSetDevice(device_));
    cudaEvent_t ready = nullptr, done = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(ready, compute_stream()));
    CUDA_CHECK(cudaStreamWaitEvent(stream_, ready, 0));
    CUDA_CHECK(cudaEventDestroy(ready));
    NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()),
                             nccl_dtype(t), ncclSum, comm_, stream_));
    CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(done, stream_));
    return std::make_unique<NcclPending>(done);
  }

  double time_allreduce(at::Tensor& t, int iterations) override {
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaEventRecord(start_, stream_));
    for (int i = 0; i < iterations; ++i) {
      NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()),
                               nccl_dtype(t), ncclSum, comm_, stream_));
    }
    CUDA_CHECK(cudaEventRecord(stop_, stream_));
    CUDA_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms) / 1e3 / iterations;
  }

  void barrier() override {
    CUDA_CHECK(cudaSetDevice(device_));
    NCCL_CHECK(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void synchronize() override {
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  void refresh_transport() override {
    if (log_path_.empty()) return;
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = parse_nccl_transport(text.str());
    if (parsed.transport != "unknown") transport_ = parsed;
  }

 private:
  int rank_;
  int size_;
  int device_ = 0;
  std::string product_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  void* scratch_ = nullptr;
  std::string log_path_;
  bool owns_log_ = false;
  NcclTransport transport_;
};

}  // namespace

bool nccl_backend_built() {
  return true;
}

int visible_cuda_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear "no device" so later calls do not see it
    return 0;
  }
  return count;
}

std::unique_ptr<Communicator> make_nccl_communicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                     int rank, int size, const NcclOptions& opts) {
  return std::make_unique<NcclCommunicator>(store, rank, size, opts);
}

}  // namespace commgate::probe

#else  // !COMMGATE_PROBE_WITH_NCCL

namespace commgate::probe {

bool nccl_backend_built() {
  return false;
}
int visible_cuda_devices() {
  return 0;
}

std::unique_ptr<Communicator> make_nccl_communicator(const c10::intrusive_ptr<c10d::Store>&, int,
                                                     int, const NcclOptions&) {
  throw std::runtime_error(
      "nccl: this commgate-probe was built without the NCCL backend (configure with "
      "COMMGATE_PROBE_NCCL=ON and a CUDA toolkit with NCCL)");
}

}  // namespace commgate::probe

#endif
