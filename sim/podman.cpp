#include "sim/podman.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <sstream>

extern char** environ;  // NOLINT: POSIX's, for posix_spawnp

namespace commgate::sim {

PodmanResult run_podman(const std::vector<std::string>& podman,
                        const std::vector<std::string>& args) {
  std::vector<std::string> argv = podman;
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw(argv.size() + 1, nullptr);
  std::transform(argv.begin(), argv.end(), raw.begin(), [](std::string& a) { return a.data(); });
  int out[2];
  if (argv.empty() || pipe2(out, O_CLOEXEC) != 0) return {127, "cannot run podman"};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  // The caller's sockets (the API server's listener) stay out of it.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  pid_t pid = -1;
  const int err = posix_spawnp(&pid, raw[0], &fa, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  PodmanResult result;
  if (err != 0) {
    close(out[0]);
    return {127, argv[0] + ": cannot be started"};
  }
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (result.output.size() < 65536) result.output.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::optional<std::string> podman_image_user(const std::vector<std::string>& podman,
                                             const std::string& image) {
  PodmanResult r = run_podman(podman, {"image", "inspect", "--format", "{{.Config.User}}", image});
  if (r.exit_code != 0) return std::nullopt;
  while (!r.output.empty() && (r.output.back() == '\n' || r.output.back() == '\r'))
    r.output.pop_back();
  return r.output;
}

void podman_remove(const std::vector<std::string>& podman, const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::vector<std::string> args = {"rm", "--force", "--ignore", "--time", "0"};
  args.insert(args.end(), names.begin(), names.end());
  run_podman(podman, args);
}

std::vector<std::string> remove_orphaned_containers(const std::vector<std::string>& podman,
                                                    const std::string& label_key) {
  const PodmanResult listed =
      run_podman(podman, {"ps", "--all", "--filter", "label=" + label_key, "--format",
                          "{{.Names}} {{index .Labels \"" + label_key + "\"}}"});
  std::vector<std::string> orphans;
  if (listed.exit_code != 0) return orphans;
  std::istringstream lines(listed.output);
  for (std::string name, pid; lines >> name >> pid;) {
    char* end = nullptr;
    const long owner = std::strtol(pid.c_str(), &end, 10);
    if (end == pid.c_str() || *end != '\0' || owner <= 0) continue;
    if (kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH) orphans.push_back(name);
  }
  podman_remove(podman, orphans);
  return orphans;
}

std::vector<std::string> default_podman_command() {
  const char* runtime = std::getenv("COMMGATE_PODMAN_RUNTIME");
  return {"podman",
          "--runtime",
          runtime != nullptr && *runtime != '\0' ? runtime : "runc",
          "--cgroup-manager",
          "cgroupfs",
          "--events-backend",
          "file"};
}

std::vector<std::string> default_podman_run_options() {
  return {"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"};
}

}  // namespace commgate::sim
