#!/usr/bin/env bash
# shellcheck disable=SC2034 # the names are used by the tests that source this file
# Sourced by the image tests: podman as the image scripts run it (scripts/images-podman.sh),
# the skip rule, and the names of the images under test.
# shellcheck source=scripts/images-podman.sh
source "$1/scripts/images-podman.sh"
readonly IMAGE_TAG=${COMMGATE_IMAGE_TAG:-test}
readonly WEBHOOK_IMAGE=commgate/commgate:$IMAGE_TAG
readonly PROBE_IMAGE=commgate/commgate-probe:$IMAGE_TAG
readonly DISTROLESS_BASE=gcr.io/distroless/cc-debian12:nonroot

# ctest's SKIP_RETURN_CODE: the reason first, so the skip is never silent.
skip() {
  echo "SKIPPED: $*"
  exit 77
}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Skips unless podman can run a container here: installed, root, and the runtime starts one
# (the base's dynamic loader, its one program, so it does not depend on the image under test).
require_containers() {
  local reason
  reason=$(podman_unusable_reason)
  [ -z "$reason" ] || skip "$reason"
  if podman_cmd image exists "$DISTROLESS_BASE"; then
    local out
    if ! out=$(podman_cmd run --rm "${podman_limits[@]}" --network none \
      --entrypoint /lib64/ld-linux-x86-64.so.2 "$DISTROLESS_BASE" --version 2>&1 | tr -d '\000'); then
      skip "podman cannot run a container here: $(echo "$out" | tail -3)"
    fi
  fi
}

require_image() {
  podman_cmd image exists "$1" || fail "$1 does not exist (the images.FromBinaries.build fixture makes it)"
}

# The image's files (a container created, exported as a tar and listed, then removed).
image_files() {
  local name=commgate-images-test-files-$$
  podman_cmd create --name "$name" --entrypoint /none "$1" >/dev/null
  podman_cmd export "$name" | tar -t
  podman_cmd rm -f "$name" >/dev/null
}
