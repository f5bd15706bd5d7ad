#include "sim/crd_schema.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <regex>

#include "sim/cel_rules.h"

namespace commgate::sim {
namespace {

using nlohmann::json;

std::string join_key(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string join_index(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// The keys every object kept whole at the root and in embedded resources.
bool is_type_meta_key(const std::string& key) {
  return key == "apiVersion" || key == "kind" || key == "metadata";
}

bool flag(const json& schema, const char* key) {
  auto it = schema.find(key);
  return it != schema.end() && it->is_boolean() && it->get<bool>();
}

const json* member(const json& schema, const char* key) {
  if (!schema.is_object()) return nullptr;
  auto it = schema.find(key);
  return it == schema.end() ? nullptr : &*it;
}

// The schema of an object's property `key`: properties[key], else additionalProperties
// when it is a schema; null when the schema does not declare the key.
const json* property_schema(const json& schema, const std::string& key) {
  if (const json* props = member(schema, "properties"); props && props->is_object()) {
    auto it = props->find(key);
    if (it != props->end()) return &*it;
  }
  if (const json* ap = member(schema, "additionalProperties"); ap && ap->is_object()) return ap;
  return nullptr;
}

void apply_defaults(const json& schema, json& value) {
  if (!schema.is_object()) return;
  if (value.is_object()) {
    if (const json* props = member(schema, "properties"); props && props->is_object()) {
      for (const auto& [key, prop] : props->items()) {
        if (!prop.is_object() || !prop.contains("default")) continue;
        auto it = value.find(key);
        // A null is defaulted too unless the property is nullable (upstream's structural
        // defaulting; the null is otherwise pruned or refused).
        if (it == value.end() || (it->is_null() && !flag(prop, "nullable")))
          value[key] = prop["default"];
      }
    }
    for (auto& [key, child] : value.items())
      if (const json* s = property_schema(schema, key)) apply_defaults(*s, child);
  } else if (value.is_array()) {
    if (const json* items = member(schema, "items"); items && items->is_object())
      for (auto& child : value) apply_defaults(*items, child);
  }
}

void prune(const json& schema, json& value, const std::string& path, bool keep_type_meta,
           std::vector<std::string>& dropped) {
  if (!schema.is_object()) return;
  if (value.is_object()) {
    const bool preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    const json* ap = member(schema, "additionalProperties");
    std::vector<std::string> unknown;
    for (auto& [key, child] : value.items()) {
      if (keep_type_meta && is_type_meta_key(key)) continue;
      if (const json* s = property_schema(schema, key)) {
        prune(*s, child, join_key(path, key), flag(*s, "x-kubernetes-embedded-resource"), dropped);
      } else if (!preserve && !(ap && ap->is_boolean() && ap->get<bool>())) {
        unknown.push_back(key);
        dropped.push_back(join_key(path, key));
      }
    }
    for (const auto& key : unknown) value.erase(key);
  } else if (value.is_array()) {
    if (const json* items = member(schema, "items"); items && items->is_object())
      for (std::size_t i = 0; i < value.size(); ++i)
        prune(*items, value[i], join_index(path, i), flag(*items, "x-kubernetes-embedded-resource"),
              dropped);
  }
}

std::string type_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    default:
      return "object";
  }
}

// Go's %v of a float64: no exponent below 1e21, shortest digits.
std::string go_float(double d) {
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e21) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", d);
    return buf;
  }
  return json(d).dump();
}

// A value as field.Error's ErrorBody prints it: strings quoted, numbers and booleans bare.
// Composite values are printed as JSON (upstream prints Go's %#v of the decoded value).
std::string show(const json& v) {
  if (v.is_number_float()) return go_float(v.get<double>());
  return v.dump();
}

double number_of(const json& v) {
  return v.get<double>();
}

std::size_t utf8_length(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

// Compiled patterns, kept: the same few patterns are checked on every write.
bool matches_pattern(const std::string& pattern, const std::string& text) {
  thread_local std::map<std::string, std::optional<std::regex>> cache;
  auto it = cache.find(pattern);
  if (it == cache.end()) {
    std::optional<std::regex> re;
    try {
      re.emplace(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      // kube-apiserver refuses such a CRD; here the pattern is simply not checked.
    }
    it = cache.emplace(pattern, std::move(re)).first;
  }
  return !it->second || std::regex_search(text, *it->second);
}

class Validator {
 public:
  std::vector<FieldError> errors;

  void value(const json& s, const json& v, const std::string& path, bool root) {
    if (!s.is_object()) return;
    const std::string in_body = path + " in body ";
    if (v.is_null()) {
      if (flag(s, "nullable")) return;
      if (const json* t = member(s, "type"); t && t->is_string())
        type_invalid(path, in_body + "must be of type " + t->get<std::string>() + ": \"null\"");
      return;
    }
    bool type_checked = false;
    if (flag(s, "x-kubernetes-int-or-string")) {
      if (!v.is_number_integer() && !v.is_string()) {
        type_invalid(path, in_body + "must be of type integer-or-string: \"" + type_of(v) + "\"",
                     type_of(v));
        return;
      }
      type_checked = true;
    }
    if (const json* t = member(s, "type"); t && t->is_string() && !type_checked) {
      const std::string want = t->get<std::string>();
      const std::string got = type_of(v);
      if (want != got && !(want == "number" && got == "integer")) {
        type_invalid(path, in_body + "must be of type " + want + ": \"" + got + "\"", got);
        return;  // as go-openapi: nothing else is checked against a value of the wrong type
      }
    }
    if (const json* e = member(s, "enum"); e && e->is_array()) {
      bool found = false;
      for (const auto& allowed : *e) found = found || allowed == v;
      if (!found) {
        std::string list;
        for (const auto& allowed : *e)
          list += (list.empty() ? "" : ", ") +
                  (allowed.is_string() ? allowed.dump() : json(allowed.dump()).dump());
        add("FieldValueNotSupported", path,
            "Unsupported value: " + show(v) + ": supported values: " + list);
      }
    }
    if (v.is_number()) number(s, v, path, in_body);
    if (v.is_string()) string(s, v.get<std::string>(), v, path, in_body);
    if (v.is_array()) array(s, v, path, in_body);
    if (v.is_object()) object(s, v, path, in_body, root);
    composition(s, v, path, in_body);
  }

 private:
  void add(const char* reason, const std::string& path, std::string message) {
    errors.push_back({reason, path, std::move(message)});
  }
  void invalid(const std::string& path, const json& v, const std::string& detail) {
    add("FieldValueInvalid", path, "Invalid value: " + show(v) + ": " + detail);
  }
  // TypeInvalid carries the value's type name as its value, as apiextensions reports it.
  void type_invalid(const std::string& path, const std::string& detail,
                    const std::string& got = "null") {
    add("FieldValueTypeInvalid", path, "Invalid value: \"" + got + "\": " + detail);
  }

  void number(const json& s, const json& v, const std::string& path, const std::string& in_body) {
    const double d = number_of(v);
    if (const json* m = member(s, "minimum"); m && m->is_number()) {
      const bool exclusive = flag(s, "exclusiveMinimum");
      if (exclusive ? d <= number_of(*m) : d < number_of(*m))
        invalid(path, v,
                in_body + "should be greater than " + (exclusive ? "" : "or equal to ") +
                    go_float(number_of(*m)));
    }
    if (const json* m = member(s, "maximum"); m && m->is_number()) {
      const bool exclusive = flag(s, "exclusiveMaximum");
      if (exclusive ? d >= number_of(*m) : d > number_of(*m))
        invalid(path, v,
                in_body + "should be less than " + (exclusive ? "" : "or equal to ") +
                    go_float(number_of(*m)));
    }
    if (const json* m = member(s, "multipleOf"); m && m->is_number() && number_of(*m) > 0) {
      const double q = d / number_of(*m);
      if (q != std::floor(q))
        invalid(path, v, in_body + "should be a multiple of " + go_float(number_of(*m)));
    }
  }

  void string(const json& s, const std::string& text, const json& v, const std::string& path,
              const std::string& in_body) {
    const std::size_t length = utf8_length(text);
    if (const json* m = member(s, "minLength");
        m && m->is_number_integer() && length < m->get<std::size_t>())
      invalid(
          path, v,
          in_body + "should be at least " + std::to_string(m->get<std::size_t>()) + " chars long");
    if (const json* m = member(s, "maxLength");
        m && m->is_number_integer() && length > m->get<std::size_t>())
      add("FieldValueTooLong", path,
          "Too long: may not be more than " + std::to_string(m->get<std::size_t>()) + " bytes");
    if (const json* p = member(s, "pattern"); p && p->is_string()) {
      if (!matches_pattern(p->get<std::string>(), text))
        invalid(path, v, in_body + "should match '" + p->get<std::string>() + "'");
    }
  }

  void array(const json& s, const json& v, const std::string& path, const std::string& in_body) {
    if (const json* m = member(s, "minItems");
        m && m->is_number_integer() && v.size() < m->get<std::size_t>())
      invalid(path, v,
              in_body + "should have at least " + std::to_string(m->get<std::size_t>()) + " items");
    if (const json* m = member(s, "maxItems");
        m && m->is_number_integer() && v.size() > m->get<std::size_t>())
      add("FieldValueTooMany", path,
          "Too many: " + std::to_string(v.size()) + ": must have at most " +
              std::to_string(m->get<std::size_t>()) + " items");
    if (flag(s, "uniqueItems")) {
      for (std::size_t i = 0; i < v.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (v[i] == v[j]) {
            add("FieldValueDuplicate", join_index(path, i), "Duplicate value: " + show(v[i]));
            j = i;  // report each duplicate once
          }
    }
    if (const json* items = member(s, "items"); items && items->is_object())
      for (std::size_t i = 0; i < v.size(); ++i) value(*items, v[i], join_index(path, i), false);
  }

  void object(const json& s, const json& v, const std::string& path, const std::string& in_body,
              bool root) {
    if (const json* m = member(s, "minProperties");
        m && m->is_number_integer() && v.size() < m->get<std::size_t>())
      invalid(path, v,
              in_body + "should have at least " + std::to_string(m->get<std::size_t>()) +
                  " properties");
    if (const json* m = member(s, "maxProperties");
        m && m->is_number_integer() && v.size() > m->get<std::size_t>())
      add("FieldValueTooMany", path,
          "Too many: " + std::to_string(v.size()) + ": must have at most " +
              std::to_string(m->get<std::size_t>()) + " items");
    const bool embedded = root || flag(s, "x-kubernetes-embedded-resource");
    const json* ap = member(s, "additionalProperties");
    for (const auto& [key, child] : v.items()) {
      // ObjectMeta is validated by the store (names), not by the schema.
      if (embedded && key == "metadata") continue;
      if (const json* ps = property_schema(s, key)) {
        value(*ps, child, join_key(path, key), false);
      } else if (ap && ap->is_boolean() && !ap->get<bool>()) {
        add("FieldValueForbidden", join_key(path, key),
            "Forbidden: " + join_key(path, key) + " in body is a forbidden property");
      }
    }
    if (const json* req = member(s, "required"); req && req->is_array())
      for (const auto& k : *req)
        if (k.is_string() && !v.contains(k.get<std::string>()))
          add("FieldValueRequired", join_key(path, k.get<std::string>()), "Required value");
  }

  // allOf/anyOf/oneOf/not. anyOf next to x-kubernetes-int-or-string is what the CRD
  // language requires to spell int-or-string; the type check above has done its work.
  void composition(const json& s, const json& v, const std::string& path,
                   const std::string& in_body) {
    auto passes = [&](const json& branch) {
      Validator inner;
      inner.value(branch, v, path, false);
      return inner.errors.empty();
    };
    if (const json* all = member(s, "allOf"); all && all->is_array())
      for (const auto& branch : *all) value(branch, v, path, false);
    if (const json* any = member(s, "anyOf"); any && any->is_array() && !any->empty()) {
      bool ok = false;
      for (const auto& branch : *any) ok = ok || passes(branch);
      if (!ok) invalid(path, v, in_body + "must validate at least one schema (anyOf)");
    }
    if (const json* one = member(s, "oneOf"); one && one->is_array() && !one->empty()) {
      std::size_t n = 0;
      for (const auto& branch : *one) n += passes(branch) ? 1 : 0;
      if (n != 1) invalid(path, v, in_body + "must validate one and only one schema (oneOf)");
    }
    if (const json* no = member(s, "not"); no && no->is_object() && passes(*no))
      invalid(path, v, in_body + "must not validate the schema (not)");
  }
};

// x-kubernetes-validations, as apiextensions' CEL validator walks the object: each node's
// rules with `self` bound to its value, then its properties, additionalProperties and
// items. A failed rule reports its message (or "failed rule: RULE") against the node's
// schema type, an evaluation error "ERROR evaluating rule: RULE", both FieldValueInvalid.
void check_rules(const json& s, const json& v, const std::string& path,
                 std::vector<FieldError>& errors) {
  if (!s.is_object() || v.is_null()) return;
  if (const json* rules = member(s, "x-kubernetes-validations"); rules && rules->is_array()) {
    const json* t = member(s, "type");
    const std::string type = t && t->is_string() ? t->get<std::string>() : type_of(v);
    for (const auto& r : *rules) {
      const std::string rule = r.is_object() && r.contains("rule") && r["rule"].is_string()
                                   ? r["rule"].get<std::string>()
                                   : "";
      if (rule.empty()) continue;
      const CelResult result = evaluate_cel_rule(rule, v);
      if (result.passed == true || result.unsupported) continue;  // see sim/cel_rules.h
      std::string message;
      if (!result.passed) {
        message = result.error + " evaluating rule: " + rule;
      } else if (r.contains("message") && r["message"].is_string() &&
                 !r["message"].get<std::string>().empty()) {
        message = r["message"].get<std::string>();
      } else {
        message = "failed rule: " + rule;
      }
      errors.push_back({"FieldValueInvalid", path, "Invalid value: \"" + type + "\": " + message});
    }
  }
  if (v.is_object()) {
    const json* ap = member(s, "additionalProperties");
    for (const auto& [key, child] : v.items()) {
      if (const json* ps = property_schema(s, key))
        check_rules(*ps, child, join_key(path, key), errors);
      else if (ap && ap->is_object())
        check_rules(*ap, child, join_key(path, key), errors);
    }
  }
  if (const json* items = member(s, "items"); items && items->is_object() && v.is_array())
    for (std::size_t i = 0; i < v.size(); ++i)
      check_rules(*items, v[i], join_index(path, i), errors);
}

}  // namespace

std::vector<std::string> prune_and_default(const json& schema, json& object) {
  apply_defaults(schema, object);
  std::vector<std::string> dropped;
  prune(schema, object, "", true, dropped);
  return dropped;
}

std::vector<std::string> unknown_fields(const json& schema, const json& object) {
  json copy = object;
  std::vector<std::string> dropped;
  prune(schema, copy, "", true, dropped);
  return dropped;
}

std::vector<FieldError> validate(const json& schema, const json& object) {
  Validator v;
  v.value(schema, object, "", true);
  // As upstream: the rules run only on an object whose values have the schema's types (a
  // rule would read a string where it expects a number).
  for (const auto& e : v.errors)
    if (e.reason == "FieldValueTypeInvalid") return v.errors;
  check_rules(schema, object, "", v.errors);
  return v.errors;
}

void apply_schema(const ResourceInfo& r, const std::string& name, json& object) {
  if (!r.custom || !r.schema) return;
  prune_and_default(*r.schema, object);
  const auto errors = validate(*r.schema, object);
  if (!errors.empty()) throw invalid(r, name, errors);
}

}  // namespace commgate::sim
