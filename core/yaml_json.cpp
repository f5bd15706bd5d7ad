#include "core/yaml_json.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <regex>
#include <stdexcept>
#include <string_view>

#include "core/field_errors.h"
#include "core/object_reader.h"

namespace commgate {
namespace {

// YAML 1.2 core schema resolution for plain (unquoted) scalars.
nlohmann::json resolve_plain_scalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  // Numbers start with a sign, a digit or a dot: most strings skip the regexes (they are
  // the bulk of the time converting a large document).
  if (std::string_view("+-.0123456789").find(s[0]) == std::string_view::npos) return s;
  static const std::regex kInt(R"([-+]?[0-9]+)");
  static const std::regex kHex(R"(0x[0-9a-fA-F]+)");
  static const std::regex kOct(R"(0o[0-7]+)");
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  try {
    if (std::regex_match(s, kInt)) {
      if (s[0] == '-') return std::stoll(s);
      unsigned long long v = std::stoull(s[0] == '+' ? s.substr(1) : s);
      return v;
    }
    if (std::regex_match(s, kHex)) return std::stoull(s.substr(2), nullptr, 16);
    if (std::regex_match(s, kOct)) return std::stoull(s.substr(2), nullptr, 8);
  } catch (const std::out_of_range&) {
    // Too large for 64 bits: fall through to a float, which validation reports as such.
  }
  // strtod, not stod: a float beyond a double's range is infinite (which the parsers
  // reject by name) or, below it, 0; stod threw out_of_range, reported as "stod".
  if (std::regex_match(s, kFloat)) return std::strtod(s.c_str(), nullptr);
  // Kept as non-finite doubles, which JSON cannot carry (nlohmann would write them as
  // null): the parsers reject them by name ("must be a finite number, got .inf"), and
  // describe_json() spells them as here.
  for (const char* inf : {".inf", ".Inf", ".INF"}) {
    if (s == inf || s == std::string("+") + inf) return HUGE_VAL;
    if (s == std::string("-") + inf) return -HUGE_VAL;
  }
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::nan("");
  return s;
}

std::string yaml_line_of(const YAML::Node& node) {
  return "line " + std::to_string(node.Mark().line + 1);
}

// Builds JSON from yaml-cpp's nodes, counting what it builds against the limits. An alias
// is the node it names, shared: each use is counted again, as each use is built again.
class YamlToJson {
 public:
  explicit YamlToJson(const YamlLimits& limits) : limits_(limits) {}

  nlohmann::json build(const YAML::Node& node, int depth = 1) {
    count_node(node, depth);
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar:
        count_bytes(node, node.Scalar().size());
        // Tag "!" marks a quoted (non-plain) scalar: always a string.
        if (node.Tag() == "!") return node.Scalar();
        if (node.Tag() == "tag:yaml.org,2002:str") return node.Scalar();
        return resolve_plain_scalar(node.Scalar());
      case YAML::NodeType::Sequence: {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& item : node) out.push_back(build(item, depth + 1));
        return out;
      }
      case YAML::NodeType::Map: {
        nlohmann::json out = nlohmann::json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar())
            throw std::runtime_error(yaml_line_of(kv.first) + ": map keys must be strings");
          count_bytes(kv.first, kv.first.Scalar().size());
          out[kv.first.Scalar()] = build(kv.second, depth + 1);
        }
        return out;
      }
    }
    return nullptr;
  }

 private:
  void count_node(const YAML::Node& node, int depth) {
    if (depth > limits_.max_depth) {
      throw std::runtime_error(yaml_line_of(node) + ": nested deeper than " +
                               std::to_string(limits_.max_depth) + " levels");
    }
    if (++nodes_ > limits_.max_nodes) {
      throw std::runtime_error(
          yaml_line_of(node) + ": the YAML expands to more than " +
          std::to_string(limits_.max_nodes) +
          " values (aliases such as *a repeat what their anchor names; a document may build "
          "its own size plus " +
          std::to_string(YamlLimits::kAliasNodeAllowance) +
          " values): an alias bomb, not a manifest");
    }
  }
  void count_bytes(const YAML::Node& node, size_t n) {
    bytes_ += n;
    if (bytes_ > limits_.max_scalar_bytes) {
      throw std::runtime_error(
          yaml_line_of(node) + ": the YAML expands to more than " +
          std::to_string(limits_.max_scalar_bytes) +
          " bytes of strings (aliases such as *a repeat what their anchor names; a document "
          "may build its own size plus 64 MiB): an alias bomb, not a manifest");
    }
  }

  const YamlLimits& limits_;
  size_t nodes_ = 0;
  size_t bytes_ = 0;
};

// JSON has no aliases; only its nesting needs a bound (nlohmann parses it without
// recursion, but dumping and walking it recurse).
nlohmann::json parse_json_with_depth_limit(const std::string& text, int max_depth) {
  const nlohmann::json::parser_callback_t check_depth =
      [max_depth](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
        if ((event == nlohmann::json::parse_event_t::object_start ||
             event == nlohmann::json::parse_event_t::array_start) &&
            depth >= max_depth) {
          throw std::runtime_error("invalid JSON: nested deeper than " + std::to_string(max_depth) +
                                   " levels");
        }
        return true;
      };
  return nlohmann::json::parse(text, check_depth);
}

// Every manifest is an object. A null item of a JSON list is not an empty document to
// skip (as an empty YAML document is) but a mistake, and any other non-object would reach
// a parser that cannot say where it was: name its place here.
std::vector<nlohmann::json> only_objects(std::vector<nlohmann::json> docs,
                                         const std::function<std::string(size_t)>& place) {
  for (size_t i = 0; i < docs.size(); ++i) {
    if (!docs[i].is_object()) {
      throw std::runtime_error(place(i) + ": must be an object (a Kubernetes manifest), got " +
                               describe_json(docs[i]));
    }
  }
  return docs;
}

}  // namespace

YamlLimits YamlLimits::for_text(const std::string& text) {
  YamlLimits l;
  l.max_nodes = kAliasNodeAllowance + text.size();
  l.max_scalar_bytes = kAliasByteAllowance + text.size();
  return l;
}

std::vector<nlohmann::json> yaml_documents_to_json(const std::string& text) {
  return yaml_documents_to_json(text, YamlLimits::for_text(text));
}

std::vector<nlohmann::json> yaml_documents_to_json(const std::string& text,
                                                   const YamlLimits& limits) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(text);
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own guard (500 levels), which it words as "bad file".
    throw std::runtime_error("invalid YAML at line " + std::to_string(e.mark.line + 1) +
                             ", column " + std::to_string(e.mark.column + 1) +
                             ": nested deeper than " + std::to_string(limits.max_depth) +
                             " levels");
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("invalid YAML at line " + std::to_string(e.mark.line + 1) +
                             ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  std::vector<nlohmann::json> out;
  YamlToJson builder(limits);  // one budget for the whole stream
  for (const auto& d : docs) {
    if (d.IsNull()) continue;
    out.push_back(builder.build(d));
  }
  return out;
}

namespace {
std::vector<nlohmann::json> yaml_stream_manifests(const std::string& text) {
  return only_objects(yaml_documents_to_json(text),
                      [](size_t i) { return "document " + std::to_string(i + 1); });
}
}  // namespace

std::vector<nlohmann::json> parse_manifests(const std::string& text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
    nlohmann::json value;
    try {
      value = parse_json_with_depth_limit(text, YamlLimits::kMaxDepth);
    } catch (const nlohmann::json::exception& e) {
      // parse_error, or out_of_range for a number beyond a double's range ("1e400").
      // JSON documents separated by "---" lines are a YAML stream. Anything else
      // that looks like JSON is held to JSON: YAML would read `{"a": }` as a null.
      const bool has_separator = text.rfind("---\n", 0) == 0 ||
                                 text.find("\n---\n") != std::string::npos ||
                                 text.find("\n---\r\n") != std::string::npos;
      if (has_separator) return yaml_stream_manifests(text);
      throw std::runtime_error(std::string("invalid JSON: ") + e.what());
    }
    // A Kubernetes List ({"kind":"List","items":[...]}) or a bare array holds several.
    if (value.is_array()) {
      return only_objects(value.get<std::vector<nlohmann::json>>(),
                          [](size_t i) { return index_path("", i); });
    }
    if (value.is_object() && value.value("kind", "") == "List" && value.contains("items") &&
        value["items"].is_array()) {
      return only_objects(value["items"].get<std::vector<nlohmann::json>>(),
                          [](size_t i) { return index_path("items", i); });
    }
    return {value};
  }
  return yaml_stream_manifests(text);
}

}  // namespace commgate
