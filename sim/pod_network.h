// A pod's own network on an emulated node, as a CNI bridge plugin gives it (issue #20,
// defect 4: pods on one node shared the node's namespace, so two trainings there both
// bound port 29500 and one failed). scripts/netsim.sh gives node i a bridge `cni0` at
// 198.19.i.1/24 in its namespace, IP forwarding, and routes to the other nodes' pod
// CIDRs over the node's shaped eth0; the kubelet then gives each pod that is not on the
// host network:
//   - a namespace "<node netns>-p<index>" (netsim.sh down/reap remove these too),
//   - a veth pair: `vp<index>` on the node's cni0, `eth0` in the pod's namespace with
//     host <index> of the node's podCIDR, lo up, a default route via the bridge (.1),
//   - /etc/netns/<pod netns>/hosts resolving this machine's hostname to the pod's IP
//     (Gloo picks its interface from the hostname, as in a pod).
// Traffic between nodes' pods leaves through the node's eth0, so it is shaped as the
// node's link is; pods of one node talk over the bridge, unshaped, as on one host.
#pragma once

#include <optional>
#include <string>

namespace commgate::sim {

struct PodAddress {
  std::string ip, gateway;  // "198.19.3.5", "198.19.3.1"
};

// Host `index` of an IPv4 /24 podCIDR ("198.19.3.0/24", 5 -> 198.19.3.5 via 198.19.3.1);
// nullopt when the CIDR is not an IPv4 /24 network or the index is outside 2..254.
std::optional<PodAddress> pod_address(const std::string& pod_cidr, int index);

// "<node_netns>-p<index>".
std::string pod_netns_name(const std::string& node_netns, int index);

// Makes the pod's namespace, veth, address, route and hosts file (root: runs `ip`).
// Throws std::runtime_error naming the step that failed, after removing what it made.
void attach_pod_network(const std::string& node_netns, int index, const PodAddress& address);

// Removes the pod's veth (at once: the node's end too), its namespace and
// /etc/netns/<pod netns>. Quiet when they are gone already.
void detach_pod_network(const std::string& node_netns, int index);

}  // namespace commgate::sim
