#include "kube/store.h"

#include <stdexcept>

namespace commgate::kube {
namespace {

// metadata.labels[label] when it is a string.
const std::string* label_value(const nlohmann::json& object, const std::string& label) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return nullptr;
  const auto labels = meta->find("labels");
  if (labels == meta->end() || !labels->is_object()) return nullptr;
  const auto value = labels->find(label);
  if (value == labels->end() || !value->is_string()) return nullptr;
  return value->get_ptr<const std::string*>();
}

// The keys of namespace `ns` are the range that starts with "ns/" (every key when empty).
bool in_namespace(const std::string& key, const std::string& ns) {
  return ns.empty() ||
         (key.size() > ns.size() && key[ns.size()] == '/' && key.compare(0, ns.size(), ns) == 0);
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

Store::Store() = default;

void Store::index_label(const std::string& label) {
  std::unique_lock lock(mu_);
  if (!objects_.empty() || synced_)
    throw std::logic_error("Store::index_label(" + label + ") after objects were stored");
  labels_[label];
}

void Store::index(const std::string& key, const nlohmann::json& object) {
  for (auto& [label, by_value] : labels_)
    if (const std::string* value = label_value(object, label)) by_value[*value].insert(key);
}

void Store::unindex(const std::string& key, const nlohmann::json& object) {
  for (auto& [label, by_value] : labels_) {
    const std::string* value = label_value(object, label);
    if (!value) continue;
    auto it = by_value.find(*value);
    if (it == by_value.end()) continue;
    it->second.erase(key);
    if (it->second.empty()) by_value.erase(it);
  }
}

Store::Entry Store::pack(const nlohmann::json& object) {
  Entry entry;
  nlohmann::json::to_msgpack(object, nlohmann::detail::output_adapter<char>(entry.packed));
  entry.packed.shrink_to_fit();
  entry.resource_version = resource_version_of(object);
  return entry;
}

Store::Object Store::unpack(const Entry& entry) {
  return std::make_shared<const nlohmann::json>(nlohmann::json::from_msgpack(entry.packed));
}

// What turns `before` into `after`, in key order.
std::vector<StoreChange> Store::difference(const Entries& before, const Entries& after) {
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
      if (a->second.packed != b->second.packed)
        out.push_back({StoreChange::Type::kModified, a->first});
      ++a;
      ++b;
    }
  }
  return out;
}

bool Store::replace_all(Entries fresh, std::vector<StoreChange>& changes) {
  changes = difference(objects_, fresh);
  // A relist that found exactly what was known is not a change.
  if (synced_ && changes.empty()) return false;
  objects_ = std::move(fresh);
  if (!labels_.empty()) {
    for (auto& [label, by_value] : labels_) by_value.clear();
    for (const auto& [key, entry] : objects_) index(key, *unpack(entry));
  }
  synced_ = true;
  return true;
}

bool Store::apply_locked(const WatcherEvent& event, std::vector<StoreChange>& changes) {
  switch (event.type) {
    case WatcherEvent::Type::kRestarted: {
      Entries fresh;
      for (const auto& o : event.objects) fresh[object_key(o)] = pack(o);
      return replace_all(std::move(fresh), changes);
    }
    case WatcherEvent::Type::kInit:
      listing_.emplace();
      return false;
    case WatcherEvent::Type::kInitApply:
      if (!listing_) throw std::logic_error("Store: InitApply without Init");
      (*listing_)[object_key(event.object)] = pack(event.object);
      return false;
    case WatcherEvent::Type::kInitDone: {
      if (!listing_) throw std::logic_error("Store: InitDone without Init");
      Entries fresh = std::move(*listing_);
      listing_.reset();
      return replace_all(std::move(fresh), changes);
    }
    case WatcherEvent::Type::kApplied: {
      const std::string key = object_key(event.object);
      auto it = objects_.find(key);
      // A repeat of what is held (a relist's replay, a duplicated event) is not packed.
      if (it != objects_.end() && !it->second.resource_version.empty() &&
          it->second.resource_version == resource_version_of(event.object))
        return false;
      Entry entry = pack(event.object);
      changes.push_back(
          {it == objects_.end() ? StoreChange::Type::kAdded : StoreChange::Type::kModified, key});
      if (it == objects_.end()) {
        objects_.emplace(key, std::move(entry));
      } else {
        if (!labels_.empty()) unindex(key, *unpack(it->second));
        it->second = std::move(entry);
      }
      index(key, event.object);
      return true;
    }
    case WatcherEvent::Type::kDeleted: {
      const std::string key = object_key(event.object);
      auto it = objects_.find(key);
      if (it == objects_.end()) return false;
      changes.push_back({StoreChange::Type::kDeleted, key});
      if (!labels_.empty()) unindex(key, *unpack(it->second));
      objects_.erase(it);
      return true;
    }
  }
  return false;
}

void Store::apply(const WatcherEvent& event) {
  std::vector<Handler> notify;
  std::vector<StoreChange> changes;
  {
    std::unique_lock lock(mu_);
    if (!apply_locked(event, changes)) return;
    ++version_;
    notify = handlers_;
  }
  for (const Handler& handler : notify) handler(changes);
}

bool Store::synced() const {
  std::shared_lock lock(mu_);
  return synced_;
}

uint64_t Store::version() const {
  std::shared_lock lock(mu_);
  return version_;
}

std::size_t Store::size() const {
  std::shared_lock lock(mu_);
  return objects_.size();
}

Store::Object Store::get(const std::string& key) const {
  std::shared_lock lock(mu_);
  auto it = objects_.find(key);
  return it == objects_.end() ? nullptr : unpack(it->second);
}

std::vector<Store::Object> Store::list(const std::string& ns) const {
  std::shared_lock lock(mu_);
  std::vector<Object> out;
  auto it = ns.empty() ? objects_.begin() : objects_.lower_bound(ns + "/");
  for (; it != objects_.end() && in_namespace(it->first, ns); ++it)
    out.push_back(unpack(it->second));
  return out;
}

std::optional<std::vector<Store::Object>> Store::with_label(const std::string& ns,
                                                            const std::string& label,
                                                            const std::string& value) const {
  std::shared_lock lock(mu_);
  auto index = labels_.find(label);
  if (index == labels_.end()) return std::nullopt;
  std::vector<Object> out;
  auto keys = index->second.find(value);
  if (keys == index->second.end()) return out;
  auto it = ns.empty() ? keys->second.begin() : keys->second.lower_bound(ns + "/");
  for (; it != keys->second.end() && in_namespace(*it, ns); ++it)
    out.push_back(unpack(objects_.at(*it)));
  return out;
}

std::shared_ptr<const Store::Objects> Store::snapshot() const {
  std::shared_lock lock(mu_);
  auto out = std::make_shared<Objects>();
  for (const auto& [key, entry] : objects_) out->emplace_hint(out->end(), key, unpack(entry));
  return out;
}

void Store::subscribe(Handler handler) {
  std::unique_lock lock(mu_);
  handlers_.push_back(std::move(handler));
}

Store::Objects stored_objects(const std::map<std::string, nlohmann::json>& objects) {
  Store::Objects out;
  for (const auto& [key, object] : objects)
    out[key] = std::make_shared<const nlohmann::json>(object);
  return out;
}

}  // namespace commgate::kube
