#!/usr/bin/env bash
# The first run of commgate-probe's NCCL path on a GPU machine, in one command that fits
# one device call (about 4 minutes on 16 cores; every step is bounded). From the repo
# root, with .cache/probe-deps carried (scripts/probe-deps.sh fetch, done on a machine
# with Debian's mirror; docs/probe.md):
#
#   scripts/gpu-first-run.sh            writes everything under $OUT (default ./gpu-first-run)
#
# Steps: inventory (nvidia-smi, nvcc, torch and its CUDA and NCCL); unpack core's
# libraries; configure and build the probe only (COMMGATE_PROBE_ONLY) against the LibTorch
# of the installed PyTorch, with the NCCL that PyTorch loads; run 1 rank on the GPU
# (adamw, then sgd); run 2 ranks on the one GPU over sockets (NCCL documents ranks sharing
# a GPU as unsupported: a hang there is INCONCLUSIVE, not a failure); check that
# --local-ranks 2 --backend nccl on one GPU refuses with the reason. Results:
#   $OUT/summary.txt     one line per step: PASS / FAIL / WARN / INCONCLUSIVE / SKIP, and numbers
#   $OUT/rank1.json, $OUT/rank1-sgd.json, $OUT/ranks2.json   the ProbeResults
#   $OUT/logs.tgz        every log: inventory, cmake, build, each rank's stderr, NCCL's INFO
# Exit status: 0 when nothing FAILed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT="${OUT:-$PWD/gpu-first-run}"
PY="${PYTHON:-python3}"
DEPS="${PROBE_DEPS:-.cache/probe-deps}"
WORK="${WORK:-/tmp/commgate-gpu}"
PARAMS="${PARAMS:-25M}"
BUILD_TIMEOUT="${BUILD_TIMEOUT:-360}"  # seconds; a 16-core build takes about 2 minutes
mkdir -p "$OUT" "$WORK/logs"
LOGS="$WORK/logs"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
failed=0
say() { echo "$*" | tee -a "$SUMMARY" >&2; }
result() {  # STEP VERDICT DETAIL
  say "$(printf '%-22s %-13s %s' "$1" "$2" "$3")"
  [ "$2" = FAIL ] && failed=1
  return 0
}
finish() {
  tar -C "$WORK" -czf "$OUT/logs.tgz" logs 2>/dev/null
  say "logs: logs.tgz ($(ls "$LOGS" | wc -l) files)"
  exit "$failed"
}

# ---- inventory ----------------------------------------------------------------------
{
  echo "== date"; date -u
  echo "== nvidia-smi"; nvidia-smi 2>&1
  echo "== nvcc"; command -v nvcc && nvcc --version 2>&1
  echo "== cmake / ninja / c++"; cmake --version 2>&1 | head -1; ninja --version 2>&1; c++ --version 2>&1 | head -1
} >"$LOGS/inventory.txt" 2>&1
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
[ -n "$NVCC" ] || { result inventory FAIL "no nvcc on PATH or in /usr/local/cuda/bin"; finish; }
CUDA_ROOT=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
NVCC_CUDA=$("$NVCC" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
# torch, its CUDA, and the libnccl.so.2 it really maps (the header must come from there).
if ! "$PY" - >"$LOGS/torch.txt" 2>&1 <<'PYEOF'
import os, torch
print("torch", torch.__version__)
print("torch_cuda", torch.version.cuda)
print("cuda_available", int(torch.cuda.is_available()))
print("devices", torch.cuda.device_count())
print("abi", int(torch._C._GLIBCXX_USE_CXX11_ABI))
print("prefix", torch.utils.cmake_prefix_path)
print("torch_lib", os.path.join(os.path.dirname(torch.__file__), "lib"))
try:
    v = torch.cuda.nccl.version()
    print("torch_nccl", ".".join(map(str, v)) if isinstance(v, tuple) else v)
except Exception as e:
    print("torch_nccl_error", e)
maps = [l.split()[-1] for l in open("/proc/self/maps") if "libnccl" in l]
print("nccl_lib", maps[0] if maps else "")
PYEOF
then
  result inventory FAIL "python3 cannot import torch (see logs/torch.txt)"; finish
fi
cat "$LOGS/torch.txt" >>"$LOGS/inventory.txt"
get() { sed -n "s/^$1 //p" "$LOGS/torch.txt" | head -1; }
TORCH_CUDA=$(get torch_cuda); TORCH_PREFIX=$(get prefix); TORCH_LIB=$(get torch_lib)
NCCL_LIB=$(get nccl_lib)
if [ -z "$NCCL_LIB" ]; then  # not mapped at import: look in pip's nvidia packages
  NCCL_LIB=$("$PY" -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null |
    xargs -I{} find {} -name 'libnccl.so.2' 2>/dev/null | head -1)
fi
NCCL_ROOT=$(dirname "$(dirname "$(readlink -f "$NCCL_LIB" 2>/dev/null || echo /nonexistent/lib/x)")")
GPUS=$(get devices)
result inventory PASS "torch $(get torch) (CUDA $TORCH_CUDA, NCCL $(get torch_nccl)), nvcc $NVCC_CUDA at $CUDA_ROOT, $GPUS GPU(s): $(nvidia-smi -L 2>/dev/null | head -1)"
if [ "${TORCH_CUDA%%.*}" != "${NVCC_CUDA%%.*}" ]; then
  result cuda-versions FAIL "torch.version.cuda $TORCH_CUDA and nvcc $NVCC_CUDA differ in major version: the probe would load two CUDA runtimes"
elif [ "$TORCH_CUDA" != "$NVCC_CUDA" ]; then
  result cuda-versions PASS "torch.version.cuda $TORCH_CUDA, nvcc $NVCC_CUDA (same major; minor differs)"
else
  result cuda-versions PASS "torch.version.cuda = nvcc = $NVCC_CUDA"
fi
if [ -f "$NCCL_ROOT/include/nccl.h" ]; then
  result nccl-lookup PASS "$NCCL_LIB with $NCCL_ROOT/include/nccl.h"
else
  # No header beside the library: the nearest one (pip's nvidia packages, then the CUDA
  # toolkit), paired with the loaded library in a root of our own; the probe warns at run
  # time when the two versions differ.
  header=$(find "$(dirname "$NCCL_ROOT")" -name nccl.h -path '*include*' 2>/dev/null | head -1)
  [ -n "$header" ] || header=$(ls "$CUDA_ROOT"/include/nccl.h 2>/dev/null || true)
  [ -n "$header" ] || { result nccl-lookup FAIL "no nccl.h beside $NCCL_LIB nor in $CUDA_ROOT/include"; finish; }
  NCCL_ROOT="$WORK/nccl"
  mkdir -p "$NCCL_ROOT/include" "$NCCL_ROOT/lib"
  ln -sf "$header" "$NCCL_ROOT/include/nccl.h"
  ln -sf "$(readlink -f "$NCCL_LIB")" "$NCCL_ROOT/lib/libnccl.so.2"
  result nccl-lookup WARN "no nccl.h beside $NCCL_LIB: using $header (check the probe's version warning)"
fi
[ "$(get cuda_available)" = 1 ] || { result gpu FAIL "torch sees no GPU (logs/inventory.txt)"; finish; }

# ---- core's libraries, the probe-only build -------------------------------------------
if ! ls "$DEPS"/*.deb >/dev/null 2>&1; then
  PREFIX=""
  result deps SKIP "no packages in $DEPS: core's libraries must be installed (else carry $DEPS)"
elif ! PREFIX=$(scripts/probe-deps.sh unpack "$DEPS" "$WORK/deps" 2>"$LOGS/deps.txt"); then
  result deps FAIL "$(tail -1 "$LOGS/deps.txt") (carry $DEPS)"; finish
else
  result deps PASS "$(ls "$DEPS"/*.deb | wc -l) packages unpacked into $PREFIX"
fi
BUILD="$WORK/build"
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"  # H200; skips torch's GPU detection
start=$SECONDS
if ! timeout 240 cmake -S . -B "$BUILD" "${gen[@]}" -DCOMMGATE_PROBE_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="${PREFIX:+$PREFIX;}$TORCH_PREFIX" -DCOMMGATE_PROBE_NCCL=ON \
    -DCOMMGATE_CUDA_ROOT="$CUDA_ROOT" -DCOMMGATE_NCCL_ROOT="$NCCL_ROOT" \
    -DCMAKE_CUDA_COMPILER="$NVCC" -DCUDAToolkit_ROOT="$CUDA_ROOT" -DCUDA_TOOLKIT_ROOT_DIR="$CUDA_ROOT" \
    -DTORCH_CUDA_ARCH_LIST="$TORCH_CUDA_ARCH_LIST" >"$LOGS/cmake.txt" 2>&1; then
  cp "$BUILD/CMakeFiles/CMakeError.log" "$LOGS/" 2>/dev/null
  result configure FAIL "$(grep -m1 -A2 'CMake Error' "$LOGS/cmake.txt" | tr '\n' ' ')"; finish
fi
result configure PASS "$((SECONDS - start)) s; $(grep -m1 'commgate-probe: NCCL backend' "$LOGS/cmake.txt" | sed 's/^-- //')"
start=$SECONDS
timeout "$BUILD_TIMEOUT" cmake --build "$BUILD" -j"$(nproc)" --target commgate-probe >"$LOGS/build.txt" 2>&1
rc=$?
if [ $rc -eq 124 ]; then
  result build FAIL "timed out after $BUILD_TIMEOUT s (BUILD_TIMEOUT) at $(grep -o '^\[[0-9]*/[0-9]*\]' "$LOGS/build.txt" | tail -1)"; finish
elif [ $rc -ne 0 ]; then
  result build FAIL "$(grep -m3 'error:' "$LOGS/build.txt" | tr '\n' ' ')"; finish
fi
result build PASS "$((SECONDS - start)) s"
P="$BUILD/bin/commgate-probe"
NCCL_LIB_DIR=$(dirname "$NCCL_LIB")
export LD_LIBRARY_PATH="$NCCL_LIB_DIR:$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- runs ---------------------------------------------------------------------------
describe() {  # a ProbeResult in one line
  "$PY" - "$1" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
c, d, f = r.get("compute") or {}, r.get("ddpStep") or {}, r["allReduce"]["fit"]
parts = [f"backend {r['backend']}", f"transport {r['transport']}", f"nccl {r.get('ncclVersion', '?')}",
         f"gpu {r.get('gpuProduct', '')}", f"busbw {f['busbwGBps']} GB/s"]
if c: parts.append(f"compute {c['stepTimeMs']} ms ({c.get('optimizer', '?')} {c['optimizerMs']} ms, {c['precision']})")
if d: parts.append(f"ddp {d['stepTimeMs']} ms, share {d['commShare']}")
if "error" in r: parts.append(f"ERROR {r['error']['stage']}: {r['error']['message']}")
print(", ".join(parts))
PYEOF
}
common=(--backend nccl --params "$PARAMS" --termination-log "" --compute-iters 10 --ddp-iters 5)
nccl_env=(NCCL_DEBUG=INFO "NCCL_DEBUG_SUBSYS=INIT,NET,ENV")

one_rank() {  # NAME OPTIMIZER
  local name=$1 opt=$2
  env "${nccl_env[@]}" NCCL_DEBUG_FILE="$LOGS/nccl-$name.%h.%p.log" RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 \
    timeout 150 "$P" "${common[@]}" --optimizer "$opt" --master-port 29517 --timeout 120 \
    --note "gpu-first-run $name" >"$OUT/$name.json" 2>"$LOGS/$name.stderr.txt"
  local rc=$?
  if [ $rc -eq 0 ]; then result "$name" PASS "$(describe "$OUT/$name.json")"
  elif [ -s "$OUT/$name.json" ]; then result "$name" FAIL "exit $rc: $(describe "$OUT/$name.json")"
  else result "$name" FAIL "exit $rc: $(tail -2 "$LOGS/$name.stderr.txt" | tr '\n' ' ')"; fi
}
one_rank rank1 adamw
one_rank rank1-sgd sgd

# Two ranks on one GPU, over sockets: different NCCL_HOSTIDs so NCCL takes them for two
# hosts (no "Duplicate GPU detected"), no P2P/SHM, the socket transport on loopback.
two=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo
     MASTER_ADDR=127.0.0.1 MASTER_PORT=29518 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1)
env "${nccl_env[@]}" "${two[@]}" NCCL_HOSTID=commgate-rank1 RANK=1 NCCL_DEBUG_FILE="$LOGS/nccl-ranks2-r1.%h.%p.log" \
  timeout 150 "$P" "${common[@]}" --timeout 120 >/dev/null 2>"$LOGS/ranks2-r1.stderr.txt" &
other=$!
env "${nccl_env[@]}" "${two[@]}" NCCL_HOSTID=commgate-rank0 RANK=0 NCCL_DEBUG_FILE="$LOGS/nccl-ranks2-r0.%h.%p.log" \
  timeout 150 "$P" "${common[@]}" --timeout 120 --note "gpu-first-run 2 ranks on 1 GPU over sockets" \
  >"$OUT/ranks2.json" 2>"$LOGS/ranks2-r0.stderr.txt"
rc0=$?
wait "$other"; rc1=$?
if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ]; then
  result ranks2-one-gpu PASS "$(describe "$OUT/ranks2.json")"
elif [ $rc0 -eq 124 ] || [ $rc1 -eq 124 ] || [ $rc0 -eq 4 ] || [ $rc1 -eq 4 ]; then
  result ranks2-one-gpu INCONCLUSIVE "hung (exit $rc0/$rc1): NCCL does not support ranks sharing a GPU; $( [ -s "$OUT/ranks2.json" ] && describe "$OUT/ranks2.json")"
else
  result ranks2-one-gpu FAIL "exit $rc0/$rc1: $( [ -s "$OUT/ranks2.json" ] && describe "$OUT/ranks2.json" || tail -2 "$LOGS/ranks2-r0.stderr.txt" | tr '\n' ' ')"
fi

# --local-ranks 2 with NCCL on one GPU must refuse with the reason (exit 2).
if [ "$GPUS" -lt 2 ]; then
  timeout 60 "$P" --local-ranks 2 --backend nccl --params 1M >/dev/null 2>"$LOGS/local-ranks.stderr.txt"
  rc=$?
  if [ $rc -eq 2 ] && grep -q "NCCL cannot run two ranks on one GPU" "$LOGS/local-ranks.stderr.txt"; then
    result local-ranks-refused PASS "exit 2: $(head -c 160 "$LOGS/local-ranks.stderr.txt")"
  else
    result local-ranks-refused FAIL "exit $rc: $(tail -2 "$LOGS/local-ranks.stderr.txt" | tr '\n' ' ')"
  fi
else
  result local-ranks-refused SKIP "$GPUS GPUs: --local-ranks 2 runs NCCL"
fi
finish
