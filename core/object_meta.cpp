#include "core/object_meta.h"

namespace commgate {
namespace {

// DNS subdomain rules (RFC 1123), as the apiserver applies to object names.
bool is_dns_subdomain(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
  }
  return name.front() != '-' && name.front() != '.' && name.back() != '-' && name.back() != '.';
}

void read_name(ObjectReader& meta, MetadataRule rule, ObjectMeta& m) {
  const bool generated = rule == MetadataRule::kNameOrGenerateName;
  auto name = meta.string("name", generated ? Presence::kOptional : Presence::kRequired);
  if (name && !is_dns_subdomain(*name)) {
    meta.errors().add(meta.path_of("name"),
                      "must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; start and end "
                      "alphanumeric; at most 253 characters), got \"" +
                          *name + "\"");
  } else if (name) {
    m.name = *name;
  }
  auto generate_name = meta.string("generateName", Presence::kOptional);
  if (generate_name) m.generate_name = *generate_name;
  if (generated && !name && !generate_name && meta.present())
    meta.errors().add(meta.path_of("name"),
                      "required field is missing (or set metadata.generateName)");
}

ObjectMeta read_object_meta(ObjectReader& root, MetadataRule rule) {
  ObjectMeta m;
  auto meta = root.object("metadata", Presence::kRequired);
  read_name(meta, rule, m);
  m.namespace_ = meta.string("namespace", Presence::kOptional).value_or("");
  m.uid = meta.string("uid", Presence::kOptional, true).value_or("");
  m.resource_version = meta.string("resourceVersion", Presence::kOptional, true).value_or("");
  m.generation = meta.integer("generation", Presence::kOptional, 0).value_or(0);
  m.creation_timestamp = meta.time("creationTimestamp", Presence::kOptional);
  m.labels =
      meta.string_map("labels", Presence::kOptional).value_or(std::map<std::string, std::string>{});
  m.annotations = meta.string_map("annotations", Presence::kOptional)
                      .value_or(std::map<std::string, std::string>{});
  // The rest of ObjectMeta belongs to the apiserver; it is not ours to judge.
  return m;
}

void check_type_meta(ObjectReader& root, std::string_view api_version, std::string_view kind) {
  for (auto [key, want] : {std::pair{"apiVersion", api_version}, std::pair{"kind", kind}}) {
    auto got = root.string(key, Presence::kRequired);
    if (got && *got != want)
      root.errors().add(key, "must be " + std::string(want) + ", got \"" + *got + "\"");
  }
}

}  // namespace

Document read_document(const nlohmann::json& doc, std::string_view api_version,
                       std::string_view kind, FieldErrors& errors, MetadataRule metadata) {
  const std::string what = "invalid " + std::string(kind);
  if (!doc.is_object()) {
    // Nothing else can be read: say so alone rather than under a list of missing fields.
    FieldErrors only;
    only.add("",
             "the document must be a " + std::string(kind) + " object, got " + describe_json(doc));
    throw ValidationError(what, only);
  }
  Document d{ObjectReader(&doc, "", errors), {}};
  check_type_meta(d.root, api_version, kind);
  if (metadata != MetadataRule::kNone) d.metadata = read_object_meta(d.root, metadata);
  return d;
}

nlohmann::json object_meta_to_json(const ObjectMeta& m) {
  nlohmann::json j = nlohmann::json::object();
  if (!m.name.empty()) j["name"] = m.name;
  if (!m.generate_name.empty()) j["generateName"] = m.generate_name;
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
