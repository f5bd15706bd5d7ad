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
// and ratcheting of unchanged values. A rule that is not CEL at all is refused with its
// CRD (cel_rule_compile_error), as kube-apiserver refuses a rule that does not compile.
// Valid CEL outside the subset (an upstream CRD's `self.all(...)`, a transition rule) is
// accepted and not evaluated (CelResult::unsupported): objects are not checked against
// it, as docs/testing.md says; commgate's own CRDs are inside the subset (a test).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace commgate::sim {

struct CelResult {
  std::optional<bool> passed;  // nullopt: the evaluation failed, see `error`
  std::string error;           // "no such key: minNodes", as cel-go words it
  // Valid CEL outside the subset (a list macro, oldSelf, a function): not evaluated.
  bool unsupported = false;
};

// Evaluates `rule` with `self` bound to `self_value`. A rule that yields a non-boolean is
// an error, as it would not compile upstream.
CelResult evaluate_cel_rule(const std::string& rule, const nlohmann::json& self_value);

// "Syntax error: ..." when `rule` is not CEL the parser can read at all, else "": what the
// sim checks when a CRD is written, as kube-apiserver compiles every rule then (a field
// name the schema lacks is found only when an object is written: no type checking here).
std::string cel_rule_compile_error(const std::string& rule);

}  // namespace commgate::sim
