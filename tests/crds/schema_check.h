// A small reader of the structural OpenAPI v3 schemas in crds/: it validates a document
// the way the apiserver does for the keywords the CRDs use, applies defaults the way the
// apiserver does, and walks schemas and documents by field path. CEL rules
// (x-kubernetes-validations) are not evaluated; the tests check them against the parser
// one by one.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate::testing {

using Json = nlohmann::json;

// Loads crds/<file> from the source tree and returns the CRD object.
Json load_crd(const std::string& file);
// The openAPIV3Schema of the CRD's only version.
const Json& crd_schema(const Json& crd);

struct SchemaIssue {
  std::string path;  // field path in the parsers' notation: "spec.tolerations[0].effect"
  std::string message;
};
std::string to_string(const std::vector<SchemaIssue>& issues);

// Validates `value` against `schema`: type (and x-kubernetes-int-or-string), enum,
// required, minimum/maximum (exclusive too), minLength/maxLength, minItems/maxItems,
// pattern (ECMAScript regex; the CRDs use the common subset of RE2), format date-time,
// properties, additionalProperties and items. A key the schema does not name is an issue
// unless x-kubernetes-preserve-unknown-fields holds there (the apiserver would prune it
// silently, which is worse for a user than an error).
std::vector<SchemaIssue> validate(const Json& schema, const Json& value,
                                  const std::string& path = "");

// Applies `default`s as the apiserver does: in every object present, each absent property
// with a default gets it; defaulted objects are defaulted in turn.
Json apply_defaults(const Json& schema, Json value);

// The schema of a dotted field path ("spec.model.parameters"; "[]" steps into list
// items: "spec.tolerations[].key"), or nullptr when the schema does not name it.
const Json* schema_at(const Json& root, const std::string& path);

// Calls `visit(path, schema)` for every schema below `schema` (not `schema` itself),
// depth first: properties as "parent.name", list items as "name[]", map values
// (additionalProperties) as "name{}".
void for_each_property(const Json& schema, const std::string& path,
                       const std::function<void(const std::string&, const Json&)>& visit);

// Every leaf of a document (a scalar, or an empty list or object) with its path in the
// parsers' notation ("spec.tolerations[0].key"), a JSON pointer to it, and its schema
// (nullptr where the schema does not name it, e.g. under preserve-unknown-fields).
struct Leaf {
  std::string path;
  std::string pointer;
  const Json* schema = nullptr;
};
std::vector<Leaf> leaves(const Json& schema, const Json& doc);

}  // namespace commgate::testing
