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
# per node with one thread; every process on them keeps the memory its steps free (glibc
# settings below), and the nodes a measurement does not use run the same model's compute
# (BUSY, below), so that the probe on 2 nodes and real DDP on 2, 3 or 4 see one machine
# alike loaded (not quite, for 25M AdamW: docs/benchmarks.md). Then, in this order:
#   1. commgate-probe on the first PROBE_NODES (2) nodes, timing the TorchScript of the
#      same MLP real DDP trains (ddp_mlp.py --save-torchscript) with that optimizer;
#   2. `commgate evaluate` of a TrainingJob of that model for every count up to 4, from
#      that probe's result: the predicted communication share and step time;
#   3. real DDP (ddp_mlp.py: torch.nn.parallel.DistributedDataParallel, Gloo, its
#      defaults) on 2, 3 and 4 nodes: the measured share and step;
# then every point of the AGAIN_RATES (default 2500mbit: the shortest steps, the noisiest)
# and the point at PROBE_NODES of the first configuration measured again at the end, whose
# differences are the emulation's own repeatability. Prints a Markdown table, the mean and
# largest error, and the repeatability, then a second table of what the prediction is made
# of (compute, the all-reduce alone, the exposed part) beside real DDP's, with how much of
# its link's rate real DDP's buckets alone moved: where a link carried well under its
# rate, the link did not bind, CPU or a cost per bucket did (the 5 Gbit/s links of runs
# before 2026-12-07h: the kernel's TCP work through the veths costs CPU that 0.5-CPU nodes
# on a 2-core machine do not have; docs/benchmarks.md "What 5 Gbit/s measured"), and the
# point does not test the model's network extrapolation. RATES, SIZES,
# OPTIMIZERS, COUNTS override the lists; KEEP=DIR keeps every probe, evaluate and DDP
# result there; FROM=DIR measures nothing and predicts again from a KEEP directory's probe
# results with this build's `commgate evaluate` (the truth and the probes of that run:
# what a change of core's model does to the same measurements; no root needed).
# bench/ddp-validation/repeat.sh runs this in rounds, for points whose two measurements are
# too few to tell a prediction's error from the emulation's noise.
set -euo pipefail
# FROM and KEEP as the caller named them, before the cd to the repository root.
[ -z "${FROM:-}" ] || FROM=$(realpath -m -- "$FROM")
[ -z "${KEEP:-}" ] || KEEP=$(realpath -m -- "$KEEP")
cd "$(dirname "$0")/../.."
BUILD="${1:-build}"
PROBE="$PWD/$BUILD/bin/commgate-probe"
COMMGATE="$PWD/$BUILD/bin/commgate"
PYTHON="${PYTHON:-/usr/bin/python3}"
DDP="$PWD/bench/ddp-validation/ddp_mlp.py"
FROM="${FROM:-}"
[ -x "$COMMGATE" ] || { echo "ddp-validation: $COMMGATE is not built (make build)" >&2; exit 1; }
command -v jq >/dev/null || { echo "ddp-validation: jq is missing" >&2; exit 1; }
if [ -n "$FROM" ]; then
  [ -d "$FROM" ] || { echo "ddp-validation: FROM=$FROM is not a directory" >&2; exit 1; }
else
  [ -x "$PROBE" ] || { echo "ddp-validation: $PROBE is not built (make build)" >&2; exit 1; }
  "$PYTHON" -c 'import torch' 2>/dev/null || { echo "ddp-validation: $PYTHON cannot import torch (python3-torch)" >&2; exit 1; }
  [ "$(id -u)" -eq 0 ] || { echo "ddp-validation: network namespaces and cgroups need root" >&2; exit 1; }
fi

if [ -n "${QUICK:-}" ]; then
  RATES="${RATES:-1gbit}" SIZES="${SIZES:-5M}" OPTIMIZERS="${OPTIMIZERS:-sgd}"
fi
# An awk function: the value of a quantity with a unit prefix, any case ("2500mbit" and
# "5gbit" in bits a second, as scripts/netsim.sh reads a RATE; "25M" parameters).
AWK_SCALED='function scaled(v,   u) {
  u = tolower(v); sub(/^[0-9.]+/, "", u)
  return (v + 0) * (u ~ /^g/ ? 1e9 : u ~ /^m/ ? 1e6 : u ~ /^k/ ? 1e3 : 1)
}'
# A kept run replays the points it measured (its probe-RATE-SIZE-OPT.json and
# ddp-RATE-SIZE-OPT-N.json files: runs before 2026-12-07h had 5gbit), in the usual order.
if [ -n "$FROM" ]; then
  kept() {  # FIELD PREFIX: the distinct values of a kept file name's FIELD, sorted by size
    find "$FROM" -maxdepth 1 -name "$2-*.json" -printf '%f\n' | sed 's/\.json$//' |
      cut -d- -f"$1" | sort -u | awk "$AWK_SCALED"' { print scaled($0), $0 }' |
      sort -g | cut -d' ' -f2 | paste -sd' '
  }
  RATES="${RATES:-$(kept 2 probe)}" SIZES="${SIZES:-$(kept 3 probe)}" COUNTS="${COUNTS:-$(kept 5 ddp)}"
  [ -n "${AGAIN_RATES+set}" ] || AGAIN_RATES="$(kept 2 again)"
  # sgd before adamw, as run.sh measures them; any other optimizer after.
  found=" $(kept 4 probe) "
  OPTIMIZERS="${OPTIMIZERS:-$(for o in sgd adamw ${found}; do [[ "$found" == *" $o "* ]] && echo "$o"; done | awk '!seen[$0]++' | paste -sd' ')}"
fi
# 2500mbit the fastest: 5gbit's links carried 60-93% of their rate on 0.5-CPU nodes of a
# 2-core machine, 2500mbit's 81-97% on a slow evening (docs/benchmarks.md "What 5 Gbit/s
# measured"): the fastest these nodes carry, and at its edge on a slow machine.
RATES="${RATES:-200mbit 1gbit 2500mbit}"
SIZES="${SIZES:-5M 25M}"
OPTIMIZERS="${OPTIMIZERS:-sgd adamw}"
COUNTS="${COUNTS:-2 3 4}"
AGAIN_RATES="${AGAIN_RATES-2500mbit}"
PROBE_NODES="${PROBE_NODES:-2}"
BATCH="${BATCH:-32}"
CPU_PER_NODE="${CPU_PER_NODE:-$(awk -v n="$(nproc)" 'BEGIN { printf "%.2f", n / 4 }')}"
BUSY="${BUSY:-1}"
CARRIED_BAR="${CARRIED_BAR:-85}"  # percent of a link's rate: below it, the link did not bind
# Every process on the nodes keeps the memory a step frees for the next step, as PyTorch's
# CUDA caching allocator does on a GPU. By default glibc returns blocks of a few MB and
# more to the kernel (munmap, heap trimming) and faults them back in, zeroed, at the next
# step, in the node's CPU time; that cost differs between Python's and the probe's
# allocation patterns and with the heap's history: 25M AdamW's compute-only step on one
# 0.5-CPU node took 197-389 ms (median 272) by default, 179-213 ms (median 189) with these,
# and the probe's compute fell 14-20% short of real DDP's. 32 MiB is the largest mmap
# threshold glibc accepts (the 25M MLP's largest tensor is 25 MB); the probe sets the same
# itself (probe-job/main.cpp).
export GLIBC_TUNABLES="glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967295"
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

# busy_others N PARAMS OPTIMIZER CMD...: CMD while each node from N up to MAX_NODES runs the
# same model's compute (ddp_mlp.py --busy), so that every measurement sees all the nodes
# busy. The emulated nodes share this machine's cores and memory: a node's compute slows as
# more of them run (ad hoc: 25M AdamW's compute-only step 210-219 ms at 2 nodes, 234-268
# at 3), which no real cluster's nodes do to each other, and the probe (2 nodes) would time
# a faster compute than real DDP on 3 or 4 saw. (25M AdamW's still grows some with every
# node busy: docs/benchmarks.md.) BUSY=0 leaves them idle.
busy_others() {
  local n="$1" params="$2" optimizer="$3" i p pids=() failed=0 waited
  shift 3
  if [ "$BUSY" != 0 ]; then
    for ((i = n; i < MAX_NODES; i++)); do
      rm -f "$TMP/busy$i.out"  # the last measurement's: its "busy" is not this one's
      "$NETSIM" exec "$i" "$PYTHON" "$DDP" --params "$params" --batch "$BATCH" \
        --optimizer "$optimizer" --busy 900 >"$TMP/busy$i.out" 2>"$TMP/busy$i.err" &
      pids+=($!)
    done
    # Each has stepped once (torch loaded, the model built) before the measurement starts.
    for ((i = n; i < MAX_NODES; i++)); do
      waited=0
      while [ ! -s "$TMP/busy$i.out" ] && ((waited++ < 600)); do sleep 0.1; done
      [ -s "$TMP/busy$i.out" ] || { echo "ddp-validation: node $i did not get busy:" >&2; tail -n 5 "$TMP/busy$i.err" >&2; failed=1; }
    done
  fi
  [ "$failed" -ne 0 ] || "$@" || failed=1
  # One that ended before the measurement did (a crash, its time limit) left its node idle
  # for part of it: the measurement does not stand.
  for ((i = n; i < n + ${#pids[@]}; i++)); do
    p="${pids[i - n]}"
    if kill "$p" 2>/dev/null; then
      wait "$p" 2>/dev/null || true
    else
      wait "$p" 2>/dev/null || true
      echo "ddp-validation: node $i stopped being busy during the measurement:" >&2
      tail -n 5 "$TMP/busy$i.err" >&2
      failed=1
    fi
  done
  return "$failed"
}

real_ddp() {  # N PARAMS OPTIMIZER OUT
  busy_others "$1" "$2" "$3" ranks "$1" "$4" "$PYTHON" "$DDP" --params "$2" --batch "$BATCH" --optimizer "$3"
}

save_model() {  # PARAMS OUT: the MLP's TorchScript for the probe ($TMP/model.pt), its shape to OUT
  "$PYTHON" "$DDP" --params "$1" --batch "$BATCH" --save-torchscript "$TMP/model.pt" >"$2"
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

# measured NAME OUT CMD...: OUT is FROM's kept NAME, or CMD's result (kept as NAME).
measured() {
  local name="$1" out="$2"
  shift 2
  if [ -n "$FROM" ]; then
    [ -f "$FROM/$name" ] || { echo "ddp-validation: FROM=$FROM has no $name" >&2; return 1; }
    cp "$FROM/$name" "$out"
    return
  fi
  "$@"
  [ -z "${KEEP:-}" ] || cp "$out" "$KEEP/$name"
}

# truth NAME FILE: FILE is real DDP's result (its share and step), or the run stops naming it.
truth() {
  jq -e '(.commShare | type == "number") and (.stepMs | type == "number") and .stepMs > 0' "$2" >/dev/null 2>&1 ||
    { echo "ddp-validation: ${FROM:+$FROM/}$1 is not a real DDP result (commShare and stepMs)" >&2; exit 1; }
}

if [ -n "$FROM" ]; then
  echo "ddp-validation: predicting again from the probes kept in $FROM with $COMMGATE; $(date -u +%Y-%m-%dT%H:%M:%SZ)" >&2
else
  settings="$(nproc) cores, each node capped at $CPU_PER_NODE CPUs, one rank per node, batch $BATCH, probe at $PROBE_NODES nodes, BUSY=$BUSY, GLIBC_TUNABLES=$GLIBC_TUNABLES"
  echo "ddp-validation: $settings; $(date -u +%Y-%m-%dT%H:%M:%SZ)" >&2
fi
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  [ -n "$FROM" ] || echo "$settings" >"$KEEP/settings.txt"
fi
rows="$TMP/rows.tsv"
again_rows="$TMP/again.tsv"
: >"$rows"
: >"$again_rows"
first=""
for rate in $RATES; do
  [ -n "$FROM" ] || "$NETSIM" up "$MAX_NODES" "$rate" >/dev/null 2>&1
  for params in $SIZES; do
    measured "model-$params.json" "$TMP/model.json" save_model "$params" "$TMP/model.json"
    parameters=$(jq -r .parameters "$TMP/model.json")
    shape=$(jq -r '.inputShape | map(tostring) | join(",")' "$TMP/model.json")
    for optimizer in $OPTIMIZERS; do
      [ -n "$FROM" ] || echo "ddp-validation: $rate, $params ($parameters parameters), $optimizer: probe at $PROBE_NODES nodes" >&2
      measured "probe-$rate-$params-$optimizer.json" "$TMP/probe.json" \
        busy_others "$PROBE_NODES" "$params" "$optimizer" ranks "$PROBE_NODES" "$TMP/probe.json" "$PROBE" --torchscript "$TMP/model.pt" --input-shape "$shape" \
        --optimizer "$optimizer" --threads 1 --termination-log "" --quiet \
        --note "bench/ddp-validation/run.sh: $rate, $params, $optimizer"
      job_yaml "$parameters" "$optimizer" >"$TMP/job.yaml"
      if ! "$COMMGATE" evaluate -f "$TMP/job.yaml" --measurement "$TMP/probe.json" -o json >"$TMP/eval.json"; then
        # Its rows say "none" (a measurement that cannot predict is a result too), and the
        # probe is named as the caller knows it.
        echo "ddp-validation: commgate evaluate could not predict from ${FROM:+$FROM/}probe-$rate-$params-$optimizer.json (above)" >&2
        echo '{}' >"$TMP/eval.json"
      fi
      [ -z "${KEEP:-}" ] || cp "$TMP/eval.json" "$KEEP/eval-$rate-$params-$optimizer.json"
      for n in $COUNTS; do
        [ -n "$FROM" ] || echo "ddp-validation: $rate, $params, $optimizer: real DDP on $n nodes" >&2
        measured "ddp-$rate-$params-$optimizer-$n.json" "$TMP/ddp.json" real_ddp "$n" "$params" "$optimizer" "$TMP/ddp.json"
        truth "ddp-$rate-$params-$optimizer-$n.json" "$TMP/ddp.json"
        [ -n "$first" ] || first="$rate $params $optimizer"
        jq -r --slurpfile d "$TMP/ddp.json" --argjson n "$n" --arg rate "$rate" --arg params "$params" \
          --arg opt "$optimizer" --argjson probed "$PROBE_NODES" '
          (.decision.predictions // [] | map(select(.nodes == $n)) | first) as $p | $d[0] as $r |
          [$rate, $params, $opt, $n, (if $n == $probed then "probed" else "" end),
           $r.commShare, ($p.commShare // "null"), $r.stepMs, ($p.stepTimeMs // "null"),
           $r.computeMs, ($p.computeMs // "null"), $r.allReduceMs, ($p.allReduceMs // "null"),
           $r.forwardMs, $r.backwardMs, $r.optimizerMs, ($r.bucketBytes | add)] | @tsv' \
          "$TMP/eval.json" >>"$rows"
      done
    done
  done
  [ -n "$FROM" ] || "$NETSIM" down >/dev/null 2>&1
done

# The same points again, after all the others: how far the emulation moves between two
# measurements of one point (every point of AGAIN_RATES, and the first configuration's
# probed point).
read -r first_rate first_params first_optimizer <<<"$first"
again() {  # RATE PARAMS OPTIMIZER N
  # A subset of a kept run (RATES, SIZES, ... narrower than it was) may lack the point.
  [ -z "$FROM" ] || [ -f "$FROM/again-$1-$2-$3-$4.json" ] || return 0
  measured "again-$1-$2-$3-$4.json" "$TMP/again.json" real_ddp "$4" "$2" "$3" "$TMP/again.json"
  truth "again-$1-$2-$3-$4.json" "$TMP/again.json"
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$(jq -r .commShare "$TMP/again.json")" >>"$again_rows"
}
for rate in $RATES; do
  if [[ " $AGAIN_RATES " == *" $rate "* ]]; then
    [ -n "$FROM" ] || "$NETSIM" up "$MAX_NODES" "$rate" >/dev/null 2>&1
    for params in $SIZES; do
      for optimizer in $OPTIMIZERS; do
        for n in $COUNTS; do
          [ -n "$FROM" ] || echo "ddp-validation: $rate, $params, $optimizer: real DDP on $n nodes again" >&2
          again "$rate" "$params" "$optimizer" "$n"
        done
      done
    done
    [ -n "$FROM" ] || "$NETSIM" down >/dev/null 2>&1
  elif [ "$rate" = "$first_rate" ]; then
    [ -n "$FROM" ] || "$NETSIM" up "$MAX_NODES" "$rate" >/dev/null 2>&1
    [ -n "$FROM" ] || echo "ddp-validation: $first_rate, $first_params, $first_optimizer: real DDP on $PROBE_NODES nodes again" >&2
    again "$first_rate" "$first_params" "$first_optimizer" "$PROBE_NODES"
    [ -n "$FROM" ] || "$NETSIM" down >/dev/null 2>&1
  fi
done

# Each point's error, beside its second measurement where it has one.
awk -F'\t' -v rates="$RATES" '
BEGIN {
  print "| link | params | optimizer | nodes | real DDP share | measured again | predicted | error (points) | real DDP step (ms) | predicted step (ms) | step error |"
  print "|---|---|---|---|---|---|---|---|---|---|---|"
}
function abs(x) { return x < 0 ? -x : x }
FILENAME == ARGV[1] { again[$1 " " $2 " " $3 " " $4] = $5; next }
{
  key = $1 " " $2 " " $3 " " $4
  nodes = $4 ($5 == "probed" ? " (probed)" : "")
  second = key in again ? sprintf("%.1f%%", again[key] * 100) : ""
  if (key in again) {
    apart = abs(again[key] - $6) * 100
    twice[$1]++; apart_sum[$1] += apart; if (apart > apart_max[$1]) apart_max[$1] = apart
  }
  if ($7 == "null") {
    printf "| %s | %s | %s | %s | %.1f%% | %s | none | | %.0f | | |\n", $1, $2, $3, nodes, $6 * 100, second, $8
    next
  }
  err = ($7 - $6) * 100; step_err = ($9 - $8) / $8 * 100
  printf "| %s | %s | %s | %s | %.1f%% | %s | %.1f%% | %+.1f | %.0f | %.0f | %+.0f%% |\n", $1, $2, $3, nodes, $6 * 100, second, $7 * 100, err, $8, $9, step_err
  n++; sum += abs(err); if (abs(err) > max) max = abs(err)
  if (abs(err) <= 3) within++
  if (abs(step_err) <= 10) step_within++
  if (abs(step_err) > smax) smax = abs(step_err)
  rate_n[$1]++; rate_sum[$1] += abs(err); if (abs(err) > rate_max[$1]) rate_max[$1] = abs(err)
  # At the probed count the prediction is the probe'"'"'s own measured step: the others are
  # the model'"'"'s extrapolation.
  if ($5 != "probed") { xn++; xsum += abs(err); if (abs(err) <= 3) xwithin++ }
  if (!(key in again)) next
  # Measured twice: the prediction is held to the nearer of the two, and to 3 points or
  # how far the two lie apart, whichever is more.
  near = abs(($7 - again[key]) * 100) < abs(err) ? abs(($7 - again[key]) * 100) : abs(err)
  judged[$1]++
  if (near <= (apart > 3 ? apart : 3)) held[$1]++
}
END {
  if (n > 0) printf "\nshare error: mean %.1f points, largest %.1f; %d of %d within 3 points; predicted step within 10%% at %d of %d (largest step error %.0f%%)\n", sum / n, max, within, n, step_within, n, smax
  if (xn > 0) printf "  away from the probed count (the model'"'"'s extrapolation): mean %.1f points, %d of %d within 3\n", xsum / xn, xwithin, xn
  count = split(rates, order, " ")
  for (i = 1; i <= count; i++) {
    r = order[i]
    if (r in rate_n) printf "  %s: mean %.1f points, largest %.1f\n", r, rate_sum[r] / rate_n[r], rate_max[r]
  }
  for (i = 1; i <= count; i++) {
    r = order[i]
    if (!(r in twice)) continue
    printf "repeatability: %s, %d point%s measured twice: %.1f points apart on average, %.1f at most", r, twice[r], twice[r] == 1 ? "" : "s", apart_sum[r] / twice[r], apart_max[r]
    if (judged[r] > 0) printf "; %d of %d predictions within 3 points (or within the two measurements'"'"' spread, when larger) of the nearer one", held[r], judged[r]
    printf "\n"
  }
}' "$again_rows" "$rows"

echo
echo "What each prediction is made of, beside real DDP's (ms): compute (forward + backward + optimizer, no communication), the all-reduce of every bucket with nothing else running, and the exposed communication (step − compute); and how much of the link's rate real DDP's buckets alone moved (a ring all-reduce's 2(n−1)/n of the buckets' bytes per node in that time: under $CARRIED_BAR% the link did not bind)."
echo
awk -F'\t' -v bar="$CARRIED_BAR" "$AWK_SCALED"'
BEGIN {
  print "| link | params | optimizer | nodes | real compute (fwd/bwd/opt) | predicted compute | real all-reduce alone | predicted all-reduce | real exposed | predicted exposed | link carried |"
  print "|---|---|---|---|---|---|---|---|---|---|---|"
}
{
  carried = $12 > 0 && scaled($1) > 0 ? $17 * 8 * 2 * ($4 - 1) / $4 / ($12 / 1000) / scaled($1) * 100 : 0
  points++
  if (carried < bar + 0) { short++; list = list sprintf("%s %s %s at %s nodes (%.0f%%); ", $1, $2, $3, $4, carried) }
}
$7 != "null" {
  printf "| %s | %s | %s | %s | %.0f (%.0f/%.0f/%.0f) | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f%% |\n", $1, $2, $3, $4, $10, $14, $15, $16, $11, $12, $13, $8 - $10, $9 - $11, carried
}
END {
  if (short > 0) printf "\nthe link carried under %g%% of its rate at %d of %d points (the link did not bind there, CPU or a cost per bucket did: docs/benchmarks.md \"What 5 Gbit/s measured\"): %s\n", bar, short, points, list
  else if (points > 0) printf "\nthe link carried at least %g%% of its rate at every point\n", bar
}' "$rows"
