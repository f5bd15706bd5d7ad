// YAML manifests to JSON values, with Kubernetes' reading of scalars: plain scalars that
// look like integers, floats, booleans or null become those types; quoted scalars stay
// strings ("340M" and 340M are both strings; 4 is a number, "4" a string).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate {

// What one parse may build. YAML aliases (`&a [*a, *a, ...]`) let a few hundred bytes
// expand to billions of nodes (an "alias bomb": nine levels of nine aliases is 9^9 nodes
// from 700 bytes); yaml-cpp keeps an alias as a shared node, so the expansion happens
// here, where YAML becomes JSON, and is counted as it happens.
//
// Without aliases a document cannot hold more nodes or scalar bytes than it has bytes,
// so the budget is the text's own size plus a fixed allowance for aliases: memory stays
// linear in the input, and no real manifest comes near it (a CRD with a large OpenAPI
// schema is ~50,000 nodes; Kubernetes stores no object over 1.5 MB). kubectl's reader
// (go-yaml) refuses "excessive aliasing" by a similar ratio.
struct YamlLimits {
  static constexpr size_t kAliasNodeAllowance = 1'000'000;
  static constexpr size_t kAliasByteAllowance = size_t{64} << 20;  // 64 MiB
  // Nesting: real manifests nest a few dozen levels (CRD schemas the most); yaml-cpp itself
  // refuses more than 500 (as "bad file"), so ours is lower and says what is wrong.
  static constexpr int kMaxDepth = 256;

  size_t max_nodes = kAliasNodeAllowance;         // values built (scalars, lists, maps)
  size_t max_scalar_bytes = kAliasByteAllowance;  // bytes of scalars and keys built
  int max_depth = kMaxDepth;

  // The default for `text`: its size plus the allowances.
  static YamlLimits for_text(const std::string& text);
};

// Parses every document of a YAML stream (documents separated by ---). Empty documents
// are skipped. Throws std::runtime_error naming the line and column of a syntax error,
// and when the documents would exceed `limits` (nodes or bytes after expanding aliases,
// or nesting), what was exceeded and where.
std::vector<nlohmann::json> yaml_documents_to_json(const std::string& text,
                                                   const YamlLimits& limits);
std::vector<nlohmann::json> yaml_documents_to_json(const std::string& text);

// Parses JSON or YAML (JSON is YAML, but JSON errors read better from the JSON parser).
// Every document must be an object: a null or scalar one (`[null]`, `items: [5]`, a YAML
// document `hello`) throws std::runtime_error naming its place ("[0]", "items[0]",
// "document 2"); empty YAML documents are skipped, as kubectl skips them. YAML is held
// to YamlLimits::for_text(text); JSON, which has no aliases, to its nesting depth.
std::vector<nlohmann::json> parse_manifests(const std::string& text);

}  // namespace commgate
