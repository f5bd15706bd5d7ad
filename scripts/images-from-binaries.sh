#!/usr/bin/env bash
# The fast images: the binaries this machine has already built (build/bin/commgate,
# build/bin/commgate-probe) in the distroless-equivalent base, with exactly the shared
# libraries ldd lists for them (less the base's), no shell. What `make test` and CI run:
# the from-source Dockerfile build (`make images`) compiles everything again inside a
# container, many minutes; this takes seconds (docs/testing.md "Images").
#
#   scripts/images-from-binaries.sh [BUILD_DIR]     (default build)
#
# Tags: the chart's image.repository/probeRepository (commgate/commgate,
# commgate/commgate-probe) at COMMGATE_IMAGE_TAG (default: the chart's appVersion), as
# `make images` tags its images: set COMMGATE_IMAGE_TAG to keep both. A binary not built
# (commgate-probe without LibTorch) is skipped, with a line saying so.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/images-podman.sh"
build_dir=$(cd "${1:-$root/build}" && pwd)
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$root/charts/commgate/Chart.yaml")
readonly TAG=${COMMGATE_IMAGE_TAG:-$app_version}
readonly BASE=gcr.io/distroless/cc-debian12:nonroot

say() { echo "images-from-binaries: $*"; }

# The libraries the runtime base already has: glibc's, libstdc++ and libgcc (as the
# Dockerfiles' ldd copy leaves them out).
readonly BASE_LIBRARIES='/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so'

# The build context: the binary (its debug sections dropped: the RelWithDebInfo build's are
# most of its size) at /usr/local/bin, each library ldd resolves at the path it resolved to,
# and the Containerfile.
stage_context() {
  local binary=$1 context=$2 name
  name=$(basename "$binary")
  mkdir -p "$context/rootfs/usr/local/bin"
  objcopy --strip-debug "$binary" "$context/rootfs/usr/local/bin/$name"
  ldd "$binary" | awk '/=> \// {print $3}' | grep -Ev "$BASE_LIBRARIES" |
    xargs -r -I{} cp --parents -L {} "$context/rootfs/"
  cat >"$context/Containerfile" <<EOF
FROM $BASE
LABEL org.opencontainers.image.title="$name" org.opencontainers.image.version="$TAG" \
      org.opencontainers.image.description="$name from a local build (scripts/images-from-binaries.sh)"
COPY rootfs/ /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/$name"]
EOF
}

build_image() {
  local name=$1 image=$2 binary=$build_dir/bin/$1
  if [ ! -x "$binary" ]; then
    say "$binary is not built: no $image"
    return 0
  fi
  local context
  context=$(mktemp -d "${TMPDIR:-/tmp}/commgate-image.XXXXXX")
  stage_context "$binary" "$context"
  say "building $image from $binary and its $(find "$context/rootfs" -name '*.so*' | wc -l) libraries"
  local previous
  previous=$(podman_cmd image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
  podman_cmd build --quiet --network none -f "$context/Containerfile" -t "$image" "$context" >/dev/null
  rm -rf "$context"
  remove_if_untagged "$previous"
}

# The image this tag named before a rebuild, once no tag names it (each test run would
# otherwise leave one more, the probe's 765 MB).
remove_if_untagged() {
  local id=$1
  [ -n "$id" ] || return 0
  if [ "$(podman_cmd image inspect --format '{{len .RepoTags}}' "$id" 2>/dev/null)" = 0 ]; then
    podman_cmd rmi "$id" >/dev/null 2>&1 || true
  fi
}

if ! podman_cmd image exists "$BASE"; then
  say "$BASE is missing: running scripts/images-base.sh --runtime-only first"
  "$root/scripts/images-base.sh" --runtime-only
fi
build_image commgate "commgate/commgate:$TAG"
build_image commgate-probe "commgate/commgate-probe:$TAG"
