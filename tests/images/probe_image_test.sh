#!/usr/bin/env bash
# `commgate-probe` in its image, as the operator's probe Jobs run it (user 65532, read-only
# root filesystem, no capabilities, no privilege escalation): a 1-rank measurement in a
# container of its own (--network none: loopback only), then a 2-rank Gloo measurement
# between two containers, rank 1 in rank 0's network namespace (--network container:),
# rendezvous on its loopback. Small sizes: seconds, not a real measurement.
#   probe_image_test.sh SOURCE_DIR
set -euo pipefail
src=$1
source "$src/tests/images/images_test_lib.sh" "$src"
require_containers
require_image "$PROBE_IMAGE"

rank0=commgate-images-test-probe0-$$
rank1=commgate-images-test-probe1-$$
# Rank 1 first: podman refuses to remove rank 0 while rank 1 uses its network namespace.
cleanup() {
  podman_cmd rm -f "$rank1" >/dev/null 2>&1 || true
  podman_cmd rm -f "$rank0" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM  # ctest's timeout: the EXIT trap still removes the containers

restricted=("${podman_limits[@]}" --user 65532:65532 --read-only --cap-drop=ALL
  --security-opt no-new-privileges)
small=(--backend gloo --params 1M --batch-size 8 --max-bytes 1Mi --compute-iters 2 --ddp-iters 2
  --threads 1 --timeout 60 --termination-log "" --quiet)

# Checks rank 0's JSON (stdout): the world it measured, the backend, and a fitted link.
check_result() {
  python3 - "$1" "$2" <<'PY'
import json, sys
result, nodes = json.loads(sys.argv[1]), int(sys.argv[2])
assert result["world"]["nodes"] == nodes, result["world"]
assert result["backend"] == "gloo", result.get("backend")
PY
}

started=$SECONDS
out=$(podman_cmd run --rm --name "$rank0" "${restricted[@]}" --network none "$PROBE_IMAGE" "${small[@]}") ||
  fail "the 1-rank probe failed"
check_result "$out" 1 || fail "the 1-rank result is wrong: $out"
echo "1 rank in $PROBE_IMAGE: measured in $((SECONDS - started)) s"

started=$SECONDS
world=(-e MASTER_ADDR=127.0.0.1 -e MASTER_PORT=29500 -e WORLD_SIZE=2)
podman_cmd run -d --name "$rank0" "${restricted[@]}" --network none "${world[@]}" -e RANK=0 \
  "$PROBE_IMAGE" "${small[@]}" >/dev/null
podman_cmd run -d --name "$rank1" "${restricted[@]}" --network "container:$rank0" "${world[@]}" -e RANK=1 \
  "$PROBE_IMAGE" "${small[@]}" >/dev/null
code0=$(podman_cmd wait "$rank0")
code1=$(podman_cmd wait "$rank1")
out=$(podman_cmd logs "$rank0" 2>/dev/null)
if [ "$code0" != 0 ] || [ "$code1" != 0 ]; then
  fail "2 ranks: exit codes $code0 and $code1: $(podman_cmd logs "$rank0" 2>&1 | tail -5) / $(podman_cmd logs "$rank1" 2>&1 | tail -5)"
fi
check_result "$out" 2 || fail "the 2-rank result is wrong: $out"
echo "2 ranks over Gloo between two containers: measured in $((SECONDS - started)) s"
