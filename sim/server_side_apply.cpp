#include "sim/server_side_apply.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "core/time_format.h"
#include "sim/api_status.h"
#include "sim/managed_fields.h"

namespace commgate::sim {
namespace {

using nlohmann::json;

// Where a walk is in the type: a schema node, or none. `builtin`: no schema, objects are
// structs (built-in kinds; a CR's metadata); otherwise no schema means a deduced type
// (x-kubernetes-preserve-unknown-fields), whose maps have no fields and lists are atomic.
struct SsaShape {
  const json* schema = nullptr;
  bool builtin = false;
  bool root = false;
  std::string name;  // the field this value is in (built-in list markers)
};

SsaShape ssa_child(const SsaShape& s, const std::string& key) {
  if (s.root && key == "metadata") return {nullptr, true, false, key};
  if (s.builtin || s.schema == nullptr) return {nullptr, s.builtin, false, key};
  const json& sc = *s.schema;
  if (sc.contains("properties") && sc["properties"].is_object() && sc["properties"].contains(key))
    return {&sc["properties"][key], false, false, key};
  if (sc.contains("additionalProperties") && sc["additionalProperties"].is_object())
    return {&sc["additionalProperties"], false, false, key};
  return {nullptr, false, false, key};
}

SsaShape ssa_item(const SsaShape& s) {
  if (s.builtin || s.schema == nullptr) return {nullptr, s.builtin, false, ""};
  if (s.schema->contains("items") && (*s.schema)["items"].is_object())
    return {&(*s.schema)["items"], false, false, ""};
  return {nullptr, false, false, ""};
}

bool ssa_is_field(const SsaShape& s, const std::string& key) {
  if (s.builtin) return true;
  if (s.root && (key == "metadata" || key == "apiVersion" || key == "kind")) return true;
  if (s.schema == nullptr) return false;
  const json& sc = *s.schema;
  return sc.contains("properties") && sc["properties"].is_object() &&
         sc["properties"].contains(key);
}

bool ssa_atomic_map(const SsaShape& s) {
  return s.schema != nullptr && s.schema->value("x-kubernetes-map-type", "") == "atomic";
}

struct SsaListKind {
  enum Type { kAtomic, kMap, kSet } type = kAtomic;
  std::vector<std::string> keys;
};

SsaListKind ssa_declared_list_kind(const SsaShape& s) {
  SsaListKind k;
  if (s.builtin) {
    static const std::map<std::string, std::string> kByName = {
        {"containers", "name"},    {"initContainers", "name"}, {"ephemeralContainers", "name"},
        {"env", "name"},           {"volumes", "name"},        {"volumeMounts", "mountPath"},
        {"ownerReferences", "uid"}};
    if (auto it = kByName.find(s.name); it != kByName.end()) {
      k.type = SsaListKind::kMap;
      k.keys = {it->second};
    } else if (s.name == "finalizers") {
      k.type = SsaListKind::kSet;
    }
    return k;
  }
  if (s.schema == nullptr) return k;
  const std::string type = s.schema->value("x-kubernetes-list-type", "atomic");
  if (type == "set") k.type = SsaListKind::kSet;
  if (type == "map") {
    k.type = SsaListKind::kMap;
    const json keys = s.schema->value("x-kubernetes-list-map-keys", json::array());
    for (const auto& key : keys)
      if (key.is_string()) k.keys.push_back(key.get<std::string>());
    if (k.keys.empty()) k.type = SsaListKind::kAtomic;
  }
  return k;
}

// The path element of a list item; nullopt where it has none (the list is then atomic).
std::optional<std::string> ssa_item_element(const SsaListKind& k, const json& item) {
  if (k.type == SsaListKind::kSet) {
    if (item.is_object() || item.is_array()) return std::nullopt;
    return value_element(item);
  }
  if (!item.is_object()) return std::nullopt;
  json keys = json::object();
  for (const auto& key : k.keys) {
    if (!item.contains(key)) return std::nullopt;
    keys[key] = item[key];
  }
  return key_element(keys);
}

// The list's kind as these values allow it: a declared map or set whose items do not
// all have an element is atomic.
SsaListKind ssa_list_kind(const SsaShape& s, std::initializer_list<const json*> values) {
  SsaListKind k = ssa_declared_list_kind(s);
  if (k.type == SsaListKind::kAtomic) return k;
  for (const json* v : values)
    if (v != nullptr && v->is_array())
      for (const auto& item : *v)
        if (!ssa_item_element(k, item)) return SsaListKind{};
  return k;
}

// typed/tofieldset.go
void ssa_to_field_set(const json& v, const SsaShape& s, FieldPath& path, FieldSet& out) {
  if (v.is_object()) {
    if (ssa_atomic_map(s)) {
      if (!path.empty()) out.insert(path);
      return;
    }
    for (const auto& [key, child] : v.items()) {
      path.push_back(field_element(key));
      ssa_to_field_set(child, ssa_child(s, key), path, out);
      if (child.is_null() || (child.is_object() && child.empty()) || !ssa_is_field(s, key))
        out.insert(path);
      path.pop_back();
    }
    return;
  }
  if (v.is_array()) {
    const SsaListKind k = ssa_list_kind(s, {&v});
    if (k.type == SsaListKind::kAtomic) {
      out.insert(path);
      return;
    }
    std::set<std::string> seen;
    for (const auto& item : v) {
      const std::string pe = *ssa_item_element(k, item);
      if (!seen.insert(pe).second) continue;
      path.push_back(pe);
      ssa_to_field_set(item, ssa_item(s), path, out);
      out.insert(path);
      path.pop_back();
    }
    return;
  }
  if (!path.empty()) out.insert(path);
}

struct SsaComparison {
  FieldSet added, modified, removed;
};

// typed/compare.go: l or r null means absent.
void ssa_compare(const json* l, const json* r, const SsaShape& s, FieldPath& path,
                 SsaComparison& cmp) {
  auto leaf = [&] {
    if (path.empty()) return;
    if (l == nullptr) {
      cmp.added.insert(path);
    } else if (r == nullptr) {
      cmp.removed.insert(path);
    } else if (*l != *r) {
      cmp.modified.insert(path);
    }
  };
  const json* any = r != nullptr ? r : l;
  const bool same_kind =
      l == nullptr || r == nullptr || l->type() == r->type() || (l->is_number() && r->is_number());
  auto empty_or_absent = [](const json* v) { return v == nullptr || v->empty(); };
  if (!same_kind || !(any->is_object() || any->is_array())) return leaf();
  if (any->is_object()) {
    if (ssa_atomic_map(s) || (empty_or_absent(l) && empty_or_absent(r))) return leaf();
    std::set<std::string> keys;
    if (l != nullptr)
      for (const auto& [k, v] : l->items()) keys.insert(k);
    if (r != nullptr)
      for (const auto& [k, v] : r->items()) keys.insert(k);
    for (const auto& k : keys) {
      const json* lc = l != nullptr && l->contains(k) ? &(*l)[k] : nullptr;
      const json* rc = r != nullptr && r->contains(k) ? &(*r)[k] : nullptr;
      path.push_back(field_element(k));
      ssa_compare(lc, rc, ssa_child(s, k), path, cmp);
      path.pop_back();
    }
  } else {
    const SsaListKind k = ssa_list_kind(s, {l, r});
    if (k.type == SsaListKind::kAtomic || (empty_or_absent(l) && empty_or_absent(r))) return leaf();
    std::map<std::string, const json*> lv, rv;
    std::vector<std::string> order;
    for (const json* side : {l, r}) {
      if (side == nullptr) continue;
      auto& into = side == l ? lv : rv;
      for (const auto& item : *side) {
        const std::string pe = *ssa_item_element(k, item);
        if (into.count(pe)) continue;
        into[pe] = &item;
        if (std::find(order.begin(), order.end(), pe) == order.end()) order.push_back(pe);
      }
    }
    for (const auto& pe : order) {
      path.push_back(pe);
      ssa_compare(lv.count(pe) ? lv[pe] : nullptr, rv.count(pe) ? rv[pe] : nullptr, ssa_item(s),
                  path, cmp);
      path.pop_back();
    }
  }
  if (path.empty()) return;
  if (l == nullptr) cmp.added.insert(path);
  if (r == nullptr) cmp.removed.insert(path);
}

// typed/merge.go: the applied configuration over the live object.
json ssa_merge(const json& live, const json& config, const SsaShape& s) {
  if (live.is_object() && config.is_object() && !ssa_atomic_map(s)) {
    json out = live;
    for (const auto& [k, v] : config.items())
      out[k] = live.contains(k) ? ssa_merge(live[k], v, ssa_child(s, k)) : v;
    return out;
  }
  if (live.is_array() && config.is_array()) {
    const SsaListKind k = ssa_list_kind(s, {&live, &config});
    if (k.type == SsaListKind::kAtomic) return config;
    json out = live;
    for (const auto& item : config) {
      const std::string pe = *ssa_item_element(k, item);
      bool found = false;
      for (auto& existing : out)
        if (*ssa_item_element(k, existing) == pe) {
          existing = ssa_merge(existing, item, ssa_item(s));
          found = true;
          break;
        }
      if (!found) out.push_back(item);
    }
    return out;
  }
  return config;
}

// typed/remove.go: `v` without the members of `set`; null where nothing is left.
json ssa_remove(const json& v, const FieldSet& set, const SsaShape& s) {
  if (v.is_object() && !ssa_atomic_map(s)) {
    json out = json::object();
    for (const auto& [k, child] : v.items()) {
      auto it = set.children.find(field_element(k));
      if (it == set.children.end()) {
        out[k] = child;
        continue;
      }
      if (it->second.member) continue;
      json kept = ssa_remove(child, it->second, ssa_child(s, k));
      if (!kept.is_null()) out[k] = std::move(kept);
    }
    return out.empty() ? json() : out;
  }
  if (v.is_array()) {
    const SsaListKind k = ssa_list_kind(s, {&v});
    if (k.type == SsaListKind::kAtomic) return v;
    json out = json::array();
    for (const auto& item : v) {
      auto it = set.children.find(*ssa_item_element(k, item));
      if (it == set.children.end()) {
        out.push_back(item);
        continue;
      }
      if (it->second.member) continue;
      out.push_back(ssa_remove(item, it->second, ssa_item(s)));
    }
    return out.empty() ? json() : out;
  }
  return v;
}

// One managedFields entry.
struct SsaManager {
  std::string manager, operation, api_version, time, subresource;
  FieldSet set;
};

// buildmanagerinfo.go: appliers are one manager whatever their version.
std::string ssa_id(const std::string& manager, const std::string& operation,
                   const std::string& api_version, const std::string& subresource) {
  return manager + '\x1f' + operation + '\x1f' + (operation == "Apply" ? "" : api_version) +
         '\x1f' + subresource;
}

std::string ssa_id(const SsaManager& m) {
  return ssa_id(m.manager, m.operation, m.api_version, m.subresource);
}

using SsaManagers = std::map<std::string, SsaManager>;

// An empty result for what does not decode (upstream: emptyManagedFieldsOnErr).
SsaManagers ssa_decode(const json& entries) {
  SsaManagers out;
  if (!entries.is_array()) return out;
  try {
    for (const auto& e : entries) {
      if (!e.is_object() || e.value("fieldsType", "") != "FieldsV1") return {};
      SsaManager m;
      m.manager = e.value("manager", "");
      m.operation = e.value("operation", "");
      m.api_version = e.value("apiVersion", "");
      // Decoded as metav1.Time: written back in UTC with seconds ("...Z").
      const auto time = parse_rfc3339(e.value("time", ""));
      m.time = time ? format_rfc3339(*time) : "";
      m.subresource = e.value("subresource", "");
      m.set = from_fields_v1(e.value("fieldsV1", json::object()));
      out[ssa_id(m)] = std::move(m);
    }
  } catch (const std::exception&) {
    return {};
  }
  return out;
}

// managedfields.go: sorted by operation, time, manager, apiVersion, subresource.
json ssa_encode(const SsaManagers& managers) {
  std::vector<const SsaManager*> sorted;
  for (const auto& [id, m] : managers)
    if (!m.set.empty()) sorted.push_back(&m);
  std::sort(sorted.begin(), sorted.end(), [](const SsaManager* a, const SsaManager* b) {
    return std::tie(a->operation, a->time, a->manager, a->api_version, a->subresource) <
           std::tie(b->operation, b->time, b->manager, b->api_version, b->subresource);
  });
  json out = json::array();
  for (const SsaManager* m : sorted) {
    json e = {{"manager", m->manager},
              {"operation", m->operation},
              {"apiVersion", m->api_version},
              {"fieldsType", "FieldsV1"},
              {"fieldsV1", to_fields_v1(m->set)}};
    if (!m->time.empty()) e["time"] = m->time;
    if (!m->subresource.empty()) e["subresource"] = m->subresource;
    out.push_back(std::move(e));
  }
  return out;
}

json ssa_stripped(const json& object) {
  json out = object.is_object() ? object : json::object();
  if (out.contains("metadata") && out["metadata"].is_object())
    out["metadata"].erase("managedFields");
  return out;
}

// stripmeta.go plus the strategy's reset fields: what no manager owns in this write.
FieldSet ssa_owned_part(const FieldSet& set, const ManagedFieldsContext& ctx) {
  FieldSet strip;
  for (const char* k : {"apiVersion", "kind", "metadata"}) strip.insert({field_element(k)});
  for (const char* k : {"name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
                        "generation", "managedFields", "resourceVersion"})
    strip.insert({field_element("metadata"), field_element(k)});
  FieldSet out = field_set_difference(set, strip);
  if (ctx.subresource == "status") {
    FieldSet status_only;
    auto it = out.children.find(field_element("status"));
    if (it != out.children.end()) status_only.children[it->first] = it->second;
    return status_only;
  }
  if (ctx.status_subresource) {
    FieldSet status;
    status.insert({field_element("status")});
    out = field_set_recursive_difference(out, status);
  }
  return out;
}

SsaShape ssa_root(const ManagedFieldsContext& ctx) {
  return {ctx.schema, ctx.schema == nullptr, true, ""};
}

FieldSet ssa_fields_of(const json& object, const ManagedFieldsContext& ctx) {
  FieldSet set;
  FieldPath path;
  ssa_to_field_set(object, ssa_root(ctx), path, set);
  return ssa_owned_part(set, ctx);
}

SsaComparison ssa_diff(const json& live, const json& next, const ManagedFieldsContext& ctx) {
  SsaComparison cmp;
  FieldPath path;
  ssa_compare(&live, &next, ssa_root(ctx), path, cmp);
  cmp.added = ssa_owned_part(cmp.added, ctx);
  cmp.modified = ssa_owned_part(cmp.modified, ctx);
  cmp.removed = ssa_owned_part(cmp.removed, ctx);
  return cmp;
}

// merge/conflict.go and apiserver's internal/conflict.go.
std::string ssa_print_manager(const SsaManager& m) {
  const std::string name = json(m.manager).dump();
  if (m.operation == "Update") return name + " using " + m.api_version;
  return name;
}

ApiError ssa_conflict_error(const std::vector<std::pair<const SsaManager*, FieldPath>>& conflicts) {
  json causes = json::array();
  for (const auto& [m, path] : conflicts)
    causes.push_back({{"type", "FieldManagerConflict"},
                      {"message", "conflict with " + ssa_print_manager(*m)},
                      {"field", path_string(path)}});
  std::string message;
  if (conflicts.size() == 1) {
    message = "Apply failed with 1 conflict: conflict with " +
              ssa_print_manager(*conflicts[0].first) + ": " + path_string(conflicts[0].second);
  } else {
    // Grouped by manager, the managers sorted by their identifier (a JSON document
    // upstream, whose first field is the manager's name).
    std::map<std::string, std::vector<std::string>> by_manager;
    std::map<std::string, const SsaManager*> who;
    for (const auto& [m, path] : conflicts) {
      const std::string id = ssa_id(*m);
      by_manager[id].push_back(path_string(path));
      who[id] = m;
    }
    std::string lines;
    for (const auto& [id, paths] : by_manager) {
      lines += (lines.empty() ? "" : "\n") + std::string("conflicts with ") +
               ssa_print_manager(*who[id]) + ":";
      for (const auto& p : paths) lines += "\n- " + p;
    }
    message = "Apply failed with " + std::to_string(conflicts.size()) + " conflicts: " + lines;
  }
  json status = failure_status(409, "Conflict", message);
  status["details"] = {{"causes", causes}};
  return ApiError(status);
}

// merge/update.go update(): the other managers lose what this write removed and, with
// force, what it changed of theirs; without force that is a conflict.
void ssa_update_others(SsaManagers& managers, const std::string& self, const SsaComparison& cmp,
                       bool force) {
  const FieldSet changed = field_set_union(cmp.modified, cmp.added);
  std::vector<std::pair<const SsaManager*, FieldPath>> conflicts;
  std::map<std::string, FieldSet> taken;
  for (auto& [id, m] : managers) {
    if (id == self) continue;
    FieldSet c = field_set_intersection(m.set, changed);
    if (c.empty()) continue;
    for (const auto& p : c.paths()) conflicts.emplace_back(&m, p);
    taken[id] = std::move(c);
  }
  if (!force && !conflicts.empty()) throw ssa_conflict_error(conflicts);
  for (auto& [id, m] : managers) {
    if (id == self) continue;
    if (taken.count(id)) m.set = field_set_difference(m.set, taken[id]);
    m.set = field_set_difference(m.set, cmp.removed);
  }
  for (auto it = managers.begin(); it != managers.end();)
    it = it->second.set.empty() ? managers.erase(it) : std::next(it);
}

void ssa_set_managed_fields(json& object, const SsaManagers& managers) {
  const json encoded = ssa_encode(managers);
  if (!object.contains("metadata") || !object["metadata"].is_object())
    object["metadata"] = json::object();
  if (encoded.empty()) {
    object["metadata"].erase("managedFields");
  } else {
    object["metadata"]["managedFields"] = encoded;
  }
}

}  // namespace

ManagedFieldsContext managed_fields_context(const ResourceInfo& r, const std::string& subresource) {
  ManagedFieldsContext ctx;
  ctx.schema = r.custom && r.schema ? r.schema.get() : nullptr;
  ctx.api_version = r.api_version();
  ctx.subresource = subresource;
  ctx.status_subresource = r.status_subresource;
  ctx.now = format_rfc3339(Clock::now());
  return ctx;
}

std::string field_manager_name(const std::string& field_manager, const std::string& user_agent) {
  if (!field_manager.empty()) return field_manager;
  return user_agent.substr(0, user_agent.find('/'));
}

json track_update(const json& live, json next, const std::string& manager,
                  const ManagedFieldsContext& ctx) {
  // fieldmanager.go decodeLiveOrNew: a subresource write keeps the live entries; a request
  // that sends managedFields: [] resets them; other entries it sends replace the live ones.
  const json live_entries = live.is_object() && live.contains("metadata")
                                ? live["metadata"].value("managedFields", json::array())
                                : json::array();
  SsaManagers managers;
  const json* sent = next.contains("metadata") && next["metadata"].is_object() &&
                             next["metadata"].contains("managedFields")
                         ? &next["metadata"]["managedFields"]
                         : nullptr;
  if (!ctx.subresource.empty() || sent == nullptr) {
    managers = ssa_decode(live_entries);
  } else if (sent->is_array() && sent->empty()) {
    managers = {};
  } else {
    managers = ssa_decode(*sent);
    if (managers.empty()) managers = ssa_decode(live_entries);
  }
  // skipnonapplied.go: an object that exists without managedFields is not tracked by an
  // Update (only a create starts the tracking).
  if (managers.empty() && !live.is_null()) {
    ssa_set_managed_fields(next, managers);
    return next;
  }
  const json live_s = ssa_stripped(live);
  const json next_s = ssa_stripped(next);
  const SsaComparison cmp = ssa_diff(live_s, next_s, ctx);
  // managedfieldsupdater.go: the write as "current-operation", which owns what it changed.
  const std::string self = ssa_id(manager, "Update", ctx.api_version, ctx.subresource);
  const FieldSet changed = field_set_union(cmp.modified, cmp.added);
  ssa_update_others(managers, "", cmp, /*force=*/true);
  if (!changed.empty()) {
    SsaManager& m = managers[self];
    m.manager = manager;
    m.operation = "Update";
    m.api_version = ctx.api_version;
    m.subresource = ctx.subresource;
    m.set = field_set_union(m.set, changed);
    m.time = ctx.now;
  }
  ssa_set_managed_fields(next, managers);
  return next;
}

json apply_configuration(const json& live, const json& config, const std::string& manager,
                         bool force, const ManagedFieldsContext& ctx) {
  SsaManagers managers;
  const json live_s = ssa_stripped(live);
  if (!live.is_null()) {
    managers = ssa_decode(live_s.is_object() && live.contains("metadata")
                              ? live["metadata"].value("managedFields", json::array())
                              : json::array());
    if (managers.empty()) {
      // An object no manager tracked: all it has belongs to "before-first-apply".
      SsaManager m{"before-first-apply",      "Update", ctx.api_version, "", ctx.subresource,
                   ssa_fields_of(live_s, ctx)};
      if (!m.set.empty()) managers[ssa_id(m)] = m;
    }
  }
  const json config_s = ssa_stripped(config);
  json next = ssa_merge(live_s, config_s, ssa_root(ctx));
  const std::string self = ssa_id(manager, "Apply", ctx.api_version, ctx.subresource);
  const FieldSet last = managers.count(self) ? managers[self].set : FieldSet{};
  std::string last_time = managers.count(self) ? managers[self].time : "";
  managers[self] = {manager,   "Apply",         ctx.api_version,
                    last_time, ctx.subresource, ssa_fields_of(config_s, ctx)};
  if (!last.empty()) {
    // merge/update.go prune: what this manager applied last time and no longer does,
    // unless some manager (this one included) still owns it or something below it.
    FieldSet owned;
    for (const auto& [id, m] : managers) owned = field_set_union(owned, m.set);
    FieldSet drop;
    for (const auto& p : last.paths())
      if (!owned.has(p) && !owned.has_member_below(p)) drop.insert(p);
    if (!drop.empty()) {
      json pruned = ssa_remove(next, drop, ssa_root(ctx));
      next = pruned.is_null() ? json::object() : pruned;
    }
  }
  const SsaComparison cmp = ssa_diff(live_s, next, ctx);
  ssa_update_others(managers, self, cmp, force);
  if (live_s != next || managers[self].time.empty()) managers[self].time = ctx.now;
  ssa_set_managed_fields(next, managers);
  return next;
}

}  // namespace commgate::sim
