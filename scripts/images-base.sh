#!/usr/bin/env bash
# Makes the two base images images/*.Dockerfile start FROM, from Debian's own packages, where
# no container registry is reachable (these machines reach deb.debian.org and nothing else):
#
#   debian:bookworm                      the build stages' base: `debootstrap --variant=minbase`
#   gcr.io/distroless/cc-debian12:nonroot the runtime stages' base: glibc, libgcc, libstdc++,
#                                        OpenSSL, CA certificates, user 65532, no shell
#
# Each is tagged with the name its FROM resolves to, so the Dockerfiles stay unchanged and
# build anywhere with a registry. Each is made once: a tag that exists is kept (the cache),
# and the script says so. COMMGATE_IMAGES_REBUILD_BASE=1 makes them again.
# Rootful podman with runc and cgroupfs (scripts/images-podman.sh says why). Usage:
#   scripts/images-base.sh                    both
#   scripts/images-base.sh --runtime-only     only the distroless one: the images made from
#                                             built binaries need no more (`make test`, CI:
#                                             debootstrap takes minutes, this seconds)
set -euo pipefail
source "$(dirname "$0")/images-podman.sh"

# `FROM debian:bookworm` is a short name: podman resolves it through
# /etc/containers/registries.conf.d/shortnames.conf's alias "debian" =
# "docker.io/library/debian", so the local image must carry that full name.
readonly DEBIAN_BASE=docker.io/library/debian:bookworm
readonly DISTROLESS_BASE=gcr.io/distroless/cc-debian12:nonroot
readonly DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Root filesystems are made outside the repository (they are hundreds of MB) and removed
# once imported: the image is the cache.
readonly WORK_DIR=${COMMGATE_IMAGES_WORK_DIR:-/var/tmp/commgate-images}

say() { echo "images-base: $*"; }

# True when the tag exists and is to be kept.
cached() {
  local tag=$1
  if [ "${COMMGATE_IMAGES_REBUILD_BASE:-0}" = 1 ]; then return 1; fi
  if podman_cmd image exists "$tag"; then
    say "$tag exists: kept (cached; COMMGATE_IMAGES_REBUILD_BASE=1 makes it again)"
    return 0
  fi
  return 1
}

# debian:bookworm as Docker Hub's image is made: a minbase debootstrap (essential packages and
# apt), without apt's caches and lists, imported as one layer.
make_debian_base() {
  cached "$DEBIAN_BASE" && return 0
  local rootfs=$WORK_DIR/debian-bookworm
  say "making $DEBIAN_BASE: debootstrap --variant=minbase bookworm from $DEBIAN_MIRROR (no registry here)"
  rm -rf "$rootfs"
  mkdir -p "$WORK_DIR"
  debootstrap --variant=minbase bookworm "$rootfs" "$DEBIAN_MIRROR" >"$WORK_DIR/debootstrap.log" 2>&1 || {
    tail -20 "$WORK_DIR/debootstrap.log"
    return 1
  }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman_cmd import --quiet --change 'CMD ["bash"]' - "$DEBIAN_BASE" >/dev/null
  rm -rf "$rootfs"
  say "made $DEBIAN_BASE"
}

# Google's distroless cc-debian12 holds these Debian packages' files (and tzdata, left out
# here: docs/install.md "Images" lists the differences).
readonly DISTROLESS_PACKAGES=(libc6 libgcc-s1 libstdc++6 libgomp1 libssl3 ca-certificates netbase)

# Unpacks the packages (their files only: no maintainer scripts, so no shell is needed and
# none is installed) into the root filesystem.
unpack_distroless_packages() {
  local rootfs=$1 debs=$WORK_DIR/distroless-debs
  rm -rf "$debs" && mkdir -p "$debs"
  (cd "$debs" && apt-get -o APT::Sandbox::User=root download -q "${DISTROLESS_PACKAGES[@]}" >/dev/null)
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$rootfs"; done
  rm -rf "$debs"
  # update-ca-certificates is a shell script: useless without a shell (write_ca_bundle does its work)
  rm -rf "$rootfs"/usr/sbin/update-ca-certificates "$rootfs"/usr/share/doc "$rootfs"/usr/share/man "$rootfs"/usr/share/lintian \
    "$rootfs"/usr/share/locale "$rootfs"/usr/share/gcc "$rootfs"/usr/share/gdb
}

# What ca-certificates' update-ca-certificates would write (all of Mozilla's certificates, its
# default), made without running it: it is a shell script.
write_ca_bundle() {
  local rootfs=$1
  mkdir -p "$rootfs/etc/ssl/certs"
  cat "$rootfs"/usr/share/ca-certificates/mozilla/*.crt >"$rootfs/etc/ssl/certs/ca-certificates.crt"
}

# distroless's users: root, nobody and nonroot (65532, home /home/nonroot), none with a shell.
write_users() {
  local rootfs=$1
  cat >"$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
EOF
  cat >"$rootfs/etc/group" <<'EOF'
root:x:0:
tty:x:5:
staff:x:50:
nobody:x:65534:
nonroot:x:65532:
EOF
  echo 'hosts: files dns' >"$rootfs/etc/nsswitch.conf"
  install -d -m 0700 "$rootfs/root"
  install -d -m 0700 -o 65532 -g 65532 "$rootfs/home/nonroot"
  install -d -m 1777 "$rootfs/tmp"
}

make_distroless_base() {
  cached "$DISTROLESS_BASE" && return 0
  # apt-get download takes the host's package versions: they must be bookworm's.
  if ! grep -q '^VERSION_CODENAME=bookworm' /etc/os-release; then
    say "the distroless-equivalent base is made from the host's apt (bookworm); this host is not bookworm"
    return 1
  fi
  local rootfs=$WORK_DIR/distroless-cc
  say "making $DISTROLESS_BASE from Debian's packages ${DISTROLESS_PACKAGES[*]} (no registry here)"
  rm -rf "$rootfs" && mkdir -p "$rootfs/etc"
  unpack_distroless_packages "$rootfs"
  write_ca_bundle "$rootfs"
  write_users "$rootfs"
  ldconfig -r "$rootfs"
  if [ -e "$rootfs/bin/sh" ] || [ -e "$rootfs/usr/bin/sh" ]; then
    say "a shell got into $rootfs: refusing"
    return 1
  fi
  tar -C "$rootfs" --numeric-owner -c . | podman_cmd import --quiet \
    --change 'USER 65532:65532' --change 'WORKDIR /home/nonroot' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    - "$DISTROLESS_BASE" >/dev/null
  rm -rf "$rootfs"
  say "made $DISTROLESS_BASE"
}

case "${1:-}" in
  "") make_debian_base ;;
  --runtime-only) ;;
  *)
    echo "usage: $0 [--runtime-only]" >&2
    exit 2
    ;;
esac
make_distroless_base
