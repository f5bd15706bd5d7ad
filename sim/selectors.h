// The query-string selectors of list and watch: labelSelector (equality- and set-based)
// and fieldSelector (=, ==, != on any dotted field path, e.g. metadata.name, status.phase).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate::sim {

class LabelSelectorQuery {
 public:
  // Parses "a=b,c!=d,e in (x,y),f notin (z),g,!h". Throws ApiError (400) when malformed.
  static LabelSelectorQuery parse(const std::string& text);
  bool matches(const nlohmann::json& object) const;  // reads metadata.labels
  bool empty() const { return requirements_.empty(); }

 private:
  struct Requirement {
    std::string key;
    std::string op;  // "=", "!=", "in", "notin", "exists", "!exists"
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

class FieldSelectorQuery {
 public:
  static FieldSelectorQuery parse(const std::string& text);
  bool matches(const nlohmann::json& object) const;
  bool empty() const { return requirements_.empty(); }

 private:
  struct Requirement {
    std::string path;  // "metadata.name"
    bool equal = true;
    std::string value;
  };
  std::vector<Requirement> requirements_;
};

}  // namespace commgate::sim
