#include "tests/crds/schema_check.h"

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "core/field_errors.h"
#include "core/time_format.h"
#include "core/yaml_json.h"

namespace commgate::testing {
namespace {

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

bool flag(const Json& schema, const char* key) {
  auto it = schema.find(key);
  return it != schema.end() && it->is_boolean() && it->get<bool>();
}

std::string type_name(const Json& v) {
  if (v.is_object()) return "object";
  if (v.is_array()) return "array";
  if (v.is_string()) return "string";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer()) return "integer";
  if (v.is_number()) return "number";
  return "null";
}

bool has_type(const Json& schema, const Json& v) {
  if (flag(schema, "x-kubernetes-int-or-string")) return v.is_number_integer() || v.is_string();
  if (!schema.contains("type")) return true;  // preserve-unknown-fields without a type
  const std::string t = schema["type"];
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "integer") return v.is_number_integer();
  if (t == "number") return v.is_number();
  return false;
}

class Validator {
 public:
  std::vector<SchemaIssue> issues;

  void check(const Json& schema, const Json& v, const std::string& path) {
    if (!has_type(schema, v)) {
      std::string want = flag(schema, "x-kubernetes-int-or-string") ? "integer or string"
                                                                    : schema.value("type", "");
      add(path, "must be " + want + ", got " + type_name(v));
      return;
    }
    if (schema.contains("enum")) {
      bool found = false;
      for (const auto& e : schema["enum"]) found = found || e == v;
      if (!found) add(path, "must be one of " + schema["enum"].dump() + ", got " + v.dump());
    }
    if (v.is_number()) check_number(schema, v.get<double>(), path);
    if (v.is_string()) check_string(schema, v.get<std::string>(), path);
    if (v.is_array()) check_array(schema, v, path);
    if (v.is_object()) check_object(schema, v, path);
  }

 private:
  void add(const std::string& path, std::string message) {
    issues.push_back({path, std::move(message)});
  }

  void check_number(const Json& schema, double x, const std::string& path) {
    if (schema.contains("minimum")) {
      double min = schema["minimum"];
      if (flag(schema, "exclusiveMinimum") ? x <= min : x < min) {
        add(path, "must be " + std::string(flag(schema, "exclusiveMinimum") ? "> " : ">= ") +
                      schema["minimum"].dump());
      }
    }
    if (schema.contains("maximum")) {
      double max = schema["maximum"];
      if (flag(schema, "exclusiveMaximum") ? x >= max : x > max) {
        add(path, "must be <= " + schema["maximum"].dump());
      }
    }
  }

  void check_string(const Json& schema, const std::string& s, const std::string& path) {
    if (schema.contains("minLength") && s.size() < schema["minLength"].get<size_t>()) {
      add(path, "must be at least " + schema["minLength"].dump() + " characters");
    }
    if (schema.contains("maxLength") && s.size() > schema["maxLength"].get<size_t>()) {
      add(path, "must be at most " + schema["maxLength"].dump() + " characters");
    }
    if (schema.contains("pattern")) {
      const std::regex re(schema["pattern"].get<std::string>());
      if (!std::regex_search(s, re)) add(path, "must match " + schema["pattern"].dump());
    }
    if (schema.value("format", "") == "date-time" && !parse_rfc3339(s)) {
      add(path, "must be an RFC 3339 date-time");
    }
  }

  void check_array(const Json& schema, const Json& v, const std::string& path) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<size_t>()) {
      add(path, "must have at least " + schema["minItems"].dump() + " items");
    }
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<size_t>()) {
      add(path, "must have at most " + schema["maxItems"].dump() + " items");
    }
    if (!schema.contains("items")) return;
    for (size_t i = 0; i < v.size(); ++i) check(schema["items"], v[i], index_path(path, i));
  }

  void check_object(const Json& schema, const Json& v, const std::string& path) {
    if (schema.contains("required")) {
      for (const auto& r : schema["required"]) {
        if (!v.contains(r.get<std::string>()) || v[r.get<std::string>()].is_null()) {
          add(join_path(path, r), "required field is missing");
        }
      }
    }
    const bool preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string child = join_path(path, it.key());
      if (schema.contains("properties") && schema["properties"].contains(it.key())) {
        // metadata is the apiserver's: its schema is {type: object}.
        if (path.empty() && it.key() == "metadata") continue;
        check(schema["properties"][it.key()], it.value(), child);
      } else if (schema.contains("additionalProperties")) {
        check(schema["additionalProperties"], it.value(), child);
      } else if (!preserve) {
        add(child, "unknown field (not in the CRD schema)");
      }
    }
  }
};

void default_into(const Json& schema, Json& v) {
  if (v.is_object()) {
    if (schema.contains("properties")) {
      for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
        if ((!v.contains(it.key()) || v[it.key()].is_null()) && it.value().contains("default")) {
          v[it.key()] = it.value()["default"];
        }
        if (v.contains(it.key())) default_into(it.value(), v[it.key()]);
      }
    }
    if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object()) {
      for (auto& [key, child] : v.items()) {
        if (!schema.contains("properties") || !schema["properties"].contains(key)) {
          default_into(schema["additionalProperties"], child);
        }
      }
    }
  } else if (v.is_array() && schema.contains("items")) {
    for (auto& item : v) default_into(schema["items"], item);
  }
}

void collect_leaves(const Json* schema, const Json& v, const std::string& path,
                    const std::string& pointer, std::vector<Leaf>& out) {
  const bool container = v.is_object() || v.is_array();
  if (!container || v.empty()) {
    out.push_back({path, pointer, schema});
    return;
  }
  if (v.is_array()) {
    const Json* items = schema && schema->contains("items") ? &(*schema)["items"] : nullptr;
    for (size_t i = 0; i < v.size(); ++i) {
      collect_leaves(items, v[i], index_path(path, i), pointer + "/" + std::to_string(i), out);
    }
    return;
  }
  for (auto it = v.begin(); it != v.end(); ++it) {
    const Json* child = nullptr;
    if (schema && schema->contains("properties") && (*schema)["properties"].contains(it.key())) {
      child = &(*schema)["properties"][it.key()];
    } else if (schema && schema->contains("additionalProperties")) {
      child = &(*schema)["additionalProperties"];
    }
    collect_leaves(child, it.value(), join_path(path, it.key()),
                   pointer + "/" + pointer_token(it.key()), out);
  }
}

}  // namespace

Json load_crd(const std::string& file) {
  const std::string path = std::string(COMMGATE_SOURCE_DIR) + "/crds/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto docs = parse_manifests(text.str());
  if (docs.size() != 1) throw std::runtime_error(path + ": want one document");
  return docs[0];
}

const Json& crd_schema(const Json& crd) {
  return crd.at("spec").at("versions").at(0).at("schema").at("openAPIV3Schema");
}

std::string to_string(const std::vector<SchemaIssue>& issues) {
  std::string out;
  for (const auto& i : issues) out += "  " + i.path + ": " + i.message + "\n";
  return out;
}

std::vector<SchemaIssue> validate(const Json& schema, const Json& value, const std::string& path) {
  Validator v;
  v.check(schema, value, path);
  return v.issues;
}

Json apply_defaults(const Json& schema, Json value) {
  default_into(schema, value);
  return value;
}

const Json* schema_at(const Json& root, const std::string& path) {
  const Json* s = &root;
  size_t i = 0;
  while (i < path.size()) {
    if (path.compare(i, 2, "[]") == 0) {
      if (!s->contains("items")) return nullptr;
      s = &(*s)["items"];
      i += 2;
      continue;
    }
    if (path[i] == '.') ++i;
    size_t end = path.find_first_of(".[", i);
    if (end == std::string::npos) end = path.size();
    const std::string key = path.substr(i, end - i);
    if (!s->contains("properties") || !(*s)["properties"].contains(key)) return nullptr;
    s = &(*s)["properties"][key];
    i = end;
  }
  return s;
}

void for_each_property(const Json& schema, const std::string& path,
                       const std::function<void(const std::string&, const Json&)>& visit) {
  if (schema.contains("properties")) {
    for (auto it = schema["properties"].begin(); it != schema["properties"].end(); ++it) {
      const std::string child = path.empty() ? it.key() : path + "." + it.key();
      visit(child, it.value());
      for_each_property(it.value(), child, visit);
    }
  }
  if (schema.contains("items")) {
    visit(path + "[]", schema["items"]);
    for_each_property(schema["items"], path + "[]", visit);
  }
  if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object()) {
    visit(path + "{}", schema["additionalProperties"]);
    for_each_property(schema["additionalProperties"], path + "{}", visit);
  }
}

std::vector<Leaf> leaves(const Json& schema, const Json& doc) {
  std::vector<Leaf> out;
  collect_leaves(&schema, doc, "", "", out);
  return out;
}

}  // namespace commgate::testing
