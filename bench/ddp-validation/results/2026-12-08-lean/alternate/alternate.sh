#!/bin/bash
# sudo alternate.sh RATE PARAMS OPT N OUTDIR (ad hoc, kept as it ran; ../README.md): N alternations of commgate-probe and real DDP
# (ddp_mlp_phases.py) on nodes 0-1 of four netsim nodes at RATE, nodes 2-3 busy all along.
set -euo pipefail
rate=$1 params=$2 opt=$3 n=$4 outdir=$5
ROOT=$(cd "$(dirname "$0")/../../../../.." && pwd)
mkdir -p "$outdir"
HERE=$(cd "$(dirname "$0")" && pwd)
TMPD=$(mktemp -d)
NETSIM=$ROOT/scripts/netsim.sh
export NETSIM_PREFIX=al$$ NETSIM_OWNER_PID=$$ NETSIM_CPU=${CAP:-0.50}
export GLIBC_TUNABLES="glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967295"
bp=()
trap 'for p in "${bp[@]}"; do kill $p 2>/dev/null; done; "$NETSIM" down >/dev/null 2>&1 || true; rm -rf "$TMPD"' EXIT
"$NETSIM" up 4 "$rate" >/dev/null 2>&1
# real DDP with its loop's phases kept: ddp_mlp.py patched (the file ran as ddp_mlp_phases.py)
patch -s -o $TMPD/ddp_mlp_phases.py $ROOT/bench/ddp-validation/ddp_mlp.py $HERE/ddp-mlp-phases.diff
/usr/bin/python3 $ROOT/bench/ddp-validation/ddp_mlp.py --params $params --batch 32 --save-torchscript $TMPD/model.pt > $TMPD/model.json
shape=$(jq -r '.inputShape | map(tostring) | join(",")' $TMPD/model.json)
for i in ${BUSY_NODES-2 3}; do "$NETSIM" exec $i /usr/bin/python3 $ROOT/bench/ddp-validation/ddp_mlp.py --params $params --batch 32 --optimizer $opt --busy 3600 >$TMPD/busy$i 2>/dev/null & bp+=($!); done
for i in ${BUSY_NODES-2 3}; do while [ ! -s $TMPD/busy$i ]; do sleep 0.1; done; done
ranks() { # OUT CMD...
  local out=$1; shift
  MASTER_ADDR=198.18.0.1 MASTER_PORT=29500 RANK=1 WORLD_SIZE=2 "$NETSIM" exec 1 "$@" >"${out%.json}-r1.out" 2>"${out%.json}-r1.err" & local p=$!
  MASTER_ADDR=198.18.0.1 MASTER_PORT=29500 RANK=0 WORLD_SIZE=2 "$NETSIM" exec 0 "$@" >"$out" 2>"${out%.json}-r0.err"
  wait $p
}
probe() { ADHOC_LOOP_PHASES=1 ranks "$outdir/probe-$1.json" $ROOT/build/bin/commgate-probe --torchscript $TMPD/model.pt --input-shape "$shape" --optimizer $opt --threads 1 --termination-log "" --quiet; }
ddp() { ranks "$outdir/ddp-$1.json" /usr/bin/python3 $TMPD/ddp_mlp_phases.py --params $params --batch 32 --optimizer $opt; }
for ((k = 1; k <= n; k++)); do
  if ((k % 2)); then probe $k; ddp $k; else ddp $k; probe $k; fi
  jq -n -r --slurpfile p "$outdir/probe-$k.json" --slurpfile d "$outdir/ddp-$k.json" --arg k $k \
    '[$k, $p[0].compute.stepTimeMs, $p[0].ddpStep.computeOnlyStepTimeMs, $d[0].computeMs] | map(if type=="number" then (.*10|round/10) else . end) | @tsv'
done
