#!/usr/bin/env bash
# The libraries core needs (nlohmann_json, yaml-cpp, simdjson), as Debian's packages, for
# a machine that has LibTorch but none of them and no package registry (the GPU machine):
# fetched here, carried there, unpacked with dpkg -x (no root, nothing installed) and
# found through CMAKE_PREFIX_PATH. docs/probe.md says how the GPU run uses them.
#
#   scripts/probe-deps.sh fetch [DIR]        apt-get download the -dev packages and the
#                                            runtime libraries they need into DIR
#                                            (default .cache/probe-deps)
#   scripts/probe-deps.sh unpack DIR PREFIX  dpkg -x every package of DIR into PREFIX and
#                                            print the CMAKE_PREFIX_PATH to use (PREFIX/usr)
set -euo pipefail
cd "$(dirname "$0")/.."

DEV_PACKAGES=(nlohmann-json3-dev libyaml-cpp-dev libsimdjson-dev)
# What every Linux with a C++ toolchain has already.
BASE='^(libc6|libgcc-s1|libstdc\+\+6)$'

fetch() {
  local dir="${1:-.cache/probe-deps}"
  local runtime
  runtime=$(apt-cache depends --no-recommends --no-suggests "${DEV_PACKAGES[@]}" |
    awk '/^ +Depends: [a-z]/ {print $2}' | grep -Ev "$BASE" | sort -u)
  local tmp
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/probe-deps.XXXXXX")
  # shellcheck disable=SC2086
  (cd "$tmp" && apt-get download -q "${DEV_PACKAGES[@]}" $runtime) ||
    { rm -rf "$tmp"; echo "probe-deps: apt-get download failed (needs Debian's mirror, as scripts/install-deps.sh)" >&2; exit 1; }
  mkdir -p "$dir"
  rm -f "$dir"/*.deb
  mv "$tmp"/*.deb "$dir"/
  rmdir "$tmp"
  echo "probe-deps: $(ls "$dir"/*.deb | wc -l) packages in $dir:" >&2
  ls "$dir" >&2
}

unpack() {
  local dir="$1" prefix="$2"
  local debs=("$dir"/*.deb)
  [ -e "${debs[0]}" ] || { echo "probe-deps: no .deb in $dir (run: scripts/probe-deps.sh fetch $dir)" >&2; exit 1; }
  mkdir -p "$prefix"
  for d in "${debs[@]}"; do dpkg -x "$d" "$prefix"; done
  # The -dev packages' libfoo.so links to the runtime package's libfoo.so.N: both must be here.
  local broken=0
  while IFS= read -r link; do
    if [ ! -e "$link" ]; then echo "probe-deps: $link points nowhere (a runtime package is missing)" >&2; broken=1; fi
  done < <(find "$prefix/usr/lib" -name 'lib*.so' -type l)
  [ "$broken" = 0 ] || exit 1
  echo "$prefix/usr"
}

case "${1:-}" in
  fetch) shift; fetch "$@" ;;
  unpack) [ $# -eq 3 ] || { echo "usage: $0 unpack DIR PREFIX" >&2; exit 2; }; unpack "$2" "$3" ;;
  *) sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
