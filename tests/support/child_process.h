// A program the test runs (commgate, commgate-sim, kubectl): started with posix_spawn,
// stdout and stderr together in a file the test reads, waited for with deadlines, and
// stopped when the test is done (SIGTERM, then SIGKILL). Test support only; the probe's
// tests have their own, with separate streams and process groups (tests/probe/subprocess.h).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

namespace commgate::testing {

// The whole file, or "" when it cannot be read.
std::string read_file(const std::filesystem::path& path);

class ChildProcess {
 public:
  // argv[0] is the program's path. Output (stdout and stderr) goes to `output_file`.
  ChildProcess(const std::vector<std::string>& argv, std::filesystem::path output_file);
  // SIGTERM, up to 5 s for it to exit, then SIGKILL.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }  // e.g. to kill(pid(), SIGKILL) in a failover test
  bool running();
  // The exit status (128 + signal when killed by one), or -1 when it has not exited within
  // `timeout` (it is then killed).
  int wait_exit(std::chrono::milliseconds timeout = std::chrono::seconds(15));
  // SIGTERM and wait_exit.
  int terminate(std::chrono::milliseconds timeout = std::chrono::seconds(15));
  std::string output() const { return read_file(output_); }
  // The port in the first match of `pattern` (its group 1) in the output, or 0 when the
  // process exited or printed none within `timeout`.
  uint16_t wait_for_port(const std::regex& pattern,
                         std::chrono::milliseconds timeout = std::chrono::seconds(15));

 private:
  std::filesystem::path output_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
};

}  // namespace commgate::testing
