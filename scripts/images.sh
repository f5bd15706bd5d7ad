#!/usr/bin/env bash
# `make images`: both images from images/*.Dockerfile, compiled from source inside the
# build stage, as an admin builds them (docs/install.md "Images"), tagged as the chart's
# image.repository/probeRepository at image.tag (the chart's appVersion unless
# COMMGATE_IMAGE_TAG says otherwise). Where no registry is reachable, the bases the FROM
# lines name are made first from Debian's packages (scripts/images-base.sh; cached).
#
#   scripts/images.sh [commgate|commgate-probe]...    (default: both)
#
# The sources are this checkout's files as they are; COMMGATE_IMAGES_SOURCE=<git revision>
# (e.g. HEAD, a release tag) builds that revision's committed files instead (`git archive`),
# the Dockerfiles still from this checkout.
#
# Many minutes: each build stage installs its toolchain and compiles with all the cores
# the container sees. The fast images for tests: scripts/images-from-binaries.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/images-podman.sh"
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$root/charts/commgate/Chart.yaml")
readonly TAG=${COMMGATE_IMAGE_TAG:-$app_version}

say() { echo "images: $*"; }

# The build context: the checkout, or the committed files of COMMGATE_IMAGES_SOURCE.
build_context() {
  if [ -z "${COMMGATE_IMAGES_SOURCE:-}" ]; then
    echo "$root"
    return
  fi
  local context
  context=$(mktemp -d "${TMPDIR:-/tmp}/commgate-images-source.XXXXXX")
  git -C "$root" archive "$COMMGATE_IMAGES_SOURCE" | tar -x -C "$context"
  echo "$context"
}

# --network host: the build stage's apt-get reaches the Debian mirror through the host's
# network, with no container network (netavark/CNI) to set up.
build_from_dockerfile() {
  local name=$1 context=$2
  local image=commgate/$name:$TAG
  say "building $image from images/$name.Dockerfile (compiles from source: minutes)"
  local started=$SECONDS
  podman_cmd build "${podman_limits[@]}" --network host \
    --build-arg VERSION="$TAG" \
    -f "$root/images/$name.Dockerfile" -t "$image" "$context"
  say "built $image in $((SECONDS - started)) s: $(podman_cmd image inspect --format '{{.Size}}' "$image") bytes"
}

"$root/scripts/images-base.sh"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then names=(commgate commgate-probe); fi
context=$(build_context)
say "sources: ${COMMGATE_IMAGES_SOURCE:-this checkout} ($context)"
for name in "${names[@]}"; do build_from_dockerfile "$name" "$context"; done
if [ "$context" != "$root" ]; then rm -rf "$context"; fi
