#!/usr/bin/env bash
# Side by side: `commgate webhook` deciding a ~3.5 KB AdmissionReview (the benchmark
# TrainingJob, downsized 8 -> 2 nodes from a cached CommProfile) against nginx answering the
# same POST with the webhook's own response bytes as a static body. Alternating servers,
# ROUNDS rounds:
#   closed loop  wrk + post.lua, keep-alive, 1 / 16 / 64 connections, and 16 connections with
#                a new TLS connection per request ("16new");
#   open loop    commgate-open-loop at 1,000 and 4,000 requests/s on 8 keep-alive
#                connections, latency from each request's scheduled time, server CPU/request.
# Prints each run and a summary with ratios (ours / nginx).
#
#   bench/webhook/run.sh BUILD_DIR [ROUNDS=2] [DURATION=5s] [THREADS=nproc]
set -euo pipefail

BUILD_DIR=${1:?usage: run.sh BUILD_DIR [ROUNDS] [DURATION] [THREADS]}
ROUNDS=${2:-2}
DURATION=${3:-5s}
THREADS=${4:-$(nproc)}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN="$BUILD_DIR/bin"
for b in commgate commgate-open-loop commgate-webhook-bench-inputs; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (cmake --build $BUILD_DIR --target $b)" >&2; exit 1; }
done

# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_setup webhook
bench_require nginx wrk openssl curl python3
bench_make_cert

"$BIN/commgate-webhook-bench-inputs" "$WORK" >/dev/null
mkdir -p "$WORK/policies"
cp "$ROOT/examples/policies/default.yaml" "$WORK/policies/"
REVIEW="$WORK/review.json"

"$BIN/commgate" webhook --port 0 --address 127.0.0.1 --tls-cert-file "$WORK/tls.crt" \
  --tls-private-key-file "$WORK/tls.key" --policy-dir "$WORK/policies" \
  --profile-dir "$WORK/profiles" > "$WORK/ours.out" 2>&1 &
OURS_PID=$!
for _ in $(seq 100); do grep -q listening "$WORK/ours.out" 2>/dev/null && break; sleep 0.05; done
OURS_PORT=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$WORK/ours.out")
[ -n "$OURS_PORT" ] || { cat "$WORK/ours.out"; exit 1; }
bench_wait_for "https://127.0.0.1:$OURS_PORT/readyz"
POST=(-X POST -H "Content-Type: application/json" --data-binary "@$REVIEW")
curl -sk "${POST[@]}" "https://127.0.0.1:$OURS_PORT/mutate" > "$WORK/response.json"
grep -q '"decision":"Downsize"' "$WORK/response.json" ||
  { echo "the webhook did not downsize: $(cat "$WORK/response.json")" >&2; exit 1; }

# nginx answers POST /mutate with the same bytes (a double-quoted nginx string).
python3 - "$WORK/response.json" "$WORK/location.conf" <<'PY'
import sys
body = open(sys.argv[1]).read()
assert "$" not in body, "nginx would expand $ in the body"
quoted = body.replace("\\", "\\\\").replace('"', '\\"')
open(sys.argv[2], "w").write(
    'location = /mutate { default_type application/json; return 200 "%s"; }' % quoted)
PY
NGINX_PORT=$(bench_free_port)
bench_start_nginx "$NGINX_PORT" "$(cat "$WORK/location.conf")"
bench_wait_for "https://127.0.0.1:$NGINX_PORT/mutate" "${POST[@]}"
cmp "$WORK/response.json" <(curl -sk "${POST[@]}" "https://127.0.0.1:$NGINX_PORT/mutate")
NGINX_WORKERS=$(pgrep -d, -P "$NGINX_PID")

echo "# $(wc -c < "$REVIEW")-byte AdmissionReview -> $(wc -c < "$WORK/response.json")-byte response (Downsize), TLS on loopback,"
echo "# $THREADS server threads/workers, $DURATION per run, $ROUNDS rounds; $(nproc) cores"
RESULTS="$WORK/results"
: > "$RESULTS"
closed() {  # name port connections
  local conns=${3%new} extra=()
  [ "$conns" != "$3" ] && extra=(-H "Connection: close")
  local r
  r=$(BODY_FILE="$REVIEW" bench_wrk "$conns" "https://127.0.0.1:$2/mutate" -s "$HERE/post.lua" "${extra[@]}")
  printf '%-8s closed c=%-5s %s req/s  p50 %s  p99 %s\n' "$1" "$3" $r
  echo "closed $1 $3 ${r%% *}" >> "$RESULTS"
}
open_loop() {  # name port rate pids
  local secs=${DURATION%s} out
  out=$("$BIN/commgate-open-loop" --port "$2" --path /mutate --body-file "$REVIEW" --rate "$3" \
        --connections 8 --duration-s "$secs" --warmup-s 1 --server-pid "$4") || true
  printf '%-8s open   %s\n' "$1" "$out"
  echo "open $1 $3 $(sed -n 's/.*p99 \([0-9]*\) us .*/\1/p' <<<"$out") $(sed -n 's/.*server CPU \([0-9.]*\) us.*/\1/p' <<<"$out")" >> "$RESULTS"
}
for round in $(seq "$ROUNDS"); do
  for c in 1 16 64 16new; do
    if (( round % 2 )); then closed nginx "$NGINX_PORT" "$c"; closed commgate "$OURS_PORT" "$c"
    else closed commgate "$OURS_PORT" "$c"; closed nginx "$NGINX_PORT" "$c"; fi
  done
  for rate in 1000 4000; do
    if (( round % 2 )); then open_loop nginx "$NGINX_PORT" "$rate" "$NGINX_WORKERS"; open_loop commgate "$OURS_PORT" "$rate" "$OURS_PID"
    else open_loop commgate "$OURS_PORT" "$rate" "$OURS_PID"; open_loop nginx "$NGINX_PORT" "$rate" "$NGINX_WORKERS"; fi
  done
done
echo "# closed loop: connections  nginx req/s  commgate req/s  ratio (means of the rounds)"
awk '$1=="closed" { s[$2" "$3] += $4; n[$2" "$3]++ }
     END { split("1 16 64 16new", cs, " ");
           for (i = 1; i <= 4; i++) { c = cs[i]; a = s["nginx " c] / n["nginx " c]; b = s["commgate " c] / n["commgate " c];
             printf "  %-6s %12.0f %15.0f  %5.2f\n", c, a, b, b / a } }' "$RESULTS"
echo "# open loop: rate  nginx p99 us  commgate p99 us  (worst of the rounds)  CPU us/request nginx / commgate (mean)"
awk '$1=="open" { k=$2" "$3; if ($4 > p[k]) p[k] = $4; cpu[k] += $5; n[k]++ }
     END { split("1000 4000", rs, " ");
           for (i = 1; i <= 2; i++) { r = rs[i];
             printf "  %-5s %12s %16s  %10.1f / %.1f\n", r, p["nginx " r], p["commgate " r],
                    cpu["nginx " r] / n["nginx " r], cpu["commgate " r] / n["commgate " r] } }' "$RESULTS"
