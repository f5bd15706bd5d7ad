// Where the services that webhook configurations name are listening. A cluster resolves
// `<name>.<namespace>.svc` through DNS and the Service's endpoints; the sim has no DNS, so
// a Service is found in the store and its selector chooses the Ready pods whose podIP and
// targetPort (a number, or a container port's name) are dialled, as kube-proxy would:
// each find() takes the next of them in turn (kube-proxy spreads connections over the
// endpoints; round robin here, so every replica is called). A pod on a node in a network
// namespace (sim.commgate.io/netns, scripts/netsim.sh) is not reachable from the host: its
// address is a relay on 127.0.0.1 that dials the pod from inside the node's namespace
// (sim/netns_relay.h), made on first use and kept while the directory lives. A manual
// registration (ApiServer::register_service, --service NAME.NAMESPACE=HOST:PORT) wins over
// that, for webhooks the test runs itself. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/netns_relay.h"

namespace commgate::sim {

class ObjectStore;

struct ServiceAddress {
  std::string host;  // an IP address: "127.0.0.1"
  uint16_t port = 0;
  // The endpoint's pod and its spec.nodeName ("" for a registration). Initialised here so
  // that {host, port} stays a complete initializer (-Wmissing-field-initializers).
  std::string pod = {}, node = {};
};

// Of `pods` (the Service's namespace), the addresses that `service`'s `port` leads to: the
// Ready, not deleting pods (by name) matching spec.selector, at their podIP and the port's
// targetPort (absent: the port itself; a name: that container port of the pod). Empty
// when the Service has no selector or no such port, or no pod is ready.
std::vector<ServiceAddress> select_endpoints(const nlohmann::json& service,
                                             const std::vector<nlohmann::json>& pods,
                                             uint16_t port);
// The first of select_endpoints, or nullopt.
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
  // The registered address, else the next of the Service's endpoints for `port` (443, the
  // webhook clientConfig's default, when the caller does not say); for a pod on a node in
  // a network namespace, the relay's 127.0.0.1 address (host), with pod and node kept.
  std::optional<ServiceAddress> find(const std::string& name, const std::string& ns,
                                     uint16_t port = 443) const;

 private:
  // 127.0.0.1:<relay port> for `endpoint` dialled inside `netns`.
  ServiceAddress relayed(const std::string& netns, ServiceAddress endpoint) const;

  const ObjectStore* store_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, ServiceAddress> services_;  // (ns, name)
  mutable std::size_t next_ = 0;  // round robin over a Service's endpoints
  // (netns, pod IP, port) -> its relay
  mutable std::map<std::tuple<std::string, std::string, uint16_t>, std::unique_ptr<NetnsRelay>>
      relays_;
};

}  // namespace commgate::sim
