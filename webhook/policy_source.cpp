#include "webhook/policy_source.h"

#include <atomic>

namespace commgate::webhook {

const CommProfile* Snapshot::profile(const std::string& name) const {
  auto it = profiles.find(name);
  return it == profiles.end() ? nullptr : &it->second;
}

const std::map<std::string, std::string>& Snapshot::labels_of(const std::string& ns) const {
  static const std::map<std::string, std::string> kNone;
  auto it = namespace_labels.find(ns);
  return it == namespace_labels.end() ? kNone : it->second;
}

StaticPolicySource::StaticPolicySource(std::shared_ptr<const Snapshot> snapshot)
    : snapshot_(std::move(snapshot)) {}

std::shared_ptr<const Snapshot> StaticPolicySource::snapshot() const {
  return std::atomic_load(&snapshot_);
}

void StaticPolicySource::set(std::shared_ptr<const Snapshot> snapshot) {
  std::atomic_store(&snapshot_, std::move(snapshot));
}

}  // namespace commgate::webhook
