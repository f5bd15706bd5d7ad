#!/usr/bin/env bash
# The fixture of the image tests: the runtime base (scripts/images-base.sh --runtime-only;
# cached; the debootstrap base is only for `make images`' build stages) and the fast
# images of this build's binaries (scripts/images-from-binaries.sh) at COMMGATE_IMAGE_TAG,
# then each image's size (docs/benchmarks.md "Images").
#   build_test_images.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
source "$src/tests/images/images_test_lib.sh" "$src"
reason=$(podman_unusable_reason)
[ -z "$reason" ] || skip "$reason"
started=$SECONDS
"$src/scripts/images-base.sh" --runtime-only
echo "base ready in $((SECONDS - started)) s"
started=$SECONDS
COMMGATE_IMAGE_TAG=$IMAGE_TAG "$src/scripts/images-from-binaries.sh" "$build"
echo "test images built in $((SECONDS - started)) s"
for image in "$DISTROLESS_BASE" "$WEBHOOK_IMAGE" "$PROBE_IMAGE"; do
  if podman_cmd image exists "$image"; then
    size=$(podman_cmd image inspect --format '{{.Size}}' "$image")
    echo "image size: $image $((size / 1000000)) MB ($size bytes)"
  fi
done
