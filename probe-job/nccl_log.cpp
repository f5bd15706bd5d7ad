#include "probe-job/nccl_log.h"

#include <sstream>
#include <vector>

namespace commgate::probe {
namespace {

// "NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:..." -> "eth0";
// "NET/IB : Using [0]mlx5_0:1/IB [1]..." -> "mlx5_0:1".
std::string first_device_after_using(const std::string& line) {
  auto at = line.find("Using [0]");
  if (at == std::string::npos) return "";
  at += 9;
  auto end = line.find_first_of(" </", at);
  std::string dev = line.substr(at, end == std::string::npos ? std::string::npos : end - at);
  if (line.find("NET/Socket") != std::string::npos) {
    // eth0:10.0.0.1 -> eth0
    if (auto colon = dev.find(':'); colon != std::string::npos) dev = dev.substr(0, colon);
  }
  return dev;
}

}  // namespace

NcclTransport parse_nccl_transport(const std::string& log) {
  NcclTransport out;
  bool net_ib = false, net_socket = false, p2p = false, shm = false, nvls = false;
  std::string ib_dev, socket_dev, using_network;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" via NET/IB") != std::string::npos) net_ib = true;
    if (line.find(" via NET/Socket") != std::string::npos) net_socket = true;
    if (line.find(" via P2P") != std::string::npos) p2p = true;
    if (line.find(" via SHM") != std::string::npos) shm = true;
    if (line.find("NVLS multicast support is available") != std::string::npos ||
        line.find(" via NVLS") != std::string::npos) {
      nvls = true;
    }
    if (line.find("Using network IB") != std::string::npos) using_network = "ib";
    if (line.find("Using network Socket") != std::string::npos) using_network = "socket";
    if (line.find("NET/IB : Using") != std::string::npos && ib_dev.empty()) {
      ib_dev = first_device_after_using(line);
    }
    if (line.find("NET/Socket : Using") != std::string::npos && socket_dev.empty()) {
      socket_dev = first_device_after_using(line);
    }
  }
  std::vector<std::string> kinds;
  // Connections say what each channel really used; "Using network" only what the
  // inter-node network would be.
  if (net_ib) kinds.push_back("ib");
  if (net_socket) kinds.push_back("socket");
  if (!net_ib && !net_socket && !using_network.empty() && !p2p && !shm)
    kinds.push_back(using_network);
  if (p2p) kinds.push_back("p2p/nvlink");
  if (shm) kinds.push_back("shm");
  if (nvls && kinds.empty()) kinds.push_back("nvls");
  if (!kinds.empty()) {
    out.transport.clear();
    for (size_t i = 0; i < kinds.size(); ++i) out.transport += (i ? "+" : "") + kinds[i];
  }
  const bool uses_ib = net_ib || (!net_socket && using_network == "ib");
  out.interface_name = uses_ib ? ib_dev : socket_dev;
  if (out.interface_name.empty()) out.interface_name = socket_dev.empty() ? ib_dev : socket_dev;
  return out;
}

}  // namespace commgate::probe
