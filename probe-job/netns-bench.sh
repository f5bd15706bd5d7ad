#!/usr/bin/env bash
# Benchmarks of commgate-probe on emulated nodes (scripts/netsim.sh; root). Repeats the
# numbers in docs/benchmarks.md ("Probe").
#
#   probe-job/netns-bench.sh busbw   [BUILD]   busbw / link rate at 200mbit, 1gbit, 5gbit; 2 and 4 ranks
#   probe-job/netns-bench.sh walltime [BUILD]  wall time with default settings, 2 ranks, 1gbit, 25M
#   probe-job/netns-bench.sh overlap [BUILD]   model-predicted vs measured DDP comm share
#                                              (SAVE_DIR=dir keeps each run's ProbeResult there)
#   probe-job/netns-bench.sh one RANKS RATE OUT.json [probe flags...]   one run, result kept
#
# All ranks share this machine's cores, so each gets --threads = cores / ranks (at least 1).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE="${1:-busbw}"
shift || true
BUILD="build"
if [ "$MODE" != one ] && [ $# -ge 1 ]; then BUILD="$1"; shift; fi
PROBE="${PROBE:-$PWD/$BUILD/bin/commgate-probe}"
[ -x "$PROBE" ] || PROBE="$PWD/build-probe/bin/commgate-probe"
[ -x "$PROBE" ] || { echo "netns-bench: no commgate-probe under $BUILD/bin; build it first" >&2; exit 1; }
export NETSIM_PREFIX="nb$$"
export NETSIM_OWNER_PID=$$
NETSIM="$PWD/scripts/netsim.sh"
TMP=$(mktemp -d)
trap '"$NETSIM" down >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT

# run RANKS RATE OUT.json ERR.txt [flags...]: one probe per node, rank 0's JSON to OUT.
run() {
  local ranks="$1" rate="$2" out="$3" err="$4" r pids=() threads
  shift 4
  threads=$(( $(nproc) / ranks )); [ "$threads" -ge 1 ] || threads=1
  "$NETSIM" up "$ranks" "$rate" 2>/dev/null
  for ((r = ranks - 1; r >= 1; r--)); do
    MASTER_ADDR=198.18.0.1 MASTER_PORT=29500 RANK=$r WORLD_SIZE=$ranks \
      "$NETSIM" exec "$r" "$PROBE" --threads "$threads" --termination-log "" "$@" >/dev/null 2>"$TMP/rank$r.err" &
    pids+=($!)
  done
  MASTER_ADDR=198.18.0.1 MASTER_PORT=29500 RANK=0 WORLD_SIZE=$ranks \
    "$NETSIM" exec 0 "$PROBE" --threads "$threads" --termination-log "" "$@" >"$out" 2>"$err"
  for p in "${pids[@]}"; do wait "$p"; done
  "$NETSIM" down
}

rate_gbps() {  # 200mbit -> 0.025
  case "$1" in
    *gbit) echo "${1%gbit} / 8" | bc -l ;;
    *mbit) echo "${1%mbit} / 8000" | bc -l ;;
  esac
}

case "$MODE" in
  busbw)
    printf "| link | ranks | largest size | busbw (GB/s) | busbw / rate | fit busbw / rate |\n|---|---|---|---|---|---|\n"
    for rate in 200mbit 1gbit 5gbit; do
      for ranks in 2 4; do
        run "$ranks" "$rate" "$TMP/r.json" "$TMP/r.err" --no-compute --max-bytes 64Mi
        g=$(rate_gbps "$rate")
        jq -r --arg rate "$rate" --argjson ranks "$ranks" --argjson g "$g" \
          '.allReduce.results[-1] as $l | "| \($rate) | \($ranks) | \($l.bytes/1048576) MiB | \($l.busbwGBps*1000|round/1000) | \($l.busbwGBps/$g*100|round/100) | \(.allReduce.fit.busbwGBps/$g*100|round/100) |"' "$TMP/r.json"
      done
    done
    ;;
  walltime)
    start=$(date +%s.%N)
    run 2 1gbit "$TMP/r.json" "$TMP/r.err"
    end=$(date +%s.%N)
    cat "$TMP/r.err" >&2
    echo "wall time (launch to exit, 2 ranks, 1gbit, defaults: 25M params, sweep to 64 MiB): $(echo "$end - $start" | bc) s"
    jq -r '"rank 0 durationSeconds: \(.durationSeconds)"' "$TMP/r.json"
    ;;
  overlap)
    printf "| link | nodes | params | compute step (ms) | fit busbw (GB/s) | measured step (ms) | measured comm share | model comm share | difference (points) |\n|---|---|---|---|---|---|---|---|---|\n"
    for spec in "2 1gbit 5M" "2 200mbit 5M" "2 1gbit 25M" "2 5gbit 25M" "4 1gbit 5M" "2 5gbit 5M"; do
      read -r ranks rate params <<<"$spec"
      note="recorded $(date -u +%Y-%m-%dT%H:%M:%SZ) by 'probe-job/netns-bench.sh overlap': $ranks netns nodes joined by a bridge, each link shaped to $rate (tc tbf), commgate-probe --params $params --threads $(( $(nproc) / ranks > 0 ? $(nproc) / ranks : 1 )), all ranks on one $(nproc)-core machine"
      run "$ranks" "$rate" "$TMP/r.json" "$TMP/r.err" --params "$params" --note "$note"
      if [ -n "${SAVE_DIR:-}" ]; then
        mkdir -p "$SAVE_DIR"
        cp "$TMP/r.json" "$SAVE_DIR/netns-${ranks}-nodes-${rate}-${params}-params.json"
      fi
      model=$(grep -o 'model at [0-9]* nodes: step [0-9.]* ms, comm share [0-9.]*%' "$TMP/r.err" | sed 's/.*comm share \([0-9.]*\)%/\1/')
      jq -r --arg rate "$rate" --arg params "$params" --argjson model "${model:-0}" \
        '"| \($rate) | \(.world.nodes) | \($params) | \(.compute.stepTimeMs*10|round/10) | \(.allReduce.fit.busbwGBps*1000|round/1000) | \(.ddpStep.stepTimeMs*10|round/10) | \(.ddpStep.commShare*1000|round/10)% | \($model)% | \(($model - .ddpStep.commShare*100)*10|round/10) |"' "$TMP/r.json"
    done
    ;;
  one)
    [ $# -ge 3 ] || { echo "usage: netns-bench.sh one RANKS RATE OUT.json [probe flags...]" >&2; exit 2; }
    ranks="$1" rate="$2" out="$3"
    shift 3
    run "$ranks" "$rate" "$out" "$TMP/r.err" "$@"
    cat "$TMP/r.err" >&2
    ;;
  *) echo "netns-bench: unknown mode $MODE (busbw, walltime, overlap, one)" >&2; exit 2 ;;
esac
