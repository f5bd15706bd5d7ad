#include "sim/kueue_quota.h"

#include <cmath>

#include "core/pod_requests.h"
#include "core/quantity.h"
#include "sim/json_fields.h"
#include "sim/kueue_tas.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

// Rounding slack when comparing sums of parsed quantities.
constexpr double kQuotaEpsilon = 1e-9;

bool is_byte_resource(const std::string& resource) {
  return resource == "memory" || resource == "ephemeral-storage" ||
         resource.rfind("hugepages-", 0) == 0;
}

// Whether the flavor's nodeLabels agree with the template's nodeSelector on every key
// both name (flavorassigner.go checks the pod's node selector and required affinity
// against the flavor's labels).
bool flavor_matches_selector(const json& flavor, const json& pod_set) {
  const json& labels = at(at(flavor, "spec"), "nodeLabels");
  const json& selector = at(at(at(pod_set, "template"), "spec"), "nodeSelector");
  if (!labels.is_object() || !selector.is_object()) return true;
  for (const auto& [k, v] : selector.items())
    if (labels.contains(k) && labels[k] != v) return false;
  return true;
}

// The nominal quota of `resource` in the flavor entry of a resource group, or -1.
double nominal_quota(const json& flavor_entry, const std::string& resource) {
  const json& resources = at(flavor_entry, "resources");
  if (resources.is_array())
    for (const auto& r : resources)
      if (str(at(r, "name")) == resource) return commgate::resource_quantity(at(r, "nominalQuota"));
  return -1;
}

}  // namespace

KueueResources kueue_pod_set_usage(const json& pod_set) {
  KueueResources out;
  const int count = int_or(at(pod_set, "count"), 1);
  // Qualified: sim::pod_requests (sim/scheduler.h) takes a whole pod.
  for (const auto& [resource, amount] : commgate::pod_requests(at(at(pod_set, "template"), "spec")))
    if (amount > 0) out[resource] = amount * count;
  return out;
}

KueueUsage kueue_cluster_queue_usage(const std::vector<json>& workloads,
                                     const std::string& cluster_queue) {
  KueueUsage usage;
  for (const auto& wl : workloads) {
    const json& admission = at(at(wl, "status"), "admission");
    if (str(at(admission, "clusterQueue")) != cluster_queue) continue;
    if (!condition_true(wl, "QuotaReserved")) continue;
    const json& assignments = at(admission, "podSetAssignments");
    if (!assignments.is_array()) continue;
    for (const auto& a : assignments) {
      const json& flavors = at(a, "flavors");
      const json& used = at(a, "resourceUsage");
      if (!flavors.is_object() || !used.is_object()) continue;
      for (const auto& [resource, amount] : used.items()) {
        const std::string flavor = str(at(flavors, resource.c_str()));
        if (!flavor.empty()) usage[flavor][resource] += commgate::resource_quantity(amount);
      }
    }
  }
  return usage;
}

std::string kueue_quantity_text(const std::string& resource, double amount) {
  if (is_byte_resource(resource) && amount == std::floor(amount))
    return format_byte_quantity(amount);
  if (amount == std::floor(amount)) return std::to_string(static_cast<long long>(amount));
  const double milli = amount * 1000;
  if (std::fabs(milli - std::round(milli)) < 1e-6)
    return std::to_string(static_cast<long long>(std::llround(milli))) + "m";
  return format_quantity(amount);
}

KueueQuotaDecision kueue_reserve_quota(const json& workload, const json& cluster_queue,
                                       const json& flavors, const KueueUsage& usage) {
  const std::string cq_name = str(at(at(cluster_queue, "metadata"), "name"));
  const json& groups = at(at(cluster_queue, "spec"), "resourceGroups");
  const json& pod_sets = at(at(workload, "spec"), "podSets");
  KueueUsage taken = usage;  // with this workload's earlier pod sets
  const bool tas_only = kueue_cluster_queue_tas_only(cluster_queue, flavors);
  json assignments = json::array();
  if (!pod_sets.is_array()) return {nullptr, "the workload has no pod sets"};
  for (const auto& ps : pod_sets) {
    const KueueResources wanted = kueue_pod_set_usage(ps);
    json chosen = json::object();
    for (const auto& [resource, amount] : wanted) {
      (void)amount;
      bool covered = false;
      if (groups.is_array())
        for (const auto& g : groups)
          if (at(g, "coveredResources").is_array())
            for (const auto& c : g["coveredResources"]) covered = covered || str(c) == resource;
      if (!covered) return {nullptr, "resource " + resource + " unavailable in ClusterQueue"};
    }
    if (groups.is_array()) {
      for (const auto& g : groups) {
        std::vector<std::string> group_wants;
        for (const auto& c : at(g, "coveredResources"))
          if (wanted.count(str(c)) > 0) group_wants.push_back(str(c));
        if (group_wants.empty()) continue;
        std::string picked, why;
        for (const auto& entry : at(g, "flavors")) {
          const std::string flavor = str(at(entry, "name"));
          const json& flavor_object = at(flavors, flavor.c_str());
          if (!flavor_object.is_object()) {
            why = "flavor " + flavor + " not found";
            continue;
          }
          if (!flavor_matches_selector(flavor_object, ps)) {
            why = "flavor " + flavor + " doesn't match node affinity";
            continue;
          }
          if (const std::string tas = kueue_tas_flavor_mismatch(ps, flavor_object, tas_only, true);
              !tas.empty()) {
            why = tas;
            continue;
          }
          bool fits = true;
          for (const auto& resource : group_wants) {
            const double quota = nominal_quota(entry, resource);
            const auto f = taken.find(flavor);
            const double used =
                f == taken.end() || f->second.count(resource) == 0 ? 0 : f->second.at(resource);
            if (quota < 0 || used + wanted.at(resource) > quota + kQuotaEpsilon) {
              fits = false;
              why = "insufficient quota for " + resource + " in flavor " + flavor +
                    ", request > maximum capacity (" +
                    kueue_quantity_text(resource, wanted.at(resource)) + " > " +
                    kueue_quantity_text(resource, std::max(quota - used, 0.0)) + ")";
              break;
            }
          }
          if (fits) {
            picked = flavor;
            break;
          }
        }
        if (picked.empty())
          return {nullptr,
                  "couldn't assign flavors to pod set " + str(at(ps, "name")) + ": " + why};
        for (const auto& resource : group_wants) {
          chosen[resource] = picked;
          taken[picked][resource] += wanted.at(resource);
        }
      }
    }
    json resource_usage = json::object();
    for (const auto& [resource, amount] : wanted)
      resource_usage[resource] = kueue_quantity_text(resource, amount);
    assignments.push_back({{"name", str(at(ps, "name"))},
                           {"flavors", chosen},
                           {"resourceUsage", resource_usage},
                           {"count", int_or(at(ps, "count"), 1)}});
  }
  return {{{"clusterQueue", cq_name}, {"podSetAssignments", assignments}}, ""};
}

}  // namespace commgate::sim
