#include "cli/manifest_yaml.h"

#include <regex>

namespace commgate {
namespace {

// A plain scalar that YAML (1.1 or 1.2, as kubectl's and commgate's readers resolve
// them) reads back as this same string: starts with a letter or '/', holds only
// characters with no YAML meaning, and is not a boolean or null word.
bool plain_is_safe(const std::string& s) {
  static const std::regex kPlain(R"([A-Za-z/_][A-Za-z0-9_./+-]*( [A-Za-z0-9_./+()-]+)*)");
  static const std::regex kWord(
      R"((y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL))");
  return std::regex_match(s, kPlain) && !std::regex_match(s, kWord);
}

std::string scalar(const nlohmann::json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    // A JSON string literal is a valid YAML double-quoted scalar.
    return plain_is_safe(s) ? s : v.dump();
  }
  return v.dump();  // numbers, booleans, null
}

bool is_empty_collection(const nlohmann::json& v) {
  return (v.is_object() || v.is_array()) && v.empty();
}

void write(const nlohmann::json& v, int indent, std::string& out);

// `key: value` lines of an object at `indent`; the first line's indentation may already
// be written (a list item's "- ").
void write_object(const nlohmann::json& object, int indent, bool first_indented, std::string& out) {
  bool first = true;
  for (const auto& [key, value] : object.items()) {
    if (!(first && first_indented)) out.append(static_cast<size_t>(indent), ' ');
    first = false;
    out += scalar(nlohmann::json(key)) + ":";
    if (value.is_object() && !value.empty()) {
      out += "\n";
      write_object(value, indent + 2, false, out);
    } else if (value.is_array() && !value.empty()) {
      out += "\n";
      write(value, indent, out);  // a block sequence may sit at its key's indentation
    } else {
      out += " " + (is_empty_collection(value) ? value.dump() : scalar(value)) + "\n";
    }
  }
}

void write(const nlohmann::json& v, int indent, std::string& out) {
  if (v.is_object() && !v.empty()) {
    write_object(v, indent, false, out);
    return;
  }
  if (v.is_array() && !v.empty()) {
    for (const auto& item : v) {
      out.append(static_cast<size_t>(indent), ' ');
      out += "- ";
      if (item.is_object() && !item.empty()) {
        write_object(item, indent + 2, true, out);
      } else if (item.is_array() && !item.empty()) {
        out += "\n";
        write(item, indent + 2, out);
      } else {
        out += (is_empty_collection(item) ? item.dump() : scalar(item)) + "\n";
      }
    }
    return;
  }
  out.append(static_cast<size_t>(indent), ' ');
  out += (is_empty_collection(v) ? v.dump() : scalar(v)) + "\n";
}

}  // namespace

std::string to_yaml(const nlohmann::json& document) {
  std::string out;
  write(document, 0, out);
  return out;
}

}  // namespace commgate
