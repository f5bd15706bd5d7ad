// Which folder may use which (docs/architecture.md), checked two ways: the #include lines
// of every source file, and the CMake link graph the build was configured with (written
// by tests/layering/CMakeLists.txt). A new include or target_link_libraries that crosses a
// layer fails here, naming the file and line or the chain of targets.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace commgate {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;

// ---- The rules -------------------------------------------------------------------------

struct FolderRule {
  std::string folder;
  std::set<std::string> must_not_include;  // top-level folders
  std::string why;
};

std::set<std::string> all_but(std::set<std::string> allowed) {
  std::set<std::string> out;
  for (const char* f : {"core", "server", "kube", "webhook", "probe-job", "cli", "operator", "sim",
                        "tests", "bench"})
    if (!allowed.count(f)) out.insert(f);
  return out;
}

std::vector<FolderRule> folder_rules() {
  std::vector<FolderRule> rules = {
      {"core", all_but({"core"}),
       "core/ is the API types, parsing, model and decision: no networking, used by all"},
      {"server", all_but({"core", "server"}), "the HTTPS server builds on core/ only"},
      {"kube", all_but({"core", "kube"}),
       "the Kubernetes client and controller runtime build on core/ only"},
      {"webhook",
       {"probe-job", "operator", "cli", "sim", "tests", "bench"},
       "the webhook and the operator share through core/, server/ and kube/, never each other"},
      {"operator",
       {"webhook", "probe-job", "cli", "sim", "tests", "bench"},
       "the operator and the webhook never use each other; the operator never links LibTorch"},
      {"probe-job",
       {"kube", "server", "webhook", "operator", "cli", "sim", "tests", "bench"},
       "the probe runs in pods with no RBAC: core/ only, never the Kubernetes client"},
      {"cli", {"sim", "tests", "bench"}, "the product never uses the simulated cluster"},
      {"sim",
       {"kube", "webhook", "operator", "probe-job", "cli", "tests", "bench"},
       "the simulated cluster stands in for Kubernetes; it must not share code with what it tests"},
  };
  return rules;
}

struct TargetRule {
  std::string target;
  std::set<std::string> must_not_reach;  // targets, directly or through others
  std::string why;
};

std::vector<TargetRule> target_rules() {
  const std::set<std::string> product_or_sim = {
      "commgate_server",    "commgate_kube", "commgate_webhook", "commgate_sim",
      "commgate_probe_lib", "commgate_cli",  "commgate_operator"};
  return {
      {"commgate_core", product_or_sim, "core/ links no other layer"},
      {"commgate_server",
       {"commgate_kube", "commgate_webhook", "commgate_sim", "commgate_probe_lib", "commgate_cli",
        "commgate_operator", "torch"},
       "server/ links core/ only"},
      {"commgate_kube",
       {"commgate_server", "commgate_webhook", "commgate_sim", "commgate_probe_lib", "commgate_cli",
        "commgate_operator", "torch"},
       "kube/ links core/ only"},
      {"commgate_webhook",
       {"commgate_sim", "commgate_probe_lib", "commgate_cli", "commgate_operator", "torch"},
       "the webhook never links the operator, the probe, LibTorch or the sim"},
      {"commgate_operator",
       {"commgate_sim", "commgate_probe_lib", "commgate_webhook", "torch"},
       "the operator never links the webhook, the probe, LibTorch or the sim"},
      {"commgate_probe_lib",
       {"commgate_kube", "commgate_server", "commgate_webhook", "commgate_sim",
        "commgate_operator"},
       "the probe never links the Kubernetes client"},
      {"commgate", {"commgate_sim", "torch"}, "the shipped binary carries no sim and no LibTorch"},
  };
}

// ---- The checks (pure) -----------------------------------------------------------------

struct SourceFile {
  std::string path;  // relative to the source root: "kube/informer.cpp"
  std::string text;
};

// The top-level folder a quoted include names ("kube" for "kube/store.h"); "" for a
// third-party or same-folder header.
std::string included_folder(const std::string& header) {
  const auto slash = header.find('/');
  return slash == std::string::npos ? "" : header.substr(0, slash);
}

// "path:line: includes "x/y.h" (why)" for every include that breaks a rule.
std::vector<std::string> include_violations(const std::vector<FolderRule>& rules,
                                            const std::vector<SourceFile>& files) {
  static const std::regex kInclude(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  std::vector<std::string> out;
  for (const SourceFile& file : files) {
    const std::string folder = included_folder(file.path);
    const auto rule = std::find_if(rules.begin(), rules.end(),
                                   [&](const FolderRule& r) { return r.folder == folder; });
    if (rule == rules.end()) continue;
    std::istringstream lines(file.text);
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      std::smatch m;
      if (!std::regex_search(line, m, kInclude)) continue;
      const std::string header = m[1];
      const std::string where = file.path + ":" + std::to_string(n) + ": includes \"" + header;
      if (header.find("../") != std::string::npos) {
        out.push_back(where + "\" (include from the source root, never with ../)");
      } else if (rule->must_not_include.count(included_folder(header))) {
        out.push_back(where + "\" (" + rule->why + ")");
      }
    }
  }
  return out;
}

using LinkGraph = std::map<std::string, std::vector<std::string>>;  // target -> direct deps

// "a -> b -> c (why)" for every forbidden target a rule's target reaches.
std::vector<std::string> link_violations(const std::vector<TargetRule>& rules,
                                         const LinkGraph& graph) {
  std::vector<std::string> out;
  for (const TargetRule& rule : rules) {
    if (!graph.count(rule.target)) continue;  // not configured in this build
    // Breadth-first, remembering how each target was reached.
    std::map<std::string, std::string> via = {{rule.target, ""}};
    std::vector<std::string> frontier = {rule.target};
    while (!frontier.empty()) {
      std::vector<std::string> next;
      for (const auto& t : frontier) {
        const auto it = graph.find(t);
        if (it == graph.end()) continue;
        for (const auto& dep : it->second)
          if (via.emplace(dep, t).second) next.push_back(dep);
      }
      frontier = std::move(next);
    }
    for (const auto& bad : rule.must_not_reach) {
      if (!via.count(bad)) continue;
      std::string chain = bad;
      for (std::string t = via[bad]; !t.empty(); t = via[t]) chain = t + " -> " + chain;
      out.push_back(chain + " (" + rule.why + ")");
    }
  }
  return out;
}

// "target: dep;dep;..." lines, as tests/layering/CMakeLists.txt writes them.
LinkGraph parse_link_graph(const std::string& text) {
  LinkGraph graph;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    auto& deps = graph[line.substr(0, colon)];
    std::istringstream list(line.substr(colon + 2));
    for (std::string dep; std::getline(list, dep, ';');) {
      // $<LINK_ONLY:x> and other wrappers: keep the name inside.
      static const std::regex kGenex(R"(^\$<[A-Z_]+:(.*)>$)");
      std::smatch m;
      while (std::regex_match(dep, m, kGenex)) dep = m[1];
      if (!dep.empty()) deps.push_back(dep);
    }
  }
  return graph;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<SourceFile> product_sources() {
  std::vector<SourceFile> out;
  const fs::path root = COMMGATE_SOURCE_DIR;
  for (const auto& rule : folder_rules()) {
    if (!fs::is_directory(root / rule.folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / rule.folder)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cpp" && ext != ".hpp" && ext != ".cc" && ext != ".cu") continue;
      out.push_back({fs::relative(entry.path(), root).string(), read_file(entry.path())});
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "  " + l + "\n";
  return out;
}

// ---- The checker itself, on made-up trees ----------------------------------------------

TEST(Layering, TheIncludeCheckFlagsEachKindOfCrossing) {
  struct Case {
    const char* name;
    SourceFile file;
    size_t want_violations;
  };
  const std::vector<Case> cases = {
      {"core including the server", {"core/x.cpp", "#include \"server/http.h\"\n"}, 1},
      {"core including the sim", {"core/x.h", "  #  include \"sim/cluster.h\"\n"}, 1},
      {"kube including the server", {"kube/x.cpp", "#include \"server/server.h\"\n"}, 1},
      {"the probe including the Kubernetes client",
       {"probe-job/x.cpp", "#include \"kube/api_client.h\"\n"},
       1},
      {"the webhook including the operator",
       {"webhook/x.cpp", "#include \"operator/reconcile.h\"\n"},
       1},
      {"the cli including the sim", {"cli/x.cpp", "#include <sim/cluster.h>\n"}, 1},
      {"a climb out of the folder", {"core/x.cpp", "#include \"../sim/cluster.h\"\n"}, 1},
      {"the webhook on core, server and kube",
       {"webhook/x.cpp",
        "#include \"core/decision.h\"\n#include \"server/server.h\"\n#include \"kube/informer.h\"\n"
        "#include <nlohmann/json.hpp>\n"},
       0},
      {"a commented-out include is not an include",
       {"server/x.cpp", "// #include \"kube/store.h\"\n"},
       0},
      {"tests may use anything", {"tests/x.cpp", "#include \"sim/cluster.h\"\n"}, 0},
  };
  for (const Case& c : cases)
    EXPECT_EQ(include_violations(folder_rules(), {c.file}).size(), c.want_violations) << c.name;
}

TEST(Layering, TheLinkCheckFollowsTransitiveDependencies) {
  const LinkGraph graph = parse_link_graph(
      "commgate_core: nlohmann_json::nlohmann_json;$<LINK_ONLY:yaml-cpp>\n"
      "commgate_kube: commgate_core;helper\n"
      "helper: commgate_server\n"
      "commgate_webhook: commgate_core;commgate_kube;fakes\n"
      "fakes: commgate_sim\n");
  const auto violations = link_violations(target_rules(), graph);
  ASSERT_EQ(violations.size(), 2u) << joined(violations);
  EXPECT_EQ(violations[0], "commgate_kube -> helper -> commgate_server (kube/ links core/ only)");
  EXPECT_EQ(violations[1].rfind("commgate_webhook -> fakes -> commgate_sim (", 0), 0u)
      << violations[1];
  EXPECT_EQ(graph.at("commgate_core")[1], "yaml-cpp");
}

// ---- The real tree ---------------------------------------------------------------------

TEST(Layering, NoFolderIncludesWhatItMustNot) {
  const auto files = product_sources();
  std::set<std::string> folders;
  for (const auto& f : files) folders.insert(included_folder(f.path));
  for (const char* must_exist : {"core", "server", "kube", "webhook", "cli", "sim"})
    EXPECT_TRUE(folders.count(must_exist)) << must_exist << "/ was not scanned";
  const auto violations = include_violations(folder_rules(), files);
  EXPECT_TRUE(violations.empty()) << "see docs/architecture.md:\n" << joined(violations);
}

TEST(Layering, TheLinkGraphAgreesWithTheLayers) {
  const LinkGraph graph = parse_link_graph(read_file(COMMGATE_LINK_GRAPH));
  for (const char* must_exist :
       {"commgate_core", "commgate_server", "commgate_kube", "commgate_webhook", "commgate"})
    EXPECT_TRUE(graph.count(must_exist)) << must_exist << " is not in " << COMMGATE_LINK_GRAPH;
  const auto violations = link_violations(target_rules(), graph);
  EXPECT_TRUE(violations.empty()) << "see docs/architecture.md:\n" << joined(violations);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
