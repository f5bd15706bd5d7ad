#!/bin/bash
# sudo drive.sh RATE PARAMS OPT MODES COUNTS OUTDIR   (ad hoc, kept as it ran; README.md)
# e.g. drive.sh 5gbit 25M sgd "allreduce step" "2 3 4" r5g; CAP=1.0 BUSYTO=0 drive.sh ...
# For each MODE (allreduce: DDP's buckets alone; step: real DDP's step; nosync) and count N:
# N ranks of ar.py on nodes 0..N-1 of four netsim nodes at RATE, nodes N..BUSYTO-1 busy with
# ddp_mlp.py --busy (as run.sh), sample.py sampling the host and the nodes' cgroups.
set -euo pipefail
rate=$1 params=$2 opt=$3 modes=$4 counts=$5 outdir=$6
mkdir -p "$outdir"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../../../.." && pwd)
TMPD=$(mktemp -d)
NETSIM=$ROOT/scripts/netsim.sh
export NETSIM_PREFIX=cw$$ NETSIM_OWNER_PID=$$ NETSIM_CPU=${CAP:-0.50}
export GLIBC_TUNABLES="glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967295"
trap '"$NETSIM" down >/dev/null 2>&1 || true; [ -n "${sp:-}" ] && kill $sp 2>/dev/null || true; rm -rf "$TMPD"' EXIT
"$NETSIM" up 4 "$rate" >/dev/null 2>&1
for mode in $modes; do for n in $counts; do
  tag="$rate-$params-$opt-$mode-$n"
  bp=()
  for ((i=n;i<${BUSYTO:-4};i++)); do rm -f $TMPD/busy$i
    "$NETSIM" exec $i /usr/bin/python3 $ROOT/bench/ddp-validation/ddp_mlp.py --params $params --optimizer $opt --busy 900 >$TMPD/busy$i 2>/dev/null & bp+=($!); done
  for ((i=n;i<${BUSYTO:-4};i++)); do while [ ! -s $TMPD/busy$i ]; do sleep 0.1; done; done
  : > "$outdir/samples-$tag.txt"
  /usr/bin/python3 $HERE/sample.py $NETSIM_PREFIX "$outdir/samples-$tag.txt" & sp=$!
  rp=()
  for ((r=n-1;r>=1;r--)); do MASTER_ADDR=198.18.0.1 MASTER_PORT=29500 RANK=$r WORLD_SIZE=$n "$NETSIM" exec $r /usr/bin/python3 $HERE/ar.py $params $opt 12 $mode >/dev/null & rp+=($!); done
  MASTER_ADDR=198.18.0.1 MASTER_PORT=29500 RANK=0 WORLD_SIZE=$n "$NETSIM" exec 0 /usr/bin/python3 $HERE/ar.py $params $opt 12 $mode > "$outdir/result-$tag.json"
  for p in "${rp[@]}"; do wait $p; done
  kill $sp || true; wait $sp 2>/dev/null || true; sp=""
  for p in "${bp[@]}"; do kill $p; wait $p 2>/dev/null || true; done
  echo "$tag $(cat "$outdir/result-$tag.json")"
done; done
