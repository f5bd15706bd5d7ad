// What the handlers read: an immutable snapshot of the CommPolicies and CommProfiles (and
// namespace labels when known), behind a small interface so the file-backed source here
// and a Kubernetes watch cache later feed the same handlers. A source swaps in a new
// snapshot atomically on change; a handler keeps the one it started with.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/comm_policy.h"
#include "core/comm_profile.h"
#include "core/time_format.h"

namespace commgate::webhook {

struct Snapshot {
  std::vector<CommPolicy> policies;
  std::map<std::string, CommProfile> profiles;  // by metadata.name (pool_name())
  // Labels by namespace name, for policies' namespaceSelector. A namespace not listed
  // reads as having no labels.
  std::map<std::string, std::map<std::string, std::string>> namespace_labels;
  TimePoint loaded_at{};  // when this snapshot was built (for the snapshot-age metric)

  const CommProfile* profile(const std::string& name) const;
  const std::map<std::string, std::string>& labels_of(const std::string& ns) const;
};

class PolicySource {
 public:
  virtual ~PolicySource() = default;
  // The current snapshot; null until the first load has completed (readyz says so).
  virtual std::shared_ptr<const Snapshot> snapshot() const = 0;
  // The source's own health in Prometheus text format, appended to /metrics (watch
  // counters, reload failures); "" when it has none.
  virtual std::string metrics_text() const { return {}; }
};

// A source holding one snapshot set by hand: for tests and for running without policies.
class StaticPolicySource : public PolicySource {
 public:
  explicit StaticPolicySource(std::shared_ptr<const Snapshot> snapshot);
  std::shared_ptr<const Snapshot> snapshot() const override;
  void set(std::shared_ptr<const Snapshot> snapshot);

 private:
  std::shared_ptr<const Snapshot> snapshot_;  // read and written with std::atomic_load/store
};

}  // namespace commgate::webhook
