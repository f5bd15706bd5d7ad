// Renders charts/commgate with chart-render (tests/chart/render/main.go: Helm's template
// engine for the features the chart uses) as `helm template` would, and reads the result.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace commgate::testing {

struct RenderedChart {
  int exit_code = -1;
  std::string output;  // the manifests on success; "Error: ..." otherwise
  std::string notes;   // NOTES.txt as rendered
  std::vector<nlohmann::json> objects;

  // The objects of one kind, in output order.
  std::vector<nlohmann::json> of_kind(const std::string& kind) const;
  // The one object of a kind and name; throws when there is not exactly one.
  const nlohmann::json& get(const std::string& kind, const std::string& name) const;
};

// Release "commgate" in namespace "commgate-system" unless `args` say otherwise
// (--name, --namespace); `args` are chart-render's (--set k=v, -f file, --include-crds).
RenderedChart render_chart(const std::vector<std::string>& args = {},
                           const std::string& chart_dir = "");

// The chart's directory in the source tree.
std::string chart_dir();
// A file of the source tree, by repository-relative path.
std::string source_path(const std::string& relative);

}  // namespace commgate::testing
