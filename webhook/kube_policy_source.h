// A PolicySource fed by the Kubernetes API: three informers (kube/informer.h: CommPolicies,
// CommProfiles and v1 Namespaces for the labels policies' namespaceSelector reads), each
// with its own store. When any store changes, a new Snapshot is built from all three with
// core's parsers and swapped in. An object that does not parse is logged once per
// resourceVersion with its field paths and left out; it never stops the others. The
// snapshot stays null until all three stores have completed their first list, so /readyz
// says "not ready" until the webhook has seen the cluster's policies.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/log.h"
#include "kube/api_client.h"
#include "kube/informer.h"
#include "webhook/policy_source.h"

namespace commgate::webhook {

// The collections watched (crds/commpolicies.commgate.io.yaml and
// crds/commprofiles.commgate.io.yaml: both cluster-scoped, commgate.io/v1alpha1).
constexpr const char* kCommPoliciesPath = "/apis/commgate.io/v1alpha1/commpolicies";
constexpr const char* kCommProfilesPath = "/apis/commgate.io/v1alpha1/commprofiles";
constexpr const char* kNamespacesPath = "/api/v1/namespaces";

class KubePolicySource : public PolicySource {
 public:
  struct Options {
    Logger log;                        // default: stderr
    std::function<TimePoint()> clock;  // default: system clock
    int watch_timeout_seconds = 290;
    std::chrono::milliseconds backoff_initial{200};
    std::chrono::milliseconds backoff_max{30'000};
  };

  // `client` must outlive the source.
  KubePolicySource(const kube::ApiClient& client, Options options);
  ~KubePolicySource() override;  // stop()
  KubePolicySource(const KubePolicySource&) = delete;
  KubePolicySource& operator=(const KubePolicySource&) = delete;

  void start();
  void stop();

  std::shared_ptr<const Snapshot> snapshot() const override;
  // Objects left out of the current snapshot because they do not parse.
  uint64_t rejected_objects() const { return rejected_.load(); }
  uint64_t rebuilds() const { return rebuilds_.load(); }
  // For metrics and tests: the three informers (policies, profiles, namespaces).
  std::vector<const kube::Informer*> informers() const;
  // Per watched collection (informer_metrics_text, prefix "commgate_webhook"): lists,
  // relists, restarts, errors, events, objects held and the state; and the objects left
  // out because they do not parse.
  std::string metrics_text() const override;

 private:
  void rebuild();

  const Options options_;
  std::unique_ptr<kube::Informer> policies_, profiles_, namespaces_;
  std::shared_ptr<const Snapshot> snapshot_;  // std::atomic_load / atomic_store

  std::mutex rebuild_mu_;                        // one rebuild at a time; guards reported_
  std::map<std::string, std::string> reported_;  // "kind/key" -> resourceVersion logged
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> rebuilds_{0};
};

}  // namespace commgate::webhook
