#!/usr/bin/env bash
# GPU check on a machine of one's own with an NVIDIA GPU, nvcc and a CUDA PyTorch: the
# same build and runs as scripts/gpu-first-run.sh (the probe only, against the installed
# PyTorch's LibTorch and the NCCL it loads; 1 rank, 2 ranks on one GPU over sockets,
# --local-ranks refused on one GPU), with core's libraries installed or carried in
# .cache/probe-deps. Prints the summary; results and logs stay in OUT_DIR.
#
#   scripts/gpu-check.sh [OUT_DIR]       (default build-gpu-check; PYTHON=python3, PARAMS=25M)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$(realpath -m "${1:-build-gpu-check}")"
export OUT
export WORK="${WORK:-$OUT/work}"
exec scripts/gpu-first-run.sh
