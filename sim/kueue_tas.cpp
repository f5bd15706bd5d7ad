#include "sim/kueue_tas.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <set>

#include "core/pod_requests.h"
#include "core/quantity.h"
#include "sim/json_fields.h"
#include "sim/scheduler.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

// tas_assignment.go's limits.
constexpr std::size_t kTasMaxDomainsPerSlice = 100000;
constexpr std::size_t kTasMaxSlices = 1000;
// Rounding slack when dividing parsed quantities.
constexpr double kTasEpsilon = 1e-9;

struct TasCandidate {
  std::string host;
  int32_t capacity = 0;  // pods it can take (slice size 1: its slice count too)
  int32_t assigned = 0;
};

// sortedDomains: capacity descending (BestFit) or ascending (LeastFreeCapacity), then
// the pod count ascending (the same number here), then the hostname.
void tas_sort_candidates(std::vector<TasCandidate*>& c, bool least_free) {
  std::stable_sort(c.begin(), c.end(), [least_free](const TasCandidate* a, const TasCandidate* b) {
    if (a->capacity != b->capacity)
      return least_free ? a->capacity < b->capacity : a->capacity > b->capacity;
    return a->host < b->host;
  });
}

// findBestFitDomain: the first candidate with the smallest capacity >= needed, else the
// first.
TasCandidate* tas_best_fit(const std::vector<TasCandidate*>& c, std::size_t from, int32_t needed) {
  TasCandidate* best = c[from];
  int32_t best_capacity = INT32_MAX;
  bool found = false;
  for (std::size_t i = from; i < c.size(); ++i)
    if (c[i]->capacity >= needed && c[i]->capacity < best_capacity) {
      best = c[i];
      best_capacity = c[i]->capacity;
      found = true;
    }
  return found ? best : c[from];
}

std::string tas_not_fit(const std::string& topology, int32_t fit, int32_t total) {
  const std::string quoted = json(topology).dump();
  if (fit == 0)
    return "topology " + quoted + " doesn't allow to fit any of " + std::to_string(total) +
           " pod(s)";
  return "topology " + quoted + " allows to fit only " + std::to_string(fit) + " out of " +
         std::to_string(total) + " pod(s)";
}

// fillSingleCompactSliceValues.
json tas_compact_values(const std::vector<std::string>& values) {
  std::string prefix, suffix;
  std::size_t max_len = 0, min_len = 0;
  for (std::size_t k = 0; k < values.size(); ++k) {
    const std::string& s = values[k];
    if (k == 0) {
      prefix = suffix = s;
      max_len = min_len = s.size();
      continue;
    }
    const std::size_t n = s.size();
    min_len = std::min(min_len, n);
    max_len = std::max(max_len, n);
    if (n < prefix.size()) prefix.resize(n);
    if (n < suffix.size()) suffix = suffix.substr(suffix.size() - n);
    for (std::size_t i = 0; i < prefix.size(); ++i)
      if (s[i] != prefix[i]) {
        prefix.resize(i);
        break;
      }
    for (std::size_t i = 0; i < suffix.size(); ++i)
      if (s[s.size() - 1 - i] != suffix[suffix.size() - 1 - i]) {
        suffix = suffix.substr(suffix.size() - i);
        break;
      }
  }
  if (prefix.size() == max_len) return {{"universal", prefix}};
  if (prefix.size() + suffix.size() > min_len) prefix.resize(min_len - suffix.size());
  json individual = json::object();
  if (!prefix.empty()) individual["prefix"] = prefix;
  if (!suffix.empty()) individual["suffix"] = suffix;
  json roots = json::array();
  for (const auto& s : values)
    roots.push_back(s.substr(prefix.size(), s.size() - prefix.size() - suffix.size()));
  individual["roots"] = roots;
  return {{"individual", individual}};
}

// compactSliceEncoding for one level (the hostname).
json tas_compact_slice(const std::vector<KueueTasDomain>& domains, std::size_t begin,
                       std::size_t end) {
  std::vector<std::string> hosts;
  json counts = json::array();
  bool same = true;
  for (std::size_t i = begin; i < end; ++i) {
    hosts.push_back(domains[i].host);
    counts.push_back(domains[i].count);
    same = same && domains[i].count == domains[begin].count;
  }
  json slice = {{"domainCount", static_cast<int64_t>(end - begin)},
                {"valuesPerLevel", json::array({tas_compact_values(hosts)})}};
  slice["podCounts"] =
      same ? json{{"universal", domains[begin].count}} : json{{"individual", counts}};
  return slice;
}

json tas_assignment_with_slices(json slices) {
  return {{"levels", json::array({kKueueHostnameLevel})}, {"slices", std::move(slices)}};
}

std::size_t tas_chunks(std::size_t length) {
  return (length + kTasMaxDomainsPerSlice - 1) / kTasMaxDomainsPerSlice;
}

// reusableHostnamePrefixKeys: each hostname's longest prefix ending in '-' (one that is
// not the whole name) shared with another hostname, at the deepest '-' count whose runs
// fit kTasMaxSlices; empty when none does.
std::vector<std::string> tas_prefix_keys(const std::vector<KueueTasDomain>& domains) {
  std::vector<std::vector<std::size_t>> ends(domains.size());
  std::map<std::string, int> seen;
  std::size_t max_depth = 0;
  for (std::size_t i = 0; i < domains.size(); ++i) {
    const std::string& h = domains[i].host;
    for (std::size_t e = 0; e + 1 < h.size(); ++e) {
      if (h[e] != '-') continue;
      ends[i].push_back(e + 1);
      int& n = seen[h.substr(0, e + 1)];
      if (n < 2) ++n;
    }
    max_depth = std::max(max_depth, ends[i].size());
  }
  std::vector<std::string> keys(domains.size());
  for (std::size_t depth = max_depth; depth >= 1; --depth) {
    for (std::size_t i = 0; i < domains.size(); ++i) {
      keys[i].clear();
      for (std::size_t j = std::min(ends[i].size(), depth); j-- > 0;) {
        const std::string prefix = domains[i].host.substr(0, ends[i][j]);
        if (seen[prefix] < 2) continue;
        keys[i] = prefix;
        break;
      }
    }
    std::size_t slices = 0, start = 0;
    for (std::size_t i = 1; i < domains.size(); ++i) {
      if (keys[i] == keys[start]) continue;
      slices += tas_chunks(i - start);
      start = i;
    }
    slices += tas_chunks(domains.size() - start);
    if (slices <= kTasMaxSlices) return keys;
  }
  return {};
}

std::map<std::string, double> tas_single_pod_requests(const json& pod_set) {
  std::map<std::string, double> out;
  for (const auto& [r, amount] : commgate::pod_requests(at(at(pod_set, "template"), "spec")))
    if (amount > 0) out[r] = amount;
  return out;
}

// Whether the node is one of the flavor's for this pod set: Ready, schedulable, with the
// hostname label, the flavor's nodeLabels and the template's nodeSelector.
bool tas_node_selected(const json& node, const json& flavor, const json& pod_set) {
  if (at(at(node, "spec"), "unschedulable").is_boolean() &&
      node["spec"]["unschedulable"].get<bool>())
    return false;
  if (!condition_true(node, "Ready")) return false;
  const json& labels = at(at(node, "metadata"), "labels");
  if (!at(labels, kKueueHostnameLevel).is_string()) return false;
  for (const json* wanted : {&at(at(flavor, "spec"), "nodeLabels"),
                             &at(at(at(pod_set, "template"), "spec"), "nodeSelector")}) {
    if (!wanted->is_object()) continue;
    for (const auto& [k, v] : wanted->items())
      if (str(at(labels, k.c_str())) != str(v)) return false;
  }
  return true;
}

// The TAS flavor of a pod set's assignment: the one flavor it got that has a topologyName.
std::string tas_flavor_of(const json& pod_set_assignment, const json& flavors) {
  const json& assigned = at(pod_set_assignment, "flavors");
  std::set<std::string> tas;
  if (assigned.is_object())
    for (const auto& [resource, flavor] : assigned.items()) {
      (void)resource;
      if (at(at(at(flavors, str(flavor).c_str()), "spec"), "topologyName").is_string())
        tas.insert(str(flavor));
    }
  return tas.size() == 1 ? *tas.begin() : "";
}

const json* tas_pod_set_named(const json& workload, const std::string& name) {
  const json& pod_sets = at(at(workload, "spec"), "podSets");
  if (pod_sets.is_array())
    for (const auto& ps : pod_sets)
      if (str(at(ps, "name")) == name) return &ps;
  return nullptr;
}

// What each host of `flavor` has left for TAS pods: allocatable, less non-TAS pods and
// the TAS usage of the other workloads holding quota there (`usage`, added to as this
// workload's own pod sets are placed).
std::vector<KueueTasNode> tas_nodes_for(
    const KueueTasCluster& cluster, const json& flavor, const json& pod_set,
    const std::map<std::string, std::map<std::string, double>>& usage_by_host) {
  std::map<std::string, std::vector<json>> pods_by_node;
  for (const auto& pod : cluster.pods) {
    const std::string node = str(at(at(pod, "spec"), "nodeName"));
    if (node.empty() || is_terminal(pod)) continue;
    if (at(at(at(pod, "metadata"), "labels"), kKueueTasLabel).is_string()) continue;
    pods_by_node[node].push_back(pod);
  }
  std::vector<KueueTasNode> out;
  for (const auto& node : cluster.nodes) {
    if (!tas_node_selected(node, flavor, pod_set)) continue;
    KueueTasNode n;
    n.host = str(node["metadata"]["labels"][kKueueHostnameLevel]);
    const json& status = at(node, "status");
    const json& allocatable =
        at(status, "allocatable").is_object() ? status["allocatable"] : at(status, "capacity");
    if (allocatable.is_object())
      for (const auto& [r, q] : allocatable.items()) n.free[r] = commgate::resource_quantity(q);
    const auto pods = pods_by_node.find(str(at(at(node, "metadata"), "name")));
    if (pods != pods_by_node.end()) {
      const NodeUsage used = node_usage(pods->second);
      n.free["pods"] -= static_cast<double>(used.pods);
      for (const auto& [r, amount] : used.requested) n.free[r] -= amount;
    }
    const auto held = usage_by_host.find(n.host);
    if (held != usage_by_host.end())
      for (const auto& [r, amount] : held->second) n.free[r] -= amount;
    out.push_back(std::move(n));
  }
  return out;
}

void tas_add_usage(std::map<std::string, std::map<std::string, double>>& usage,
                   const std::vector<KueueTasDomain>& domains,
                   const std::map<std::string, double>& single_pod) {
  for (const auto& d : domains) {
    for (const auto& [r, amount] : single_pod) usage[d.host][r] += amount * d.count;
    usage[d.host]["pods"] += d.count;
  }
}

// The TAS usage of the workloads other than `self` holding quota in `flavor`.
std::map<std::string, std::map<std::string, double>> tas_held_usage(const KueueTasCluster& cluster,
                                                                    const std::string& flavor,
                                                                    const std::string& self_uid) {
  std::map<std::string, std::map<std::string, double>> usage;
  for (const auto& wl : cluster.workloads) {
    if (str(at(at(wl, "metadata"), "uid")) == self_uid) continue;
    if (!condition_true(wl, "QuotaReserved")) continue;
    const json& assignments = at(at(at(wl, "status"), "admission"), "podSetAssignments");
    if (!assignments.is_array()) continue;
    for (const auto& a : assignments) {
      if (!at(a, "topologyAssignment").is_object()) continue;
      if (tas_flavor_of(a, *cluster.flavors) != flavor) continue;
      const json* ps = tas_pod_set_named(wl, str(at(a, "name")));
      if (ps == nullptr) continue;
      tas_add_usage(usage, kueue_tas_decode(a["topologyAssignment"]), tas_single_pod_requests(*ps));
    }
  }
  return usage;
}

// The controllers of the ClusterQueue's checks that delay TAS, by check name.
bool tas_cluster_queue_has_check(const json& cluster_queue,
                                 const std::map<std::string, json>& checks,
                                 const std::string& controller, const std::string& flavor) {
  const json& named =
      at(at(at(cluster_queue, "spec"), "admissionChecksStrategy"), "admissionChecks");
  if (!named.is_array()) return false;
  for (const auto& c : named) {
    const auto it = checks.find(str(at(c, "name")));
    if (it == checks.end() || str(at(at(it->second, "spec"), "controllerName")) != controller)
      continue;
    const json& on = at(c, "onFlavors");
    if (flavor.empty() || !on.is_array() || on.empty()) return true;
    for (const auto& f : on)
      if (str(f) == flavor) return true;
  }
  return false;
}

// workload.IsExplicitlyRequestingTAS.
bool tas_explicit_request(const json& pod_set) {
  const json& r = at(pod_set, "topologyRequest");
  for (const char* k :
       {"unconstrained", "required", "preferred", "podSetSliceRequiredTopology", "podSetSliceSize"})
    if (!at(r, k).is_null()) return true;
  const json& layers = at(r, "podsetSliceRequiredTopologyConstraints");
  return layers.is_array() && !layers.empty();
}

}  // namespace

int32_t kueue_tas_pod_capacity(const KueueTasNode& node,
                               const std::map<std::string, double>& pod_requests) {
  std::map<std::string, double> wanted = pod_requests;
  wanted["pods"] = 1;
  double fit = static_cast<double>(INT32_MAX);
  for (const auto& [r, amount] : wanted) {
    if (amount <= 0) continue;
    const auto f = node.free.find(r);
    const double free = f == node.free.end() ? 0 : f->second;
    fit = std::min(fit, std::floor(free / amount + kTasEpsilon));
  }
  return static_cast<int32_t>(std::max(fit, 0.0));
}

std::optional<std::vector<KueueTasDomain>> kueue_tas_place(
    const std::vector<KueueTasNode>& nodes, const std::map<std::string, double>& pod_requests,
    int32_t count, KueueTasMode mode, const std::string& topology, std::string& why) {
  if (nodes.empty()) {
    why = std::string("no topology domains at level: ") + kKueueHostnameLevel;
    return std::nullopt;
  }
  std::vector<TasCandidate> all;
  for (const auto& n : nodes) all.push_back({n.host, kueue_tas_pod_capacity(n, pod_requests), 0});
  std::vector<TasCandidate*> sorted;
  for (auto& c : all) sorted.push_back(&c);
  const bool least_free = mode == KueueTasMode::kUnconstrained;
  tas_sort_candidates(sorted, least_free);

  // findLevelWithFitDomains at the one level.
  std::vector<TasCandidate*> fit;
  TasCandidate* top = sorted[0];
  if (!least_free && top->capacity >= count) top = tas_best_fit(sorted, 0, count);
  if (least_free)
    for (auto* c : sorted)
      if (c->capacity >= count) {
        fit = {c};
        break;
      }
  if (fit.empty() && top->capacity >= count) fit = {top};
  if (fit.empty()) {
    if (mode == KueueTasMode::kRequired) {
      why = tas_not_fit(topology, top->capacity, count);
      return std::nullopt;
    }
    int32_t remaining = count;
    for (std::size_t i = 0; remaining > 0 && i < sorted.size(); ++i) {
      TasCandidate* c = sorted[i];
      if (!least_free && c->capacity >= remaining) c = tas_best_fit(sorted, i, remaining);
      fit.push_back(c);
      remaining -= c->capacity;
    }
    if (remaining > 0) {
      why = tas_not_fit(topology, count - remaining, count);
      return std::nullopt;
    }
  }
  // updateCountsToMinimumGeneric over the chosen domains, in their order.
  int32_t remaining = count;
  std::vector<TasCandidate*> used;
  for (std::size_t i = 0; i < fit.size() && remaining > 0; ++i) {
    TasCandidate* c = fit[i];
    if (!least_free && c->capacity >= remaining) c = tas_best_fit(fit, i, remaining);
    c->assigned = std::min(c->capacity, remaining);
    remaining -= c->assigned;
    used.push_back(c);
  }
  std::vector<KueueTasDomain> out;
  for (const auto* c : used)
    if (c->assigned > 0) out.push_back({c->host, c->assigned});
  std::sort(out.begin(), out.end(),
            [](const KueueTasDomain& a, const KueueTasDomain& b) { return a.host < b.host; });
  return out;
}

json kueue_tas_encode(const std::vector<KueueTasDomain>& domains) {
  if (domains.empty()) return tas_assignment_with_slices(json::array());
  // compactTopologyAssignmentEncodingWithHostnamePrefixRuns.
  const std::vector<std::string> keys =
      domains.size() > 1 ? tas_prefix_keys(domains) : std::vector<std::string>{};
  json runs = json::array();
  std::size_t start = 0;
  auto add_run = [&](std::size_t begin, std::size_t end) {
    for (std::size_t b = begin; b < end; b += kTasMaxDomainsPerSlice)
      runs.push_back(tas_compact_slice(domains, b, std::min(end, b + kTasMaxDomainsPerSlice)));
  };
  if (keys.empty()) {
    add_run(0, domains.size());
  } else {
    for (std::size_t i = 1; i < domains.size(); ++i) {
      if (keys[i] == keys[start]) continue;
      add_run(start, i);
      start = i;
    }
    add_run(start, domains.size());
  }
  json prefixed = tas_assignment_with_slices(std::move(runs));
  if (prefixed["slices"].size() <= 1 || domains.size() > kTasMaxDomainsPerSlice) return prefixed;
  // The single slice wins only when it serialises shorter (same keys, so the same length
  // as Go's json.Marshal of either).
  json single =
      tas_assignment_with_slices(json::array({tas_compact_slice(domains, 0, domains.size())}));
  return single.dump().size() < prefixed.dump().size() ? single : prefixed;
}

std::vector<KueueTasDomain> kueue_tas_decode(const json& ta) {
  std::vector<KueueTasDomain> out;
  const json& levels = at(ta, "levels");
  const json& slices = at(ta, "slices");
  if (!levels.is_array() || levels.empty() || !slices.is_array()) return {};
  const std::size_t lowest = levels.size() - 1;
  for (const auto& slice : slices) {
    const int n = int_or(at(slice, "domainCount"), 0);
    const json& per_level = at(slice, "valuesPerLevel");
    if (n <= 0 || !per_level.is_array() || per_level.size() != levels.size()) return {};
    const json& values = per_level[lowest];
    const json& counts = at(slice, "podCounts");
    const json& roots = at(at(values, "individual"), "roots");
    const json& individual_counts = at(counts, "individual");
    for (int i = 0; i < n; ++i) {
      KueueTasDomain d;
      if (at(values, "universal").is_string()) {
        d.host = str(values["universal"]);
      } else if (roots.is_array() && static_cast<int>(roots.size()) == n) {
        d.host = str(at(values["individual"], "prefix")) + str(roots[i]) +
                 str(at(values["individual"], "suffix"));
      } else {
        return {};
      }
      if (at(counts, "universal").is_number_integer()) {
        d.count = counts["universal"].get<int32_t>();
      } else if (individual_counts.is_array() && static_cast<int>(individual_counts.size()) == n &&
                 individual_counts[i].is_number_integer()) {
        d.count = individual_counts[i].get<int32_t>();
      } else {
        return {};
      }
      out.push_back(std::move(d));
    }
  }
  return out;
}

bool kueue_cluster_queue_tas_only(const json& cluster_queue, const json& flavors) {
  // Upstream's loop says true for a queue without flavors too, and then fails every pod
  // set for want of TAS information; a queue with no TAS flavor is not TAS-only here.
  const json& groups = at(at(cluster_queue, "spec"), "resourceGroups");
  bool any = false;
  if (groups.is_array())
    for (const auto& g : groups)
      if (at(g, "flavors").is_array())
        for (const auto& f : g["flavors"]) {
          if (!at(at(at(flavors, str(at(f, "name")).c_str()), "spec"), "topologyName").is_string())
            return false;
          any = true;
        }
  return any;
}

std::optional<KueueTasMode> kueue_tas_request(const json& pod_set, bool tas_only,
                                              std::string& level) {
  const json& request = at(pod_set, "topologyRequest");
  level = kKueueHostnameLevel;
  if (!tas_explicit_request(pod_set))
    return tas_only ? std::optional(KueueTasMode::kUnconstrained) : std::nullopt;
  if (at(request, "required").is_string()) {
    level = str(request["required"]);
    return KueueTasMode::kRequired;
  }
  if (at(request, "preferred").is_string()) {
    level = str(request["preferred"]);
    return KueueTasMode::kPreferred;
  }
  // isUnconstrained: unconstrained true, or only a slice topology.
  if ((at(request, "unconstrained").is_boolean() && request["unconstrained"].get<bool>()) ||
      at(request, "podSetSliceRequiredTopology").is_string())
    return KueueTasMode::kUnconstrained;
  return KueueTasMode::kPreferred;  // levelKeyWithImpliedFallback: the lowest level
}

std::string kueue_tas_flavor_mismatch(const json& pod_set, const json& flavor, bool tas_only,
                                      bool covers_requested) {
  const std::string name = str(at(at(flavor, "metadata"), "name"));
  const bool tas_flavor = at(at(flavor, "spec"), "topologyName").is_string();
  std::string level;
  const auto mode = kueue_tas_request(pod_set, tas_only, level);
  const std::string quoted = json(name).dump();
  if (!mode) return tas_flavor ? "Flavor " + quoted + " supports only TopologyAwareScheduling" : "";
  // isTASImplied: on a TAS-only ClusterQueue every flavor is a match.
  if (!tas_explicit_request(pod_set)) return "";
  if (!tas_flavor)
    return covers_requested ? "Flavor " + quoted + " does not support TopologyAwareScheduling" : "";
  if (level != kKueueHostnameLevel)
    return "Flavor " + quoted + " does not contain the requested level";
  return "";
}

std::string kueue_tas_assign(json& admission, const json& workload, const json& cluster_queue,
                             const KueueTasCluster& cluster, bool second_pass) {
  const bool tas_only = kueue_cluster_queue_tas_only(cluster_queue, *cluster.flavors);
  const bool reserved = condition_true(workload, "QuotaReserved");
  const std::string uid = str(at(at(workload, "metadata"), "uid"));
  std::map<std::string, std::map<std::string, std::map<std::string, double>>> usage;  // flavor
  if (!at(admission, "podSetAssignments").is_array()) return "";
  for (auto& a : admission["podSetAssignments"]) {
    const json* ps = tas_pod_set_named(workload, str(at(a, "name")));
    if (ps == nullptr) continue;
    std::string level;
    const auto mode = kueue_tas_request(*ps, tas_only, level);
    const int32_t count = int_or(at(a, "count"), 1);
    if (!mode || count == 0) continue;
    if (second_pass) {
      if (str(at(a, "delayedTopologyRequest")) != "Pending" ||
          at(a, "topologyAssignment").is_object())
        continue;
    } else if (at(a, "topologyAssignment").is_object()) {
      continue;
    }
    const std::string flavor = tas_flavor_of(a, *cluster.flavors);
    if (flavor.empty()) return "no TAS flavor assigned to pod set " + str(at(a, "name"));
    if (tas_cluster_queue_has_check(cluster_queue, *cluster.checks, kKueueMultiKueueController,
                                    "") ||
        (!reserved && tas_cluster_queue_has_check(cluster_queue, *cluster.checks,
                                                  kKueueProvisioningController, flavor))) {
      a["delayedTopologyRequest"] = "Pending";
      continue;
    }
    if (usage.count(flavor) == 0) usage[flavor] = tas_held_usage(cluster, flavor, uid);
    const json& flavor_object = (*cluster.flavors)[flavor];
    const std::string topology = str(flavor_object["spec"]["topologyName"]);
    const auto single_pod = tas_single_pod_requests(*ps);
    std::string why;
    const auto placed = kueue_tas_place(tas_nodes_for(cluster, flavor_object, *ps, usage[flavor]),
                                        single_pod, count, *mode, topology, why);
    if (!placed) return "couldn't assign flavors to pod set " + str(at(a, "name")) + ": " + why;
    tas_add_usage(usage[flavor], *placed, single_pod);
    a["topologyAssignment"] = kueue_tas_encode(*placed);
    if (a.contains("delayedTopologyRequest")) a["delayedTopologyRequest"] = "Ready";
  }
  return "";
}

bool kueue_tas_pending(const json& workload) {
  const json& assignments = at(at(at(workload, "status"), "admission"), "podSetAssignments");
  if (!assignments.is_array()) return false;
  for (const auto& a : assignments)
    if (!at(a, "topologyAssignment").is_object() &&
        str(at(a, "delayedTopologyRequest")) == "Pending")
      return true;
  return false;
}

bool kueue_tas_needs_second_pass(const json& workload) {
  const json& status = at(workload, "status");
  if (condition_true(workload, "Finished") || condition_true(workload, "Evicted") ||
      !condition_true(workload, "QuotaReserved") || condition_true(workload, "Admitted"))
    return false;
  const json& entries = at(status, "admissionChecks");
  if (!entries.is_array() || entries.empty()) return false;
  for (const auto& e : entries)
    if (str(at(e, "state")) != "Ready") return false;
  return kueue_tas_pending(workload);
}

}  // namespace commgate::sim
