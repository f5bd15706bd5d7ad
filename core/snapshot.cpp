#include "core/snapshot.h"

#include "core/annotations.h"
#include "core/field_errors.h"

namespace commgate {

std::string Snapshot::add_policy(const nlohmann::json& object, const std::string& fallback_name) {
  std::string why;
  try {
    policies.push_back(parse_comm_policy(object));
    return "";
  } catch (const ValidationError& e) {
    for (const FieldError& fe : e.errors().all()) why += (why.empty() ? "" : "; ") + fe.to_string();
  } catch (const std::exception& e) {
    why = e.what();
  }
  std::string name = fallback_name;
  if (object.is_object()) {
    const auto meta = object.find("metadata");
    if (meta != object.end() && meta->is_object()) {
      const auto n = meta->find("name");
      if (n != meta->end() && n->is_string() && !n->get<std::string>().empty())
        name = n->get<std::string>();
    }
  }
  if (!name.empty()) invalid_policies[name] = why;
  return why;
}

const CommProfile* Snapshot::profile(const std::string& name) const {
  auto it = profiles.find(name);
  return it == profiles.end() ? nullptr : &it->second;
}

const std::map<std::string, std::string>& Snapshot::labels_of(const std::string& ns) const {
  static const std::map<std::string, std::string> kNone;
  auto it = namespace_labels.find(ns);
  return it == namespace_labels.end() ? kNone : it->second;
}

const std::map<std::string, std::string>& Snapshot::commgate_annotations_of(
    const std::string& ns) const {
  static const std::map<std::string, std::string> kNone;
  auto it = namespace_commgate_annotations.find(ns);
  return it == namespace_commgate_annotations.end() ? kNone : it->second;
}

std::map<std::string, std::string> commgate_annotations_of_object(const nlohmann::json& object) {
  std::map<std::string, std::string> out;
  static const nlohmann::json::json_pointer kAnnotations("/metadata/annotations");
  if (!object.is_object() || !object.contains(kAnnotations)) return out;
  const nlohmann::json& annotations = object.at(kAnnotations);
  if (!annotations.is_object()) return out;
  for (const auto& [k, v] : annotations.items())
    if (v.is_string() && k.rfind(annotation::kPrefix, 0) == 0) out[k] = v.get<std::string>();
  return out;
}

}  // namespace commgate
