#!/usr/bin/env bash
# How the probe's CMake finds NCCL, as pip lays it out: a root holding include/nccl.h and
# only lib/libnccl.so.2 (no libnccl.so), next to a CUDA toolkit that carries another
# nccl.h. The header and the library must both come from the NCCL root. Fake files in
# temporary roots (configure only, nothing is compiled), so it runs anywhere.
#
#   probe_nccl_lookup_test.sh SOURCE_DIR TORCH_DIR [CMAKE]
set -euo pipefail
src="$1" torch_dir="$2" cmake="${3:-cmake}"
work=$(mktemp -d "${TMPDIR:-/tmp}/probe-nccl-lookup.XXXXXX")
trap 'rm -rf "$work"' EXIT

cuda="$work/cuda" nccl="$work/site-packages/nvidia/nccl"
mkdir -p "$cuda/include" "$cuda/lib64" "$nccl/include" "$nccl/lib"
: >"$cuda/include/cuda_runtime.h"
: >"$cuda/lib64/libcudart.so"
echo "#define NCCL_VERSION_CODE 21500 /* the toolkit's: must not be used */" >"$cuda/include/nccl.h"
: >"$cuda/lib64/libnccl.so"
echo "#define NCCL_VERSION_CODE 22707" >"$nccl/include/nccl.h"
: >"$nccl/lib/libnccl.so.2"

if ! "$cmake" -S "$src" -B "$work/build" -DCOMMGATE_PROBE_ONLY=ON -DTorch_DIR="$torch_dir" \
    -DCOMMGATE_PROBE_NCCL=ON -DCOMMGATE_CUDA_ROOT="$cuda" -DCOMMGATE_NCCL_ROOT="$nccl" \
    >"$work/configure.log" 2>&1; then
  cat "$work/configure.log"
  echo "FAIL: configure with COMMGATE_NCCL_ROOT=$nccl failed" >&2
  exit 1
fi
cache="$work/build/CMakeCache.txt"
fail=0
want() {  # VARIABLE EXPECTED
  local got
  got=$(sed -n "s/^$1:[A-Z]*=//p" "$cache")
  if [ "$got" = "$2" ]; then echo "ok: $1 = $got"; else echo "FAIL: $1 = '$got', want '$2'" >&2; fail=1; fi
}
want COMMGATE_NCCL_INCLUDE "$nccl/include"
want COMMGATE_NCCL_LIBRARY "$nccl/lib/libnccl.so.2"
want COMMGATE_CUDART_INCLUDE "$cuda/include"
grep -q "commgate-probe: NCCL backend ON" "$work/configure.log" ||
  { echo "FAIL: the NCCL backend is not on" >&2; fail=1; }
exit "$fail"
