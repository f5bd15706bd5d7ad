#include "kube/store.h"

namespace commgate::kube {

Store::Store() : objects_(std::make_shared<Objects>()) {}

void Store::apply(const WatcherEvent& event) {
  std::function<void()> notify;
  {
    std::lock_guard lock(mu_);
    std::shared_ptr<Objects> next;
    switch (event.type) {
      case WatcherEvent::Type::kRestarted: {
        auto fresh = std::make_shared<Objects>();
        for (const auto& o : event.objects) (*fresh)[object_key(o)] = o;
        // A relist that found exactly what was known is not a change.
        if (synced_ && *fresh == *objects_) return;
        next = std::move(fresh);
        synced_ = true;
        break;
      }
      case WatcherEvent::Type::kApplied: {
        const std::string key = object_key(event.object);
        auto it = objects_->find(key);
        if (it != objects_->end() && !resource_version_of(event.object).empty() &&
            resource_version_of(it->second) == resource_version_of(event.object))
          return;
        next = std::make_shared<Objects>(*objects_);
        (*next)[key] = event.object;
        break;
      }
      case WatcherEvent::Type::kDeleted: {
        const std::string key = object_key(event.object);
        if (!objects_->count(key)) return;
        next = std::make_shared<Objects>(*objects_);
        next->erase(key);
        break;
      }
    }
    objects_ = std::move(next);
    ++version_;
    notify = on_change_;
  }
  if (notify) notify();
}

bool Store::synced() const {
  std::lock_guard lock(mu_);
  return synced_;
}

uint64_t Store::version() const {
  std::lock_guard lock(mu_);
  return version_;
}

std::shared_ptr<const Store::Objects> Store::snapshot() const {
  std::lock_guard lock(mu_);
  return objects_;
}

std::shared_ptr<const nlohmann::json> Store::get(const std::string& key) const {
  auto objects = snapshot();
  auto it = objects->find(key);
  if (it == objects->end()) return nullptr;
  // Shares ownership of the snapshot, so the object lives as long as the caller holds it.
  return std::shared_ptr<const nlohmann::json>(objects, &it->second);
}

void Store::on_change(std::function<void()> callback) {
  std::lock_guard lock(mu_);
  on_change_ = std::move(callback);
}

}  // namespace commgate::kube
