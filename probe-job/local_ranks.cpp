#include "probe-job/local_ranks.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <torch/cuda.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <thread>

#include "probe-job/gpu_diagnostics.h"
#include "probe-job/nccl_communicator.h"
#include "probe-job/probe_runner.h"
#include "probe-job/report.h"

extern char** environ;

namespace commgate::probe {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;  // set by SIGINT/SIGTERM: stop the ranks

void on_stop_signal(int sig) {
  g_stop_signal = sig;
}

// A free loopback port for rank 0's store (bound and released; the ranks start at once).
int free_loopback_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 29500;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    socklen_t len = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

bool is_world_flag(const std::string& flag) {
  return flag == "--local-ranks" || flag == "--rank" || flag == "--world-size" ||
         flag == "--master-addr" || flag == "--master-port";
}

}  // namespace

std::vector<std::string> local_rank_args(const std::vector<std::string>& args, int threads) {
  std::vector<std::string> out;
  bool has_threads = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string flag = a.substr(0, a.find('='));
    if (is_world_flag(flag)) {
      if (a.find('=') == std::string::npos) ++i;  // skip its value
      continue;
    }
    if (flag == "--threads") has_threads = true;
    out.push_back(a);
  }
  if (!has_threads) {
    out.push_back("--threads");
    out.push_back(std::to_string(threads));
  }
  return out;
}

int run_local_ranks(const ProbeConfig& cfg, const std::vector<std::string>& args, std::ostream& out,
                    std::ostream& err) {
  const int n = cfg.local_ranks;
  const int port = free_loopback_port();
  const int threads = cfg.threads > 0 ? cfg.threads : default_threads(n);
  auto child_args = local_rank_args(args, threads);
  // NCCL cannot put two ranks on one GPU: with fewer GPUs than ranks, say so before
  // starting any (an unusable NCCL is told by the ranks themselves).
  const CudaDeviceQuery devices = query_cuda_devices();
  if (nccl_unavailable_reason(nccl_backend_built(), devices, torch::cuda::is_available()).empty()) {
    const LocalRanksBackend choice =
        choose_local_ranks_backend(cfg.backend, n, devices.count, nccl_backend_built());
    if (!choice.error.empty()) {
      err << "commgate-probe: " << choice.error << "\n";
      return kExitUsage;
    }
    if (!choice.note.empty()) err << "commgate-probe: " << choice.note << "\n";
    if (choice.backend == BackendChoice::kGloo && cfg.backend == BackendChoice::kAuto) {
      child_args.push_back("--backend");
      child_args.push_back("gloo");
    }
  }

  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // Each local rank stands for one node.
  env["MASTER_ADDR"] = "127.0.0.1";
  env["MASTER_PORT"] = std::to_string(port);
  env["WORLD_SIZE"] = std::to_string(n);
  env["LOCAL_WORLD_SIZE"] = "1";
  env["COMMGATE_PROBE_LOCAL_RANKS"] = std::to_string(n);  // they share this machine's memory
  env["OMP_NUM_THREADS"] = std::to_string(threads);
  env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"];

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  out.flush();
  err.flush();
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    env["RANK"] = std::to_string(r);
    env["LOCAL_RANK"] = std::to_string(r);
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string self = "commgate-probe";
    argv.push_back(self.data());
    std::vector<std::string> argv_strings = child_args;
    for (auto& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);

    const pid_t pid = fork();
    if (pid < 0) {
      err << "commgate-probe: fork failed: " << std::strerror(errno) << "\n";
      for (pid_t p : pids) kill(p, SIGKILL);
      for (pid_t p : pids) waitpid(p, nullptr, 0);
      return kExitFailed;
    }
    if (pid == 0) {
      if (r != 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
      }
      execve("/proc/self/exe", argv.data(), envp.data());
      std::fprintf(stderr, "commgate-probe: cannot re-execute itself: %s\n", std::strerror(errno));
      _exit(kExitFailed);
    }
    pids.push_back(pid);
  }

  // Wait for every rank; bound the wait, and stop the rest once one has failed.
  using SteadyClock = std::chrono::steady_clock;
  auto deadline = SteadyClock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(cfg.timeout_s * 1000)) +
                  std::chrono::seconds(15);
  std::map<pid_t, int> codes;
  bool killed = false;
  while (codes.size() < pids.size()) {
    int status = 0;
    const pid_t done = waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : kExitFailed;
      codes[done] = code;
      if (code != 0) deadline = std::min(deadline, SteadyClock::now() + std::chrono::seconds(15));
      continue;
    }
    if (done < 0 && errno != EINTR) break;
    if (!killed && (g_stop_signal != 0 || SteadyClock::now() > deadline)) {
      for (pid_t p : pids) {
        if (!codes.count(p)) kill(p, SIGKILL);
      }
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  const int rank0 = codes.count(pids[0]) ? codes[pids[0]] : kExitFailed;
  if (rank0 != 0) return rank0;
  for (pid_t p : pids) {
    if (codes[p] != 0) return codes[p];
  }
  return kExitOk;
}

}  // namespace commgate::probe
