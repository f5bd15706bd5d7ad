#include "core/pool_nodes.h"

#include <algorithm>
#include <set>

#include "core/json_access.h"
#include "core/object_reader.h"
#include "core/pod_requests.h"
#include "core/quantity.h"
#include "core/workload_shape.h"

namespace commgate {

using Json = nlohmann::json;

namespace {

bool keeps_pods_off(const std::string& effect) {
  return effect == "NoSchedule" || effect == "NoExecute";
}

bool selects(const std::map<std::string, std::string>& selector,
             const std::map<std::string, std::string>& labels) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

std::string plural(int n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

PoolNode pool_node_of(const Json& node) {
  PoolNode out;
  const Json& meta = json_at(node, {"metadata"});
  out.name = json_string(meta, {"name"});
  if (const Json* labels = json_member(meta, "labels"); labels && labels->is_object())
    for (const auto& [k, v] : labels->items())
      if (v.is_string()) out.labels[k] = v.get<std::string>();
  const Json& spec = json_at(node, {"spec"});
  if (const Json* u = json_member(spec, "unschedulable"); u && u->is_boolean())
    out.cordoned = u->get<bool>();
  if (const Json* taints = json_member(spec, "taints"); taints && taints->is_array())
    for (const Json& t : *taints) {
      NodeTaint taint{json_string(t, {"key"}), json_string(t, {"value"}),
                      json_string(t, {"effect"})};
      if (keeps_pods_off(taint.effect)) out.taints.push_back(std::move(taint));
    }
  const Json& status = json_at(node, {"status"});
  if (const Json* conditions = json_member(status, "conditions");
      conditions && conditions->is_array())
    for (const Json& c : *conditions)
      if (json_string(c, {"type"}) == "Ready") out.ready = json_string(c, {"status"}) == "True";
  if (const Json* alloc = json_member(status, "allocatable"); alloc && alloc->is_object())
    for (const auto& [name, value] : alloc->items())
      if (is_accelerator_resource(name)) out.accelerators[name] = resource_quantity(value);
  return out;
}

void keep_pool_node_fields(Json& node) {
  if (!node.is_object()) return;
  Json kept = Json::object();
  if (const Json* meta = json_member(node, "metadata"); meta && meta->is_object()) {
    Json& m = kept["metadata"] = Json::object();
    for (const char* key : {"name", "resourceVersion", "labels"})
      if (const Json* v = json_member(*meta, key)) m[key] = *v;
  }
  if (const Json* spec = json_member(node, "spec"); spec && spec->is_object()) {
    Json& s = kept["spec"] = Json::object();
    for (const char* key : {"unschedulable", "taints"})
      if (const Json* v = json_member(*spec, key)) s[key] = *v;
  }
  if (const Json* status = json_member(node, "status"); status && status->is_object()) {
    Json& s = kept["status"] = Json::object();
    if (const Json* alloc = json_member(*status, "allocatable"); alloc && alloc->is_object()) {
      Json& a = s["allocatable"] = Json::object();
      for (const auto& [name, value] : alloc->items())
        if (is_accelerator_resource(name)) a[name] = value;
    }
    if (const Json* conditions = json_member(*status, "conditions");
        conditions && conditions->is_array())
      for (const Json& c : *conditions)
        if (json_string(c, {"type"}) == "Ready")
          s["conditions"] =
              Json::array({{{"type", "Ready"}, {"status", json_string(c, {"status"})}}});
  }
  node = std::move(kept);
}

bool tolerates(const Json& tolerations, const NodeTaint& taint) {
  if (!tolerations.is_array()) return false;
  for (const Json& t : tolerations) {
    const std::string key = json_string(t, {"key"}), effect = json_string(t, {"effect"});
    std::string op = json_string(t, {"operator"});
    if (op.empty()) op = "Equal";
    if (!effect.empty() && effect != taint.effect) continue;
    if (key.empty()) {
      if (op == "Exists") return true;  // an empty key with Exists tolerates everything
      continue;
    }
    if (key != taint.key) continue;
    if (op == "Exists") return true;
    if (op == "Equal" && json_string(t, {"value"}) == taint.value) return true;
  }
  return false;
}

PoolCount count_pool(const std::vector<PoolNode>& nodes, const PoolDemand& demand) {
  PoolCount c;
  // Sorted once: a Workload may name thousands of hosts in a pool of thousands of nodes.
  std::vector<std::string> hosts = demand.hostnames;
  std::sort(hosts.begin(), hosts.end());
  for (const PoolNode& n : nodes) {
    if (!selects(demand.node_selector, n.labels)) continue;
    if (!hosts.empty()) {
      const auto host = n.labels.find(kHostnameLabel);
      if (host == n.labels.end() || !std::binary_search(hosts.begin(), hosts.end(), host->second))
        continue;
    }
    ++c.selected;
    if (n.cordoned) {
      ++c.cordoned;
      continue;
    }
    if (!n.ready) {
      ++c.not_ready;
      continue;
    }
    const NodeTaint* untolerated = nullptr;
    for (const NodeTaint& t : n.taints)
      if (!untolerated && !tolerates(demand.tolerations, t)) untolerated = &t;
    if (untolerated) {
      if (c.untolerated_taint.empty())
        c.untolerated_taint = untolerated->key +
                              (untolerated->value.empty() ? "" : "=" + untolerated->value) + ":" +
                              untolerated->effect;
      ++c.tainted;
      continue;
    }
    bool fits = true;
    for (const auto& [resource, want] : demand.accelerators_per_pod) {
      auto have = n.accelerators.find(resource);
      // A relative epsilon: quantities are doubles ("1" and "1000m").
      if (have == n.accelerators.end() || have->second * (1 + 1e-9) < want) fits = false;
    }
    if (!fits) {
      ++c.too_small;
      continue;
    }
    ++c.usable;
  }
  return c;
}

bool pool_has_gpus(const std::vector<PoolNode>& nodes,
                   const std::map<std::string, std::string>& node_selector) {
  for (const PoolNode& n : nodes) {
    if (!selects(node_selector, n.labels)) continue;
    auto gpus = n.accelerators.find(kNvidiaGpu);
    if (gpus != n.accelerators.end() && gpus->second > 0) return true;
  }
  return false;
}

std::string describe_pool_count(const PoolCount& c, const PoolDemand& demand) {
  const std::string selection =
      demand.hostnames.empty() ? "the nodeSelector" : "the nodeSelector and the hostnames";
  if (c.selected == 0) return "no node (none matches " + selection + ")";
  std::string out = c.usable == 0 ? std::string("no usable node")
                                  : plural(c.usable, "usable node", "usable nodes");
  if (c.usable == c.selected) return out + " (all that match " + selection + ")";
  out += " (" + plural(c.selected, "matches", "match") + " " + selection + ":";
  std::string sep = " ";
  auto part = [&](int n, const std::string& what) {
    if (n == 0) return;
    out += sep + std::to_string(n) + " " + what;
    sep = ", ";
  };
  part(c.cordoned, "cordoned");
  part(c.not_ready, "not Ready");
  part(c.tainted, std::string(c.tainted == 1 ? "has a taint the pods do not tolerate"
                                             : "have a taint the pods do not tolerate") +
                      (c.untolerated_taint.empty() ? "" : " (" + c.untolerated_taint + ")"));
  std::string wants;
  for (const auto& [resource, amount] : demand.accelerators_per_pod)
    wants += (wants.empty() ? "" : " or ") + format_count(amount) + " " + resource;
  part(c.too_small, (c.too_small == 1 ? "has fewer than " : "have fewer than ") + wants);
  return out + ")";
}

std::string selector_miss(const std::vector<PoolNode>& nodes,
                          const std::map<std::string, std::string>& node_selector) {
  for (const auto& [key, value] : node_selector) {
    std::set<std::string> keys, values;
    for (const auto& n : nodes) {
      auto it = n.labels.find(key);
      if (it == n.labels.end()) {
        for (const auto& [k, v] : n.labels) keys.insert(k);
        continue;
      }
      values.insert(it->second);
    }
    if (values.count(value)) continue;
    if (values.empty()) return "no node has the label " + key + did_you_mean(key, keys);
    return "no node has " + key + "=" + value + did_you_mean(value, values);
  }
  return node_selector.size() > 1 ? "no node has all of them" : "";
}

}  // namespace commgate
