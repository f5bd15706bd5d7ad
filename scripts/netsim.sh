#!/usr/bin/env bash
# Emulated nodes on one machine: N network namespaces joined by a bridge that lives in a
# namespace of its own (the host's interfaces are never touched), each node's link shaped
# with tc tbf to RATE in both directions (node -> bridge on the node's eth0, bridge ->
# node on the bridge's port), optionally with a netem DELAY on the node's egress (one-way
# node-to-node latency DELAY, round trip 2*DELAY). Node i (0-based) is namespace
# <prefix>-n<i> with address 198.18.0.<i+1>/24 on eth0, and a pod network: a bridge cni0
# at 198.19.<i>.1/24 (its podCIDR 198.19.<i>.0/24), IP forwarding, and a route to each
# other node's podCIDR via that node's address. commgate-sim's kubelet puts each pod in a
# namespace <prefix>-n<i>-p<k> on cni0 (sim/pod_network.h); traffic between nodes' pods
# leaves through the node's shaped eth0.
#
#   netsim.sh up N RATE [DELAY]    e.g. up 2 1gbit, up 4 200mbit 1ms
#   netsim.sh exec I CMD...        run CMD in node I's namespace (NETSIM_CPU=C: and in
#                                  node I's CPU cgroup, capped at C CPUs as a node of C
#                                  cores would be; every process of node I shares the cap,
#                                  granted per NETSIM_CPU_PERIOD_US microseconds,
#                                  default 10000)
#   netsim.sh addr I               print node I's address
#   netsim.sh podcidr I            print node I's podCIDR
#   netsim.sh down                 remove everything this prefix created
#   netsim.sh reap                 remove the leftovers of owners that died
#
# NETSIM_PREFIX (default "cgsim", at most 8 characters) names everything, so parallel
# runs with different prefixes never collide. `up` records its owner (NETSIM_OWNER_PID,
# default the calling process); any later `up` or `reap` removes the namespaces of owners
# that died without calling `down` (a crashed or killed test). Needs root (CAP_NET_ADMIN);
# exits 77 (the ctest skip code) with a message otherwise. Inside node i, this machine's
# hostname resolves to the node's address (/etc/netns/<ns>/hosts), as a pod's own
# hostname does in a cluster.
set -euo pipefail

PREFIX="${NETSIM_PREFIX:-cgsim}"
STATE_DIR="${NETSIM_STATE_DIR:-/run/commgate-netsim}"

die() { echo "netsim: $*" >&2; exit 1; }

[[ "$PREFIX" =~ ^[a-z0-9]{1,8}$ ]] || die "NETSIM_PREFIX must be 1-8 lowercase letters or digits, got '$PREFIX'"

need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "netsim: skipped: network namespaces, veth and tc need root (CAP_NET_ADMIN); run as root" >&2
    exit 77
  fi
  command -v ip >/dev/null && command -v tc >/dev/null || die "needs ip and tc (Debian: iproute2)"
}

node_ns() { echo "${PREFIX}-n$1"; }
bridge_ns() { echo "${PREFIX}-br"; }
node_addr() { echo "198.18.0.$(($1 + 1))"; }
node_pod_cidr() { echo "198.19.$1.0/24"; }

# Bits per second of a tc rate ("1gbit", "200mbit", "500kbit", "1000000bit", "5gbit").
rate_bits() {
  local r="${1,,}"
  case "$r" in
    *gbit) echo $(( ${r%gbit} * 1000000000 )) ;;
    *mbit) echo $(( ${r%mbit} * 1000000 )) ;;
    *kbit) echo $(( ${r%kbit} * 1000 )) ;;
    *bit) echo $(( ${r%bit} )) ;;
    *) return 1 ;;
  esac
}

# tbf on DEV in namespace NS: burst of 4 ms of traffic (rate/250), at least 64 KiB so a
# GSO super-packet always fits; 50 ms of queue.
shape() {
  local ns="$1" dev="$2" rate="$3" delay="${4:-}" bits burst
  bits=$(rate_bits "$rate")
  burst=$(( bits / 8 / 250 ))
  [ "$burst" -lt 65536 ] && burst=65536
  ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: tbf rate "$rate" burst "$burst" latency 50ms
  if [ -n "$delay" ]; then
    ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: netem delay "$delay" limit 100000
  fi
}

down_prefix() {
  local p="$1" ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${p}-(n[0-9]+(-p[0-9]+)?|br)$" || true); do
    ip netns pids "$ns" 2>/dev/null | while read -r pid; do
      # Only processes still inside our namespaces, by pid.
      kill -KILL "$pid" 2>/dev/null || true
    done
    ip netns delete "$ns" 2>/dev/null || true
  done
  for ns in /etc/netns/"${p}"-n*; do
    [[ "$ns" =~ /${p}-n[0-9]+(-p[0-9]+)?$ ]] && rm -rf "$ns"
  done
  rm -f "$STATE_DIR/$p.owner"
  for ns in /sys/fs/cgroup/cpu/commgate-"${p}"-n* /sys/fs/cgroup/commgate-"${p}"-n*; do
    [ -d "$ns" ] && rmdir "$ns" 2>/dev/null || true
  done
}

# Node I's CPU cgroup (v1 cpu controller, else v2), capped at NETSIM_CPU CPUs per
# NETSIM_CPU_PERIOD_US (default 10 ms: a smooth cap for steps of tens of ms); prints its
# cgroup.procs file. The kernel grants a quota of at least 1 ms a period.
node_cgroup() {
  local name="commgate-${PREFIX}-n$1" dir quota period="${NETSIM_CPU_PERIOD_US:-10000}"
  [[ "$NETSIM_CPU" =~ ^[0-9]*\.?[0-9]+$ ]] || die "NETSIM_CPU must be a number of CPUs, got '$NETSIM_CPU'"
  # Decimal, written without leading zeros: cgroup v1 reads "010000" as octal.
  [[ "$period" =~ ^[0-9]{1,7}$ ]] && period=$((10#$period)) && [ "$period" -ge 1000 ] &&
    [ "$period" -le 1000000 ] ||
    die "NETSIM_CPU_PERIOD_US must be microseconds from 1000 to 1000000, got '${NETSIM_CPU_PERIOD_US-}'"
  quota=$(awk -v c="$NETSIM_CPU" -v p="$period" 'BEGIN { printf "%d", c * p }')
  [ "$quota" -ge 1000 ] ||
    die "NETSIM_CPU $NETSIM_CPU of a $period us period is under the kernel's 1000 us least quota"
  if [ -f /sys/fs/cgroup/cpu/cgroup.procs ]; then
    dir="/sys/fs/cgroup/cpu/$name"
    mkdir -p "$dir"
    echo "$period" >"$dir/cpu.cfs_period_us"
    echo "$quota" >"$dir/cpu.cfs_quota_us"
  else
    dir="/sys/fs/cgroup/$name"
    mkdir -p "$dir"
    echo "$quota $period" >"$dir/cpu.max"
  fi
  echo "$dir/cgroup.procs"
}

# /etc/netns/NS/hosts, which `ip netns exec` mounts over /etc/hosts: this machine's
# hostname resolves to the node's address inside the node, as a pod's hostname resolves
# to its IP in a cluster. Gloo (torch.distributed) picks its interface from the hostname;
# the host's address is not inside the namespace, so it would fall back to loopback.
write_hosts() {
  local ns="$1" addr="$2"
  mkdir -p "/etc/netns/$ns"
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n' \
    "$addr" "$(hostname)" >"/etc/netns/$ns/hosts"
}

reap() {
  [ -d "$STATE_DIR" ] || return 0
  local f p owner
  for f in "$STATE_DIR"/*.owner; do
    [ -e "$f" ] || continue
    p=$(basename "$f" .owner)
    owner=$(cat "$f" 2>/dev/null || echo 0)
    if [ "$p" != "$PREFIX" ] && ! kill -0 "$owner" 2>/dev/null; then
      echo "netsim: removing '$p' left behind by process $owner" >&2
      down_prefix "$p"
    fi
  done
}

up() {
  local n="$1" rate="$2" delay="${3:-}" i br nsname
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "N must be 1..200, got '$n'"
  rate_bits "$rate" >/dev/null || die "RATE must look like 1gbit, 200mbit, 500kbit, got '$rate'"
  mkdir -p "$STATE_DIR"
  reap
  down_prefix "$PREFIX"
  echo "${NETSIM_OWNER_PID:-$PPID}" > "$STATE_DIR/$PREFIX.owner"
  trap 'echo "netsim: up failed, cleaning up" >&2; down_prefix "$PREFIX"' ERR

  br=$(bridge_ns)
  ip netns add "$br"
  ip -n "$br" link set lo up
  ip -n "$br" link add br0 type bridge
  ip -n "$br" link set br0 up
  for ((i = 0; i < n; i++)); do
    nsname=$(node_ns "$i")
    ip netns add "$nsname"
    ip -n "$nsname" link set lo up
    # Created inside the bridge's namespace, the peer moved straight into the node's:
    # no interface ever appears in the host's namespace.
    ip -n "$br" link add "p$i" type veth peer name eth0 netns "$nsname"
    ip -n "$br" link set "p$i" master br0
    ip -n "$br" link set "p$i" up
    ip -n "$nsname" addr add "$(node_addr "$i")/24" dev eth0
    write_hosts "$nsname" "$(node_addr "$i")"
    ip -n "$nsname" link set eth0 up
    shape "$nsname" eth0 "$rate" "$delay"
    shape "$br" "p$i" "$rate"
    # The pod network: the pods' bridge, and forwarding between it and eth0.
    ip -n "$nsname" link add cni0 type bridge
    ip -n "$nsname" addr add "198.19.$i.1/24" dev cni0
    ip -n "$nsname" link set cni0 up
    ip netns exec "$nsname" sysctl -qw net.ipv4.ip_forward=1
  done
  # Each node reaches the other nodes' pods through their node (one `ip` per node).
  for ((i = 0; i < n; i++)); do
    for ((j = 0; j < n; j++)); do
      if [ "$i" -ne "$j" ]; then echo "route add $(node_pod_cidr "$j") via $(node_addr "$j")"; fi
    done | ip -n "$(node_ns "$i")" -batch -
  done
  trap - ERR
  echo "netsim: $n node(s) '${PREFIX}' at $rate${delay:+, delay $delay}: $(node_addr 0) .. $(node_addr $((n - 1)))" >&2
}

cmd="${1:-}"
[ -n "$cmd" ] || die "usage: netsim.sh up N RATE [DELAY] | exec I CMD... | addr I | podcidr I | down | reap"
shift
case "$cmd" in
  up) need_root; [ $# -ge 2 ] || die "usage: netsim.sh up N RATE [DELAY]"; up "$@" ;;
  down) need_root; down_prefix "$PREFIX" ;;
  reap) need_root; reap ;;
  exec)
    [ $# -ge 2 ] || die "usage: netsim.sh exec I CMD..."
    i="$1"; shift
    # The cgroup first: `ip netns exec` remounts /sys.
    if [ -n "${NETSIM_CPU:-}" ]; then echo $$ >"$(node_cgroup "$i")"; fi
    exec ip netns exec "$(node_ns "$i")" "$@" ;;
  addr) [ $# -eq 1 ] || die "usage: netsim.sh addr I"; node_addr "$1" ;;
  podcidr) [ $# -eq 1 ] || die "usage: netsim.sh podcidr I"; node_pod_cidr "$1" ;;
  *) die "unknown command '$cmd' (up, exec, addr, podcidr, down, reap)" ;;
esac
