#include "sim/kueue_queue_status.h"

#include <algorithm>
#include <set>
#include <vector>

#include "sim/json_fields.h"
#include "sim/kueue_tas.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

std::string queue_join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

bool queue_stopped(const json& queue) {
  const std::string policy = str(at(at(queue, "spec"), "stopPolicy"));
  return !policy.empty() && policy != "None";
}

}  // namespace

json KueueQueueCondition::to_json() const {
  return {{"type", "Active"},
          {"status", active ? "True" : "False"},
          {"reason", reason},
          {"message", message}};
}

KueueQueueCondition kueue_cluster_queue_condition(const json& cq, const json& flavors,
                                                  const std::map<std::string, json>& checks) {
  if (!at(at(cq, "metadata"), "deletionTimestamp").is_null())
    return {false, "Terminating", "Can't admit new workloads; clusterQueue is terminating"};
  // The flavors of the resource groups, in order, and which are missing.
  std::vector<std::string> missing_flavors;
  std::set<std::string> all_flavors;
  const json& groups = at(at(cq, "spec"), "resourceGroups");
  if (groups.is_array())
    for (const auto& g : groups)
      if (at(g, "flavors").is_array())
        for (const auto& f : g["flavors"]) {
          const std::string name = str(at(f, "name"));
          if (!all_flavors.insert(name).second) continue;
          if (!at(flavors, name.c_str()).is_object()) missing_flavors.push_back(name);
        }
  std::vector<std::string> missing, inactive, multikueue, provisioning, per_flavor_multikueue;
  const json& named = at(at(at(cq, "spec"), "admissionChecksStrategy"), "admissionChecks");
  if (named.is_array())
    for (const auto& c : named) {
      const std::string name = str(at(c, "name"));
      const auto it = checks.find(name);
      if (it == checks.end()) {
        missing.push_back(name);
        continue;
      }
      if (!condition_true(it->second, "Active")) inactive.push_back(name);
      const std::string controller = str(at(at(it->second, "spec"), "controllerName"));
      if (controller == kKueueProvisioningController) provisioning.push_back(name);
      if (controller == kKueueMultiKueueController) {
        multikueue.push_back(name);
        // AdmissionChecks' flavor set: onFlavors, or every flavor when empty.
        std::set<std::string> on;
        if (at(c, "onFlavors").is_array())
          for (const auto& f : c["onFlavors"]) on.insert(str(f));
        if (!on.empty() && on != all_flavors) per_flavor_multikueue.push_back(name);
      }
    }
  for (auto* v : {&missing, &inactive, &multikueue, &provisioning, &per_flavor_multikueue}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  std::vector<std::string> reasons, messages;
  if (queue_stopped(cq)) {
    reasons.push_back("Stopped");
    messages.push_back("is stopped");
  }
  if (!missing_flavors.empty()) {
    reasons.push_back("FlavorNotFound");
    messages.push_back("references missing ResourceFlavor(s): " + queue_join(missing_flavors));
  }
  if (!missing.empty()) {
    reasons.push_back("AdmissionCheckNotFound");
    messages.push_back("references missing AdmissionCheck(s): " + queue_join(missing));
  }
  if (!inactive.empty()) {
    reasons.push_back("AdmissionCheckInactive");
    messages.push_back("references inactive AdmissionCheck(s): " + queue_join(inactive));
  }
  if (multikueue.size() > 1) {
    reasons.push_back("MultipleMultiKueueAdmissionChecks");
    messages.push_back(
        "Cannot use multiple MultiKueue AdmissionChecks on the same ClusterQueue, found: " +
        queue_join(multikueue));
  }
  if (!per_flavor_multikueue.empty()) {
    reasons.push_back("MultiKueueAdmissionCheckAppliedPerFlavor");
    messages.push_back("Cannot specify MultiKueue AdmissionCheck per flavor, found: " +
                       queue_join(per_flavor_multikueue));
  }
  if (!multikueue.empty() && !provisioning.empty()) {
    reasons.push_back("MultiKueueWithProvisioningRequest");
    messages.push_back(
        "Cannot use both MultiKueue and ProvisioningRequest AdmissionChecks together, found: " +
        queue_join(multikueue) + ", " + queue_join(provisioning));
  }
  if (reasons.empty()) return {true, "Ready", "Can admit new workloads"};
  std::string joined;
  for (const auto& m : messages) joined += (joined.empty() ? "" : ", ") + m;
  return {false, reasons.front(), "Can't admit new workloads: " + joined + "."};
}

KueueQueueCondition kueue_local_queue_condition(const json& lq, const json* cq) {
  if (queue_stopped(lq)) return {false, "Stopped", "LocalQueue is stopped"};
  if (cq == nullptr)
    return {false, "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue"};
  if (condition_true(*cq, "Active"))
    return {true, "Ready", "Can submit new workloads to localQueue"};
  return {false, "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue"};
}

}  // namespace commgate::sim
