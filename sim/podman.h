// Short podman commands the kubelet's container mode runs and waits for (the image's USER,
// removing containers); `podman run` itself is started by the kubelet as a container's
// process. `podman` is the command prefix (KubeletOptions::podman: the program and its
// global options, scripts/images-podman.sh's).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace commgate::sim {

struct PodmanResult {
  int exit_code = 0;   // 127: podman could not be started
  std::string output;  // stdout and stderr, the first 64 KiB
};

PodmanResult run_podman(const std::vector<std::string>& podman,
                        const std::vector<std::string>& args);

// The image's configured USER ("" = root); nullopt when the image is not in the store.
std::optional<std::string> podman_image_user(const std::vector<std::string>& podman,
                                             const std::string& image);

// Removes the containers at once (SIGKILL, no grace): what `podman run` leaves running
// when it is killed itself. Quiet when they are gone.
void podman_remove(const std::vector<std::string>& podman, const std::vector<std::string>& names);

// Removes the containers labelled `label_key`=<pid> whose pid is no longer a process: what
// a commgate-sim killed with SIGKILL left running. Returns their names.
std::vector<std::string> remove_orphaned_containers(const std::vector<std::string>& podman,
                                                    const std::string& label_key);

// The global options scripts/images-podman.sh gives podman on these machines (runc,
// cgroupfs, file events; COMMGATE_PODMAN_RUNTIME names another runtime), and the rlimits
// every `podman run` there passes.
std::vector<std::string> default_podman_command();
std::vector<std::string> default_podman_run_options();

}  // namespace commgate::sim
