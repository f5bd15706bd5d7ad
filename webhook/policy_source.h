// What the handlers read: an immutable Snapshot (core/snapshot.h) of the CommPolicies and
// CommProfiles (and namespace labels when known), behind a small interface so the file-backed
// source here and a Kubernetes watch cache later feed the same handlers. A source swaps in a new
// snapshot atomically on change; a handler keeps the one it started with.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"

namespace commgate::webhook {

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
