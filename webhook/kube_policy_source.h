// A PolicySource fed by the Kubernetes API: kube/snapshot_cache.h's SnapshotCache (three
// informers: CommPolicies, CommProfiles and v1 Namespaces for the labels policies'
// namespaceSelector reads; one immutable Snapshot rebuilt from all three on every change,
// objects that do not parse logged once and left out). The snapshot stays null until all
// three stores have completed their first list, so /readyz says "not ready" until the
// webhook has seen the cluster's policies. The operator uses the same cache.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/log.h"
#include "kube/api_client.h"
#include "kube/informer.h"
#include "kube/snapshot_cache.h"
#include "webhook/policy_source.h"

namespace commgate::webhook {

using kube::kCommPoliciesPath;
using kube::kCommProfilesPath;
using kube::kNamespacesPath;
using kube::kNodesPath;

class KubePolicySource : public PolicySource {
 public:
  using Options = kube::SnapshotCache::Options;

  // `client` must outlive the source.
  KubePolicySource(const kube::ApiClient& client, Options options);
  ~KubePolicySource() override;  // stop()
  KubePolicySource(const KubePolicySource&) = delete;
  KubePolicySource& operator=(const KubePolicySource&) = delete;

  void start() { cache_.start(); }
  void stop() { cache_.stop(); }

  std::shared_ptr<const Snapshot> snapshot() const override { return cache_.snapshot(); }
  // Objects left out of the current snapshot because they do not parse.
  uint64_t rejected_objects() const { return cache_.rejected_objects(); }
  uint64_t rebuilds() const { return cache_.rebuilds(); }
  // For metrics and tests: the three informers (policies, profiles, namespaces).
  std::vector<const kube::Informer*> informers() const { return cache_.informers(); }
  // Per watched collection (informer_metrics_text, prefix "commgate_webhook"): lists,
  // relists, restarts, errors, events, objects held and the state; and the objects left
  // out because they do not parse (commgate_webhook_rejected_objects).
  std::string metrics_text() const override;

 private:
  kube::SnapshotCache cache_;
};

}  // namespace commgate::webhook
