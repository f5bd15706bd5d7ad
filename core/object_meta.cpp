#include "core/object_meta.h"

namespace commgate {

ObjectMeta read_object_meta(ObjectReader& root, bool require_name) {
  ObjectMeta m;
  auto meta = root.object("metadata", Presence::kRequired);
  auto name = meta.string("name", require_name ? Presence::kRequired : Presence::kOptional);
  if (name) {
    // DNS subdomain rules (RFC 1123), as the apiserver applies to object names.
    bool ok = name->size() <= 253;
    for (char c : *name) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) ok = false;
    }
    if (ok && (name->front() == '-' || name->front() == '.' || name->back() == '-' ||
               name->back() == '.')) {
      ok = false;
    }
    if (!ok) {
      meta.errors().add(meta.path_of("name"),
                        "must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; start and end "
                        "alphanumeric; at most 253 characters), got \"" +
                            *name + "\"");
    } else {
      m.name = *name;
    }
  }
  m.namespace_ = meta.string("namespace", Presence::kOptional).value_or("");
  m.uid = meta.string("uid", Presence::kOptional, true).value_or("");
  m.resource_version = meta.string("resourceVersion", Presence::kOptional, true).value_or("");
  m.generation = meta.integer("generation", Presence::kOptional, 0).value_or(0);
  if (auto ts = meta.string("creationTimestamp", Presence::kOptional)) {
    m.creation_timestamp = parse_rfc3339(*ts);
    if (!m.creation_timestamp)
      meta.errors().add(meta.path_of("creationTimestamp"), "must be an RFC 3339 time");
  }
  m.labels =
      meta.string_map("labels", Presence::kOptional).value_or(std::map<std::string, std::string>{});
  m.annotations = meta.string_map("annotations", Presence::kOptional)
                      .value_or(std::map<std::string, std::string>{});
  // The rest of ObjectMeta belongs to the apiserver; it is not ours to judge.
  return m;
}

bool check_type_meta(ObjectReader& root, const std::string& api_version, const std::string& kind) {
  bool ok = true;
  auto av = root.string("apiVersion", Presence::kRequired);
  if (av && *av != api_version) {
    root.errors().add("apiVersion", "must be " + api_version + ", got \"" + *av + "\"");
    ok = false;
  }
  auto k = root.string("kind", Presence::kRequired);
  if (k && *k != kind) {
    root.errors().add("kind", "must be " + kind + ", got \"" + *k + "\"");
    ok = false;
  }
  return ok && av && k;
}

nlohmann::json object_meta_to_json(const ObjectMeta& m) {
  nlohmann::json j = nlohmann::json::object();
  if (!m.name.empty()) j["name"] = m.name;
  if (!m.namespace_.empty()) j["namespace"] = m.namespace_;
  if (!m.uid.empty()) j["uid"] = m.uid;
  if (!m.resource_version.empty()) j["resourceVersion"] = m.resource_version;
  if (m.generation) j["generation"] = m.generation;
  if (m.creation_timestamp) j["creationTimestamp"] = format_rfc3339(*m.creation_timestamp);
  if (!m.labels.empty()) j["labels"] = m.labels;
  if (!m.annotations.empty()) j["annotations"] = m.annotations;
  return j;
}

}  // namespace commgate
