#!/usr/bin/env bash
# commgate's predictions against real PyTorch DDP training, measured in the same run on the
# same emulated nodes (issue #22; docs/benchmarks.md "Predictions against real DDP").
#
#   sudo bench/ddp-validation/run.sh [BUILD]          the table (about 30 minutes)
#   sudo QUICK=1 bench/ddp-validation/run.sh [BUILD]  one link, one size, one optimizer
#
# For each link rate, model size and optimizer: four scripts/netsim.sh nodes joined at that
# rate (tc tbf), each node's processes capped at CPU_PER_NODE CPUs (default: this
# machine's cores / 4, so that four nodes never share a core's time unevenly), one rank
# per node with one thread. Then, in this order:
#   1. commgate-probe on the first PROBE_NODES (2) nodes, timing the TorchScript of the
#      same MLP real DDP trains (ddp_mlp.py --save-torchscript) with that optimizer;
#   2. `commgate evaluate` of a TrainingJob of that model for every count up to 4, from
#      that probe's result: the predicted communication share and step time;
#   3. real DDP (ddp_mlp.py: torch.nn.parallel.DistributedDataParallel, Gloo, its
#      defaults) on 2, 3 and 4 nodes: the measured share and step;
# and the point at PROBE_NODES of the first configuration measured again at the end, whose
# difference is the emulation's own repeatability. Prints a Markdown table, the mean and
# largest error, and the repeatability, then a second table of what the prediction is made
# of (compute, the all-reduce alone, the exposed part) beside real DDP's. RATES, SIZES,
# OPTIMIZERS, COUNTS override the lists; KEEP=DIR keeps every probe, evaluate and DDP
# result there.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD="${1:-build}"
PROBE="$PWD/$BUILD/bin/commgate-probe"
COMMGATE="$PWD/$BUILD/bin/commgate"
PYTHON="${PYTHON:-/usr/bin/python3}"
DDP="$PWD/bench/ddp-validation/ddp_mlp.py"
for tool in "$PROBE" "$COMMGATE"; do
  [ -x "$tool" ] || { echo "ddp-validation: $tool is not built (make build)" >&2; exit 1; }
done
"$PYTHON" -c 'import torch' 2>/dev/null || { echo "ddp-validation: $PYTHON cannot import torch (python3-torch)" >&2; exit 1; }
command -v jq >/dev/null || { echo "ddp-validation: jq is missing" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "ddp-validation: network namespaces and cgroups need root" >&2; exit 1; }

if [ -n "${QUICK:-}" ]; then
  RATES="${RATES:-1gbit}" SIZES="${SIZES:-5M}" OPTIMIZERS="${OPTIMIZERS:-sgd}"
fi
RATES="${RATES:-200mbit 1gbit 5gbit}"
SIZES="${SIZES:-5M 25M}"
OPTIMIZERS="${OPTIMIZERS:-sgd adamw}"
COUNTS="${COUNTS:-2 3 4}"
PROBE_NODES="${PROBE_NODES:-2}"
BATCH="${BATCH:-32}"
CPU_PER_NODE="${CPU_PER_NODE:-$(awk -v n="$(nproc)" 'BEGIN { printf "%.2f", n / 4 }')}"
MAX_NODES=$(tr ' ' '\n' <<<"$COUNTS" | sort -n | tail -1)

export NETSIM_PREFIX="dv$$"
export NETSIM_OWNER_PID=$$
export NETSIM_CPU="$CPU_PER_NODE"
NETSIM="$PWD/scripts/netsim.sh"
TMP=$(mktemp -d /tmp/commgate-ddp-validation.XXXXXX)
trap '"$NETSIM" down >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT

# ranks N OUT CMD...: CMD as rank r on node r for r < N (MASTER_* and RANK in its env),
# rank 0's stdout to OUT; fails when any rank fails.
ranks() {
  local n="$1" out="$2" r pids=() failed=0
  shift 2
  for ((r = n - 1; r >= 1; r--)); do
    MASTER_ADDR=198.18.0.1 MASTER_PORT=29500 RANK=$r WORLD_SIZE=$n \
      "$NETSIM" exec "$r" "$@" >/dev/null 2>"$TMP/rank$r.err" &
    pids+=($!)
  done
  MASTER_ADDR=198.18.0.1 MASTER_PORT=29500 RANK=0 WORLD_SIZE=$n \
    "$NETSIM" exec 0 "$@" >"$out" 2>"$TMP/rank0.err" || failed=1
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  if [ "$failed" -ne 0 ]; then
    echo "ddp-validation: a rank failed running: $*" >&2
    tail -n 5 "$TMP"/rank*.err >&2
    return 1
  fi
}

real_ddp() {  # N PARAMS OPTIMIZER OUT
  ranks "$1" "$4" "$PYTHON" "$DDP" --params "$2" --batch "$BATCH" --optimizer "$3"
}

job_yaml() {  # PARAMETERS OPTIMIZER
  cat <<YAML
apiVersion: commgate.io/v1alpha1
kind: TrainingJob
metadata: {name: ddp-validation, namespace: default}
spec:
  numNodes: $MAX_NODES
  numProcPerNode: 1
  model: {parameters: "$1", gradientDtype: fp32, batchSize: $BATCH, optimizer: $2}
  template:
    spec:
      containers: [{name: trainer, image: example/trainer:1, command: ["torchrun", "train.py"]}]
YAML
}

echo "ddp-validation: $(nproc) cores, each node capped at $CPU_PER_NODE CPUs, one rank per node, batch $BATCH, probe at $PROBE_NODES nodes; $(date -u +%Y-%m-%dT%H:%M:%SZ)" >&2
rows="$TMP/rows.tsv"
: >"$rows"
first=""
for rate in $RATES; do
  "$NETSIM" up "$MAX_NODES" "$rate" >/dev/null 2>&1
  for params in $SIZES; do
    "$PYTHON" "$DDP" --params "$params" --batch "$BATCH" --save-torchscript "$TMP/model.pt" >"$TMP/model.json"
    parameters=$(jq -r .parameters "$TMP/model.json")
    shape=$(jq -r '.inputShape | map(tostring) | join(",")' "$TMP/model.json")
    for optimizer in $OPTIMIZERS; do
      echo "ddp-validation: $rate, $params ($parameters parameters), $optimizer: probe at $PROBE_NODES nodes" >&2
      ranks "$PROBE_NODES" "$TMP/probe.json" "$PROBE" --torchscript "$TMP/model.pt" --input-shape "$shape" \
        --optimizer "$optimizer" --threads 1 --termination-log "" --quiet \
        --note "bench/ddp-validation/run.sh: $rate, $params, $optimizer"
      job_yaml "$parameters" "$optimizer" >"$TMP/job.yaml"
      "$COMMGATE" evaluate -f "$TMP/job.yaml" --measurement "$TMP/probe.json" -o json >"$TMP/eval.json" || true
      if [ -n "${KEEP:-}" ]; then
        mkdir -p "$KEEP"
        cp "$TMP/probe.json" "$KEEP/probe-$rate-$params-$optimizer.json"
        cp "$TMP/eval.json" "$KEEP/eval-$rate-$params-$optimizer.json"
      fi
      for n in $COUNTS; do
        echo "ddp-validation: $rate, $params, $optimizer: real DDP on $n nodes" >&2
        real_ddp "$n" "$params" "$optimizer" "$TMP/ddp.json"
        [ -z "${KEEP:-}" ] || cp "$TMP/ddp.json" "$KEEP/ddp-$rate-$params-$optimizer-$n.json"
        [ -n "$first" ] || first="$rate $params $optimizer"
        jq -r --slurpfile d "$TMP/ddp.json" --argjson n "$n" --arg rate "$rate" --arg params "$params" \
          --arg opt "$optimizer" --argjson probed "$PROBE_NODES" '
          (.decision.predictions // [] | map(select(.nodes == $n)) | first) as $p | $d[0] as $r |
          [$rate, $params, $opt, $n, (if $n == $probed then "probed" else "" end),
           $r.commShare, ($p.commShare // "null"), $r.stepMs, ($p.stepTimeMs // "null"),
           $r.computeMs, ($p.computeMs // "null"), $r.allReduceMs, ($p.allReduceMs // "null"),
           $r.forwardMs, $r.backwardMs, $r.optimizerMs] | @tsv' \
          "$TMP/eval.json" >>"$rows"
      done
    done
  done
  "$NETSIM" down >/dev/null 2>&1
done

# The same point again: how far the emulation moves between two measurements of it.
read -r rate params optimizer <<<"$first"
"$NETSIM" up "$MAX_NODES" "$rate" >/dev/null 2>&1
real_ddp "$PROBE_NODES" "$params" "$optimizer" "$TMP/again.json"
"$NETSIM" down >/dev/null 2>&1
again=$(jq -r .commShare "$TMP/again.json")
before=$(awk -F'\t' -v r="$rate" -v p="$params" -v o="$optimizer" -v n="$PROBE_NODES" \
  '$1 == r && $2 == p && $3 == o && $4 == n { print $6; exit }' "$rows")

awk -F'\t' -v again="$again" -v before="$before" -v point="$rate $params $optimizer at $PROBE_NODES nodes" '
BEGIN {
  print "| link | params | optimizer | nodes | real DDP share | predicted | error (points) | real DDP step (ms) | predicted step (ms) | step error |"
  print "|---|---|---|---|---|---|---|---|---|---|"
}
{
  nodes = $4 ($5 == "probed" ? " (probed)" : "")
  if ($7 == "null") {
    printf "| %s | %s | %s | %s | %.1f%% | none | | %.0f | | |\n", $1, $2, $3, nodes, $6 * 100, $8
    next
  }
  err = ($7 - $6) * 100; step_err = ($9 - $8) / $8 * 100
  printf "| %s | %s | %s | %s | %.1f%% | %.1f%% | %+.1f | %.0f | %.0f | %+.0f%% |\n", $1, $2, $3, nodes, $6 * 100, $7 * 100, err, $8, $9, step_err
  n++; sum += (err < 0 ? -err : err); if ((err < 0 ? -err : err) > max) max = (err < 0 ? -err : err)
  if ((err < 0 ? -err : err) <= 3) within++
  s = (step_err < 0 ? -step_err : step_err); if (s > smax) smax = s
}
END {
  if (n > 0) printf "\nshare error: mean %.1f points, largest %.1f; %d of %d within 3 points; largest step error %.0f%%\n", sum / n, max, within, n, smax
  printf "repeatability: %s measured twice: %.1f%% then %.1f%% (%.1f points apart)\n", point, before * 100, again * 100, (again - before) * 100
}' "$rows"

echo
echo "What each prediction is made of, beside real DDP's (ms): compute (forward + backward + optimizer, no communication), the all-reduce of every bucket with nothing else running, and the exposed communication (step − compute)."
echo
awk -F'\t' '
BEGIN {
  print "| link | params | optimizer | nodes | real compute (fwd/bwd/opt) | predicted compute | real all-reduce alone | predicted all-reduce | real exposed | predicted exposed |"
  print "|---|---|---|---|---|---|---|---|---|---|"
}
$7 != "null" {
  printf "| %s | %s | %s | %s | %.0f (%.0f/%.0f/%.0f) | %.0f | %.0f | %.0f | %.0f | %.0f |\n", $1, $2, $3, $4, $10, $14, $15, $16, $11, $12, $13, $8 - $10, $9 - $11
}' "$rows"
