#!/usr/bin/env bash
# GPU check, for a machine with an NVIDIA GPU, the CUDA toolkit (/usr/local/cuda) and
# PyTorch (with CUDA) installed: builds commgate-probe against the LibTorch inside the
# installed PyTorch (torch.utils.cmake_prefix_path) with the NCCL backend, then runs the
# compute measurement (bf16 autocast) and the NCCL all-reduce sweep with 1 rank, and with
# 2 ranks when 2 GPUs are visible, printing each ProbeResult JSON.
#
#   scripts/gpu-check.sh [BUILD_DIR]       (default build-gpu; PYTHON=python3, PARAMS=25M)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build-gpu}"
PY="${PYTHON:-python3}"
PARAMS="${PARAMS:-25M}"

torch_prefix=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)') ||
  { echo "gpu-check: PyTorch is not importable with $PY" >&2; exit 1; }
read -r cuda_ok ngpu abi torch_version < <("$PY" -c '
import torch
print(int(torch.cuda.is_available()), torch.cuda.device_count(), int(torch._C._GLIBCXX_USE_CXX11_ABI), torch.__version__)')
echo "gpu-check: torch $torch_version, CUDA available $cuda_ok, $ngpu GPU(s), CXX11 ABI $abi" >&2
[ "$cuda_ok" = 1 ] || { echo "gpu-check: torch sees no GPU" >&2; exit 1; }
command -v nvidia-smi >/dev/null && nvidia-smi -L >&2 || true

# Link the NCCL that PyTorch itself loads when pip installed one (same soname, one copy
# in the process); else the one in the CUDA toolkit.
nccl_root=$("$PY" -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
cuda_root="${CUDA_HOME:-/usr/local/cuda}"
cmake_args=(-DCMAKE_PREFIX_PATH="$torch_prefix" -DCOMMGATE_PROBE_NCCL=ON -DCOMMGATE_CUDA_ROOT="$cuda_root"
            -DCUDAToolkit_ROOT="$cuda_root" -DCUDA_TOOLKIT_ROOT_DIR="$cuda_root"
            -DCOMMGATE_BUILD_TESTS=OFF -DCOMMGATE_BUILD_BENCH=OFF)
[ -n "$nccl_root" ] && cmake_args+=(-DCOMMGATE_NCCL_ROOT="$nccl_root")
# Older PyTorch wheels use the pre-C++11 std::string ABI: build everything the same way.
[ "$abi" = 0 ] && cmake_args+=(-DCMAKE_CXX_FLAGS=-D_GLIBCXX_USE_CXX11_ABI=0)
cmake -S . -B "$BUILD" "${cmake_args[@]}" >&2
cmake --build "$BUILD" -j"$(nproc)" --target commgate-probe >&2
P="$BUILD/bin/commgate-probe"
lib_dirs="$("$PY" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
[ -n "$nccl_root" ] && lib_dirs="$nccl_root/lib:$lib_dirs"
export LD_LIBRARY_PATH="$lib_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

echo "gpu-check: 1 rank (compute + NCCL; a 1-rank all-reduce moves nothing between ranks, busbw 0)" >&2
"$P" --backend nccl --world-size 1 --rank 0 --master-port 29517 --params "$PARAMS" \
  --termination-log "" --timeout 300 --note "gpu-check 1 rank"

if [ "$ngpu" -ge 2 ]; then
  echo "gpu-check: 2 ranks on GPUs 0 and 1 (NCCL inside one node)" >&2
  common=(--backend nccl --world-size 2 --master-port 29518 --params "$PARAMS" --termination-log "" --timeout 300
          --note "gpu-check 2 ranks, 2 GPUs of one node")
  LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 "$P" "${common[@]}" --rank 1 >/dev/null &
  other=$!
  LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 "$P" "${common[@]}" --rank 0
  wait "$other"
fi
