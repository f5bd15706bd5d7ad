// metav1.LabelSelector: matchLabels plus matchExpressions (In, NotIn, Exists,
// DoesNotExist), as CommPolicy.namespaceSelector uses it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/object_reader.h"

namespace commgate {

struct LabelRequirement {
  std::string key;
  std::string op;  // In | NotIn | Exists | DoesNotExist
  std::vector<std::string> values;
};

struct LabelSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<LabelRequirement> match_expressions;

  // An empty selector matches everything, as in Kubernetes.
  bool matches(const std::map<std::string, std::string>& labels) const;
  bool empty() const { return match_labels.empty() && match_expressions.empty(); }
};

LabelSelector read_label_selector(ObjectReader& reader);
nlohmann::json label_selector_to_json(const LabelSelector& s);

}  // namespace commgate
