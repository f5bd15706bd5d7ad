#!/usr/bin/env bash
# The probe-only build against core's libraries unpacked from Debian's packages (what the
# GPU machine gets, scripts/probe-deps.sh): unpack them into a temporary prefix, configure
# COMMGATE_PROBE_ONLY=ON against it, and check that each library was found there, not in
# this machine's /usr. Configure only, so it stays fast. Fetches the packages (Debian's
# mirror, as scripts/install-deps.sh) when .cache/probe-deps has none.
#
#   probe_deps_test.sh SOURCE_DIR TORCH_DIR [CMAKE]
set -euo pipefail
src="$1" torch_dir="$2" cmake="${3:-cmake}"
debs="$src/.cache/probe-deps"
work=$(mktemp -d "${TMPDIR:-/tmp}/probe-deps-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

if ! ls "$debs"/*.deb >/dev/null 2>&1; then
  "$src/scripts/probe-deps.sh" fetch "$debs"
fi
prefix=$("$src/scripts/probe-deps.sh" unpack "$debs" "$work/prefix")

if ! "$cmake" -S "$src" -B "$work/build" -DCOMMGATE_PROBE_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DTorch_DIR="$torch_dir" >"$work/configure.log" 2>&1; then
  cat "$work/configure.log"
  echo "FAIL: the probe-only build does not configure against $prefix" >&2
  exit 1
fi
fail=0
grep -q "commgate: probe-only build" "$work/configure.log" ||
  { echo "FAIL: the configure did not take the probe-only path" >&2; fail=1; }
for pkg in nlohmann_json yaml-cpp simdjson; do
  dir=$(sed -n "s/^${pkg}_DIR:PATH=//p" "$work/build/CMakeCache.txt")
  case "$dir" in
    "$work/prefix"/*) echo "ok: $pkg from $dir" ;;
    *) echo "FAIL: $pkg was found at '$dir', not in the unpacked packages ($prefix)" >&2; fail=1 ;;
  esac
done
for target in commgate_core commgate-probe; do
  grep -q "^$target:" "$work/build/Makefile" 2>/dev/null ||
    grep -q "build $target:" "$work/build/build.ninja" 2>/dev/null ||
    { echo "FAIL: no target $target in the probe-only build" >&2; fail=1; }
done
for absent in commgate commgate-webhook commgate-sim; do
  if grep -q "^$absent:" "$work/build/Makefile" 2>/dev/null; then
    echo "FAIL: the probe-only build has $absent" >&2; fail=1
  fi
done
exit "$fail"
