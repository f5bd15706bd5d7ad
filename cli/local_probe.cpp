#include "cli/local_probe.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "core/probe_memory.h"
#include "core/quantity.h"

namespace commgate {
namespace fs = std::filesystem;

std::string find_probe_binary(const std::string& explicit_path) {
  if (!explicit_path.empty()) return access(explicit_path.c_str(), X_OK) == 0 ? explicit_path : "";
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path sibling = self.parent_path() / "commgate-probe";
    if (access(sibling.c_str(), X_OK) == 0) return sibling.string();
  }
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      fs::path candidate = fs::path(p.substr(start, end - start)) / "commgate-probe";
      if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate.string();
      start = end + 1;
    }
  }
  return "";
}

namespace {

// Runs argv, capturing stdout and the tail of stderr. No shell: arguments are passed
// as they are.
int run_capture(const std::vector<std::string>& argv, std::string* out, std::string* err_tail) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  // Drain both pipes without blocking on one while the other fills.
  std::array<char, 65536> buf;
  bool out_open = true, err_open = true;
  std::string err_all;
  while (out_open || err_open) {
    fd_set fds;
    FD_ZERO(&fds);
    if (out_open) FD_SET(out_pipe[0], &fds);
    if (err_open) FD_SET(err_pipe[0], &fds);
    if (select(std::max(out_pipe[0], err_pipe[0]) + 1, &fds, nullptr, nullptr, nullptr) < 0)
      continue;
    if (out_open && FD_ISSET(out_pipe[0], &fds)) {
      ssize_t n = read(out_pipe[0], buf.data(), buf.size());
      if (n <= 0)
        out_open = false;
      else
        out->append(buf.data(), static_cast<size_t>(n));
    }
    if (err_open && FD_ISSET(err_pipe[0], &fds)) {
      ssize_t n = read(err_pipe[0], buf.data(), buf.size());
      if (n <= 0)
        err_open = false;
      else
        err_all.append(buf.data(), static_cast<size_t>(n));
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  *err_tail = err_all.size() > 2000 ? err_all.substr(err_all.size() - 2000) : err_all;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

ProbeResult run_local_probe(const ModelSpec& model, const LocalProbeOptions& options) {
  std::string probe = find_probe_binary(options.probe_path);
  if (probe.empty()) {
    throw std::runtime_error("no measurement given and commgate-probe was not found (looked " +
                             (options.probe_path.empty()
                                  ? std::string("next to commgate and on $PATH")
                                  : "at " + options.probe_path) +
                             "); build it with `make build`, or pass --measurement FILE");
  }
  // A job with stepTimeHintMs whose model would not fit here needs no compute step: the
  // probe would only refuse it (core/probe_memory.h). Without the hint it is asked, and
  // its refusal says what the model needs and to give the hint.
  const bool fits_here = [&] {
    if (!model.torch_script.empty()) return true;
    const auto available = memory_available();
    return !available ||
           memory_refusal(
               estimate_probe_memory(model.parameters, model.batch_size, model.optimizer),
               model.parameters, model.optimizer, *available, options.ranks)
               .empty();
  }();
  const bool measure_compute =
      model.parameters <= options.max_compute_parameters && (fits_here || !model.step_time_hint_ms);
  // The probe's all-reduce data is fp32 and its synthetic model trains in fp32 on CPU,
  // so its compute step matches fp32-gradient jobs; others need stepTimeHintMs.
  std::vector<std::string> argv = {
      probe,
      "--local-ranks",
      std::to_string(options.ranks),
      "--timeout",
      std::to_string(options.timeout_seconds),
      "--batch-size",
      std::to_string(model.batch_size),
      "--termination-log",
      "",
      "--quiet",
      "--max-bytes",
      std::to_string(static_cast<long long>(std::min(model.gradient_bytes(), 64.0 * 1048576)))};
  if (measure_compute) {
    // The optimizer's step is part of the compute step the probe times.
    argv.insert(argv.end(), {"--params", std::to_string(static_cast<long long>(model.parameters)),
                             "--optimizer", model.optimizer});
  } else {
    argv.push_back("--no-compute");
  }
  std::string out, err;
  int rc = run_capture(argv, &out, &err);
  if (rc != 0) {
    // Rank 0's result names the failed stage (with --quiet it is not on stderr).
    std::string stage_error;
    if (const auto doc = nlohmann::json::parse(out, nullptr, false);
        doc.is_object() && doc.contains("error") && doc["error"].is_object()) {
      stage_error = "stage " + doc["error"].value("stage", std::string("?")) + ": " +
                    doc["error"].value("message", std::string()) + "\n";
    }
    throw std::runtime_error("commgate-probe failed (exit " + std::to_string(rc) + "):\n" +
                             stage_error + err);
  }
  try {
    return parse_probe_result(nlohmann::json::parse(out));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("commgate-probe printed an unreadable result: ") +
                             e.what());
  }
}

}  // namespace commgate
