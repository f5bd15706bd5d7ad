#!/usr/bin/env bash
# make demo, part 2: the whole flow on the simulated cluster (issue #10), as a researcher
# sees it. Two node pools of emulated nodes (network namespaces, links shaped with tc by
# scripts/netsim.sh): a slow one at 20mbit and a fast one at 5gbit. commgate-sim runs
# their pods as local processes; the real `commgate webhook` admits (the sim calls it over
# HTTPS) and the real `commgate operator`, as its service account, probes each pool with
# commgate-probe pods, decides, and launches the training (examples/training/ddp_tiny.py
# under torchrun). kubectl drives it:
#
#   kubectl apply (the same small model on both pools) -> gated -> probes -> decisions
#   -> training Jobs -> kubectl get trainingjobs, kubectl describe of the downsized one
#   -> the same model as Kubeflow PyTorchJobs queued in Kueue (the sim's Kueue stand-in,
#      commgate's AdmissionCheck, docs/kueue.md): Ready and unsuspended on the fast pool,
#      Rejected with its numbers on the slow one, decided from the same CommProfiles
#
# Needs root (network namespaces), kubectl, commgate-probe and Debian's python3-torch;
# exits 77 saying what is missing otherwise. Everything it starts is stopped at the end,
# and the namespaces removed. Usage: scripts/demo-cluster.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD="${1:-build}"
CG="$ROOT/$BUILD/bin/commgate"
SIM="$ROOT/$BUILD/bin/commgate-sim"
PROBE="$ROOT/$BUILD/bin/commgate-probe"
PYTHON=/usr/bin/python3
KUBECTL=$(command -v kubectl || true)
# Kueue's and the Kubeflow training operator's CRDs at pinned tags (beside the repository).
ECOSYSTEM="$ROOT/../shared/fixtures/ecosystem"

skip() { echo "demo-cluster: skipped: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "the emulated nodes are network namespaces with tc-shaped links, which need root"
command -v tc >/dev/null && command -v ip >/dev/null || skip "needs ip and tc (Debian: iproute2)"
[ -n "$KUBECTL" ] || skip "no kubectl on PATH"
for b in "$CG" "$SIM" "$PROBE"; do [ -x "$b" ] || skip "$b is not built"; done
"$PYTHON" -c 'import torch' 2>/dev/null || skip "$PYTHON cannot import torch (Debian: python3-torch)"
[ -f "$ECOSYSTEM/kueue-v0.19.2/kueue.x-k8s.io_workloads.yaml" ] || skip "no Kueue CRDs in $ECOSYSTEM"

OPERATOR_USER=system:serviceaccount:commgate-system:commgate-operator
WEBHOOK_USER=system:serviceaccount:commgate-system:commgate-webhook
SLOW_POOL=cpu-20mbit
FAST_POOL=cpu-5gbit
ID=$(( $$ % 100000 ))
SLOW_NS="dms$ID"
FAST_NS="dmf$ID"
WORK=$(mktemp -d /tmp/commgate-demo-XXXXXX)
PIDS=()

cleanup() {
  local pid
  # Only what this script started, by pid, the operator first.
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[$i]}
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  NETSIM_PREFIX="$SLOW_NS" scripts/netsim.sh down 2>/dev/null
  NETSIM_PREFIX="$FAST_NS" scripts/netsim.sh down 2>/dev/null
  if [ "${KEEP_WORK:-0}" = 1 ]; then echo "demo-cluster: logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
fail() {
  echo "demo-cluster: $*" >&2
  for log in operator webhook sim; do
    echo "--- last lines of $log.log" >&2
    tail -n 20 "$WORK/$log.log" >&2 2>/dev/null
  done
  exit 1
}
step() { printf '\n\033[1m-- %s\033[0m\n' "$*"; }
admin() { "$KUBECTL" --kubeconfig "$WORK/admin.kubeconfig" --cache-dir "$WORK/cache" "$@"; }
alice() { "$KUBECTL" --kubeconfig "$WORK/alice.kubeconfig" --cache-dir "$WORK/cache" "$@"; }
# wait_for_port FILE REGEX: the first match's group 1 (a port), within 30 s; REGEX holds no '#'.
wait_for_port() {
  local file="$1" regex="$2" port=""
  for _ in $(seq 300); do
    port=$(sed -n -E "s#.*$regex.*#\1#p" "$file" 2>/dev/null | head -n 1)
    [ -n "$port" ] && { echo "$port"; return 0; }
    sleep 0.1
  done
  return 1
}
phase() { admin get tj -n ml "$1" -o 'jsonpath={.status.phase}' 2>/dev/null; }
# wait_phase JOB SECONDS PHASE...: until the TrainingJob is in one of the phases.
wait_phase() {
  local job="$1" limit="$2" p
  shift 2
  for _ in $(seq "$limit"); do
    p=$(phase "$job")
    for want in "$@"; do [ "$p" = "$want" ] && return 0; done
    sleep 1
  done
  return 1
}

start=$(date +%s)
step "Two node pools: 3 nodes on 20mbit links ($SLOW_NS-n*), 2 nodes on 5gbit links ($FAST_NS-n*)"
NETSIM_PREFIX="$SLOW_NS" scripts/netsim.sh up 3 20mbit || fail "netsim.sh up failed"
NETSIM_PREFIX="$FAST_NS" scripts/netsim.sh up 2 5gbit || fail "netsim.sh up failed"

step "commgate-sim: the API server, a kubelet for the 5 nodes, and a Kueue stand-in"
"$SIM" --port 0 --kubeconfig-out "$WORK/admin.kubeconfig" \
  --user "op-$ID-$RANDOM=$OPERATOR_USER" --user "wh-$ID-$RANDOM=$WEBHOOK_USER" \
  --user "alice-$ID-$RANDOM=alice,researchers" \
  --kubeconfig-out-user "$OPERATOR_USER=$WORK/operator.kubeconfig" \
  --kubeconfig-out-user "$WEBHOOK_USER=$WORK/webhook.kubeconfig" \
  --kubeconfig-out-user "alice=$WORK/alice.kubeconfig" \
  --node-group "3,gpus=1,netns=$SLOW_NS,label=commgate.io/pool=$SLOW_POOL" \
  --node-group "2,gpus=1,netns=$FAST_NS,label=commgate.io/pool=$FAST_POOL" \
  --pod-dir "$WORK/pods" --kueue >"$WORK/sim.log" 2>&1 &
PIDS+=($!)
wait_for_port "$WORK/sim.log" 'listening on https://[^ ]+ port ([0-9]+)' >/dev/null || fail "commgate-sim did not start"
admin get nodes -L commgate.io/pool

step "commgate webhook, as its service account, with a certificate for commgate-webhook.commgate-system.svc"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=commgate demo CA" \
  -keyout "$WORK/ca.key" -out "$WORK/ca.crt" 2>/dev/null || fail "openssl: CA"
openssl req -newkey rsa:2048 -nodes -subj "/CN=commgate-webhook" \
  -keyout "$WORK/webhook.key" -out "$WORK/webhook.csr" 2>/dev/null || fail "openssl: CSR"
printf 'subjectAltName=DNS:commgate-webhook.commgate-system.svc\n' >"$WORK/san.ext"
openssl x509 -req -in "$WORK/webhook.csr" -CA "$WORK/ca.crt" -CAkey "$WORK/ca.key" \
  -CAcreateserial -days 1 -extfile "$WORK/san.ext" -out "$WORK/webhook.crt" 2>/dev/null ||
  fail "openssl: webhook certificate"
# The key both sign and check decision records with (the chart's <release>-decision-key).
head -c 48 /dev/urandom | base64 >"$WORK/decision.key"
chmod 0600 "$WORK/decision.key"
"$CG" webhook --port 0 --address 127.0.0.1 --tls-cert-file "$WORK/webhook.crt" \
  --tls-private-key-file "$WORK/webhook.key" --kubeconfig "$WORK/webhook.kubeconfig" \
  --decision-key-file "$WORK/decision.key" >"$WORK/webhook.log" 2>&1 &
PIDS+=($!)
port=$(wait_for_port "$WORK/webhook.log" 'listening on 127\.0\.0\.1:([0-9]+)') || fail "the webhook did not start"
# The sim has no cluster DNS: it learns where the webhook's Service listens.
printf '{"name":"commgate-webhook","namespace":"commgate-system","address":"127.0.0.1:%s"}' "$port" >"$WORK/service.json"
admin create --raw /sim/services -f "$WORK/service.json" >/dev/null || fail "cannot register the webhook's service"

step "CRDs, namespaces, webhook configurations (deploy/webhook-configurations.yaml), a CommPolicy"
admin apply -f crds/ || fail "kubectl apply crds"
# apply, not `kubectl create namespace`: that one sends protobuf, which the sim does not speak.
for ns in commgate-system ml; do
  printf 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n' "$ns" | admin apply -f - || fail "namespace $ns"
done
sed "s/REPLACE_WITH_BASE64_CA_BUNDLE/$(base64 -w0 "$WORK/ca.crt")/" deploy/webhook-configurations.yaml |
  admin apply -f - || fail "webhook configurations"
cat >"$WORK/policy.yaml" <<'EOF'
# The default policy's limits, with a short probe for the demo (few sizes and iterations,
# gloo: the nodes' GPUs are advertised only).
apiVersion: commgate.io/v1alpha1
kind: CommPolicy
metadata:
  name: demo
spec:
  maxCommShare: 0.30
  enforcementAction: downsize
  onMissingMeasurement: gate
  measurementTTL: 1h
  probe:
    timeoutSeconds: 180
    backend: gloo
    sizes: {min: 64Ki, max: 8Mi}
    iterations: 3
    warmupIterations: 1
    maxNodes: 3
EOF
# The webhook refuses (503) until its caches have listed the CRDs applied just now.
for _ in $(seq 60); do
  out=$(admin apply -f "$WORK/policy.yaml" 2>&1) && break
  case "$out" in *"has not loaded"*) sleep 1 ;; *) break ;; esac
done
echo "$out"
admin get commpolicy demo >/dev/null 2>&1 || fail "CommPolicy"
# `create`, not `apply`: the Workload CRD is larger than the last-applied annotation may be.
for crd in kueue-v0.19.2/kueue.x-k8s.io_{resourceflavors,admissionchecks,clusterqueues,localqueues,workloads}.yaml \
  training-operator-v1.9.4/kubeflow.org_pytorchjobs.yaml; do
  admin create -f "$ECOSYSTEM/$crd" >/dev/null || fail "kubectl create -f $crd"
done

# One compute thread per probe: the emulated nodes share this machine's cores.
step "commgate operator --kueue, as $OPERATOR_USER, probes with $PROBE --threads 1"
cp "$WORK/webhook.crt" "$WORK/operator.crt"
cp "$WORK/webhook.key" "$WORK/operator.key"
"$CG" operator --kubeconfig "$WORK/operator.kubeconfig" --namespace commgate-system \
  --probe-command "$PROBE,--threads,1" --port 0 --address 127.0.0.1 \
  --tls-cert-file "$WORK/operator.crt" --tls-private-key-file "$WORK/operator.key" \
  --decision-key-file "$WORK/decision.key" --kueue >"$WORK/operator.log" 2>&1 &
PIDS+=($!)
wait_for_port "$WORK/operator.log" 'serving /healthz /readyz /metrics on [^ ]*:([0-9]+)' >/dev/null ||
  fail "the operator did not start"

# The same small model (1M parameters, batch 4096) over each pool: on 20mbit its 4 MB
# gradient all-reduce (about 2 s over 3 nodes) outweighs its compute step (about 1.5 s on
# one core), on 5gbit (under 10 ms) it does not.
job() {
  cat <<EOF
apiVersion: commgate.io/v1alpha1
kind: TrainingJob
metadata:
  name: $1
  namespace: ml
spec:
  numNodes: $3
  numProcPerNode: 1
  nodeSelector:
    commgate.io/pool: $2
  model:
    parameters: 1M
    gradientDtype: fp32
    batchSize: 4096
    optimizer: sgd
  template:
    spec:
      containers:
        - name: trainer
          image: registry.example/ml/ddp-tiny:1.0
          command: ["$PYTHON", "-m", "torch.distributed.run", "$ROOT/examples/training/ddp_tiny.py"]
          env:
            # Debian's torch 1.13 under Python 3.11: torchrun's default --redirects/--tee
            # "0" parse to None and it crashes before starting a worker; "1" works.
            - {name: PET_REDIRECTS, value: "1"}
            - {name: PET_TEE, value: "1"}
EOF
}
step "alice: kubectl apply of tiny-slow (3 nodes on $SLOW_POOL): gated until the pool is measured"
job tiny-slow "$SLOW_POOL" 3 | alice apply -f - || fail "kubectl apply tiny-slow"
alice get trainingjobs -n ml
step "The operator probes the pool (commgate-probe pods on its nodes), then decides"
t=$(date +%s)
for _ in $(seq 60); do
  [ -n "$(admin get pods -n commgate-system -o name 2>/dev/null)" ] && break
  sleep 0.5
done
admin get jobs,pods -n commgate-system -o wide
wait_phase tiny-slow 300 Downsized Rejected Admitted Running Succeeded Failed || fail "tiny-slow has no decision after 300 s"
echo "decided in $(( $(date +%s) - t )) s (the probe's Job is deleted once its result is in the pool's CommProfile)"
admin get commprofiles

# One thing at a time: whatever else runs on this machine's shared cores while a probe
# times a step is timed with it.
wait_phase tiny-slow 240 Succeeded Failed Rejected || fail "tiny-slow's training did not finish in 240 s"
step "alice: kubectl apply of tiny-fast (2 nodes on $FAST_POOL)"
job tiny-fast "$FAST_POOL" 2 | alice apply -f - || fail "kubectl apply tiny-fast"
t=$(date +%s)
wait_phase tiny-fast 300 Admitted Downsized Rejected Running Succeeded Failed || fail "tiny-fast has no decision after 300 s"
echo "decided in $(( $(date +%s) - t )) s"

step "The training Jobs: DDP under torchrun with the environment the operator injected"
wait_phase tiny-fast 240 Succeeded Failed || fail "tiny-fast's training did not finish in 240 s"
wait_phase tiny-slow 240 Succeeded Failed Rejected || fail "tiny-slow's training did not finish in 240 s"
admin get jobs,pods -n ml -o wide

step "kubectl get trainingjobs"
alice get trainingjobs -n ml
step "kubectl describe trainingjob tiny-slow"
alice describe trainingjob -n ml tiny-slow
echo "(whole flow: $(( $(date +%s) - start )) s)"

slow=$(phase tiny-slow)
fast=$(phase tiny-fast)
decision=$(admin get tj -n ml tiny-slow -o 'jsonpath={.status.decision.action}')
case "$decision" in Downsize | Deny) ;; *) fail "tiny-slow: expected a downsize or a denial, got $decision ($slow)" ;; esac
[ "$fast" = Succeeded ] || fail "tiny-fast: expected Succeeded, got $fast"

# ---- The same model as PyTorchJobs queued in Kueue (docs/kueue.md) ----
step "Kueue: a ClusterQueue per pool, each listing commgate's AdmissionCheck"
cat >"$WORK/kueue.yaml" <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: comm
spec:
  controllerName: commgate.io/comm-check
EOF
for q in fast:$FAST_POOL slow:$SLOW_POOL; do
  cat >>"$WORK/kueue.yaml" <<EOF
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: ${q%%:*}
spec:
  nodeLabels:
    commgate.io/pool: ${q#*:}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: ${q%%:*}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: ["nvidia.com/gpu"]
      flavors:
        - name: ${q%%:*}
          resources:
            - name: nvidia.com/gpu
              nominalQuota: 8
  admissionChecksStrategy:
    admissionChecks:
      - name: comm
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: ${q%%:*}
  namespace: ml
spec:
  clusterQueue: ${q%%:*}
EOF
done
admin apply -f "$WORK/kueue.yaml" || fail "kubectl apply of the Kueue queues"
active() { admin get admissioncheck comm -o "jsonpath={.status.conditions[?(@.type==\"Active\")].$1}"; }
for _ in $(seq 30); do
  [ "$(active status)" = True ] && break
  sleep 1
done
[ "$(active status)" = True ] || fail "the AdmissionCheck comm is not Active: $(active message)"
echo "AdmissionCheck comm: $(active message)"

# pytorchjob NAME QUEUE WORKERS: 1 master + WORKERS workers of one GPU, the tiny model.
pytorchjob() {
  cat <<EOF
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: $1
  namespace: ml
  labels:
    kueue.x-k8s.io/queue-name: $2
  annotations:
    commgate.io/parameters: 1M
    commgate.io/batch-size: "4096"
    commgate.io/optimizer: sgd
spec:
  runPolicy:
    suspend: true
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example/ml/ddp-tiny:1.0
              resources:
                limits:
                  nvidia.com/gpu: 1
    Worker:
      replicas: $3
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example/ml/ddp-tiny:1.0
              resources:
                limits:
                  nvidia.com/gpu: 1
EOF
}
workload_of() { admin get workloads -n ml -o name 2>/dev/null | sed -n "s#^workload.kueue.x-k8s.io/\(pytorchjob-$1-.*\)#\1#p" | head -n 1; }
check_field() { admin get workload -n ml "$1" -o "jsonpath={.status.admissionChecks[?(@.name==\"comm\")].$2}" 2>/dev/null; }
suspended() { admin get pytorchjob -n ml "$1" -o 'jsonpath={.spec.runPolicy.suspend}'; }

step "alice: PyTorchJob pt-fast (1 master + 1 worker) queued to fast: decided from $FAST_POOL's CommProfile"
pytorchjob pt-fast fast 1 | alice apply -f - || fail "kubectl apply pt-fast"
wl=""
for _ in $(seq 60); do
  wl=$(workload_of pt-fast)
  [ -n "$wl" ] && [ "$(check_field "$wl" state)" = Ready ] && [ "$(suspended pt-fast)" = false ] && break
  sleep 1
done
[ -n "$wl" ] && [ "$(check_field "$wl" state)" = Ready ] ||
  fail "pt-fast: commgate's check is not Ready (${wl:-no Workload}): $(check_field "$wl" message)"
[ "$(suspended pt-fast)" = false ] || fail "pt-fast: Kueue did not admit and unsuspend it"
echo "commgate's check on $wl: Ready: $(check_field "$wl" message)"
echo "Kueue admitted it and unsuspended PyTorchJob pt-fast"

step "alice: PyTorchJob pt-slow (1 master + 2 workers) queued to slow"
pytorchjob pt-slow slow 2 | alice apply -f - || fail "kubectl apply pt-slow"
wl=""
for _ in $(seq 60); do
  wl=$(workload_of pt-slow)
  [ -n "$wl" ] && [ "$(admin get workload -n ml "$wl" -o 'jsonpath={.spec.active}')" = false ] && break
  sleep 1
done
[ -n "$wl" ] && [ "$(admin get workload -n ml "$wl" -o 'jsonpath={.spec.active}')" = false ] ||
  fail "pt-slow: not rejected (${wl:-no Workload}): $(check_field "$wl" state): $(check_field "$wl" message)"
echo "Kueue deactivated $wl after commgate rejected it; commgate's Event on it:"
admin get events -n ml -o "jsonpath={range .items[?(@.involvedObject.name==\"$wl\")]}{.message}{\"\n\"}{end}" |
  grep Rejected || fail "pt-slow: no Event with commgate's numbers"
[ "$(suspended pt-slow)" = true ] || fail "pt-slow: runs although rejected"
admin get workloads -n ml
echo "(with Kueue: $(( $(date +%s) - start )) s in all)"
