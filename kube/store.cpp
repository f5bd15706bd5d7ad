#include "kube/store.h"

namespace commgate::kube {
namespace {

// What turns `before` into `after`, in key order.
std::vector<StoreChange> difference(const Store::Objects& before, const Store::Objects& after) {
  std::vector<StoreChange> out;
  auto b = before.begin();
  auto a = after.begin();
  while (b != before.end() || a != after.end()) {
    if (a == after.end() || (b != before.end() && b->first < a->first)) {
      out.push_back({StoreChange::Type::kDeleted, b->first});
      ++b;
    } else if (b == before.end() || a->first < b->first) {
      out.push_back({StoreChange::Type::kAdded, a->first});
      ++a;
    } else {
      if (a->second != b->second && *a->second != *b->second)
        out.push_back({StoreChange::Type::kModified, a->first});
      ++a;
      ++b;
    }
  }
  return out;
}

}  // namespace

const char* to_string(StoreChange::Type type) {
  switch (type) {
    case StoreChange::Type::kAdded:
      return "added";
    case StoreChange::Type::kModified:
      return "modified";
    case StoreChange::Type::kDeleted:
      return "deleted";
  }
  return "unknown";
}

Store::Store() : objects_(std::make_shared<Objects>()) {}

void Store::apply(const WatcherEvent& event) {
  std::vector<Handler> notify;
  std::vector<StoreChange> changes;
  {
    std::lock_guard lock(mu_);
    std::shared_ptr<Objects> next;
    switch (event.type) {
      case WatcherEvent::Type::kRestarted: {
        auto fresh = std::make_shared<Objects>();
        for (const auto& o : event.objects)
          (*fresh)[object_key(o)] = std::make_shared<const nlohmann::json>(o);
        changes = difference(*objects_, *fresh);
        // A relist that found exactly what was known is not a change.
        if (synced_ && changes.empty()) return;
        next = std::move(fresh);
        synced_ = true;
        break;
      }
      case WatcherEvent::Type::kApplied: {
        const std::string key = object_key(event.object);
        auto it = objects_->find(key);
        if (it != objects_->end() && !resource_version_of(event.object).empty() &&
            resource_version_of(*it->second) == resource_version_of(event.object))
          return;
        changes.push_back(
            {it == objects_->end() ? StoreChange::Type::kAdded : StoreChange::Type::kModified,
             key});
        next = std::make_shared<Objects>(*objects_);
        (*next)[key] = std::make_shared<const nlohmann::json>(event.object);
        break;
      }
      case WatcherEvent::Type::kDeleted: {
        const std::string key = object_key(event.object);
        if (!objects_->count(key)) return;
        changes.push_back({StoreChange::Type::kDeleted, key});
        next = std::make_shared<Objects>(*objects_);
        next->erase(key);
        break;
      }
    }
    objects_ = std::move(next);
    ++version_;
    notify = handlers_;
  }
  for (const Handler& handler : notify) handler(changes);
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
  return it->second;  // the object alone, not the whole snapshot, lives as long as it is held
}

void Store::subscribe(Handler handler) {
  std::lock_guard lock(mu_);
  handlers_.push_back(std::move(handler));
}

Store::Objects stored_objects(const std::map<std::string, nlohmann::json>& objects) {
  Store::Objects out;
  for (const auto& [key, object] : objects)
    out[key] = std::make_shared<const nlohmann::json>(object);
  return out;
}

}  // namespace commgate::kube
