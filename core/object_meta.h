// The parts of metav1.ObjectMeta that commgate reads. Everything else in metadata is
// the apiserver's and is kept verbatim by whoever holds the raw object.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/object_reader.h"
#include "core/time_format.h"

namespace commgate {

struct ObjectMeta {
  std::string name;
  std::string namespace_;  // empty for cluster-scoped objects
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::optional<TimePoint> creation_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

// Reads `metadata`. `require_name` is false for objects under admission (generateName).
ObjectMeta read_object_meta(ObjectReader& root, bool require_name);

// Reads and checks apiVersion and kind; returns false (errors recorded) on mismatch.
bool check_type_meta(ObjectReader& root, const std::string& api_version, const std::string& kind);

nlohmann::json object_meta_to_json(const ObjectMeta& meta);

}  // namespace commgate
