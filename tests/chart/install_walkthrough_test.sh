#!/bin/bash
# docs/install.md's "Trying the chart on the simulated cluster", run as written (issue #20:
# the trial's flow as a test from the docs' own commands): the ```sh block of that
# section, in order, with the build under test for build/bin and build/tests/chart, a
# fresh temporary directory for /tmp and its own NETSIM_PREFIX. Then checks what the
# section says happens: both Deployments roll out, an operator holds the Lease, the
# example is gated until measured, the operator probes the pool's 2 nodes and the 4-node
# job is Downsized to 2 with reason PoolTooSmall ("... has 2 usable nodes ..."). The doc's
# clean-up (netsim.sh down) runs at the end, after the sim is stopped as it says.
# Root only (network and mount namespaces: exit 77, skipped, otherwise).
# Usage: install_walkthrough_test.sh BIN_DIR CHART_RENDER SOURCE_DIR
set -uo pipefail
BIN=$1
RENDER=$2
SRC=$3
[ "$(id -u)" = 0 ] || { echo "SKIP: the nodes' network namespaces need root"; exit 77; }
command -v kubectl >/dev/null || { echo "SKIP: no kubectl"; exit 77; }
cd "$SRC"
script=$(awk '/^## Trying the chart on the simulated cluster/{on=1; next}
              on && /^## /{on=0}
              on && /^```sh$/{code=1; next}
              on && code && /^```$/{code=0; next}
              on && code' docs/install.md)
[ -n "$script" ] || { echo "FAIL: no sh block in docs/install.md's section"; exit 1; }
case "$script" in *"# when done"*) ;; *) echo "FAIL: the block has no '# when done' step"; exit 1 ;; esac
tmp=$(mktemp -d)
prefix=cgdoc
script=${script//'$PWD/build/bin'/$BIN}
script=${script//build\/tests\/chart\/chart-render/$RENDER}
script=${script//\/tmp\//$tmp/}
script=${script//cgchart/$prefix}
steps=${script%%# when done*}
cleanup=${script#*# when done}
cleanup=${cleanup#*$'\n'}  # the rest of the comment line ("stop commgate-sim, then")
out=$tmp/out.txt
trap 'rm -rf "$tmp"' EXIT

# The doc's steps, then the checks, in the one shell that owns the network namespaces
# (as the doc says to run them); the sim (job %1) is stopped before the doc's clean-up.
timeout 420 bash -c "$steps"'
echo  # the Lease holder is printed without a newline
job=resnet-small
for i in $(seq 1 300); do
  [ "$(kubectl get tj -n vision $job -o jsonpath={.status.phase} 2>/dev/null)" = Downsized ] && break
  [ "$(kubectl get tj -n vision $job -o jsonpath={.spec.numNodes} 2>/dev/null)" = 2 ] && break
  sleep 1
done
echo "CHECK nodes=$(kubectl get tj -n vision $job -o jsonpath={.spec.numNodes})"
echo "CHECK decision=$(kubectl get tj -n vision $job -o "jsonpath={.metadata.annotations.commgate\.io/decision}")"
echo "CHECK reason=$(kubectl get tj -n vision $job -o "jsonpath={.metadata.annotations.commgate\.io/reason}")"
echo "CHECK message=$(kubectl get tj -n vision $job -o "jsonpath={.status.conditions[?(@.type==\"Admitted\")].message}")"
kubectl get tj -A -o wide
kubectl describe tj -n vision $job
kill %1; wait
'"$cleanup" >"$out" 2>&1
rc=$?
fail() {
  echo "FAIL: $*"
  echo "--- output:"
  cat "$out"
  echo "--- pod logs:"
  tail -n 30 "$tmp"/sim-pods/*/*.log 2>/dev/null
  NETSIM_PREFIX=$prefix "$SRC/scripts/netsim.sh" down >/dev/null 2>&1
  exit 1
}
[ $rc -eq 0 ] || fail "the walkthrough exited $rc"
grep -q "Warning: commgate: suspended until measured" "$out" || fail "no gate warning on apply"
[ "$(grep -c 'successfully rolled out' "$out")" = 2 ] || fail "the Deployments did not roll out"
grep -q "^commgate-operator-[a-z0-9-]*_" "$out" || fail "no operator pod holds the Lease"
grep -q "^CHECK nodes=2$" "$out" || fail "the 4-node job was not downsized to the pool's 2 nodes"
grep -q "^CHECK decision=Downsize$" "$out" || fail "the decision is not Downsize"
grep -q "^CHECK reason=PoolTooSmall$" "$out" || fail "the reason is not PoolTooSmall"
grep -q "^CHECK message=the pool of nodeSelector {commgate.io/pool=cpu-1gbe} has 2 usable nodes (all that match the nodeSelector), fewer than the 4 nodes asked for; spec.minNodes (1) allows fewer and the built-in default policy downsizes, so it runs on 2 nodes\." "$out" ||
  fail "the Admitted condition does not say what docs/install.md quotes"
[ -z "$(ip netns list | grep "^$prefix-")" ] || fail "the doc's clean-up left network namespaces"
echo "PASS: docs/install.md's walkthrough on the simulated cluster"
