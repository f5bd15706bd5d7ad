#include "sim/service_directory.h"

#include <algorithm>
#include <stdexcept>
#include <system_error>

#include "sim/api_status.h"
#include "sim/garbage_collection.h"
#include "sim/json_fields.h"
#include "sim/kubelet.h"
#include "sim/object_store.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

bool ready(const json& pod) {
  const json& conds = at(at(pod, "status"), "conditions");
  if (conds.is_array())
    for (const auto& c : conds)
      if (str(at(c, "type")) == "Ready") return str(at(c, "status")) == "True";
  return false;
}

// The pod's port for a targetPort: a number as it is, a name from its containers' ports.
std::optional<uint16_t> target_port(const json& pod, const json& target) {
  if (target.is_number_integer()) return static_cast<uint16_t>(target.get<int>());
  const std::string name = str(target);
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
    return static_cast<uint16_t>(std::stoi(name));
  const json& containers = at(at(pod, "spec"), "containers");
  if (containers.is_array())
    for (const auto& c : containers)
      if (at(c, "ports").is_array())
        for (const auto& p : c["ports"])
          if (str(at(p, "name")) == name && at(p, "containerPort").is_number_integer())
            return static_cast<uint16_t>(p["containerPort"].get<int>());
  return std::nullopt;
}

}  // namespace

std::vector<ServiceAddress> select_endpoints(const json& service, const std::vector<json>& pods,
                                             uint16_t port) {
  const json& spec = at(service, "spec");
  const json& selector = at(spec, "selector");
  if (!selector.is_object() || selector.empty()) return {};
  const json* entry = nullptr;
  if (at(spec, "ports").is_array())
    for (const auto& p : spec["ports"])
      if (at(p, "port").is_number_integer() && p["port"].get<int>() == port) entry = &p;
  if (entry == nullptr) return {};
  const json target = entry->contains("targetPort") ? (*entry)["targetPort"] : json(port);
  std::vector<const json*> candidates;
  for (const auto& pod : pods) {
    if (is_deleting(pod) || !ready(pod) || str(at(at(pod, "status"), "podIP")).empty()) continue;
    const json& labels = at(at(pod, "metadata"), "labels");
    bool match = labels.is_object();
    for (const auto& [k, v] : selector.items())
      match = match && labels.contains(k) && labels[k] == v;
    if (match) candidates.push_back(&pod);
  }
  std::sort(candidates.begin(), candidates.end(), [](const json* a, const json* b) {
    return str((*a)["metadata"]["name"]) < str((*b)["metadata"]["name"]);
  });
  std::vector<ServiceAddress> out;
  for (const json* pod : candidates)
    if (auto p = target_port(*pod, target))
      out.push_back({str((*pod)["status"]["podIP"]), *p, str((*pod)["metadata"]["name"]),
                     str(at(at(*pod, "spec"), "nodeName"))});
  return out;
}

std::optional<ServiceAddress> select_endpoint(const json& service, const std::vector<json>& pods,
                                              uint16_t port) {
  auto all = select_endpoints(service, pods, port);
  if (all.empty()) return std::nullopt;
  return all.front();
}

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

std::optional<ServiceAddress> ServiceDirectory::find(const std::string& name, const std::string& ns,
                                                     uint16_t port) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = services_.find({ns, name});
    if (it != services_.end()) return it->second;
  }
  if (store_ == nullptr) return std::nullopt;
  try {
    const auto services = store_->find_resource("", "v1", "services");
    const auto pods = store_->find_resource("", "v1", "pods");
    if (!services || !pods) return std::nullopt;
    const json service = store_->get(*services, ns, name);
    const auto endpoints = select_endpoints(service, store_->list(*pods, ns, {}).items, port);
    if (endpoints.empty()) return std::nullopt;
    ServiceAddress chosen;
    {
      std::lock_guard<std::mutex> lock(mu_);
      chosen = endpoints[next_++ % endpoints.size()];
    }
    std::string netns;
    if (const auto nodes = store_->find_resource("", "v1", "nodes"); nodes && !chosen.node.empty())
      netns = str(at(at(at(store_->get(*nodes, "", chosen.node), "metadata"), "annotations"),
                     kNetnsAnnotation));
    return netns.empty() ? chosen : relayed(netns, chosen);
  } catch (const ApiError&) {
    return std::nullopt;  // no such Service (or the pod's node is gone)
  } catch (const std::system_error&) {
    return std::nullopt;  // the node's namespace is gone: no route to the pod
  }
}

ServiceAddress ServiceDirectory::relayed(const std::string& netns, ServiceAddress endpoint) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto& relay = relays_[{netns, endpoint.host, endpoint.port}];
  if (!relay)
    relay = std::make_unique<NetnsRelay>(RelayEnd{"", "127.0.0.1", 0},
                                         RelayEnd{netns, endpoint.host, endpoint.port});
  endpoint.host = "127.0.0.1";
  endpoint.port = relay->port();
  return endpoint;
}

}  // namespace commgate::sim
