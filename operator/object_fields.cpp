#include "operator/object_fields.h"

#include <cstdlib>

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
  const json meta = object.value("metadata", json::object());
  const json refs = meta.is_object() ? meta.value("ownerReferences", json::array()) : json();
  if (!refs.is_array()) return "";
  for (const json& r : refs) {
    if (r.is_object() && r.value("controller", json(false)) == json(true)) {
      const json& uid = r.value("uid", json());
      return uid.is_string() ? uid.get<std::string>() : "";
    }
  }
  return "";
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

}  // namespace commgate::op::detail
