// The kubelet's container mode (commgate-sim --pod-containers, KubeletOptions::podman): how
// one container of a pod is run from its image with `podman run`, as a CRI runtime runs it
// for the kubelet, or why it cannot be run as the pod asks. Pure: the kubelet supplies
// what it resolved (env, volume directories, the pod's network namespace, the image's
// USER) and runs the arguments.
//
// What is honoured, from the container's securityContext over the pod's (upstream's
// securitycontext.DetermineEffectiveSecurityContext):
//   runAsUser / runAsGroup      --user UID[:GID] (runAsGroup alone: the image's user with
//                               that group); supplementalGroups and fsGroup: --group-add
//   runAsNonRoot                checked as upstream's kubelet does before it creates the
//                               container (pkg/kubelet/kuberuntime/security_context_others.go
//                               verifyRunAsNonRoot), with its messages
//   readOnlyRootFilesystem      --read-only, without podman's extra tmpfs mounts
//   capabilities                the runtime default set of containerd (pkg/oci/spec.go) less
//                               `drop` (ALL: none) plus `add`, given exactly (podman's own
//                               default set is smaller)
//   privileged                  --privileged
//   allowPrivilegeEscalation    false: --security-opt no-new-privileges
//   seccompProfile              RuntimeDefault: the runtime's default profile; Unconfined
//                               or absent (the kubelet's default without --seccomp-default):
//                               seccomp=unconfined
//   sysctls, hostPID, hostIPC   --sysctl, --pid host, --ipc host
// Refused, with the reason (CreateContainerConfigError): seccomp and AppArmor profiles of
// type Localhost, seLinuxOptions (no SELinux on these nodes), procMount Unmasked, and
// runAsNonRoot that the user would break. Not applied (said in docs/testing.md): resource
// limits (no cgroup limits), probes other than the kubelet's own httpGet readiness,
// lifecycle hooks, imagePullPolicy (nothing is pulled: the image must be in podman's store).
#pragma once

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate::sim {

// containerd's default capabilities for a container (what `drop`/`add` start from).
inline constexpr std::array<const char*, 14> kRuntimeDefaultCapabilities = {
    "CHOWN",   "DAC_OVERRIDE", "FSETID",           "FOWNER",
    "MKNOD",   "NET_RAW",      "SETGID",           "SETUID",
    "SETFCAP", "SETPCAP",      "NET_BIND_SERVICE", "SYS_CHROOT",
    "KILL",    "AUDIT_WRITE"};

struct BindMount {
  std::string host_path, container_path;
  bool read_only = false;
};

// What the kubelet resolved for one container.
struct ContainerLaunch {
  std::string name;   // podman's container name (unique on the machine)
  std::string image;  // the reference, as the pod spec gives it
  // The network namespace's name (ip netns) the container joins; "" = the host's.
  std::string netns;
  std::string hostname;   // with a network namespace of the pod's or the node's
  std::string pod_label;  // "name_namespace(uid)": upstream's format.Pod, for messages
  std::vector<std::string> command, args;  // $(VAR) already expanded; empty = the image's
  std::map<std::string, std::string> env;
  std::vector<BindMount> mounts;
  std::string image_user;  // the image's USER ("" = root), from `podman image inspect`
  // Options every `podman run` gets (rlimits the machine needs: scripts/images-podman.sh).
  std::vector<std::string> run_options;
  // KEY=VALUE naming the kubelet that started it (kOwnerLabel): a later one removes the
  // containers of one that died without stopping them.
  std::string owner_label;
};

// The label on every container the kubelet starts: the pid of the commgate-sim that did.
inline constexpr const char* kOwnerLabel = "io.commgate.sim-owner-pid";

// `podman run` arguments (from "run" on), or the reason the container cannot run as asked.
struct ContainerRunPlan {
  std::vector<std::string> args;
  std::string refusal;  // non-empty: do not run (the container waits with this message)
};

ContainerRunPlan podman_run_plan(const nlohmann::json& pod_spec, const nlohmann::json& container,
                                 const ContainerLaunch& launch);

}  // namespace commgate::sim
