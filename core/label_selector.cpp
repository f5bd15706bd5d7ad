#include "core/label_selector.h"

#include <algorithm>

namespace commgate {

bool LabelSelector::matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& [k, v] : match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& r : match_expressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool in =
        has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if (r.op == "In" && !in) return false;
    if (r.op == "NotIn" && in) return false;
    if (r.op == "Exists" && !has) return false;
    if (r.op == "DoesNotExist" && has) return false;
  }
  return true;
}

LabelSelector read_label_selector(ObjectReader& reader) {
  LabelSelector s;
  s.match_labels = reader.string_map("matchLabels", Presence::kOptional)
                       .value_or(std::map<std::string, std::string>{});
  for (auto& e : reader.object_list("matchExpressions")) {
    LabelRequirement r;
    r.key = e.string("key", Presence::kRequired).value_or("");
    r.op = e.one_of("operator", Presence::kRequired, {"In", "NotIn", "Exists", "DoesNotExist"})
               .value_or("");
    r.values = e.string_list("values", Presence::kOptional).value_or(std::vector<std::string>{});
    if ((r.op == "In" || r.op == "NotIn") && r.values.empty()) {
      e.errors().add(e.path_of("values"), "must be non-empty when operator is " + r.op);
    }
    if ((r.op == "Exists" || r.op == "DoesNotExist") && !r.values.empty()) {
      e.errors().add(e.path_of("values"), "must be empty when operator is " + r.op);
    }
    e.reject_unknown_fields();
    s.match_expressions.push_back(std::move(r));
  }
  reader.reject_unknown_fields();
  return s;
}

nlohmann::json label_selector_to_json(const LabelSelector& s) {
  nlohmann::json j = nlohmann::json::object();
  if (!s.match_labels.empty()) j["matchLabels"] = s.match_labels;
  for (const auto& r : s.match_expressions) {
    nlohmann::json e = {{"key", r.key}, {"operator", r.op}};
    if (!r.values.empty()) e["values"] = r.values;
    j["matchExpressions"].push_back(e);
  }
  return j;
}

}  // namespace commgate
