// Where the services that webhook configurations name are listening. A cluster resolves
// `<name>.<namespace>.svc` through DNS and the Service's endpoints; the sim has no DNS, so
// a Service is found in the store and its selector chooses a Ready pod whose podIP and
// targetPort (a number, or a container port's name) are dialled, as kube-proxy would. A
// manual registration (ApiServer::register_service, --service NAME.NAMESPACE=HOST:PORT)
// wins over that, for webhooks the test runs itself. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace commgate::sim {

class ObjectStore;

struct ServiceAddress {
  std::string host;  // an IP address: "127.0.0.1"
  uint16_t port = 0;
};

// Of `pods` (the Service's namespace), the address that `service`'s `port` leads to: the
// first Ready, not deleting pod (by name) matching spec.selector, at its podIP and the
// port's targetPort (absent: the port itself; a name: that container port of the pod).
// nullopt when the Service has no selector or no such port, or no pod is ready.
std::optional<ServiceAddress> select_endpoint(const nlohmann::json& service,
                                              const std::vector<nlohmann::json>& pods,
                                              uint16_t port);

class ServiceDirectory {
 public:
  // `store`: where Services and pods are looked up when nothing is registered (nullptr:
  // registrations only).
  explicit ServiceDirectory(const ObjectStore* store = nullptr) : store_(store) {}

  // `host_port` is "HOST:PORT". Throws std::invalid_argument when it is not.
  void add(const std::string& name, const std::string& ns, const std::string& host_port);
  // The registered address, else the Service's endpoint for `port` (443, the webhook
  // clientConfig's default, when the caller does not say).
  std::optional<ServiceAddress> find(const std::string& name, const std::string& ns,
                                     uint16_t port = 443) const;

 private:
  const ObjectStore* store_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, ServiceAddress> services_;  // (ns, name)
};

}  // namespace commgate::sim
