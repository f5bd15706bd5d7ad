#include "cli/subprocess.h"

#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace commgate {

Captured run_capture(const std::vector<std::string>& argv) {
  Captured c;
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
        c.out.append(buf.data(), static_cast<size_t>(n));
    }
    if (err_open && FD_ISSET(err_pipe[0], &fds)) {
      ssize_t n = read(err_pipe[0], buf.data(), buf.size());
      if (n <= 0)
        err_open = false;
      else
        c.err.append(buf.data(), static_cast<size_t>(n));
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  c.code =
      WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return c;
}

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  const std::string p = path;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    const std::filesystem::path candidate =
        std::filesystem::path(p.substr(start, end - start)) / name;
    if (end > start && access(candidate.c_str(), X_OK) == 0) return candidate.string();
    start = end + 1;
  }
  return "";
}

}  // namespace commgate
