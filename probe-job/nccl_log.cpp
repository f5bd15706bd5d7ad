#include "probe-job/nccl_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace commgate::probe {
namespace {

// "NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:..." -> "eth0";
// "NET/IB : Using [0]mlx5_0:1/IB [1]..." -> "mlx5_0:1".
std::string first_device_after_using(const std::string& line) {
  auto at = line.find("Using [0]");
  if (at == std::string::npos) return "";
  at += 9;
  auto end = line.find_first_of(" </", at);
  std::string dev = line.substr(at, end == std::string::npos ? std::string::npos : end - at);
  if (line.find("NET/Socket") != std::string::npos) {
    // eth0:10.0.0.1 -> eth0
    if (auto colon = dev.find(':'); colon != std::string::npos) dev = dev.substr(0, colon);
  }
  return dev;
}

}  // namespace

NcclTransport parse_nccl_transport(const std::string& log) {
  NcclTransport out;
  bool net_ib = false, net_socket = false, p2p = false, shm = false, nvls = false;
  std::string ib_dev, socket_dev, using_network;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" via NET/IB") != std::string::npos) net_ib = true;
    if (line.find(" via NET/Socket") != std::string::npos) net_socket = true;
    if (line.find(" via P2P") != std::string::npos) p2p = true;
    if (line.find(" via SHM") != std::string::npos) shm = true;
    if (line.find("NVLS multicast support is available") != std::string::npos ||
        line.find(" via NVLS") != std::string::npos) {
      nvls = true;
    }
    if (line.find("Using network IB") != std::string::npos) using_network = "ib";
    if (line.find("Using network Socket") != std::string::npos) using_network = "socket";
    if (line.find("NET/IB : Using") != std::string::npos && ib_dev.empty()) {
      ib_dev = first_device_after_using(line);
    }
    if (line.find("NET/Socket : Using") != std::string::npos && socket_dev.empty()) {
      socket_dev = first_device_after_using(line);
    }
  }
  std::vector<std::string> kinds;
  // Connections say what each channel really used; "Using network" only what the
  // inter-node network would be.
  if (net_ib) kinds.push_back("ib");
  if (net_socket) kinds.push_back("socket");
  if (!net_ib && !net_socket && !using_network.empty() && !p2p && !shm)
    kinds.push_back(using_network);
  if (p2p) kinds.push_back("p2p/nvlink");
  if (shm) kinds.push_back("shm");
  if (nvls && kinds.empty()) kinds.push_back("nvls");
  if (!kinds.empty()) {
    out.transport.clear();
    for (size_t i = 0; i < kinds.size(); ++i) out.transport += (i ? "+" : "") + kinds[i];
  }
  const bool uses_ib = net_ib || (!net_socket && using_network == "ib");
  out.interface_name = uses_ib ? ib_dev : socket_dev;
  if (out.interface_name.empty()) out.interface_name = socket_dev.empty() ? ib_dev : socket_dev;
  return out;
}

NcclTransport nccl_transport_for_world(int world_size, const std::string& log) {
  if (world_size <= 1) return NcclTransport{"none", ""};
  return parse_nccl_transport(log);
}

std::string expand_nccl_debug_file(const std::string& pattern, const std::string& hostname,
                                   long pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char c = pattern[i + 1];
      if (c == 'h' || c == 'p' || c == '%') {
        out += c == 'h' ? hostname : c == 'p' ? std::to_string(pid) : "%";
        ++i;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

NcclLogPlan plan_nccl_log(const EnvLookup& env, const std::string& hostname, long pid,
                          const std::string& private_path) {
  NcclLogPlan plan;
  const auto level = env("NCCL_DEBUG");
  const auto file = env("NCCL_DEBUG_FILE");
  if (file && !file->empty()) {
    plan.route = NcclLogPlan::Route::kUserFile;
    plan.read_path = expand_nccl_debug_file(*file, hostname, pid);
    if (!level) {
      // A file without a level logs nothing: give it what the transport needs.
      plan.set_env["NCCL_DEBUG"] = "INFO";
      if (!env("NCCL_DEBUG_SUBSYS")) plan.set_env["NCCL_DEBUG_SUBSYS"] = "INIT,NET";
    }
    return plan;
  }
  if (level) {
    plan.route = NcclLogPlan::Route::kStderr;
    return plan;
  }
  plan.route = NcclLogPlan::Route::kPrivateFile;
  plan.read_path = private_path;
  plan.set_env["NCCL_DEBUG"] = "INFO";
  plan.set_env["NCCL_DEBUG_SUBSYS"] = "INIT,NET";
  plan.set_env["NCCL_DEBUG_FILE"] = private_path;
  return plan;
}

struct LogForwarder::Shared {
  int read_fd = -1;
  int write_fd = -1;
  int target_fd = -1;
  mutable std::mutex mu;
  std::string text;
};

LogForwarder::LogForwarder(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}
LogForwarder::~LogForwarder() = default;

std::unique_ptr<LogForwarder> LogForwarder::start(int target_fd) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("nccl: cannot make a pipe for NCCL's log: ") +
                             std::strerror(errno));
  }
  auto shared = std::make_shared<Shared>();
  shared->read_fd = fds[0];
  shared->write_fd = fds[1];  // held open: the reader never sees EOF while NCCL may write
  shared->target_fd = target_fd;
  std::thread([shared] {
    char buf[4096];
    for (;;) {
      const ssize_t n = read(shared->read_fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = write(shared->target_fd, buf + done, static_cast<size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += w;
      }
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->text.append(buf, static_cast<size_t>(n));
    }
  }).detach();
  return std::unique_ptr<LogForwarder>(new LogForwarder(std::move(shared)));
}

std::string LogForwarder::path() const {
  return "/proc/self/fd/" + std::to_string(shared_->write_fd);
}

std::string LogForwarder::text() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->text;
}

std::string nccl_failure_text(const NcclFailure& f) {
  std::string out;
  if (!f.where.empty()) out += f.where + ": ";
  out += "NCCL";
  if (!f.call.empty()) out += " " + f.call;
  out += " failed";
  if (f.rank >= 0) out += " on rank " + std::to_string(f.rank);
  out += ": " + f.result;
  if (!f.last_error.empty()) out += "; NCCL says: " + f.last_error;
  if (f.log == "stderr") {
    out += " (NCCL's log is on stderr)";
  } else if (!f.log.empty()) {
    out += " (NCCL's log: " + f.log + ")";
  } else {
    out += " (set NCCL_DEBUG=INFO for NCCL's log)";
  }
  return out;
}

std::string nccl_version_text(int code) {
  if (code <= 0) return "";
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? (code % 10000) / 100 : (code % 1000) / 100;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace commgate::probe
