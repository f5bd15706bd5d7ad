// A JSON manifest written as YAML for people and for `kubectl apply -f`: block style,
// keys in the JSON's order, strings quoted only where a plain scalar would read as
// something else (a number, a boolean, null, a time, or YAML syntax).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace commgate {

// Round-trips: parse_manifests(to_yaml(j)) == {j} for any JSON object (numbers are
// written as nlohmann::json dumps them, the shortest text that reads back to the same
// double).
std::string to_yaml(const nlohmann::json& document);

}  // namespace commgate
