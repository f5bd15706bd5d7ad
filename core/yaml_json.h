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
std::vector<nlohmann::json> parse_manifests(const std::string& text);

}  // namespace commgate
