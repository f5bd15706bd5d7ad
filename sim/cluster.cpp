#include "sim/cluster.h"

namespace commgate::sim {

using nlohmann::json;

NodeSpec node_spec(std::string name, int gpus) {
  NodeSpec spec;
  spec.name = std::move(name);
  spec.gpus = gpus;
  return spec;
}

json node_object(const NodeSpec& spec) {
  json labels = {{"kubernetes.io/hostname", spec.name},
                 {"kubernetes.io/os", "linux"},
                 {"kubernetes.io/arch", "amd64"}};
  for (const auto& [k, v] : spec.labels) labels[k] = v;
  json resources = {{"cpu", spec.cpu},
                    {"memory", spec.memory},
                    {"pods", std::to_string(spec.max_pods)},
                    {"ephemeral-storage", "100Gi"}};
  if (spec.gpus > 0) resources["nvidia.com/gpu"] = std::to_string(spec.gpus);
  const std::string now = format_rfc3339(Clock::now());
  json node = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", spec.name}, {"labels", labels}}},
      {"spec", json::object()},
      {"status",
       {{"capacity", resources},
        {"allocatable", resources},
        {"conditions",
         {{{"type", "Ready"},
           {"status", "True"},
           {"reason", "KubeletReady"},
           {"message", "kubelet is posting ready status"},
           {"lastHeartbeatTime", now},
           {"lastTransitionTime", now}}}},
        {"addresses",
         {{{"type", "InternalIP"}, {"address", spec.address.empty() ? "127.0.0.1" : spec.address}},
          {{"type", "Hostname"}, {"address", spec.name}}}},
        {"nodeInfo",
         {{"kubeletVersion", "v1.32.0-commgate-sim"},
          {"containerRuntimeVersion", "commgate-sim://processes"},
          {"operatingSystem", "linux"},
          {"architecture", "amd64"}}}}}};
  if (!spec.taints.empty()) node["spec"]["taints"] = spec.taints;
  if (!spec.pod_cidr.empty()) {
    node["spec"]["podCIDR"] = spec.pod_cidr;
    node["spec"]["podCIDRs"] = json::array({spec.pod_cidr});
  }
  if (!spec.netns.empty()) node["metadata"]["annotations"] = {{kNetnsAnnotation, spec.netns}};
  return node;
}

void point_pods_at(KubeletOptions& options, const ApiServer& server,
                   const std::vector<TokenUser>& users) {
  options.api_host = "127.0.0.1";
  options.api_port = std::to_string(server.port());
  options.api_ca_pem = server.ca_pem();
  const std::string prefix = "system:serviceaccount:";
  for (const auto& u : users) {
    const std::string& name = u.user.username;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const auto colon = rest.find(':');
    if (colon == std::string::npos) continue;
    options.service_account_tokens[rest.substr(0, colon) + "/" + rest.substr(colon + 1)] = u.token;
  }
}

SimCluster::SimCluster(ObjectStore& store, KubeletOptions kubelet)
    : store_(store),
      scheduler_(store),
      kubelet_(store, std::move(kubelet)),
      jobs_(store),
      deployments_(store) {}

SimCluster::~SimCluster() {
  stop();
}

void SimCluster::start() {
  if (started_) return;
  started_ = true;
  scheduler_.start();
  kubelet_.start();
  jobs_.start();
  deployments_.start();
}

void SimCluster::start_kueue() {
  if (kueue_) return;
  kueue_ = std::make_unique<KueueController>(store_);
  kueue_->start();
}

void SimCluster::stop() {
  if (kueue_) {
    kueue_->stop();
    kueue_.reset();
  }
  if (!started_) return;
  started_ = false;
  deployments_.stop();
  jobs_.stop();
  scheduler_.stop();
  kubelet_.stop();
}

void SimCluster::add_node(const NodeSpec& spec) {
  kubelet_.serve_node(spec.name);
  store_.create(*store_.find_resource("", "v1", "nodes"), "", node_object(spec));
}

void SimCluster::stop_node(const std::string& name) {
  const ResourceInfo nodes = *store_.find_resource("", "v1", "nodes");
  const std::string now = format_rfc3339(Clock::now());
  store_.mutate(nodes, "", name, WritePart::kMain, [&](const json& current) {
    json next = current;
    json taints = next["spec"].value("taints", json::array());
    for (const char* effect : {"NoSchedule", "NoExecute"})
      taints.push_back(
          {{"key", "node.kubernetes.io/unreachable"}, {"effect", effect}, {"timeAdded", now}});
    next["spec"]["taints"] = taints;
    return next;
  });
  store_.mutate(nodes, "", name, WritePart::kStatus, [&](const json& current) {
    json next = current;
    for (auto& c : next["status"]["conditions"])
      if (c.value("type", "") == "Ready")
        c = {{"type", "Ready"},
             {"status", "Unknown"},
             {"reason", "NodeStatusUnknown"},
             {"message", "Kubelet stopped posting node status."},
             {"lastHeartbeatTime", c.value("lastHeartbeatTime", now)},
             {"lastTransitionTime", now}};
    return next;
  });
  kubelet_.lose_node(name);
}

}  // namespace commgate::sim
