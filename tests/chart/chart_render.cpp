#include "tests/chart/chart_render.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <stdexcept>

#include "core/yaml_json.h"
#include "tests/support/child_process.h"

namespace commgate::testing {

namespace fs = std::filesystem;

std::string source_path(const std::string& relative) {
  return std::string(COMMGATE_SOURCE_DIR) + "/" + relative;
}

std::string chart_dir() {
  return source_path("charts/commgate");
}

std::vector<nlohmann::json> RenderedChart::of_kind(const std::string& kind) const {
  std::vector<nlohmann::json> out;
  for (const auto& o : objects)
    if (o.value("kind", "") == kind) out.push_back(o);
  return out;
}

const nlohmann::json& RenderedChart::get(const std::string& kind, const std::string& name) const {
  const nlohmann::json* found = nullptr;
  for (const auto& o : objects) {
    if (o.value("kind", "") != kind || o["metadata"].value("name", "") != name) continue;
    if (found) throw std::runtime_error("two " + kind + " " + name);
    found = &o;
  }
  if (!found) throw std::runtime_error("no " + kind + " " + name + " in the rendered chart");
  return *found;
}

RenderedChart render_chart(const std::vector<std::string>& args, const std::string& dir) {
  static std::atomic<int> calls{0};
  const fs::path work =
      fs::temp_directory_path() /
      ("commgate-chart-render-" + std::to_string(getpid()) + "-" + std::to_string(++calls));
  fs::create_directories(work);
  std::vector<std::string> argv = {
      CHART_RENDER_BIN,  "--chart",     dir.empty() ? chart_dir() : dir,
      "--name",          "commgate",    "--namespace",
      "commgate-system", "--notes-out", (work / "NOTES.txt").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  RenderedChart r;
  {
    ChildProcess p(argv, work / "output");
    r.exit_code = p.wait_exit(std::chrono::seconds(60));
    r.output = p.output();
  }
  r.notes = read_file(work / "NOTES.txt");
  if (r.exit_code == 0) r.objects = parse_manifests(r.output);
  std::error_code ec;
  fs::remove_all(work, ec);
  return r;
}

}  // namespace commgate::testing
