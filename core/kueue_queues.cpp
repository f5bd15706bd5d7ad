#include "core/kueue_queues.h"

#include <algorithm>
#include <set>

#include "core/json_access.h"

namespace commgate {
namespace {

using Json = nlohmann::json;

// Whether the ClusterQueue runs one of `ours` (AdmissionCheck names) on every flavor; if
// not, why.
std::string check_gap(const Json& cluster_queue, const std::set<std::string>& ours) {
  std::set<std::string> flavors;
  const Json& groups = json_at(cluster_queue, {"spec", "resourceGroups"});
  if (groups.is_array())
    for (const auto& group : groups)
      if (const Json* fs = json_member(group, "flavors"); fs && fs->is_array())
        for (const auto& f : *fs) flavors.insert(json_string(f, {"name"}));
  const Json& rules =
      json_at(cluster_queue, {"spec", "admissionChecksStrategy", "admissionChecks"});
  std::string partial;
  if (rules.is_array())
    for (const auto& rule : rules) {
      const std::string name = json_string(rule, {"name"});
      if (!ours.contains(name)) continue;
      const Json* on = json_member(rule, "onFlavors");
      if (!on || !on->is_array() || on->empty()) return "";
      std::set<std::string> covered;
      for (const auto& f : *on)
        if (f.is_string()) covered.insert(f.get<std::string>());
      if (std::includes(covered.begin(), covered.end(), flavors.begin(), flavors.end())) return "";
      partial = "AdmissionCheck " + name + " runs on some of its flavors only";
    }
  return partial.empty()
             ? "no AdmissionCheck with controllerName " + std::string(kKueueCheckControllerName) +
                   " in its admissionChecksStrategy"
             : partial;
}

}  // namespace

void keep_kueue_queue_fields(Json& object) {
  Json kept = {{"metadata", Json::object()}, {"spec", Json::object()}};
  for (const char* key : {"name", "namespace", "resourceVersion"})
    if (const Json& v = json_at(object, {"metadata", key}); v.is_string())
      kept["metadata"][key] = v;
  for (const char* key : {"clusterQueue", "controllerName", "admissionChecksStrategy"})
    if (const Json& v = json_at(object, {"spec", key}); !v.is_null()) kept["spec"][key] = v;
  if (const Json& groups = json_at(object, {"spec", "resourceGroups"}); groups.is_array()) {
    Json flavors = Json::array();
    for (const auto& group : groups)
      if (const Json* fs = json_member(group, "flavors"); fs && fs->is_array())
        for (const auto& f : *fs) flavors.push_back({{"name", json_string(f, {"name"})}});
    kept["spec"]["resourceGroups"] = Json::array({{{"flavors", flavors}}});
  }
  object = std::move(kept);
}

const KueueQueue* KueueQueues::find(const std::string& ns, const std::string& name) const {
  const auto it = local_queues.find(ns + "/" + name);
  return it == local_queues.end() ? nullptr : &it->second;
}

KueueQueues kueue_queues(const std::vector<Json>& local_queues,
                         const std::vector<Json>& cluster_queues,
                         const std::vector<Json>& admission_checks) {
  std::set<std::string> ours;
  for (const auto& check : admission_checks)
    if (json_string(check, {"spec", "controllerName"}) == kKueueCheckControllerName)
      ours.insert(json_string(check, {"metadata", "name"}));
  std::map<std::string, const Json*> by_name;
  for (const auto& cq : cluster_queues) by_name[json_string(cq, {"metadata", "name"})] = &cq;
  KueueQueues out;
  for (const auto& lq : local_queues) {
    KueueQueue queue;
    queue.cluster_queue = json_string(lq, {"spec", "clusterQueue"});
    const auto cq = by_name.find(queue.cluster_queue);
    if (cq == by_name.end()) {
      queue.why_not = "its ClusterQueue " + queue.cluster_queue + " does not exist";
    } else {
      const std::string gap = check_gap(*cq->second, ours);
      queue.checked = gap.empty();
      if (!queue.checked) queue.why_not = "its ClusterQueue " + queue.cluster_queue + " has " + gap;
    }
    out.local_queues[json_string(lq, {"metadata", "namespace"}) + "/" +
                     json_string(lq, {"metadata", "name"})] = std::move(queue);
  }
  return out;
}

}  // namespace commgate
