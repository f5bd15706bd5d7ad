#!/usr/bin/env bash
# `commgate webhook` in its image, run as the chart runs it (runAsUser 65532,
# readOnlyRootFilesystem, all capabilities dropped, no privilege escalation; the certificate
# pair from a read-only mount), answering an AdmissionReview over TLS from the host, with
# the CA checked. From outside the container: its process is user 65532 with no effective
# capabilities and no_new_privs; the image has no shell (`--entrypoint /bin/sh` fails and
# no sh/bash/dash file exists). Prints the image's shared libraries.
#   webhook_image_test.sh SOURCE_DIR
set -euo pipefail
src=$1
source "$src/tests/images/images_test_lib.sh" "$src"
require_containers
require_image "$WEBHOOK_IMAGE"

work=$(mktemp -d "${TMPDIR:-/tmp}/commgate-webhook-image.XXXXXX")
container=commgate-images-test-webhook-$$
cleanup() {
  podman_cmd rm -f "$container" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM  # ctest's timeout: the EXIT trap still removes the containers

# A CA and a serving certificate for localhost (docs/webhook.md's openssl steps), readable by
# 65532 only; no policies or profiles (the built-in default policy decides).
mkdir -p "$work/certs" "$work/policies"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=commgate test CA" \
  -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
  -keyout "$work/certs/tls.key" -out "$work/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$work/tls.ext"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
  -days 1 -extfile "$work/tls.ext" -out "$work/certs/tls.crt" 2>/dev/null
chown -R 65532:65532 "$work/certs"
chmod 0400 "$work/certs/tls.key"

# --network host: the host's client reaches it on loopback, at the port the kernel picked
# (--port 0; the log line names it).
podman_cmd run -d --name "$container" "${podman_limits[@]}" --network host \
  --user 65532:65532 --read-only --cap-drop=ALL --security-opt no-new-privileges \
  -v "$work/certs:/certs:ro" -v "$work/policies:/policies:ro" \
  "$WEBHOOK_IMAGE" webhook --address 127.0.0.1 --port 0 \
  --tls-cert-file /certs/tls.crt --tls-private-key-file /certs/tls.key \
  --policy-dir /policies --profile-dir /policies >/dev/null

port=""
for _ in $(seq 100); do
  port=$(podman_cmd logs "$container" 2>&1 | sed -n 's/.*listening on [0-9.]*:\([0-9][0-9]*\).*/\1/p' | head -1)
  [ -n "$port" ] && break
  [ "$(podman_cmd inspect --format '{{.State.Running}}' "$container")" = true ] ||
    fail "the webhook exited: $(podman_cmd logs "$container" 2>&1 | tail -5)"
  sleep 0.1
done
[ -n "$port" ] || fail "no 'listening on' line in 10 s: $(podman_cmd logs "$container" 2>&1 | tail -5)"
echo "webhook in $WEBHOOK_IMAGE listening on 127.0.0.1:$port"

url=https://localhost:$port
curl -sf --cacert "$work/ca.crt" "$url/readyz" >/dev/null || fail "/readyz did not answer over TLS"
review=$src/tests/webhook/fuzz/corpus/trainingjob-create.json
uid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["request"]["uid"])' "$review")
answer=$(curl -sf --cacert "$work/ca.crt" -H 'Content-Type: application/json' \
  --data-binary "@$review" "$url/validate") || fail "/validate did not answer"
python3 - "$uid" "$answer" <<'PY' || fail "not an AdmissionReview answer for uid $uid: $answer"
import json, sys
review = json.loads(sys.argv[2])
assert review["kind"] == "AdmissionReview", review
assert review["response"]["uid"] == sys.argv[1], review
assert isinstance(review["response"]["allowed"], bool), review
PY
echo "AdmissionReview answered over TLS: $answer" | cut -c1-200

# From outside: the process's credentials as the kernel has them.
pid=$(podman_cmd inspect --format '{{.State.Pid}}' "$container")
status=$(cat "/proc/$pid/status")
uids=$(awk '/^Uid:/ {print $2, $3, $4, $5}' <<<"$status")
[ "$uids" = "65532 65532 65532 65532" ] || fail "the webhook runs as uid $uids, not 65532"
grep -q '^Gid:[[:space:]]*65532[[:space:]]' <<<"$status" || fail "the webhook's gid is not 65532"
# CapBnd too: a non-root process has no effective capabilities anyway; --cap-drop=ALL
# empties the bounding set, so nothing can be gained back.
for set in CapEff CapPrm CapBnd; do
  grep -q "^$set:[[:space:]]*0000000000000000$" <<<"$status" || fail "capabilities left: $(grep "^$set" <<<"$status")"
done
grep -q '^NoNewPrivs:[[:space:]]*1$' <<<"$status" || fail "no_new_privs is not set"
[ "$(podman_cmd inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$container")" = true ] ||
  fail "the root filesystem is not read-only"
[ "$(podman_cmd inspect --format '{{.Config.User}}' "$WEBHOOK_IMAGE")" = 65532:65532 ] ||
  fail "the image's USER is not 65532:65532"
echo "runs as 65532:65532, no capabilities (CapEff, CapPrm, CapBnd 0), NoNewPrivs 1, read-only root filesystem"

# No shell: starting one fails, and there is none among the image's files.
if podman_cmd run --rm "${podman_limits[@]}" --network none --entrypoint /bin/sh "$WEBHOOK_IMAGE" -c true \
  >/dev/null 2>&1; then
  fail "/bin/sh ran in $WEBHOOK_IMAGE"
fi
files=$(image_files "$WEBHOOK_IMAGE")
shells=$(grep -E '(^|/)(sh|bash|dash|busybox)$' <<<"$files" || true)
[ -z "$shells" ] || fail "shells in the image: $shells"
echo "no shell in the image"
echo "shared libraries $WEBHOOK_IMAGE adds to its base (what ldd lists for commgate):"
comm -23 <(grep -E '\.so(\.[0-9]+)*$' <<<"$files" | sort) \
  <(image_files "$DISTROLESS_BASE" | grep -E '\.so(\.[0-9]+)*$' | sort) | sed 's/^/  /'
