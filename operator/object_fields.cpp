#include "operator/object_fields.h"

#include <climits>
#include <cstdlib>

#include "core/json_access.h"
#include "operator/probe_job.h"

namespace commgate::op::detail {

using nlohmann::json;

long long version_number(const std::string& rv) {
  char* end = nullptr;
  const long long n = std::strtoll(rv.c_str(), &end, 10);
  return rv.empty() || *end != '\0' ? -1 : n;
}

int64_t generation_of(const json& object) {
  const json meta = object.value("metadata", json::object());
  const json& g = meta.value("generation", json(0));
  return g.is_number_integer() ? g.get<int64_t>() : 0;
}

std::string meta_string(const json& object, const std::string& key) {
  const json meta = object.value("metadata", json::object());
  const json& v = meta.value(key, json());
  return v.is_string() ? v.get<std::string>() : "";
}

std::string controller_uid_of(const json& object) {
  const json* controller = controller_reference(object);
  return controller ? json_string(*controller, {"uid"}) : "";
}

std::string annotation_of(const json& object, const std::string& key) {
  const json meta = object.value("metadata", json::object());
  const json anns = meta.value("annotations", json::object());
  const json& v = anns.is_object() ? anns.value(key, json()) : json();
  return v.is_string() ? v.get<std::string>() : "";
}

int int_field(const json& object, const std::string& key) {
  if (!object.is_object()) return 0;
  const json& v = object.value(key, json(0));
  return v.is_number_integer() ? v.get<int>() : 0;
}

int completion_index(const json& pod) {
  std::string idx = json_string(pod, {"metadata", "labels", kCompletionIndexKey});
  if (idx.empty()) idx = json_string(pod, {"metadata", "annotations", kCompletionIndexKey});
  char* end = nullptr;
  const long v = std::strtol(idx.c_str(), &end, 10);
  if (idx.empty() || *end != '\0' || v < 0 || v > INT_MAX - 1) return INT_MAX;
  return static_cast<int>(v);
}

}  // namespace commgate::op::detail
