#include "operator/own_writes.h"

#include "operator/object_fields.h"

namespace commgate::op {

using nlohmann::json;

namespace {

long long version_of(const json& object) {
  return detail::version_number(detail::meta_string(object, "resourceVersion"));
}

}  // namespace

void OwnWrites::remember(const std::string& path, const json& written, Keep keep) {
  Write w{version_of(written), keep == Keep::kObject ? written : json()};
  std::lock_guard lock(mu_);
  writes_[path] = std::move(w);
}

std::optional<json> OwnWrites::newer_than(const std::string& path, const json& seen) {
  std::lock_guard lock(mu_);
  const auto it = writes_.find(path);
  if (it == writes_.end()) return std::nullopt;
  if (version_of(seen) < it->second.version) return it->second.object;
  writes_.erase(it);  // the reader has caught up
  return std::nullopt;
}

void OwnWrites::forget(const std::string& path) {
  std::lock_guard lock(mu_);
  writes_.erase(path);
}

std::size_t OwnWrites::size() const {
  std::lock_guard lock(mu_);
  return writes_.size();
}

}  // namespace commgate::op
