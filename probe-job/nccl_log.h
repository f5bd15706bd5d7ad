// NCCL's own log, without NCCL: what it says about the transport (NCCL has no API for
// it), where it goes (a private file, the user's NCCL_DEBUG_FILE with %h/%p, or stderr,
// never stdout, which carries rank 0's JSON), and how an NCCL failure is told (the
// call, NCCL's last error, where the log is). Pure text and a pipe, so every piece is
// tested here, with or without the NCCL backend built.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "probe-job/probe_config.h"

namespace commgate::probe {

struct NcclTransport {
  std::string transport =
      "unknown";               // "ib", "socket", "p2p/nvlink", "shm", "nvls", mixes "ib+p2p/nvlink"
  std::string interface_name;  // e.g. "eth0" (socket) or "mlx5_0:1" (IB)
};

// `log` is the text NCCL wrote with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET).
NcclTransport parse_nccl_transport(const std::string& log);
// One rank moves nothing between ranks: transport "none", no interface, whatever the log
// says. Otherwise parse_nccl_transport.
NcclTransport nccl_transport_for_world(int world_size, const std::string& log);

// NCCL_DEBUG_FILE as NCCL expands it: %h the hostname, %p the pid, %% a percent sign.
std::string expand_nccl_debug_file(const std::string& pattern, const std::string& hostname,
                                   long pid);

// Where NCCL's log goes and where the probe reads it back.
struct NcclLogPlan {
  enum class Route {
    kPrivateFile,  // NCCL_DEBUG unset: INFO to a file of ours, deleted after a success
    kUserFile,     // the user's NCCL_DEBUG_FILE (expanded); kept
    kStderr,       // NCCL_DEBUG set without a file: NCCL would print on stdout
  };
  Route route = Route::kPrivateFile;
  std::map<std::string, std::string> set_env;  // to set before NCCL starts (kStderr: the
                                               // forwarder's path is set by the caller)
  std::string read_path;                       // the file to read the transport from
};
// `private_path` is the file used when the user asked for no log.
NcclLogPlan plan_nccl_log(const EnvLookup& env, const std::string& hostname, long pid,
                          const std::string& private_path);

// Copies what is written to path() (a pipe, opened by name as NCCL opens its debug file)
// to `target_fd` as it comes, and keeps it for text(). The copying thread lives as long
// as the process: NCCL never closes its log.
class LogForwarder {
 public:
  // Throws std::runtime_error when the pipe cannot be made.
  static std::unique_ptr<LogForwarder> start(int target_fd);
  ~LogForwarder();
  LogForwarder(const LogForwarder&) = delete;
  LogForwarder& operator=(const LogForwarder&) = delete;

  std::string path() const;  // /proc/self/fd/N
  std::string text() const;  // everything forwarded so far

 private:
  struct Shared;
  explicit LogForwarder(std::shared_ptr<Shared> shared);
  std::shared_ptr<Shared> shared_;
};

// An NCCL call that failed, told in full.
struct NcclFailure {
  std::string where;       // "file.cpp:123"
  std::string call;        // the expression, or "all-reduce wait"
  std::string result;      // ncclGetErrorString, or what went wrong ("timed out after 30s")
  std::string last_error;  // ncclGetLastError(comm): NCCL's own WARN text, often naming the peer
  int rank = -1;
  std::string log;  // where NCCL's log is: a path, or "stderr"; empty when unknown
};
std::string nccl_failure_text(const NcclFailure& f);

// NCCL_VERSION_CODE / ncclGetVersion as text: 22707 -> "2.27.7" (2.9 and later:
// X*10000+Y*100+Z), 2708 -> "2.7.8" (before: X*1000+Y*100+Z).
std::string nccl_version_text(int code);

}  // namespace commgate::probe
