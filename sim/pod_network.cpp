#include "sim/pod_network.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

extern char** environ;  // NOLINT: POSIX's, for posix_spawnp

namespace commgate::sim {
namespace {

namespace fs = std::filesystem;

// Runs `ip` with `args`, output discarded; its exit status (127 when it cannot start).
int run_ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw(argv.size() + 1, nullptr);
  std::transform(argv.begin(), argv.end(), raw.begin(), [](std::string& a) { return a.data(); });
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  // The caller's sockets (the API server's listener) stay out of it.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  pid_t pid = -1;
  const int err = posix_spawnp(&pid, "ip", &fa, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) return 127;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string joined(const std::vector<std::string>& args) {
  std::string out = "ip";
  for (const auto& a : args) out += " " + a;
  return out;
}

}  // namespace

std::optional<PodAddress> pod_address(const std::string& pod_cidr, int index) {
  std::array<int, 4> octet{};
  int prefix = 0;
  char rest = 0;
  if (std::sscanf(pod_cidr.c_str(), "%d.%d.%d.%d/%d%c", &octet[0], &octet[1], &octet[2], &octet[3],
                  &prefix, &rest) != 5)
    return std::nullopt;
  if (std::any_of(octet.begin(), octet.end(), [](int o) { return o < 0 || o > 255; }))
    return std::nullopt;
  if (prefix != 24 || octet[3] != 0 || index < 2 || index > 254) return std::nullopt;
  const std::string net =
      std::to_string(octet[0]) + "." + std::to_string(octet[1]) + "." + std::to_string(octet[2]);
  return PodAddress{net + "." + std::to_string(index), net + ".1"};
}

std::string pod_netns_name(const std::string& node_netns, int index) {
  return node_netns + "-p" + std::to_string(index);
}

void attach_pod_network(const std::string& node_netns, int index, const PodAddress& address) {
  const std::string ns = pod_netns_name(node_netns, index);
  const std::string veth = "vp" + std::to_string(index);
  detach_pod_network(node_netns, index);  // a leftover of a kubelet that died
  const std::vector<std::vector<std::string>> steps = {
      {"netns", "add", ns},
      {"-n", ns, "link", "set", "lo", "up"},
      {"-n", node_netns, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
      {"-n", node_netns, "link", "set", veth, "master", "cni0"},
      {"-n", node_netns, "link", "set", veth, "up"},
      {"-n", ns, "addr", "add", address.ip + "/24", "dev", "eth0"},
      {"-n", ns, "link", "set", "eth0", "up"},
      {"-n", ns, "route", "add", "default", "via", address.gateway},
  };
  for (const auto& step : steps) {
    if (const int rc = run_ip(step); rc != 0) {
      detach_pod_network(node_netns, index);
      throw std::runtime_error(
          "pod network on " + node_netns + ": `" + joined(step) + "` exited " + std::to_string(rc) +
          (step.back() == "cni0" ? " (no cni0 bridge in the node's namespace: make the "
                                   "nodes with scripts/netsim.sh up)"
                                 : ""));
    }
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const fs::path dir = fs::path("/etc/netns") / ns;
  fs::create_directories(dir);
  std::ofstream(dir / "hosts", std::ios::trunc)
      << "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
      << address.ip << "\t" << host << "\n";
}

void detach_pod_network(const std::string& node_netns, int index) {
  const std::string pod_netns = pod_netns_name(node_netns, index);
  // The node's end of the veth first, and at once: deleting the namespace alone leaves
  // it to the kernel's deferred namespace cleanup, and a pod given the same index a
  // moment later met `vp<index>` still there ("File exists"; seen as a training pod that
  // never started after the probe's pods went).
  run_ip({"-n", node_netns, "link", "del", "vp" + std::to_string(index)});
  if (fs::exists(fs::path("/run/netns") / pod_netns)) run_ip({"netns", "delete", pod_netns});
  std::error_code ignored;
  fs::remove_all(fs::path("/etc/netns") / pod_netns, ignored);
}

}  // namespace commgate::sim
