// YAML manifests to JSON values, with Kubernetes' reading of scalars: plain scalars that
// look like integers, floats, booleans or null become those types; quoted scalars stay
// strings ("340M" and 340M are both strings; 4 is a number, "4" a string).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate {

// Parses every document of a YAML stream (documents separated by ---). Empty documents
// are skipped. Throws std::runtime_error naming the line and column of a syntax error.
std::vector<nlohmann::json> yaml_documents_to_json(const std::string& text);

// Parses JSON or YAML (JSON is YAML, but JSON errors read better from the JSON parser).
// Every document must be an object: a null or scalar one (`[null]`, `items: [5]`, a YAML
// document `hello`) throws std::runtime_error naming its place ("[0]", "items[0]",
// "document 2"); empty YAML documents are skipped, as kubectl skips them.
std::vector<nlohmann::json> parse_manifests(const std::string& text);

}  // namespace commgate
