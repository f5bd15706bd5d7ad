# syntax=docker/dockerfile:1
# The commgate image: the `commgate` binary (`commgate webhook`, `commgate operator`) at
# /usr/local/bin/commgate, the shared libraries it links (cpprestsdk, Boost.System,
# OpenSSL, yaml-cpp, simdjson, tcmalloc) and nothing else: no shell, no package manager,
# running as the non-root user 65532 the chart's pods ask for (runAsUser 65532,
# readOnlyRootFilesystem). Build it from the repository root (docs/install.md, "Images"):
#
#   docker build -f images/commgate.Dockerfile -t commgate/commgate:0.1.0 .
#
# The tag is the chart's image.repository and appVersion (tests/chart/chart_images_test.cpp
# keeps them in step). Built with podman by `make images` (scripts/images.sh), where no
# registry is reachable on bases made from Debian's packages (scripts/images-base.sh).
ARG DEBIAN_RELEASE=bookworm

# ---- build: Debian's toolchain and the -dev packages of scripts/install-deps.sh ----
FROM debian:${DEBIAN_RELEASE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libyaml-cpp-dev nlohmann-json3-dev libsimdjson-dev \
      libssl-dev libboost-dev libboost-system-dev libcpprest-dev libtcmalloc-minimal4 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the commgate target is built from (no tests, benchmarks, sim or probe).
COPY CMakeLists.txt ./
COPY core core
COPY server server
COPY kube kube
COPY webhook webhook
COPY operator operator
COPY cli cli
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DCOMMGATE_UNITY_BUILD=ON \
      -DCOMMGATE_BUILD_TESTS=OFF -DCOMMGATE_BUILD_BENCH=OFF \
      -DCOMMGATE_BUILD_SIM=OFF -DCOMMGATE_BUILD_PROBE=OFF \
 && cmake --build /build --target commgate -j"$(nproc)"
# The binary and the libraries it loads (ldd), at their paths, minus what the runtime
# base already has (glibc, libstdc++, libgcc).
RUN mkdir -p /rootfs/usr/local/bin \
 && cp /build/bin/commgate /rootfs/usr/local/bin/commgate \
 && ldd /build/bin/commgate | awk '/=> \// {print $3}' \
    | grep -Ev '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so' \
    | xargs -r -I{} cp --parents -L {} /rootfs/

# ---- runtime: distroless (glibc, libstdc++, CA certificates; no shell) ----
FROM gcr.io/distroless/cc-debian12:nonroot
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="commgate" \
      org.opencontainers.image.description="commgate admission webhook and operator" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /rootfs/ /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/commgate"]
