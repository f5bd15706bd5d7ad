#include "sim/deployment_controller.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include "sim/api_status.h"
#include "sim/garbage_collection.h"
#include "sim/json_fields.h"
#include "sim/scheduler.h"

namespace commgate::sim {

using nlohmann::json;

namespace {

json owner_reference(const json& owner, const std::string& kind) {
  return {{"apiVersion", "apps/v1"},
          {"kind", kind},
          {"name", str(owner["metadata"]["name"])},
          {"uid", str(owner["metadata"]["uid"])},
          {"controller", true},
          {"blockOwnerDeletion", true}};
}

int spec_replicas(const json& object) {
  return int_or(at(at(object, "spec"), "replicas"), 1);
}

int revision_of(const json& rs) {
  try {
    return std::stoi(str(at(at(at(rs, "metadata"), "annotations"), kRevisionAnnotation)));
  } catch (const std::exception&) {
    return 0;
  }
}

int status_int(const json& object, const char* field) {
  return int_or(at(at(object, "status"), field), 0);
}

bool is_recreate(const json& deployment) {
  return str(at(at(at(deployment, "spec"), "strategy"), "type")) == "Recreate";
}

// A condition as upstream's SetDeploymentCondition leaves it: lastTransitionTime kept while
// the status is unchanged, everything kept while status and reason are.
json with_condition(const json& old_conditions, const std::string& type, bool status,
                    const std::string& reason, const std::string& message, const std::string& now) {
  json next = {{"type", type},          {"status", status ? "True" : "False"},
               {"reason", reason},      {"message", message},
               {"lastUpdateTime", now}, {"lastTransitionTime", now}};
  if (old_conditions.is_array())
    for (const auto& c : old_conditions) {
      if (str(at(c, "type")) != type || str(at(c, "status")) != str(next["status"])) continue;
      if (str(at(c, "reason")) == reason) return c;
      next["lastTransitionTime"] = c.value("lastTransitionTime", now);
    }
  return next;
}

DeleteOptions background() {
  DeleteOptions o;
  o.propagation = Propagation::kBackground;
  return o;
}

}  // namespace

std::string safe_encode(const std::string& text) {
  static const std::string alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string out = text;
  for (auto& c : out) c = alphabet[static_cast<unsigned char>(c) % alphabet.size()];
  return out;
}

std::string pod_template_hash(const json& pod_template, std::optional<int> collision_count) {
  std::string bytes = pod_template.dump();
  if (collision_count) bytes += std::to_string(*collision_count);
  uint32_t hash = 2166136261u;  // FNV-32a
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 16777619u;
  }
  return safe_encode(std::to_string(hash));
}

std::string replica_set_name(const std::string& deployment, const std::string& hash) {
  const std::size_t room = 253 - hash.size() - 1;
  return deployment.substr(0, room) + "-" + hash;
}

int resolve_int_or_percent(const json& value, int total, bool round_up,
                           const std::string& fallback) {
  const json v = value.is_null() ? json(fallback) : value;
  if (v.is_number_integer()) return v.get<int>();
  std::string text = str(v);
  if (text.empty() || text.back() != '%') {
    try {
      return std::stoi(text);
    } catch (const std::exception&) {
      return 0;
    }
  }
  text.pop_back();
  int percent = 0;
  try {
    percent = std::stoi(text);
  } catch (const std::exception&) {
    return 0;
  }
  const double exact = static_cast<double>(percent) * total / 100.0;
  return static_cast<int>(round_up ? std::ceil(exact) : std::floor(exact));
}

int max_unavailable(const json& deployment) {
  const int replicas = spec_replicas(deployment);
  if (is_recreate(deployment) || replicas == 0) return 0;
  const json& rolling = at(at(at(deployment, "spec"), "strategy"), "rollingUpdate");
  const int surge = resolve_int_or_percent(at(rolling, "maxSurge"), replicas, true, "25%");
  int unavailable = resolve_int_or_percent(at(rolling, "maxUnavailable"), replicas, false, "25%");
  if (surge == 0 && unavailable == 0) unavailable = 1;
  return std::min(unavailable, replicas);
}

json replica_set_for(const json& deployment, const std::string& hash, int replicas, int revision) {
  const json& meta = deployment["metadata"];
  const json& spec = at(deployment, "spec");
  json tmpl = at(spec, "template").is_object() ? spec["template"] : json::object();
  if (!at(tmpl, "metadata").is_object()) tmpl["metadata"] = json::object();
  if (!at(tmpl["metadata"], "labels").is_object()) tmpl["metadata"]["labels"] = json::object();
  tmpl["metadata"]["labels"][kPodTemplateHash] = hash;
  json selector = at(spec, "selector").is_object() ? spec["selector"] : json::object();
  if (!at(selector, "matchLabels").is_object()) selector["matchLabels"] = json::object();
  selector["matchLabels"][kPodTemplateHash] = hash;
  json labels = tmpl["metadata"]["labels"];
  const int max_replicas =
      spec_replicas(deployment) +
      (is_recreate(deployment)
           ? 0
           : resolve_int_or_percent(at(at(at(spec, "strategy"), "rollingUpdate"), "maxSurge"),
                                    spec_replicas(deployment), true, "25%"));
  json rs_spec = {{"replicas", replicas}, {"selector", selector}, {"template", tmpl}};
  if (at(spec, "minReadySeconds").is_number_integer())
    rs_spec["minReadySeconds"] = spec["minReadySeconds"];
  return {
      {"apiVersion", "apps/v1"},
      {"kind", "ReplicaSet"},
      {"metadata",
       {{"name", replica_set_name(str(meta["name"]), hash)},
        {"namespace", str(meta["namespace"])},
        {"labels", labels},
        {"annotations",
         {{kRevisionAnnotation, std::to_string(revision)},
          {"deployment.kubernetes.io/desired-replicas", std::to_string(spec_replicas(deployment))},
          {"deployment.kubernetes.io/max-replicas", std::to_string(max_replicas)}}},
        {"ownerReferences", {owner_reference(deployment, "Deployment")}}}},
      {"spec", rs_spec}};
}

json pod_for_replica_set(const json& replica_set) {
  const json& meta = replica_set["metadata"];
  const json& tmpl = at(at(replica_set, "spec"), "template");
  json pod_meta = {{"generateName", str(meta["name"]) + "-"},
                   {"namespace", str(meta["namespace"])},
                   {"ownerReferences", {owner_reference(replica_set, "ReplicaSet")}}};
  for (const char* k : {"labels", "annotations"})
    if (at(at(tmpl, "metadata"), k).is_object()) pod_meta[k] = tmpl["metadata"][k];
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", pod_meta},
          {"spec", at(tmpl, "spec").is_object() ? tmpl["spec"] : json::object()}};
}

std::vector<std::string> pods_to_delete(const std::vector<json>& pods, int count) {
  // Upstream's ActivePods ordering (controller_utils.go), the parts the sim has.
  auto rank = [](const json& p) {
    if (str(at(at(p, "spec"), "nodeName")).empty()) return 0;
    if (str(at(at(p, "status"), "phase")) == "Pending") return 1;
    if (!condition_true(p, "Ready")) return 2;
    return 3;
  };
  std::vector<const json*> order;
  for (const auto& p : pods) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [&](const json* a, const json* b) {
    if (rank(*a) != rank(*b)) return rank(*a) < rank(*b);
    const std::string ca = str(at(at(*a, "metadata"), "creationTimestamp"));
    const std::string cb = str(at(at(*b, "metadata"), "creationTimestamp"));
    if (ca != cb) return ca > cb;  // newer first
    return str(at(at(*a, "metadata"), "name")) > str(at(at(*b, "metadata"), "name"));
  });
  std::vector<std::string> out;
  for (int i = 0; i < count && i < static_cast<int>(order.size()); ++i)
    out.push_back(str((*order[i])["metadata"]["name"]));
  return out;
}

json deployment_status(const json& deployment, const json* new_rs, const std::vector<json>& all_rs,
                       const std::string& now) {
  int replicas = 0, ready = 0, available = 0, desired_total = 0;
  for (const auto& rs : all_rs) {
    replicas += status_int(rs, "replicas");
    ready += status_int(rs, "readyReplicas");
    available += status_int(rs, "availableReplicas");
    desired_total += spec_replicas(rs);
  }
  const json& old = at(deployment, "status");
  json status = old.is_object() ? old : json::object();
  const int generation = int_or(at(at(deployment, "metadata"), "generation"), 1);
  const int updated = new_rs != nullptr ? status_int(*new_rs, "replicas") : 0;
  status["observedGeneration"] = generation;
  status["replicas"] = replicas;
  status["updatedReplicas"] = updated;
  status["readyReplicas"] = ready;
  status["availableReplicas"] = available;
  const int unavailable = std::max(0, desired_total - available);
  if (unavailable > 0) {
    status["unavailableReplicas"] = unavailable;
  } else {
    status.erase("unavailableReplicas");
  }
  // Upstream omits zero counts (omitempty): kubectl reads them as 0 either way.
  for (const char* k : {"replicas", "updatedReplicas", "readyReplicas", "availableReplicas"})
    if (status[k] == 0) status.erase(k);

  const json& conds = at(old, "conditions");
  const int want = spec_replicas(deployment);
  const bool min_available = available >= want - max_unavailable(deployment);
  json available_c = min_available
                         ? with_condition(conds, "Available", true, "MinimumReplicasAvailable",
                                          "Deployment has minimum availability.", now)
                         : with_condition(conds, "Available", false, "MinimumReplicasUnavailable",
                                          "Deployment does not have minimum availability.", now);
  json progressing_c;
  if (new_rs != nullptr) {
    const std::string rs_name = str((*new_rs)["metadata"]["name"]);
    const bool complete = updated == want && replicas == want && available == want;
    bool had = false;
    if (conds.is_array())
      for (const auto& c : conds) had = had || str(at(c, "type")) == "Progressing";
    if (complete) {
      progressing_c =
          with_condition(conds, "Progressing", true, "NewReplicaSetAvailable",
                         "ReplicaSet \"" + rs_name + "\" has successfully progressed.", now);
    } else if (!had) {
      progressing_c = with_condition(conds, "Progressing", true, "NewReplicaSetCreated",
                                     "Created new replica set \"" + rs_name + "\"", now);
    } else {
      progressing_c = with_condition(conds, "Progressing", true, "ReplicaSetUpdated",
                                     "ReplicaSet \"" + rs_name + "\" is progressing.", now);
    }
  }
  json conditions = json::array({available_c});
  if (!progressing_c.is_null()) conditions.push_back(progressing_c);
  status["conditions"] = conditions;
  return status;
}

DeploymentController::DeploymentController(ObjectStore& store)
    : store_(store),
      deployments_(*store.find_resource("apps", "v1", "deployments")),
      replica_sets_(*store.find_resource("apps", "v1", "replicasets")),
      pods_(*store.find_resource("", "v1", "pods")),
      loop_(store, {deployments_, replica_sets_, pods_}, [this]() -> std::optional<TimePoint> {
        try {
          return sync_once();
        } catch (const std::exception&) {
          return Clock::now() + std::chrono::milliseconds(100);  // retry after a store error
        }
      }) {}

DeploymentController::~DeploymentController() {
  stop();
}

void DeploymentController::start() {
  loop_.start();
}

void DeploymentController::stop() {
  loop_.stop();
}

std::optional<TimePoint> DeploymentController::sync_once() {
  const auto deployments = store_.list(deployments_, "", {}).items;
  const auto replica_sets = store_.list(replica_sets_, "", {}).items;
  const auto pods = store_.list(pods_, "", {}).items;
  std::map<std::string, std::vector<json>> rs_of, pods_of;  // owner uid -> owned
  for (const auto& rs : replica_sets) rs_of[controller_uid(rs, "Deployment")].push_back(rs);
  for (const auto& p : pods) pods_of[controller_uid(p, "ReplicaSet")].push_back(p);
  // ReplicaSets first: a Deployment's status then reads counts this pass may have written
  // (the next pass, woken by those writes, catches up either way).
  std::optional<TimePoint> next;
  for (const auto& rs : replica_sets) {
    try {
      auto due = reconcile_replica_set(rs, pods_of[str(rs["metadata"]["uid"])]);
      if (due && (!next || *due < *next)) next = due;
    } catch (const ApiError&) {
      // Changed meanwhile: its event brings another pass.
    }
  }
  for (const auto& d : deployments) {
    try {
      reconcile_deployment(d, rs_of[str(d["metadata"]["uid"])]);
    } catch (const ApiError&) {
    }
  }
  return next;
}

void DeploymentController::set_replicas(const json& rs, int replicas) {
  if (spec_replicas(rs) == replicas) return;
  const std::string uid = str(rs["metadata"]["uid"]), name = str(rs["metadata"]["name"]);
  store_.mutate(replica_sets_, str(rs["metadata"]["namespace"]), name, WritePart::kMain,
                [&](const json& current) {
                  if (str(current["metadata"]["uid"]) != uid) throw not_found(replica_sets_, name);
                  json next = current;
                  next["spec"]["replicas"] = replicas;
                  return next;
                });
}

void DeploymentController::reconcile_deployment(const json& deployment,
                                                const std::vector<json>& owned) {
  if (is_deleting(deployment)) return;
  const json& meta = deployment["metadata"];
  const std::string ns = str(meta["namespace"]), name = str(meta["name"]), uid = str(meta["uid"]);
  const json& spec = at(deployment, "spec");
  std::optional<int> collisions;
  if (at(at(deployment, "status"), "collisionCount").is_number_integer())
    collisions = deployment["status"]["collisionCount"].get<int>();
  const std::string hash = pod_template_hash(at(spec, "template"), collisions);
  const int want = spec_replicas(deployment);

  std::optional<json> new_rs;
  std::vector<json> old_rs;
  int max_revision = 0;
  for (const auto& rs : owned) {
    if (is_deleting(rs)) continue;
    max_revision = std::max(max_revision, revision_of(rs));
    if (str(at(at(at(rs, "metadata"), "labels"), kPodTemplateHash)) == hash)
      new_rs = rs;
    else
      old_rs.push_back(rs);
  }
  int old_pods = 0, old_replicas = 0;
  for (const auto& rs : old_rs) {
    old_pods += status_int(rs, "replicas");
    old_replicas += spec_replicas(rs);
  }
  const bool recreate = is_recreate(deployment);
  const int new_size = recreate && (old_pods > 0 || old_replicas > 0) ? 0 : want;
  if (!new_rs) {
    const int revision = max_revision + 1;
    new_rs =
        store_.create(replica_sets_, ns, replica_set_for(deployment, hash, new_size, revision));
  } else {
    set_replicas(*new_rs, new_size);
  }
  // The revision the Deployment shows is its newest ReplicaSet's.
  const std::string revision = std::to_string(revision_of(*new_rs));
  if (str(at(at(meta, "annotations"), kRevisionAnnotation)) != revision) {
    store_.mutate(deployments_, ns, name, WritePart::kMain, [&](const json& current) {
      if (str(current["metadata"]["uid"]) != uid) throw not_found(deployments_, name);
      json next = current;
      next["metadata"]["annotations"][kRevisionAnnotation] = revision;
      return next;
    });
  }

  // Old ReplicaSets: all to 0 for Recreate; for RollingUpdate, shrink (oldest first) so the
  // old pods still wanted plus the new ones available are the replica count.
  std::sort(old_rs.begin(), old_rs.end(),
            [](const json& a, const json& b) { return revision_of(a) < revision_of(b); });
  int keep_old = recreate ? 0 : std::max(0, want - status_int(*new_rs, "availableReplicas"));
  int surplus = std::max(0, old_replicas - keep_old);
  for (const auto& rs : old_rs) {
    if (surplus == 0) break;
    const int cut = std::min(surplus, spec_replicas(rs));
    set_replicas(rs, spec_replicas(rs) - cut);
    surplus -= cut;
  }
  // revisionHistoryLimit: old ReplicaSets at 0 with no pods, beyond the limit, go.
  const int limit = int_or(at(spec, "revisionHistoryLimit"), 10);
  std::vector<const json*> idle;
  for (const auto& rs : old_rs)
    if (spec_replicas(rs) == 0 && status_int(rs, "replicas") == 0) idle.push_back(&rs);
  for (int i = 0; i + limit < static_cast<int>(idle.size()); ++i)
    store_.remove(replica_sets_, ns, str((*idle[i])["metadata"]["name"]), background());

  std::vector<json> all = old_rs;
  all.push_back(*new_rs);
  const json status = deployment_status(deployment, &*new_rs, all, format_rfc3339(Clock::now()));
  // Rewritten only when a count or a condition's status or reason changed (the times of
  // an unchanged condition are kept by deployment_status).
  if (status != at(deployment, "status")) {
    store_.mutate(deployments_, ns, name, WritePart::kStatus, [&](const json& current) {
      if (str(current["metadata"]["uid"]) != uid) throw not_found(deployments_, name);
      json next = current;
      next["status"] = status;
      return next;
    });
  }
}

std::optional<TimePoint> DeploymentController::reconcile_replica_set(
    const json& rs, const std::vector<json>& pods) {
  const json& meta = rs["metadata"];
  const std::string ns = str(meta["namespace"]), name = str(meta["name"]), uid = str(meta["uid"]);
  std::vector<json> active;
  for (const auto& p : pods)
    if (!is_terminal(p) && !is_deleting(p)) active.push_back(p);
  const int want = is_deleting(rs) ? 0 : spec_replicas(rs);
  const int have = static_cast<int>(active.size());
  if (!is_deleting(rs)) {
    for (int i = have; i < want; ++i) store_.create(pods_, ns, pod_for_replica_set(rs));
    for (const auto& victim : pods_to_delete(active, have - want)) {
      try {
        store_.remove(pods_, ns, victim, background());
      } catch (const ApiError&) {
      }
    }
  }
  // Status: the active pods as they are now (created ones count from the next pass).
  const TimePoint now = Clock::now();
  const int min_ready = int_or(at(at(rs, "spec"), "minReadySeconds"), 0);
  int ready = 0, available = 0;
  std::optional<TimePoint> due;
  for (const auto& p : active) {
    if (!condition_true(p, "Ready")) continue;
    ++ready;
    std::string since;
    for (const auto& c : p["status"]["conditions"])
      if (str(at(c, "type")) == "Ready") since = str(at(c, "lastTransitionTime"));
    const TimePoint from = parse_rfc3339(since).value_or(now);
    const TimePoint ok_at = from + std::chrono::seconds(min_ready);
    if (min_ready == 0 || ok_at <= now) {
      ++available;
    } else if (!due || ok_at < *due) {
      due = ok_at;
    }
  }
  json status = at(rs, "status").is_object() ? rs["status"] : json::object();
  status["replicas"] = have;
  status["fullyLabeledReplicas"] = have;
  status["readyReplicas"] = ready;
  status["availableReplicas"] = available;
  status["observedGeneration"] = int_or(at(meta, "generation"), 1);
  for (const char* k : {"fullyLabeledReplicas", "readyReplicas", "availableReplicas"})
    if (status[k] == 0) status.erase(k);
  if (status != at(rs, "status")) {
    store_.mutate(replica_sets_, ns, name, WritePart::kStatus, [&](const json& current) {
      if (str(current["metadata"]["uid"]) != uid) throw not_found(replica_sets_, name);
      json next = current;
      next["status"] = status;
      return next;
    });
  }
  return due;
}

}  // namespace commgate::sim
