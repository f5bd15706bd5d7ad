#!/usr/bin/env bash
# docs/install.md's "Building them with podman, without a registry" block as an admin runs
# it, against a registry of our own: the Distribution registry (Debian's docker-registry)
# on 127.0.0.1, plain HTTP, which podman is told to accept through a registries.conf of
# the test's (CONTAINERS_REGISTRIES_CONF: nothing of the machine's configuration changes).
# Changed from the block as written: `registry.example` is that registry, the tag is the
# test images' (`0.1.0` -> `test`, the images the images.FromBinaries.build fixture made
# from this build's binaries), and two lines are left out: `scripts/install-deps.sh` (the
# packages are installed) and `make images` (the from-source build takes 40 minutes on
# these machines: docs/testing.md "Images"). Every other line runs as written. Then the
# pushed images are pulled back by their registry names and must be the same images.
#   install_doc_push_test.sh SOURCE_DIR
set -euo pipefail
src=$1
source "$src/tests/images/images_test_lib.sh" "$src"
require_containers
require_image "$WEBHOOK_IMAGE"
require_image "$PROBE_IMAGE"
command -v docker-registry >/dev/null || skip "docker-registry is not installed (scripts/install-deps.sh)"

work=$(mktemp -d "${TMPDIR:-/tmp}/commgate-push-test.XXXXXX")
registry_pid=""
pushed=()
cleanup() {
  [ -z "$registry_pid" ] || kill "$registry_pid" 2>/dev/null || true
  for image in "${pushed[@]}"; do podman_cmd rmi "$image" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The registry, on a free port.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
registry=127.0.0.1:$port
cat >"$work/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $work/store
http:
  addr: $registry
EOF
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 100); do
  curl -sf "http://$registry/v2/" >/dev/null && break
  kill -0 "$registry_pid" 2>/dev/null || fail "the registry did not start: $(tail -5 "$work/registry.log")"
  sleep 0.1
done
curl -sf "http://$registry/v2/" >/dev/null || fail "the registry does not answer on $registry"
printf '[[registry]]\nlocation = "%s"\ninsecure = true\n' "$registry" >"$work/registries.conf"
export CONTAINERS_REGISTRIES_CONF=$work/registries.conf

# The block, from the fence after its heading to the closing fence.
block=$(awk '/^### Building them with podman, without a registry/ {inside = 1}
             inside && /^```sh$/ {code = 1; next}
             code && /^```$/ {exit}
             code {print}' "$src/docs/install.md")
[ -n "$block" ] || fail "no sh block under \"Building them with podman\" in docs/install.md"
grep -q '^make images' <<<"$block" || fail "the block no longer runs make images: update this test"
script=$(grep -v -e '^scripts/install-deps.sh' -e '^make images' <<<"$block")
script=${script//registry.example/$registry}
script=${script//0.1.0/$IMAGE_TAG}
for name in commgate commgate-probe; do pushed+=("$registry/commgate/$name:$IMAGE_TAG"); done
echo "--- docs/install.md's block, as run:"
echo "$script"
echo "---"
bash -euo pipefail -c "$script" >"$work/out.txt" 2>&1 || fail "the block failed: $(tail -20 "$work/out.txt")"

# What the registry holds, pulled back under the registry's names: the same images.
for name in commgate commgate-probe; do
  tags=$(curl -sf "http://$registry/v2/commgate/$name/tags/list") || fail "$name is not in the registry"
  grep -q "\"$IMAGE_TAG\"" <<<"$tags" || fail "$name:$IMAGE_TAG is not in the registry: $tags"
  local_id=$(podman_cmd image inspect --format '{{.Id}}' "commgate/$name:$IMAGE_TAG")
  podman_cmd rmi "$registry/commgate/$name:$IMAGE_TAG" >/dev/null
  podman_cmd pull --quiet "$registry/commgate/$name:$IMAGE_TAG" >/dev/null ||
    fail "cannot pull $registry/commgate/$name:$IMAGE_TAG back"
  pulled_id=$(podman_cmd image inspect --format '{{.Id}}' "$registry/commgate/$name:$IMAGE_TAG")
  [ "$pulled_id" = "$local_id" ] || fail "$name: pulled $pulled_id, pushed $local_id"
  echo "$registry/commgate/$name:$IMAGE_TAG pushed and pulled back: image $local_id"
done
