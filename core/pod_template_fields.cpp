#include "core/pod_template_fields.h"

#include <algorithm>
#include <set>

#include "core/object_reader.h"

namespace commgate {
namespace {

using Json = nlohmann::json;
using Fields = std::span<const char* const>;

bool known(const Fields& fields, const std::string& key) {
  return std::any_of(fields.begin(), fields.end(), [&](const char* f) { return key == f; });
}

// The unknown keys of `object` (nothing when it is not an object: its type is reported by
// whoever reads it).
void check_object(const Json& object, const std::string& path, Fields fields, FieldErrors& errors) {
  if (!object.is_object()) return;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (known(fields, it.key())) continue;
    errors.add(join_path(path, it.key()),
               "unknown field" +
                   did_you_mean(it.key(), std::set<std::string>(fields.begin(), fields.end())));
  }
}

// `object[key]`, or nullptr when absent or not of `type`.
const Json* member(const Json& object, const char* key, Json::value_t type) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it != object.end() && it->type() == type ? &*it : nullptr;
}

void check_list(const Json& object, const std::string& path, const char* key, Fields fields,
                FieldErrors& errors,
                void (*each)(const Json&, const std::string&, FieldErrors&) = nullptr) {
  const Json* list = member(object, key, Json::value_t::array);
  if (!list) return;
  const std::string list_path = join_path(path, key);
  for (size_t i = 0; i < list->size(); ++i) {
    check_object((*list)[i], index_path(list_path, i), fields, errors);
    if (each) each((*list)[i], index_path(list_path, i), errors);
  }
}

void check_container(const Json& container, const std::string& path, FieldErrors& errors) {
  if (const Json* resources = member(container, "resources", Json::value_t::object))
    check_object(*resources, join_path(path, "resources"), kResourceRequirementsFields, errors);
  check_list(container, path, "env", kEnvVarFields, errors);
  check_list(container, path, "ports", kContainerPortFields, errors);
  check_list(container, path, "volumeMounts", kVolumeMountFields, errors);
}

}  // namespace

void reject_unknown_pod_template_fields(const Json& pod_template, const std::string& path,
                                        FieldErrors& errors) {
  check_object(pod_template, path, kPodTemplateSpecFields, errors);
  if (const Json* meta = member(pod_template, "metadata", Json::value_t::object))
    check_object(*meta, join_path(path, "metadata"), kObjectMetaFields, errors);
  const Json* spec = member(pod_template, "spec", Json::value_t::object);
  if (!spec) return;
  const std::string spec_path = join_path(path, "spec");
  check_object(*spec, spec_path, kPodSpecFields, errors);
  check_list(*spec, spec_path, "containers", kContainerFields, errors, check_container);
  check_list(*spec, spec_path, "initContainers", kContainerFields, errors, check_container);
}

}  // namespace commgate
