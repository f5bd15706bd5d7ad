#include "tests/support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/wait.h"

extern char** environ;

namespace commgate::testing {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, std::filesystem::path output_file)
    : output_(std::move(output_file)) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // None of the test's other descriptors: a child holding an in-process server's listening
  // socket (not CLOEXEC) keeps its port bound after the server stops, so a server restarted
  // on the same port (sim::ApiServer::restart) cannot listen again.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0 || exited_) return;
  kill(pid_, SIGTERM);
  wait_exit(std::chrono::seconds(5));
}

bool ChildProcess::running() {
  if (pid_ <= 0 || exited_) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
  exited_ = true;
  code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return false;
}

int ChildProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  if (wait_until([&] { return !running(); }, timeout)) return code_;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  exited_ = true;
  return -1;
}

int ChildProcess::terminate(std::chrono::milliseconds timeout) {
  if (running()) kill(pid_, SIGTERM);
  return wait_exit(timeout);
}

uint16_t ChildProcess::wait_for_port(const std::regex& pattern, std::chrono::milliseconds timeout) {
  uint16_t port = 0;
  wait_until(
      [&] {
        std::smatch m;
        const std::string text = output();
        if (std::regex_search(text, m, pattern)) port = static_cast<uint16_t>(std::stoi(m[1]));
        return port != 0 || !running();
      },
      timeout);
  return port;
}

}  // namespace commgate::testing
