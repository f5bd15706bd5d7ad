#!/usr/bin/env bash
# Installs the Debian packages commgate builds and tests with. Idempotent: packages
# already installed are skipped, and apt is not touched at all when nothing is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  # CI's time is mostly the build: Ninja schedules it, lld links it (docs/testing.md "CI")
  ninja-build lld
  # core: parsing, JSON, tests, benchmarks
  libyaml-cpp-dev nlohmann-json3-dev libsimdjson-dev libgtest-dev libgmock-dev libbenchmark-dev
  # the webhook's allocator (cli/CMakeLists.txt says why)
  libtcmalloc-minimal4
  # servers and the Kubernetes client
  libssl-dev libboost-dev libboost-system-dev libcpprest-dev
  # the probe: LibTorch (CPU) with c10d Gloo; OpenBLAS so CPU LibTorch is not ~15x slower
  libtorch-dev libgloo-dev libopenblas0-pthread
  # the second real client that proves the simulated cluster (tests/sim/python_client_check.py)
  python3-kubernetes
  # the real DDP training that the operator's workload runs under torchrun on the simulated
  # cluster (tests/operator/workload_torchrun_e2e_test.cpp, examples/training/ddp_tiny.py)
  python3-torch
  # the Helm chart's tests: chart-render (tests/chart/render) in Go with sprig, Helm's
  # YAML and values-schema libraries (GOPATH mode, no downloads)
  golang-1.19 golang-github-masterminds-sprig-dev golang-github-masterminds-semver-dev
  golang-k8s-sigs-yaml-dev golang-github-xeipuuv-gojsonschema-dev
  zlib1g-dev
  # network emulation for the probe's emulated-node tests
  iproute2 iputils-ping procps
  # benchmarks: the HTTPS server against nginx (bench/server)
  nginx wrk
  # the images (images/*.Dockerfile, `make images`, tests/images): podman builds and runs
  # them as root; runc, not crun (podman's first choice), because crun fails on these
  # machines' hybrid cgroup layout and on raising rlimits; debootstrap makes the base images
  # from Debian's packages where no registry is reachable (scripts/images-base.sh).
  # Rootful with --network host: no uidmap, slirp4netns or fuse-overlayfs needed.
  podman runc debootstrap
  # a local registry (the Distribution registry) for the test of docs/install.md's push
  # commands (tests/images/install_doc_push_test.sh)
  docker-registry
  # formatting and analysis
  clang-format clang-tidy cppcheck
  # the webhook fuzzer: clang with libFuzzer
  clang libclang-rt-14-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
