// Field sets as structured-merge-diff keeps them, and their wire form in
// metadata.managedFields[].fieldsV1 (FieldsV1). Modelled on
// kubernetes-sigs/structured-merge-diff fieldpath/set.go, fieldpath/serialize.go,
// fieldpath/serialize-pe.go and fieldpath/path.go (Path.String()), and on apimachinery's
// util/managedfields/internal/managedfields.go (the entries, their order).
//
// Modelled: a set is a tree of path elements in their serialized form ("f:<field>",
// "k:<json of the key fields>", "v:<json value>", "i:<index>"), a node being a member or
// only the parent of members; a member with children is written with the "." key, a leaf
// member as {}; union, difference (members only, as Set.Difference), recursive difference
// (whole subtrees, as Set.RecursiveDifference), intersection; paths printed as upstream
// prints them in conflicts (".spec.x", "[name=\"a\"]", "[=\"v\"]", "[0]").
// Shortcut: path elements are compared as strings (the JSON of a key is written with its
// fields sorted, as upstream's serialization writes them), so two spellings of one number
// ("1" and "1.0") are different elements.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate::sim {

// One path: its elements in serialized form, outermost first.
using FieldPath = std::vector<std::string>;

struct FieldSet {
  bool member = false;
  std::map<std::string, FieldSet> children;

  bool empty() const;
  void insert(const FieldPath& path);
  bool has(const FieldPath& path) const;
  // True when a member lies strictly below `path`.
  bool has_member_below(const FieldPath& path) const;
  // Every member's path, in order.
  std::vector<FieldPath> paths() const;
  bool operator==(const FieldSet& other) const = default;
};

FieldSet field_set_union(const FieldSet& a, const FieldSet& b);
// The members of `a` that are not members of `b` (children of b's members stay).
FieldSet field_set_difference(const FieldSet& a, const FieldSet& b);
// `a` without the members of `b` and everything below them.
FieldSet field_set_recursive_difference(const FieldSet& a, const FieldSet& b);
FieldSet field_set_intersection(const FieldSet& a, const FieldSet& b);

// The FieldsV1 JSON of a set, and back; throws std::runtime_error on a malformed one.
nlohmann::json to_fields_v1(const FieldSet& set);
FieldSet from_fields_v1(const nlohmann::json& fields);

// Path elements, serialized.
std::string field_element(const std::string& name);
std::string key_element(const nlohmann::json& keys);  // keys: {"name":"a",...}
std::string value_element(const nlohmann::json& value);
std::string index_element(std::size_t index);
// ".spec.containers[name=\"a\"].image", as fieldpath.Path.String().
std::string path_string(const FieldPath& path);

}  // namespace commgate::sim
