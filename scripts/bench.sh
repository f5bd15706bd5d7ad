#!/usr/bin/env bash
# `make bench`: every benchmark that runs without root, one after another, each against its
# reference where it has one (nginx for the HTTPS server and the webhook). The numbers and
# what they mean are in docs/benchmarks.md; the emulated-node benchmarks of the probe need
# root and network namespaces: `sudo probe-job/netns-bench.sh MODE BUILD_DIR`.
#
#   scripts/bench.sh [BUILD_DIR=build] [ROUNDS=1] [DURATION=3s]
#
# Shorter than the recorded runs (1 round of 3 s, 200 operator jobs): a quick look. The
# recorded runs use the commands in docs/benchmarks.md. Run it on a quiet machine: the
# servers and their load generators share its cores.
set -euo pipefail

BUILD_DIR=${1:-build}
ROUNDS=${2:-1}
DURATION=${3:-3s}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$BUILD_DIR/bin"
for b in decision_bench webhook_admission_bench commgate-webhook-bench-inputs \
  commgate-server-bench commgate-sim-scale-bench commgate-operator-bench; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (configure with -DCOMMGATE_BUILD_BENCH=ON and build)" >&2; exit 1; }
done

section() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
inputs=$(mktemp -d)
trap 'rm -rf "$inputs"' EXIT

section "decision: parse, validate and decide in process (docs/benchmarks.md \"Decision\")"
"$BIN/decision_bench" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true

section "webhook: one AdmissionReview through AdmissionService::admit, no sockets"
"$BIN/commgate-webhook-bench-inputs" "$inputs" >/dev/null
COMMGATE_BENCH_INPUTS="$inputs" "$BIN/webhook_admission_bench" \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true

section "HTTPS server against nginx (\"HTTPS server\")"
"$ROOT/bench/server/run.sh" "$BUILD_DIR" "$ROUNDS" "$DURATION"

section "commgate webhook against nginx (\"Webhook\")"
"$ROOT/bench/webhook/run.sh" "$BUILD_DIR" "$ROUNDS" "$DURATION"

section "commgate-sim at scale (\"Simulated API server at scale\")"
"$BIN/commgate-sim-scale-bench" --objects 2000 --watches 50 --writes 10

section "operator deciding jobs from a profile (\"Operator at scale\")"
"$BIN/commgate-operator-bench" --jobs 100,200 --unrelated-pods 2000
