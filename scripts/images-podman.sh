#!/usr/bin/env bash
# Sourced by scripts/images*.sh: `podman_cmd` is podman as these scripts run it, rootful with
# the runtime and cgroup manager that work on these machines (and on ordinary hosts):
#   --runtime runc            crun (podman's first choice) fails here on the hybrid cgroup
#                             (v1 + v2) layout and on raising rlimits (COMMGATE_PODMAN_RUNTIME
#                             names another)
#   --cgroup-manager cgroupfs no systemd to ask for cgroups
#   --events-backend file     no journald to log podman's events to
# and `podman_limits`, the rlimits every `run`/`build` passes: rootful podman otherwise asks
# for nofile 1048576, above these machines' hard limit (20000), and runc fails with "error
# setting rlimits for ready process: ... operation not permitted".
podman_cmd() {
  podman --runtime "${COMMGATE_PODMAN_RUNTIME:-runc}" --cgroup-manager cgroupfs --events-backend file "$@"
}
# shellcheck disable=SC2034 # used by the scripts that source this one
podman_limits=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)

# Why this machine cannot run containers, or nothing when it can: the tests skip with it.
podman_unusable_reason() {
  if ! command -v podman >/dev/null; then echo "podman is not installed (scripts/install-deps.sh)"; return; fi
  if [ "$(id -u)" -ne 0 ]; then echo "not root: the image scripts run podman rootful"; return; fi
  if ! command -v runc >/dev/null; then echo "runc is not installed (scripts/install-deps.sh)"; return; fi
}
