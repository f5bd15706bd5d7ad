#!/usr/bin/env bash
# Benchmarks of commgate-probe on emulated nodes (scripts/netsim.sh; root). Repeats the
# numbers in docs/benchmarks.md ("Probe").
#
#   probe-job/netns-bench.sh busbw   [BUILD]   busbw / link rate at 200mbit, 1gbit, 5gbit; 2 and 4 ranks
#   probe-job/netns-bench.sh walltime [BUILD]  wall time with default settings, 2 ranks, 1gbit, 25M
#   probe-job/netns-bench.sh overlap [BUILD]   model-predicted vs measured DDP comm share
#                                              (SAVE_DIR=dir keeps each run's ProbeResult there)
#   probe-job/netns-bench.sh crossval [BUILD]  probe at 2 and 4 nodes, predict the other
#                                              counts, compare with a probe at that count
#                                              (CPU_PER_NODE=0.5: each node's CPU budget)
#   probe-job/netns-bench.sh one RANKS RATE OUT.json [probe flags...]   one run, result kept
#
# All ranks share this machine's cores, so each gets --threads = cores / ranks (at least 1).
# crossval instead caps every node at the same CPU budget whatever the count (a cgroup v1
# cpu.cfs_quota_us, or v2 cpu.max, per node's processes), as real nodes do not slow down
# when more join; the budget times 4 nodes must fit the machine's cores.
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

# on_node R CMD...: CMD in node R's namespace (and, with CPU_PER_NODE, capped at that many
# CPUs: netsim.sh's NETSIM_CPU, a cgroup per node).
on_node() {
  local r="$1"
  shift
  NETSIM_CPU="${CPU_PER_NODE:-}" "$NETSIM" exec "$r" "$@"
}

# run RANKS RATE OUT.json ERR.txt [flags...]: one probe per node, rank 0's JSON to OUT.
run() {
  local ranks="$1" rate="$2" out="$3" err="$4" r pids=() threads
  shift 4
  threads=$(( $(nproc) / ranks )); [ "$threads" -ge 1 ] || threads=1
  if [ -n "${CPU_PER_NODE:-}" ]; then
    threads=$(echo "c = ${CPU_PER_NODE} + 0.999; scale = 0; c / 1" | bc)
  fi
  "$NETSIM" up "$ranks" "$rate" 2>/dev/null
  for ((r = ranks - 1; r >= 1; r--)); do
    MASTER_ADDR=198.18.0.1 MASTER_PORT=29500 RANK=$r WORLD_SIZE=$ranks \
      on_node "$r" "$PROBE" --threads "$threads" --termination-log "" "$@" >/dev/null 2>"$TMP/rank$r.err" &
    pids+=($!)
  done
  MASTER_ADDR=198.18.0.1 MASTER_PORT=29500 RANK=0 WORLD_SIZE=$ranks \
    on_node 0 "$PROBE" --threads "$threads" --termination-log "" "$@" >"$out" 2>"$err"
  for p in "${pids[@]}"; do wait "$p"; done
  "$NETSIM" down
}

# A TrainingJob of NODES nodes for the synthetic MLP the probe times (its defaults: batch
# 32, AdamW, fp32), so `commgate evaluate` predicts every count from 1 to NODES.
crossval_job() {
  cat <<YAML
apiVersion: commgate.io/v1alpha1
kind: TrainingJob
metadata: {name: crossval, namespace: default}
spec:
  numNodes: $1
  numProcPerNode: 1
  model: {parameters: "$2", gradientDtype: fp32, batchSize: 32, optimizer: adamw}
  template:
    spec:
      containers: [{name: trainer, image: example/trainer:1, command: ["torchrun", "train.py"]}]
YAML
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
  crossval)
    # Every count probed directly (2, 3, 4 nodes), then the predictions of the probes at 2
    # and at 4 for the other counts against those direct measurements.
    CPU_PER_NODE="${CPU_PER_NODE:-$(echo "$(nproc) / 4" | bc -l)}"
    COMMGATE="${COMMGATE:-$PWD/$BUILD/bin/commgate}"
    [ -x "$COMMGATE" ] || { echo "netns-bench: no commgate under $BUILD/bin" >&2; exit 1; }
    echo "each node capped at $CPU_PER_NODE CPUs (cgroup), --threads 1 per rank" >&2
    printf "| link | params | probed at | predicted for | predicted share | measured share | difference (points) | predicted step (ms) | measured step (ms) |\n|---|---|---|---|---|---|---|---|---|\n"
    for params in 5M 25M; do
      for rate in 200mbit 1gbit 5gbit; do
        for n in 2 3 4; do
          note="recorded $(date -u +%Y-%m-%dT%H:%M:%SZ) by 'probe-job/netns-bench.sh crossval': $n netns nodes, each link shaped to $rate (tc tbf), each node capped at $CPU_PER_NODE CPUs, commgate-probe --params $params"
          run "$n" "$rate" "$TMP/m$n.json" "$TMP/m$n.err" --params "$params" --note "$note" --quiet
          if [ -n "${SAVE_DIR:-}" ]; then
            mkdir -p "$SAVE_DIR"
            cp "$TMP/m$n.json" "$SAVE_DIR/crossval-${n}-nodes-${rate}-${params}-params.json"
          fi
        done
        crossval_job 4 "$params" >"$TMP/job.yaml"
        for src in 2 4; do
          "$COMMGATE" evaluate -f "$TMP/job.yaml" --measurement "$TMP/m$src.json" -o json >"$TMP/e$src.json" || true
          for dst in 2 3 4; do
            [ "$dst" -ne "$src" ] || continue
            jq -r --slurpfile m "$TMP/m$dst.json" --arg rate "$rate" --arg params "$params" \
              --argjson src "$src" --argjson dst "$dst" '
              (.decision.predictions[] | select(.nodes == $dst)) as $p | $m[0].ddpStep as $d |
              "| \($rate) | \($params) | \($src) | \($dst) | \($p.commShare*1000|round/10)% | \($d.commShare*1000|round/10)% | \(($p.commShare - $d.commShare)*1000|round/10) | \($p.stepTimeMs|round) | \($d.stepTimeMs|round) |"' \
              "$TMP/e$src.json"
          done
        done
      done
    done
    ;;
  one)
    [ $# -ge 3 ] || { echo "usage: netns-bench.sh one RANKS RATE OUT.json [probe flags...]" >&2; exit 2; }
    ranks="$1" rate="$2" out="$3"
    shift 3
    run "$ranks" "$rate" "$out" "$TMP/r.err" "$@"
    cat "$TMP/r.err" >&2
    ;;
  *) echo "netns-bench: unknown mode $MODE (busbw, walltime, overlap, crossval, one)" >&2; exit 2 ;;
esac
