#include "sim/service_directory.h"

#include <stdexcept>

namespace commgate::sim {

void ServiceDirectory::add(const std::string& name, const std::string& ns,
                           const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  if (name.empty() || ns.empty() || colon == std::string::npos || colon == 0)
    throw std::invalid_argument("a service address is HOST:PORT, got \"" + host_port + "\"");
  const std::string port_text = host_port.substr(colon + 1);
  size_t used = 0;
  unsigned long port = 0;
  try {
    port = std::stoul(port_text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != port_text.size() || port == 0 || port > 65535)
    throw std::invalid_argument("the port of \"" + host_port + "\" must be 1..65535");
  std::lock_guard<std::mutex> lock(mu_);
  services_[{ns, name}] = {host_port.substr(0, colon), static_cast<uint16_t>(port)};
}

std::optional<ServiceAddress> ServiceDirectory::find(const std::string& name,
                                                     const std::string& ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = services_.find({ns, name});
  if (it == services_.end()) return std::nullopt;
  return it->second;
}

}  // namespace commgate::sim
