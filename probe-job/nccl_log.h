// What NCCL used, read from its own INFO log (NCCL has no API for it): the transport of
// the connections between ranks and the network interface. Pure text parsing, so it is
// tested here without a GPU.
#pragma once

#include <string>

namespace commgate::probe {

struct NcclTransport {
  std::string transport =
      "unknown";               // "ib", "socket", "p2p/nvlink", "shm", "nvls", mixes "ib+p2p/nvlink"
  std::string interface_name;  // e.g. "eth0" (socket) or "mlx5_0:1" (IB)
};

// `log` is the text NCCL wrote with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET).
NcclTransport parse_nccl_transport(const std::string& log);

}  // namespace commgate::probe
