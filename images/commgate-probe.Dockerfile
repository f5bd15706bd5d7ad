# syntax=docker/dockerfile:1
# The probe image: `commgate-probe` at /usr/local/bin/commgate-probe (the operator's probe
# Jobs run it: OPERATOR_CONTRACT's ProbeLaunchSettings.command) with LibTorch and the
# libraries it links, no shell, as the non-root user 65532. This file builds the CPU
# variant (Debian's LibTorch 1.13 with Gloo), the one the simulated cluster's tests run:
#
#   docker build -f images/commgate-probe.Dockerfile -t commgate/commgate-probe:0.1.0 .
#
# GPU nodes need the NCCL backend, which needs a CUDA LibTorch, the CUDA runtime and NCCL.
# Build that variant on a PyTorch/CUDA base whose torch matches your nodes' driver, e.g.
#   --build-arg BUILD_BASE=pytorch/pytorch:2.7.1-cuda12.6-cudnn9-devel
# and replace the apt-get line by core's libraries (apt-get install libyaml-cpp-dev
# nlohmann-json3-dev libsimdjson-dev there, or scripts/probe-deps.sh's unpacked Debian
# packages), and configure with
#   -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')"
#   -DCOMMGATE_PROBE_NCCL=ON -DCOMMGATE_NCCL_ROOT=<the nvidia/nccl folder torch loads>
# exactly as scripts/gpu-first-run.sh does (docs/probe.md, "Build"); its runtime stage
# needs the CUDA runtime and libnccl.so.2 (an nvidia/cuda:*-runtime base, or the ldd copy
# below, which picks them up). pip's LibTorch has no Gloo: that probe is NCCL only.
# `make images` builds the CPU variant with podman (scripts/images.sh); the GPU variant is not
# built on the machines this project is developed on (no GPU in most sessions).
ARG BUILD_BASE=debian:bookworm

# ---- build: probe only (core + commgate-probe; COMMGATE_PROBE_ONLY) ----
FROM ${BUILD_BASE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libyaml-cpp-dev nlohmann-json3-dev libsimdjson-dev \
      libtorch-dev libgloo-dev libopenblas0-pthread \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY core core
COPY probe-job probe-job
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DCOMMGATE_PROBE_ONLY=ON -DCOMMGATE_UNITY_BUILD=ON \
 && cmake --build /build --target commgate-probe -j"$(nproc)"
# The binary and every library it loads (ldd: LibTorch, OpenBLAS through libblas.so.3's
# alternative, Gloo, yaml-cpp...), at their paths, minus what the runtime base has.
RUN mkdir -p /rootfs/usr/local/bin \
 && cp /build/bin/commgate-probe /rootfs/usr/local/bin/commgate-probe \
 && ldd /build/bin/commgate-probe | awk '/=> \// {print $3}' \
    | grep -Ev '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so' \
    | xargs -r -I{} cp --parents -L {} /rootfs/

# ---- runtime: distroless (glibc, libstdc++; no shell) ----
FROM gcr.io/distroless/cc-debian12:nonroot
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="commgate-probe" \
      org.opencontainers.image.description="commgate's network and compute probe (LibTorch, Gloo)" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /rootfs/ /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/commgate-probe"]
