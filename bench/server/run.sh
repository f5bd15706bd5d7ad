#!/usr/bin/env bash
# Side by side: commgate's HTTPS server against nginx, both serving the same ~3 KB JSON over
# TLS on loopback, wrk at 1, 16 and 64 keep-alive connections and at 16 connections with a
# new TLS connection per request ("16new"), alternating servers, ROUNDS rounds. Prints one
# line per run and a summary with the ratio (ours / nginx).
#
#   bench/server/run.sh BUILD_DIR [ROUNDS=2] [DURATION=5s] [THREADS=nproc]
#
# nginx runs as a process started here, with a config in a temp dir, on 127.0.0.1 only, and
# is stopped by its pid. Needs: nginx, wrk, openssl (scripts/install-deps.sh).
set -euo pipefail

BUILD_DIR=${1:?usage: run.sh BUILD_DIR [ROUNDS] [DURATION] [THREADS]}
ROUNDS=${2:-2}
DURATION=${3:-5s}
THREADS=${4:-$(nproc)}
OURS="$BUILD_DIR/bin/commgate-server-bench"
[ -x "$OURS" ] || { echo "missing $OURS (cmake --build $BUILD_DIR --target commgate-server-bench)" >&2; exit 1; }

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$HERE/../lib.sh"
bench_setup server
bench_require nginx wrk openssl curl python3
bench_make_cert

# A ~3 KB JSON document (an AdmissionReview-sized body).
python3 - "$WORK/static.json" <<'PY'
import json, sys
containers = [{"name": f"worker-{i}", "image": "registry.example/train:1.0",
               "resources": {"limits": {"nvidia.com/gpu": 8, "cpu": "32", "memory": "256Gi"}},
               "env": [{"name": "NCCL_SOCKET_IFNAME", "value": "eth0"}]} for i in range(14)]
doc = {"apiVersion": "commgate.io/v1alpha1", "kind": "TrainingJob",
       "metadata": {"name": "bert-large", "namespace": "research"},
       "spec": {"numNodes": 4, "containers": containers}}
s = json.dumps(doc)
open(sys.argv[1], "w").write(s)
PY
chmod 644 "$WORK"/*
BYTES=$(wc -c < "$WORK/static.json")

NGINX_PORT=$(bench_free_port)
bench_start_nginx "$NGINX_PORT" "location = /static.json { root $WORK; default_type application/json; }"

"$OURS" --cert "$WORK/tls.crt" --key "$WORK/tls.key" --body-file "$WORK/static.json" \
  --threads "$THREADS" > "$WORK/ours.out" 2>&1 &
OURS_PID=$!
for _ in $(seq 100); do grep -q listening "$WORK/ours.out" 2>/dev/null && break; sleep 0.05; done
OURS_PORT=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/ours.out")
bench_wait_for "https://127.0.0.1:$NGINX_PORT/static.json"
[ -n "$OURS_PORT" ] || { cat "$WORK/ours.out"; exit 1; }
# Same body from both.
cmp <(curl -sk "https://127.0.0.1:$NGINX_PORT/static.json") <(curl -sk "https://127.0.0.1:$OURS_PORT/static.json")

echo "# $BYTES-byte JSON over TLS, loopback, $THREADS server threads/workers, wrk $DURATION per run, $ROUNDS rounds; $(nproc) cores"
RESULTS="$WORK/results"
: > "$RESULTS"
run() {  # name port connections ("16new": 16, a new connection per request)
  local conns=${3%new} extra=()
  [ "$conns" != "$3" ] && extra=(-H "Connection: close")
  local r
  r=$(bench_wrk "$conns" "https://127.0.0.1:$2/static.json" "${extra[@]}")
  printf '%-8s c=%-5s %10s req/s  p50 %-8s p99 %s\n' "$1" "$3" $r
  echo "$1 $3 ${r%% *}" >> "$RESULTS"
}
for round in $(seq "$ROUNDS"); do
  for c in 1 16 64 16new; do
    if (( round % 2 )); then
      run nginx "$NGINX_PORT" "$c"; run commgate "$OURS_PORT" "$c"
    else
      run commgate "$OURS_PORT" "$c"; run nginx "$NGINX_PORT" "$c"
    fi
  done
done
echo "# connections  nginx req/s (mean)  commgate req/s (mean)  ratio"
awk '{ s[$1" "$2] += $3; n[$1" "$2]++ }
     END { split("1 16 64 16new", cs, " ");
           for (i = 1; i <= 4; i++) { c = cs[i]; a = s["nginx " c] / n["nginx " c]; b = s["commgate " c] / n["commgate " c];
             printf "  %-11s %18.0f %22.0f  %5.2f\n", c, a, b, b / a } }' "$RESULTS"
