// Which local address and interface reach a peer: Gloo binds its device there (as
// GLOO_SOCKET_IFNAME would), and the report names the interface the probe measured.
#pragma once

#include <optional>
#include <string>

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

}  // namespace commgate::probe
