// The Deployment and ReplicaSet controllers' stand-in for apps/v1: a Deployment owns one
// ReplicaSet per pod template, a ReplicaSet owns its pods, and both write their status as
// kube-controller-manager does, so `kubectl get deploy` and `kubectl rollout status` work.
//
// Modelled: the ReplicaSet `<deployment>-<pod-template-hash>` (label pod-template-hash on
// the ReplicaSet, its selector, its template and so its pods; annotations
// deployment.kubernetes.io/revision, desired-replicas, max-replicas; ownerReference with
// controller and blockOwnerDeletion), pods `<replicaset>-<random>` owned the same way;
// scale up and down to spec.replicas (pods deleted in upstream's order: unscheduled,
// pending, not ready, then the newest); a changed template makes a new ReplicaSet
// (revision + 1); RollingUpdate: the new ReplicaSet is scaled to spec.replicas at once and
// the old ones shrink as its pods become available (never fewer available pods than
// before); Recreate: the old ReplicaSets go to 0 first, the new one grows once their pods
// are gone; revisionHistoryLimit (old ReplicaSets at 0 beyond it are deleted); status
// replicas, updatedReplicas, readyReplicas, availableReplicas, unavailableReplicas,
// observedGeneration and the Available / Progressing conditions with upstream's reasons
// and messages; minReadySeconds. Deletion cascades through the garbage collector
// (ownerReferences), as in a cluster.
// Shortcuts (docs/testing.md): the pod-template-hash is FNV-32a of the template's JSON
// (upstream hashes Go's printing of the typed struct, so the values differ; the form, ten
// characters at most from the same alphabet, is the same) and collisionCount is never
// raised; maxSurge is not honoured (a rollout surges by the full replica count);
// progressDeadlineSeconds never times out; paused Deployments and rollbacks are not
// modelled; ReplicaSets without a Deployment are served (their pods run) but nothing else
// (no adoption of orphans, no selector matching: pods are found by their controller
// ownerReference).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/change_loop.h"
#include "sim/object_store.h"

namespace commgate::sim {

inline constexpr const char* kPodTemplateHash = "pod-template-hash";
inline constexpr const char* kRevisionAnnotation = "deployment.kubernetes.io/revision";

// --- Pure helpers (unit-tested) ---

// rand.SafeEncodeString: each character mapped into "bcdfghjklmnpqrstvwxz2456789" (no
// vowels, no look-alikes), as upstream encodes a hash's decimal digits.
std::string safe_encode(const std::string& text);
// The pod-template-hash of a Deployment's spec.template with its status.collisionCount:
// FNV-32a of the template's JSON (with the count appended when set), safe-encoded.
std::string pod_template_hash(const nlohmann::json& pod_template,
                              std::optional<int> collision_count = std::nullopt);
// `<deployment>-<hash>`, cut as upstream's names.SimpleNameGenerator would not: the
// Deployment's name is trimmed so the result is at most 253 characters.
std::string replica_set_name(const std::string& deployment, const std::string& hash);
// An intOrString of a rolling update (`1`, `"25%"`) resolved against `total` (percent
// rounded up or down); `fallback` when absent.
int resolve_int_or_percent(const nlohmann::json& value, int total, bool round_up,
                           const std::string& fallback);
// MaxUnavailable of a Deployment as upstream's deployment util computes it (0 for
// Recreate or 0 replicas; 1 when maxSurge and maxUnavailable both resolve to 0).
int max_unavailable(const nlohmann::json& deployment);
// The ReplicaSet the controller creates for `deployment` at `hash` and `revision`.
nlohmann::json replica_set_for(const nlohmann::json& deployment, const std::string& hash,
                               int replicas, int revision);
// The pod the ReplicaSet controller creates for `replica_set`.
nlohmann::json pod_for_replica_set(const nlohmann::json& replica_set);
// Of `pods` (a ReplicaSet's active pods), the names of the `count` to delete first:
// unscheduled, then pending, then not ready, then the most recently created.
std::vector<std::string> pods_to_delete(const std::vector<nlohmann::json>& pods, int count);
// The Deployment's status from its ReplicaSets (`new_rs` may be null), with the conditions
// upstream sets (times kept when status and reason are unchanged). `now` is RFC 3339.
nlohmann::json deployment_status(const nlohmann::json& deployment, const nlohmann::json* new_rs,
                                 const std::vector<nlohmann::json>& all_rs, const std::string& now);

class DeploymentController {
 public:
  explicit DeploymentController(ObjectStore& store);
  ~DeploymentController();  // stop()
  DeploymentController(const DeploymentController&) = delete;
  DeploymentController& operator=(const DeploymentController&) = delete;

  void start();
  void stop();
  // One pass over every Deployment and ReplicaSet; returns when a minReadySeconds check is
  // due, or nullopt.
  std::optional<TimePoint> sync_once();

 private:
  void reconcile_deployment(const nlohmann::json& deployment,
                            const std::vector<nlohmann::json>& owned);
  std::optional<TimePoint> reconcile_replica_set(const nlohmann::json& rs,
                                                 const std::vector<nlohmann::json>& pods);
  void set_replicas(const nlohmann::json& rs, int replicas);

  ObjectStore& store_;
  ResourceInfo deployments_, replica_sets_, pods_;
  ChangeLoop loop_;  // last: its thread uses the members above
};

}  // namespace commgate::sim
