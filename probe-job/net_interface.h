// Which local address and interface reach a peer: Gloo binds its device there (as
// GLOO_SOCKET_IFNAME would), and the report names the interface the probe measured.
#pragma once

#include <optional>
#include <string>

#include "core/link_rate.h"

namespace commgate::probe {

struct LocalRoute {
  std::string address;         // the source address the kernel picks for the peer
  std::string interface_name;  // the interface holding that address ("lo" for loopback)
};

// Resolves `host` and asks the kernel for the source address of a route to it (a UDP
// connect, nothing is sent). Sets `error` naming the host when it cannot be resolved or
// has no route.
std::optional<LocalRoute> route_to(const std::string& host, std::string* error);

std::string local_hostname();

// The rated speed of `interface_name` on this node (core/link_rate.h), read under `sysfs`
// (/sys; tests give a tree of their own): an InfiniBand port named as NCCL names it
// ("mlx5_0:1") from class/infiniband/DEV/ports/PORT/rate; a network interface from
// class/net/IF/speed only when it is physical (class/net/IF/device exists: a veth, a
// bridge or lo has none, and a veth's nominal 10000 Mb/s says nothing about the host's
// NIC). Whether the node has InfiniBand: class/infiniband lists a device.
NodeLink read_node_link(const std::string& interface_name, const std::string& sysfs = "/sys");

}  // namespace commgate::probe
