#include "operator/conditions.h"

namespace commgate::op {

using nlohmann::json;

const json* find_condition(const json& conditions, const std::string& type) {
  if (!conditions.is_array()) return nullptr;
  for (const json& c : conditions) {
    if (c.is_object() && c.value("type", "") == type) return &c;
  }
  return nullptr;
}

bool condition_is(const json& conditions, const std::string& type, const std::string& status) {
  const json* c = find_condition(conditions, type);
  return c && c->value("status", "") == status;
}

namespace {

std::string string_field(const json& entry, const char* key) {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

StoredCondition stored_condition_of(const json& entry) {
  StoredCondition c;
  c.type = string_field(entry, "type");
  c.status = string_field(entry, "status");
  c.reason = string_field(entry, "reason");
  c.message = string_field(entry, "message");
  const auto generation = entry.find("observedGeneration");
  if (generation != entry.end() && generation->is_number_integer())
    c.observed_generation = generation->get<int64_t>();
  c.last_transition_time = string_field(entry, "lastTransitionTime");
  return c;
}

}  // namespace

json stored_condition_json(const StoredCondition& c) {
  return {{"type", c.type},
          {"status", c.status},
          {"reason", c.reason},
          {"message", c.message},
          {"observedGeneration", c.observed_generation},
          {"lastTransitionTime", c.last_transition_time}};
}

StoredCondition next_condition(const StoredCondition* existing, const Condition& wanted,
                               TimePoint now) {
  StoredCondition next{
      wanted.type,        wanted.status, wanted.reason, wanted.message, wanted.observed_generation,
      format_rfc3339(now)};
  if (existing != nullptr && existing->status == wanted.status &&
      !existing->last_transition_time.empty())
    next.last_transition_time = existing->last_transition_time;
  return next;
}

Conditions Conditions::from_json(const json& conditions) {
  Conditions out;
  if (!conditions.is_array()) return out;
  for (const json& entry : conditions) {
    if (!entry.is_object()) continue;
    StoredCondition c = stored_condition_of(entry);
    if (c.type.empty() || out.find(c.type) != nullptr) continue;
    out.entries_.push_back(std::move(c));
  }
  return out;
}

json Conditions::to_json() const {
  json out = json::array();
  for (const StoredCondition& c : entries_) out.push_back(stored_condition_json(c));
  return out;
}

bool Conditions::set(const Condition& wanted, TimePoint now) {
  for (StoredCondition& c : entries_) {
    if (c.type != wanted.type) continue;
    StoredCondition next = next_condition(&c, wanted, now);
    if (next == c) return false;
    c = std::move(next);
    return true;
  }
  entries_.push_back(next_condition(nullptr, wanted, now));
  return true;
}

bool Conditions::remove(const std::string& type) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->type == type) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

const StoredCondition* Conditions::find(const std::string& type) const {
  for (const StoredCondition& c : entries_)
    if (c.type == type) return &c;
  return nullptr;
}

bool Conditions::is(const std::string& type, const std::string& status) const {
  const StoredCondition* c = find(type);
  return c != nullptr && c->status == status;
}

void Conditions::carry_generation(int64_t from, int64_t to) {
  for (StoredCondition& c : entries_)
    if (c.observed_generation == from) c.observed_generation = to;
}

bool set_condition(json& conditions, const Condition& wanted, TimePoint now) {
  if (!conditions.is_array()) conditions = json::array();
  for (json& c : conditions) {
    if (!c.is_object() || c.value("type", "") != wanted.type) continue;
    const StoredCondition existing = stored_condition_of(c);
    // Fields a newer writer added are kept; the six of metav1.Condition are replaced.
    json entry = c;
    const json next = stored_condition_json(next_condition(&existing, wanted, now));
    for (const auto& [key, value] : next.items()) entry[key] = value;
    if (c == entry) return false;
    c = std::move(entry);
    return true;
  }
  conditions.push_back(stored_condition_json(next_condition(nullptr, wanted, now)));
  return true;
}

bool remove_condition(json& conditions, const std::string& type) {
  if (!conditions.is_array()) return false;
  for (auto it = conditions.begin(); it != conditions.end(); ++it) {
    if (it->is_object() && it->value("type", "") == type) {
      conditions.erase(it);
      return true;
    }
  }
  return false;
}

}  // namespace commgate::op
