// A CRD's structural openAPIV3Schema applied to custom resources as kube-apiserver's
// apiextensions code applies it on every write: defaulting, pruning of unknown fields,
// then validation into field errors worded as upstream's (kube-openapi messages mapped
// by apiextensions-apiserver's validation). Pure functions over JSON; CEL rules
// (x-kubernetes-validations) in the subset sim/cel_rules.h evaluates; no ratcheting, no
// formats.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/api_status.h"

namespace commgate::sim {

// Applies `default`s to absent (or null, unless nullable) object properties, recursively,
// then drops the fields the schema does not declare (unless x-kubernetes-preserve-unknown-fields
// applies there). At the root, and in x-kubernetes-embedded-resource objects, apiVersion,
// kind and metadata are kept. Returns the dropped fields' paths ("spec.foo",
// "spec.items[0].bar"), in document order: what fieldValidation Strict/Warn report.
std::vector<std::string> prune_and_default(const nlohmann::json& schema, nlohmann::json& object);

// The paths prune_and_default would drop, without changing `object`.
std::vector<std::string> unknown_fields(const nlohmann::json& schema, const nlohmann::json& object);

// Every violation of the schema's value validations (type, nullable, int-or-string, enum,
// required, minimum/maximum and their exclusive forms, multipleOf, minLength/maxLength,
// pattern, minItems/maxItems, uniqueItems, minProperties/maxProperties, items, properties,
// additionalProperties, allOf/anyOf/oneOf/not), then, where none of them is a type error,
// the x-kubernetes-validations rules (sim/cel_rules.h), as field errors. Empty: valid.
std::vector<FieldError> validate(const nlohmann::json& schema, const nlohmann::json& object);

// A write of `object` (named `name`) to `r`: for a custom resource with a schema, defaulted
// and pruned in place, then validated (a 422 Invalid naming every field); built-ins are
// left as they are. What the API server does to every CR write, and the sim's own
// controllers (the Kueue stand-in) to theirs.
void apply_schema(const ResourceInfo& r, const std::string& name, nlohmann::json& object);

}  // namespace commgate::sim
