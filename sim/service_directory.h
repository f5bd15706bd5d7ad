// Where the services that webhook configurations name are listening. A cluster resolves
// `<name>.<namespace>.svc` through DNS and a Service's endpoints; the sim has neither, so
// a test (ApiServer::register_service) or the binary (--service NAME.NAMESPACE=HOST:PORT)
// says where each one is. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

namespace commgate::sim {

struct ServiceAddress {
  std::string host;  // an IP address: "127.0.0.1"
  uint16_t port = 0;
};

class ServiceDirectory {
 public:
  // `host_port` is "HOST:PORT". Throws std::invalid_argument when it is not.
  void add(const std::string& name, const std::string& ns, const std::string& host_port);
  std::optional<ServiceAddress> find(const std::string& name, const std::string& ns) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, ServiceAddress> services_;  // (ns, name)
};

}  // namespace commgate::sim
