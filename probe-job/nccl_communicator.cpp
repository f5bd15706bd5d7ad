#include "probe-job/nccl_communicator.h"

#include <cstdlib>
#include <stdexcept>

#ifdef COMMGATE_PROBE_WITH_NCCL

#include <cuda_runtime.h>
#include <nccl.h>

#ifdef COMMGATE_PROBE_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "probe-job/nccl_log.h"

namespace commgate::probe {
namespace {

std::string where(const char* file, int line) {
  return std::string(file) + ":" + std::to_string(line);
}

[[noreturn]] void throw_cuda(cudaError_t rc, const char* expr, const char* file, int line) {
  throw std::runtime_error(where(file, line) + ": CUDA call " + expr +
                           " failed: " + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc));
}

inline void cuda_check(cudaError_t rc, const char* expr, const char* file, int line) {
  if (rc != cudaSuccess) throw_cuda(rc, expr, file, line);
}

// One checking macro per foreign C API; the error carries file:line and the call.
#define CUDA_CHECK(expr) cuda_check((expr), #expr, __FILE__, __LINE__)

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

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class NcclPending final : public PendingAllReduce {
 public:
  NcclPending(cudaEvent_t done, cudaStream_t compute) : done_(done), compute_(compute) {}
  ~NcclPending() override { cudaEventDestroy(done_); }
  // As DDP does for NCCL: the compute stream waits for the all-reduce; the host does not.
  void wait() override { CUDA_CHECK(cudaStreamWaitEvent(compute_, done_, 0)); }

 private:
  cudaEvent_t done_;
  cudaStream_t compute_;
};

// NCCL's checking macro: a member call, since its errors need the communicator's state
// (NCCL's last error, the log, the abort).
#define NCCL_CHECK(expr) check_nccl((expr), #expr, __FILE__, __LINE__)

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   const NcclOptions& opts)
      : rank_(rank), size_(size), deadline_(opts.deadline) {
    const CudaDeviceQuery devices = query_cuda_devices();
    if (devices.count <= 0) throw std::runtime_error("nccl: " + cuda_unusable_text(devices));
    device_ = opts.local_rank % devices.count;
    CUDA_CHECK(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    product_ = prop.name;
    int version = 0;
    if (ncclGetVersion(&version) == ncclSuccess) version_ = nccl_version_text(version);

    if (std::getenv("NCCL_SOCKET_IFNAME") == nullptr && !opts.socket_interface.empty() &&
        opts.socket_interface != "lo") {
      setenv("NCCL_SOCKET_IFNAME", opts.socket_interface.c_str(), 0);
    }
    route_log(opts.hostname);

    // LibTorch's stream pool, so the caching allocator knows the stream (recordStream).
    nccl_stream_ = c10::cuda::getStreamFromPool(/*isHighPriority=*/true,
                                                static_cast<c10::DeviceIndex>(device_));
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
    CUDA_CHECK(cudaEventCreate(&start_));
    CUDA_CHECK(cudaEventCreate(&stop_));
    CUDA_CHECK(cudaEventCreateWithFlags(&fence_, cudaEventDisableTiming));
    CUDA_CHECK(cudaMalloc(&scratch_, sizeof(float)));
    refresh_transport();
  }

  // Runs on success only (failures leave the process at once): the communicator is
  // destroyed under the watchdog (the runner resets it in stage "finish"), and the
  // private log is removed.
  ~NcclCommunicator() override {
    if (scratch_ != nullptr) cudaFree(scratch_);
    if (start_ != nullptr) cudaEventDestroy(start_);
    if (stop_ != nullptr) cudaEventDestroy(stop_);
    if (fence_ != nullptr) cudaEventDestroy(fence_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (log_.route == NcclLogPlan::Route::kPrivateFile) unlink(log_.read_path.c_str());
  }

  std::string backend_name() const override { return "nccl"; }
  std::string transport() const override { return transport_.transport; }
  std::string interface_name() const override { return transport_.interface_name; }
  at::Device device() const override {
    return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_));
  }
  std::string device_product() const override { return product_; }
  std::string library_version() const override { return version_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::unique_ptr<PendingAllReduce> allreduce_sum_async(at::Tensor& t) override {
    check_input(t);
    CUDA_CHECK(cudaSetDevice(device_));
    const cudaStream_t compute = current_stream();
    cudaEvent_t ready = nullptr, done = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(ready, compute));
    CUDA_CHECK(cudaStreamWaitEvent(nccl_stream(), ready, 0));
    CUDA_CHECK(cudaEventDestroy(ready));
    // The tensor is used on our stream: its memory must not be reused before we are done.
    c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), *nccl_stream_);
    NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()),
                             nccl_dtype(t), ncclSum, comm_, nccl_stream()));
    CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(done, nccl_stream()));
    return std::make_unique<NcclPending>(done, compute);
  }

  double time_allreduce(at::Tensor& t, int iterations) override {
    check_input(t);
    synchronize();
    CUDA_CHECK(cudaEventRecord(start_, nccl_stream()));
    for (int i = 0; i < iterations; ++i) {
      NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()),
                               nccl_dtype(t), ncclSum, comm_, nccl_stream()));
    }
    CUDA_CHECK(cudaEventRecord(stop_, nccl_stream()));
    wait_for(stop_,
             "the timed all-reduces of " + std::to_string(t.numel() * t.element_size()) + " bytes");
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms) / 1e3 / iterations;
  }

  void barrier() override {
    CUDA_CHECK(cudaSetDevice(device_));
    NCCL_CHECK(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, nccl_stream()));
    CUDA_CHECK(cudaEventRecord(fence_, nccl_stream()));
    wait_for(fence_, "a barrier (a one-element all-reduce)");
  }

  // The compute stream, then ours: everything queued before this call has finished.
  void synchronize() override {
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaEventRecord(fence_, current_stream()));
    wait_for(fence_, "the compute stream");
    CUDA_CHECK(cudaEventRecord(fence_, nccl_stream()));
    wait_for(fence_, "the all-reduces in flight");
  }

  void refresh_transport() override {
    std::string text;
    if (forwarder_) {
      text = forwarder_->text();
    } else if (!log_.read_path.empty()) {
      text = read_text(log_.read_path);
    }
    auto parsed = nccl_transport_for_world(size_, text);
    if (parsed.transport != "unknown") transport_ = parsed;
  }

 private:
  cudaStream_t current_stream() const {
    return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_)).stream();
  }

  // NCCL_DEBUG unset: INFO into a private file (the transport is read from it); the user's
  // NCCL_DEBUG_FILE (%h, %p expanded): kept; NCCL_DEBUG without a file: stderr, never
  // stdout, which carries rank 0's JSON.
  void route_log(const std::string& hostname) {
    const std::string private_path = "/tmp/commgate-nccl." + std::to_string(getpid()) + ".log";
    log_ = plan_nccl_log(process_env(), hostname, static_cast<long>(getpid()), private_path);
    for (const auto& [name, value] : log_.set_env) setenv(name.c_str(), value.c_str(), 1);
    if (log_.route == NcclLogPlan::Route::kStderr) {
      forwarder_ = LogForwarder::start(STDERR_FILENO);
      setenv("NCCL_DEBUG_FILE", forwarder_->path().c_str(), 1);
    }
  }

  std::string log_place() const {
    return log_.route == NcclLogPlan::Route::kStderr ? "stderr" : log_.read_path;
  }

  // NCCL's last error is read before the abort, which clears nothing but may add to it.
  [[noreturn]] void fail(NcclFailure f) {
    f.rank = rank_;
    f.log = log_place();
    const char* last = ncclGetLastError(comm_);
    if (last != nullptr) f.last_error = last;
    if (comm_ != nullptr) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    throw std::runtime_error(nccl_failure_text(f));
  }

  void check_nccl(ncclResult_t rc, const char* expr, const char* file, int line) {
    if (rc == ncclSuccess) return;
    NcclFailure f;
    f.where = where(file, line);
    f.call = std::string("call ") + expr;
    f.result = ncclGetErrorString(rc);
    fail(std::move(f));
  }

  void check_input(const at::Tensor& t) const {
    const std::string problem = collective_input_problem(t, device());
    if (!problem.empty()) throw std::runtime_error("nccl: all-reduce input: " + problem);
  }

  // Polls `event` and the communicator's asynchronous error until the deadline, as
  // nccl-tests does; on an error or at the deadline the communicator is aborted.
  void wait_for(cudaEvent_t event, const std::string& what) {
    const PollOutcome got = poll_until(
        [&](std::string* error) {
          const cudaError_t q = cudaEventQuery(event);
          if (q == cudaSuccess) return PollState::kDone;
          if (q != cudaErrorNotReady) {
            *error = std::string("CUDA ") + cudaGetErrorName(q) + ": " + cudaGetErrorString(q);
            return PollState::kFailed;
          }
          ncclResult_t async = ncclSuccess;
          if (ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess &&
              async != ncclInProgress) {
            *error = ncclGetErrorString(async);
            return PollState::kFailed;
          }
          return PollState::kPending;
        },
        deadline_);
    if (got.state == PollState::kDone) return;
    NcclFailure f;
    f.call = "wait for " + what;
    f.result = got.state == PollState::kFailed
                   ? got.error
                   : "not done by the deadline (a peer may have stopped, or the link is much "
                     "slower than the sweep assumes)";
    fail(std::move(f));
  }

  cudaStream_t nccl_stream() const { return nccl_stream_->stream(); }

  int rank_;
  int size_;
  std::chrono::steady_clock::time_point deadline_;
  int device_ = 0;
  std::string product_;
  std::string version_;
  ncclComm_t comm_ = nullptr;
  std::optional<c10::cuda::CUDAStream> nccl_stream_;  // set once the device is chosen
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  cudaEvent_t fence_ = nullptr;
  void* scratch_ = nullptr;
  NcclLogPlan log_;
  std::unique_ptr<LogForwarder> forwarder_;
  NcclTransport transport_;
};

#undef NCCL_CHECK

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const c10::intrusive_ptr<c10d::Store>& store,
                                                     int rank, int size, const NcclOptions& opts) {
  return std::make_unique<NcclCommunicator>(store, rank, size, opts);
}

}  // namespace commgate::probe

#else  // NCCL and the CUDA runtime, but a LibTorch without CUDA: nothing to run on

namespace commgate::probe {

std::unique_ptr<Communicator> make_nccl_communicator(const c10::intrusive_ptr<c10d::Store>&, int,
                                                     int, const NcclOptions&) {
  throw std::runtime_error(
      "nccl: this commgate-probe was built against a LibTorch without CUDA (build against the "
      "LibTorch of a CUDA PyTorch: scripts/gpu-first-run.sh does)");
}

}  // namespace commgate::probe

#endif  // COMMGATE_PROBE_TORCH_CUDA

namespace commgate::probe {

bool nccl_backend_built() {
  return true;
}

CudaDeviceQuery query_cuda_devices() {
  CudaDeviceQuery q;
  cudaDriverGetVersion(&q.driver_version);
  cudaRuntimeGetVersion(&q.runtime_version);
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) q.visible_devices = v;
  const cudaError_t rc = cudaGetDeviceCount(&q.count);
  if (rc != cudaSuccess) {
    q.count = 0;
    q.error_name = cudaGetErrorName(rc);
    q.error_string = cudaGetErrorString(rc);
    cudaGetLastError();  // clear it, so later calls do not see it
  }
  return q;
}

int nccl_runtime_version() {
  int version = 0;
  return ncclGetVersion(&version) == ncclSuccess ? version : 0;
}

int nccl_header_version() {
  return NCCL_VERSION_CODE;
}

}  // namespace commgate::probe

#else  // !COMMGATE_PROBE_WITH_NCCL

namespace commgate::probe {

bool nccl_backend_built() {
  return false;
}

CudaDeviceQuery query_cuda_devices() {
  CudaDeviceQuery q;
  q.error_name = "notBuilt";
  q.error_string = "this commgate-probe was built without the NCCL backend";
  return q;
}

int nccl_runtime_version() {
  return 0;
}
int nccl_header_version() {
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
