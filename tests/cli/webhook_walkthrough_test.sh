#!/bin/bash
# docs/webhook.md's walkthrough, run as written: the ```sh blocks of the section
# "Walkthrough: from an empty cluster to a downsized job", in order, with build/bin the
# binaries under test and the webhook's port 9443 a free one. Then checks what the doc
# says happens: the job comes back downsized, recorded against the profile the doc names.
# Usage: webhook_walkthrough_test.sh BIN_DIR SOURCE_DIR
set -uo pipefail
BIN=$1
SRC=$2
for tool in kubectl openssl curl jq; do
  command -v $tool >/dev/null || { echo "SKIP: no $tool"; exit 77; }
done
cd "$SRC"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
script=$(awk '/^## Walkthrough: from an empty cluster to a downsized job/{on=1; next}
              on && /^## /{on=0}
              on && /^```sh$/{code=1; next}
              on && code && /^```$/{code=0; next}
              on && code' docs/webhook.md)
[ -n "$script" ] || { echo "FAIL: no walkthrough in docs/webhook.md"; exit 1; }
script=${script//build\/bin\//$BIN/}
script=${script//9443/$port}
# Run everything before the clean-up, check, then clean up as the doc does.
steps=${script%%kill %1*}
cleanup=kill\ %1${script#*kill %1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
timeout 180 bash -c "$steps"'
echo "CHECK nodes=$(kubectl get tj -n nlp bert-large -o jsonpath={.spec.numNodes})"
echo "CHECK decision=$(kubectl get tj -n nlp bert-large -o "jsonpath={.metadata.annotations.commgate\.io/decision}")"
echo "CHECK record=$(kubectl get tj -n nlp bert-large -o "jsonpath={.metadata.annotations.commgate\.io/decision-record}")"
'"$cleanup" >"$out" 2>&1
rc=$?
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$out"; exit 1; }
[ $rc -eq 0 ] || fail "the walkthrough exited $rc"
grep -q "looked for CommProfile pool-1fe15c4a8473beea, which does not exist" "$out" ||
  fail "step 4: no gate warning naming pool-1fe15c4a8473beea"
grep -q "commgate profile: CommProfile pool-1fe15c4a8473beea" "$out" ||
  fail "step 5: commgate profile did not name pool-1fe15c4a8473beea"
grep -q "pool-1fe15c4a8473beea serverside-applied" "$out" || fail "step 6: status not applied"
grep -q "Warning: commgate: spec.numNodes lowered from 4 to 1" "$out" ||
  fail "step 7: no downsize warning"
grep -q "^CHECK nodes=1$" "$out" || fail "the stored job does not have numNodes 1"
grep -q "^CHECK decision=Downsize$" "$out" || fail "the stored job is not marked Downsize"
grep -q '"profile":{"name":"pool-1fe15c4a8473beea"' "$out" ||
  fail "the decision record does not name the profile"
echo "PASS: docs/webhook.md walkthrough (webhook on port $port)"
