// Runs a program (the probe, netsim.sh) as the tests' child: argv and extra environment
// given, stdout and stderr captured to files, waited for with a deadline and killed (by
// its pid, with its process group) when it overruns. Test support only.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace commgate::probe::testing {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Finished {
  int exit_code = -1;  // -1: killed by a signal or by the deadline
  bool timed_out = false;
  double seconds = 0;
  std::string out;
  std::string err;
};

class Subprocess {
 public:
  Subprocess(std::vector<std::string> argv, std::map<std::string, std::string> env,
             const std::string& capture_prefix)
      : out_path_(capture_prefix + ".out"), err_path_(capture_prefix + ".err") {
    std::map<std::string, std::string> full;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) full[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (auto& [k, v] : env) full[k] = v;
    std::vector<std::string> env_strings;
    for (auto& [k, v] : full) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& s : argv) args.push_back(s.data());
    args.push_back(nullptr);
    start_ = std::chrono::steady_clock::now();
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);  // its own group: a kill reaches what it started (ip netns exec ...)
      int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, STDOUT_FILENO);
      dup2(err, STDERR_FILENO);
      execve(args[0], args.data(), envp.data());
      std::perror("execve");
      _exit(127);
    }
    if (pid_ > 0) setpgid(pid_, pid_);
  }

  ~Subprocess() {
    if (pid_ > 0 && !reaped_) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }

  // Waits until the child exits or `limit` passes (then kills its group).
  Finished wait(std::chrono::milliseconds limit) {
    Finished f;
    const auto deadline = start_ + limit;
    int status = 0;
    while (true) {
      const pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) break;
      if (std::chrono::steady_clock::now() > deadline) {
        kill(-pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        f.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    reaped_ = true;
    f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    f.exit_code = (!f.timed_out && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
    f.out = read_file(out_path_);
    f.err = read_file(err_path_);
    return f;
  }

 private:
  std::string out_path_;
  std::string err_path_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::chrono::steady_clock::time_point start_;
};

inline Finished run(std::vector<std::string> argv, std::map<std::string, std::string> env,
                    const std::string& capture_prefix, std::chrono::milliseconds limit) {
  Subprocess p(std::move(argv), std::move(env), capture_prefix);
  return p.wait(limit);
}

}  // namespace commgate::probe::testing
