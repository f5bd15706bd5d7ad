#include "sim/selectors.h"

#include <algorithm>

#include "sim/api_status.h"

namespace commgate::sim {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// Splits on commas outside parentheses ("a in (x,y),b" -> "a in (x,y)", "b").
std::vector<std::string> split_terms(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty() || !out.empty()) out.push_back(trim(cur));
  return out;
}

std::string field_string(const nlohmann::json& object, const std::string& path) {
  const nlohmann::json* cur = &object;
  size_t start = 0;
  while (start <= path.size()) {
    const auto dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!cur->is_object() || !cur->contains(part)) return "";
    cur = &(*cur)[part];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null()) return "";
  return cur->dump();
}

}  // namespace

LabelSelectorQuery LabelSelectorQuery::parse(const std::string& text) {
  LabelSelectorQuery q;
  if (trim(text).empty()) return q;
  for (const auto& term : split_terms(text)) {
    if (term.empty())
      throw bad_request("unable to parse requirement: empty term in \"" + text + "\"");
    Requirement r;
    const auto paren = term.find('(');
    if (paren != std::string::npos) {
      if (term.back() != ')') throw bad_request("unable to parse requirement: \"" + term + "\"");
      std::string head = trim(term.substr(0, paren));
      const auto space = head.find_last_of(' ');
      if (space == std::string::npos)
        throw bad_request("unable to parse requirement: \"" + term + "\"");
      r.key = trim(head.substr(0, space));
      r.op = trim(head.substr(space + 1));
      if (r.op != "in" && r.op != "notin")
        throw bad_request("unable to parse requirement: unknown operator \"" + r.op + "\"");
      for (const auto& v : split_terms(term.substr(paren + 1, term.size() - paren - 2)))
        r.values.push_back(v);
    } else if (auto ne = term.find("!="); ne != std::string::npos) {
      r.key = trim(term.substr(0, ne));
      r.op = "!=";
      r.values = {trim(term.substr(ne + 2))};
    } else if (auto eq = term.find('='); eq != std::string::npos) {
      r.key = trim(term.substr(0, eq));
      r.op = "=";
      const size_t skip = term.compare(eq, 2, "==") == 0 ? 2 : 1;
      r.values = {trim(term.substr(eq + skip))};
    } else if (term[0] == '!') {
      r.key = trim(term.substr(1));
      r.op = "!exists";
    } else {
      r.key = term;
      r.op = "exists";
    }
    if (r.key.empty() || r.key.find_first_of(" ()!=") != std::string::npos)
      throw bad_request("unable to parse requirement: invalid label key in \"" + term + "\"");
    q.requirements_.push_back(std::move(r));
  }
  return q;
}

bool LabelSelectorQuery::matches(const nlohmann::json& object) const {
  static const nlohmann::json kNoLabels = nlohmann::json::object();
  const nlohmann::json* labels = &kNoLabels;
  if (object.contains("metadata") && object["metadata"].contains("labels") &&
      object["metadata"]["labels"].is_object())
    labels = &object["metadata"]["labels"];
  for (const auto& r : requirements_) {
    const bool has = labels->contains(r.key) && (*labels)[r.key].is_string();
    const std::string value = has ? (*labels)[r.key].get<std::string>() : "";
    const bool in = std::find(r.values.begin(), r.values.end(), value) != r.values.end();
    if (r.op == "exists" && !has) return false;
    if (r.op == "!exists" && has) return false;
    if ((r.op == "=" || r.op == "in") && !(has && in)) return false;
    // Upstream: != and notin also match objects without the label.
    if ((r.op == "!=" || r.op == "notin") && has && in) return false;
  }
  return true;
}

FieldSelectorQuery FieldSelectorQuery::parse(const std::string& text) {
  FieldSelectorQuery q;
  if (trim(text).empty()) return q;
  for (const auto& term : split_terms(text)) {
    Requirement r;
    if (auto ne = term.find("!="); ne != std::string::npos) {
      r.path = trim(term.substr(0, ne));
      r.equal = false;
      r.value = trim(term.substr(ne + 2));
    } else if (auto eq = term.find('='); eq != std::string::npos) {
      r.path = trim(term.substr(0, eq));
      const size_t skip = term.compare(eq, 2, "==") == 0 ? 2 : 1;
      r.value = trim(term.substr(eq + skip));
    } else {
      throw bad_request("invalid selector: '" + text + "'; can't understand '" + term + "'");
    }
    if (r.path.empty()) throw bad_request("invalid selector: '" + text + "'");
    q.requirements_.push_back(std::move(r));
  }
  return q;
}

bool FieldSelectorQuery::matches(const nlohmann::json& object) const {
  for (const auto& r : requirements_)
    if ((field_string(object, r.path) == r.value) != r.equal) return false;
  return true;
}

}  // namespace commgate::sim
