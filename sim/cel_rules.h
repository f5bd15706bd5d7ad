// A CRD's x-kubernetes-validations rules evaluated as kube-apiserver evaluates them
// (apiextensions-apiserver pkg/apiserver/schema/cel/validation.go), for the subset of CEL
// that CRDs' rules commonly use: `self` and its fields (`self.spec.minNodes`,
// `self['key']`), `has()`, literals (integers, doubles, single- or double-quoted strings,
// true/false/null, lists), `!`, unary `-`, `&&` and `||` (with CEL's commutative
// handling of errors: `true || <error>` is true), `==` `!=` `<` `<=` `>` `>=`, `in`,
// `+` `-` `*` `/` `%`, `? :`, `size()` (function or method) and the string methods
// `startsWith`, `endsWith`, `contains`.
//
// Not modelled: transition rules (`oldSelf`), macros over lists (`all`, `exists`, `map`,
// `filter`), `messageExpression`, `fieldPath`, `reason`, optional types, the cost budget
// and ratcheting of unchanged values. A rule outside the subset is never skipped: its
// evaluation fails with "the simulated cluster cannot evaluate ..." (a write it governs is
// refused), so a CRD that needs more says so at its first object.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace commgate::sim {

struct CelResult {
  std::optional<bool> passed;  // nullopt: the evaluation failed, see `error`
  std::string error;           // "no such key: minNodes", as cel-go words it
};

// Evaluates `rule` with `self` bound to `self_value`. A rule that yields a non-boolean is
// an error, as it would not compile upstream.
CelResult evaluate_cel_rule(const std::string& rule, const nlohmann::json& self_value);

}  // namespace commgate::sim
