#!/usr/bin/env bash
# make demo: commgate's decision on the example jobs, then the whole flow on a simulated
# cluster.
#  1. decisions from probe results recorded on emulated nodes joined by 1 GbE
#     (examples/measurements/: real runs of commgate-probe, provenance in each file);
#  2. a live probe: two emulated nodes (network namespaces, link shaped to 1gbit with tc)
#     when run as root, else the local loopback probe; then the decision from it;
#  3. as root: kubectl apply of TrainingJobs on commgate-sim with the real webhook and
#     operator -> probes -> decisions -> training Jobs (scripts/demo-cluster.sh); without
#     root it says why it is skipped. Parts 1 and 2 need no cluster and no root.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
CG="$BUILD/bin/commgate"
PROBE="$BUILD/bin/commgate-probe"
[ -x "$CG" ] || { echo "demo: $CG not built (run make build)" >&2; exit 1; }

M_BERT=examples/measurements/probe-netns-2-nodes-1gbit-350M-params.json
M_RESNET=examples/measurements/probe-netns-2-nodes-1gbit-5M-params-batch-4096.json
seen=""

banner() { printf '\n\033[1m== %s\033[0m\n\n' "$*"; }
# evaluate ARGS...: prints the table, remembers the verdict; a denial (exit 1) is a
# result here, not a failure.
evaluate() {
  local out rc
  out=$("$CG" evaluate "$@")
  rc=$?
  printf '%s\n' "$out"
  # 0 runs, 1 denied, 4 would wait: results here; 2 and 3 are failures.
  [ $rc -le 1 ] || [ $rc -eq 4 ] || { echo "demo: commgate evaluate failed with exit $rc" >&2; exit 1; }
  seen+=" $(printf '%s\n' "$out" | sed -n 's/^Decision: \([A-Za-z]*\).*/\1/p' | tr '\n' ' ')"
}

banner "1. A ResNet-like 5M-parameter model on 4 nodes, 1 GbE (recorded probe)"
evaluate -f examples/jobs/resnet50-5m.yaml --measurement "$M_RESNET"

banner "2. BERT-large (350M parameters) on 4 nodes, same 1 GbE link (recorded probe)"
evaluate -f examples/jobs/bert-large-350m.yaml --measurement "$M_BERT" --plot "$BUILD/bert-large-scaling.svg"
echo "(its scaling chart: $BUILD/bert-large-scaling.svg; docs/researcher.md \"See it: the scaling chart\" reads it)"

banner "3. The same BERT job under a policy that denies instead of downsizing"
evaluate -f examples/jobs/bert-large-350m.yaml --measurement "$M_BERT" --policy examples/policies/strict-deny.yaml

banner "4. A 7B-parameter LLM on 8 nodes (link probed; compute from the job's stepTimeHintMs)"
evaluate -f examples/jobs/llm-7b.yaml --measurement "$M_BERT"

banner "5. A job with a mistake: exit code 2 and the field that is wrong"
"$CG" evaluate -f examples/invalid/zero-nodes.yaml
echo "(exit code $?)"

banner "6. A live probe"
if [ "$(id -u)" -eq 0 ] && command -v tc >/dev/null && [ -x "$PROBE" ]; then
  echo "Probing two emulated nodes (network namespaces, links shaped to 1gbit) with the ResNet job's model..."
  live=$(mktemp --suffix=.json)
  trap 'rm -f "$live"' EXIT
  # The probe times the job's own optimizer: a compute step measured with another one
  # would not match the job (the decision would be a Gate, ComputeMeasurementMissing).
  optimizer=$(sed -n 's/^ *optimizer: *\([a-z-]*\).*/\1/p' examples/jobs/resnet50-5m.yaml)
  if probe-job/netns-bench.sh one 2 1gbit "$live" --params 5M --batch-size 4096 --compute-iters 5 --ddp-iters 3 \
      --optimizer "${optimizer:-adamw}" --note "live probe from make demo"; then
    before="$seen"
    evaluate -f examples/jobs/resnet50-5m.yaml --measurement "$live"
    case "${seen#"$before"}" in
      *Gate*) echo "demo: the live probe's measurement did not decide the job (see above)" >&2; exit 1 ;;
    esac
  else
    echo "demo: the live probe failed (see above)" >&2
    exit 1
  fi
elif [ -x "$PROBE" ]; then
  echo "Not root: probing this machine's loopback instead of emulated nodes..."
  evaluate -f examples/jobs/resnet50-5m.yaml --probe "$PROBE"
else
  echo "commgate-probe is not built (COMMGATE_BUILD_PROBE=OFF): no live probe."
fi

banner "Verdicts seen:$seen"
for v in Admit Downsize Deny; do
  case "$seen" in *"$v"*) ;; *) echo "demo: expected a $v among the examples" >&2; exit 1 ;; esac
done

banner "7. The whole flow on a simulated cluster: kubectl apply -> probes -> decisions -> training"
scripts/demo-cluster.sh "$BUILD"
rc=$?
if [ $rc -eq 77 ]; then
  echo "(skipped: see the reason above; parts 1-6 need no cluster)"
elif [ $rc -ne 0 ]; then
  echo "demo: the cluster flow failed (exit $rc)" >&2
  exit 1
fi
