#include "webhook/policy_source.h"

#include <atomic>

namespace commgate::webhook {

StaticPolicySource::StaticPolicySource(std::shared_ptr<const Snapshot> snapshot)
    : snapshot_(std::move(snapshot)) {}

std::shared_ptr<const Snapshot> StaticPolicySource::snapshot() const {
  return std::atomic_load(&snapshot_);
}

void StaticPolicySource::set(std::shared_ptr<const Snapshot> snapshot) {
  std::atomic_store(&snapshot_, std::move(snapshot));
}

}  // namespace commgate::webhook
