// The CRDs and examples as the real kubectl reads them, offline: `kubectl patch --local`
// decodes a file with the same YAML reader the apiserver uses and prints it as JSON
// without asking any server (`kubectl apply/create --dry-run=client` need discovery, so
// they cannot run without a cluster). Its JSON must equal what commgate's
// parse_manifests makes of the same file: then the schema tests in crd_tests checked
// what the apiserver will see.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/yaml_json.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;

struct CommandResult {
  int status = -1;
  std::string out;
};

CommandResult run(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  r.status = pclose(pipe);
  return r;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> files() {
  std::vector<fs::path> out;
  const fs::path root(COMMGATE_SOURCE_DIR);
  for (const char* dir : {"crds", "examples/jobs", "examples/policies"}) {
    for (const auto& e : fs::directory_iterator(root / dir)) {
      if (e.path().extension() == ".yaml") out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(KubectlReadsCrds, as_commgate_reads_them) {
  const auto paths = files();
  ASSERT_GE(paths.size(), 9u);
  for (const auto& path : paths) {
    // --kubeconfig=/dev/null: no cluster is asked, whatever the environment points to.
    CommandResult r =
        run(std::string(KUBECTL) +
            " --kubeconfig=/dev/null patch --local --type=merge -p '{}' -o json -f '" +
            path.string() + "'");
    ASSERT_EQ(r.status, 0) << path << ":\n" << r.out;
    nlohmann::json from_kubectl = nlohmann::json::parse(r.out);
    auto ours = parse_manifests(read_file(path));
    ASSERT_EQ(ours.size(), 1u) << path;
    EXPECT_EQ(from_kubectl, ours[0]) << path << "\nkubectl:\n"
                                     << from_kubectl.dump(2) << "\ncommgate:\n"
                                     << ours[0].dump(2);
  }
}

}  // namespace
}  // namespace commgate
