// The Dockerfiles under images/, checked as far as a machine without a container engine
// honestly can (nothing here builds an image): each file's instructions are parsed, and
// what the chart and the operator rely on is checked against them: the final stage runs as
// a non-root user and needs no shell, the binary it starts is a CMake target the build
// stage builds and is the command the chart's containers (or the operator's probe Jobs)
// run, the sources it copies exist and pass its .dockerignore, and the image tags of
// docs/install.md's build commands are the chart's default image values.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "core/yaml_json.h"
#include "operator/probe_job.h"
#include "tests/chart/chart_render.h"
#include "tests/support/child_process.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
namespace fs = std::filesystem;

struct Instruction {
  std::string keyword;  // upper case: FROM, RUN, COPY, USER, ENTRYPOINT, ARG, ...
  std::string args;
};

struct Stage {
  std::string from;  // the FROM line's arguments
  std::vector<Instruction> instructions;
};

// Dockerfile syntax, the part these files use: comments, line continuations, one
// instruction a line; a FROM starts a stage; ARGs before the first FROM are global.
std::vector<Stage> parse_dockerfile(const std::string& text) {
  std::vector<Stage> stages;
  std::istringstream in(text);
  std::string line, logical;
  const auto flush = [&] {
    const auto start = logical.find_first_not_of(" \t");
    if (start == std::string::npos) return logical.clear();
    const std::string l = logical.substr(start);
    logical.clear();
    const auto space = l.find_first_of(" \t");
    Instruction ins{l.substr(0, space), space == std::string::npos ? "" : l.substr(space + 1)};
    for (auto& c : ins.keyword) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (ins.keyword == "FROM")
      stages.push_back({ins.args, {}});
    else if (!stages.empty())
      stages.back().instructions.push_back(ins);
  };
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] == '#') continue;  // also inside a RUN
    if (!line.empty() && line.back() == '\\') {
      logical += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    logical += line;
    flush();
  }
  flush();
  return stages;
}

std::vector<std::string> all_of(const Stage& s, const std::string& keyword) {
  std::vector<std::string> out;
  for (const auto& i : s.instructions)
    if (i.keyword == keyword) out.push_back(i.args);
  return out;
}

// Every add_executable(NAME ...) of the source tree's CMakeLists.txt files.
std::set<std::string> cmake_executables() {
  std::set<std::string> out;
  static const std::regex kExe(R"(add_executable\(\s*([A-Za-z0-9_.+-]+))");
  for (auto it = fs::recursive_directory_iterator(COMMGATE_SOURCE_DIR);
       it != fs::recursive_directory_iterator(); ++it) {
    const fs::path& path = it->path();
    const std::string name = path.filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name.rfind(".", 0) == 0)) {
      it.disable_recursion_pending();  // build trees, .git
      continue;
    }
    if (name != "CMakeLists.txt") continue;
    const auto& e = *it;
    const std::string text = read_file(e.path());
    for (std::sregex_iterator m(text.begin(), text.end(), kExe), end; m != end; ++m)
      out.insert((*m)[1]);
  }
  return out;
}

// `*` then `!path` lines: what the build context keeps.
std::set<std::string> dockerignore_allowed(const std::string& file) {
  std::set<std::string> out;
  std::istringstream in(read_file(file));
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] == '!') out.insert(line.substr(1));
  return out;
}

struct ImageCase {
  std::string name;
  std::string dockerfile;  // under images/
  std::string binary;      // the CMake target, at /usr/local/bin/<binary>
};

void PrintTo(const ImageCase& c, std::ostream* os) {
  *os << c.name;
}

class Images : public ::testing::TestWithParam<ImageCase> {
 protected:
  void SetUp() override {
    path_ = source_path("images/" + GetParam().dockerfile);
    ASSERT_TRUE(fs::exists(path_)) << path_;
    stages_ = parse_dockerfile(read_file(path_));
    ASSERT_GE(stages_.size(), 2u) << "multi-stage: a build stage and a runtime stage";
  }
  std::string path_;
  std::vector<Stage> stages_;
};

TEST_P(Images, the_runtime_stage_runs_as_the_charts_non_root_user_without_a_shell) {
  const Stage& runtime = stages_.back();
  EXPECT_EQ(all_of(runtime, "USER"), std::vector<std::string>{"65532:65532"})
      << "the chart's pods run as 65532:65532 (runAsNonRoot)";
  EXPECT_TRUE(all_of(runtime, "RUN").empty()) << "a RUN needs a shell in the runtime image";
  EXPECT_NE(runtime.from.find("distroless"), std::string::npos) << runtime.from;
  EXPECT_NE(runtime.from.find(":nonroot"), std::string::npos) << runtime.from;
  // Only the build stage's output is copied in.
  for (const auto& copy : all_of(runtime, "COPY"))
    EXPECT_EQ(copy.rfind("--from=build ", 0), 0u) << copy;
}

TEST_P(Images, starts_the_binary_the_build_stage_builds_from_a_cmake_target) {
  const std::string bin = "/usr/local/bin/" + GetParam().binary;
  EXPECT_EQ(all_of(stages_.back(), "ENTRYPOINT"), std::vector<std::string>{"[\"" + bin + "\"]"});
  EXPECT_TRUE(cmake_executables().count(GetParam().binary))
      << GetParam().binary << " is no add_executable() of the source tree";
  const Stage& build = stages_.front();
  EXPECT_NE(build.from.find(" AS build"), std::string::npos) << build.from;
  std::string runs;
  for (const auto& r : all_of(build, "RUN")) runs += r + "\n";
  EXPECT_NE(runs.find("--target " + GetParam().binary + " "), std::string::npos) << runs;
  EXPECT_NE(runs.find("cp /build/bin/" + GetParam().binary + " /rootfs" + bin), std::string::npos)
      << runs;
}

TEST_P(Images, copies_sources_that_exist_and_pass_its_dockerignore) {
  const auto allowed = dockerignore_allowed(path_ + ".dockerignore");
  EXPECT_FALSE(allowed.empty()) << path_ << ".dockerignore";
  int copies = 0;
  for (const auto& copy : all_of(stages_.front(), "COPY")) {
    const std::string src = copy.substr(0, copy.find(' '));
    ++copies;
    EXPECT_TRUE(fs::exists(source_path(src))) << src;
    EXPECT_TRUE(allowed.count(src)) << src << " is not in " << path_ << ".dockerignore";
  }
  EXPECT_GE(copies, 3);
}

INSTANTIATE_TEST_SUITE_P(Dockerfiles, Images,
                         ::testing::Values(ImageCase{"commgate", "commgate.Dockerfile", "commgate"},
                                           ImageCase{"probe", "commgate-probe.Dockerfile",
                                                     "commgate-probe"}),
                         [](const auto& test) { return test.param.name; });

std::string version_arg(const std::string& dockerfile) {
  for (const auto& s : parse_dockerfile(read_file(source_path("images/" + dockerfile))))
    for (const auto& a : all_of(s, "ARG"))
      if (a.rfind("VERSION=", 0) == 0) return a.substr(8);
  return "";
}

TEST(Images, the_commgate_image_is_what_the_charts_containers_run) {
  const auto r = render_chart();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto deployments = r.of_kind("Deployment");
  ASSERT_EQ(deployments.size(), 2u);
  for (const auto& d : deployments) {
    const json& c = d["spec"]["template"]["spec"]["containers"][0];
    EXPECT_EQ(c["command"], json::parse(R"(["/usr/local/bin/commgate"])"));
    EXPECT_EQ(c["image"], "commgate/commgate:0.1.0");
    EXPECT_EQ(d["spec"]["template"]["spec"]["securityContext"]["runAsUser"], 65532);
    EXPECT_EQ(d["spec"]["template"]["spec"]["securityContext"]["runAsGroup"], 65532);
  }
  // The probe pods the operator creates run the probe image's binary.
  EXPECT_EQ(op::ProbeLaunchSettings{}.command,
            std::vector<std::string>{"/usr/local/bin/commgate-probe"});
}

// One version: the chart's appVersion is the images' VERSION and the tag docs/install.md
// builds and pushes; the repositories are the chart's defaults.
TEST(Images, tags_match_the_charts_default_values) {
  const json chart = yaml_documents_to_json(read_file(chart_dir() + "/Chart.yaml")).at(0);
  const json values = yaml_documents_to_json(read_file(chart_dir() + "/values.yaml")).at(0);
  const std::string version = chart["appVersion"];
  EXPECT_EQ(values["image"]["tag"], "") << "empty: the appVersion";
  EXPECT_EQ(values["image"]["probeRepository"], "") << "empty: image.repository + -probe";
  EXPECT_EQ(version_arg("commgate.Dockerfile"), version);
  EXPECT_EQ(version_arg("commgate-probe.Dockerfile"), version);
  const std::string docs = read_file(source_path("docs/install.md"));
  for (const auto& [file, repository] : std::vector<std::pair<std::string, std::string>>{
           {"commgate.Dockerfile", values["image"]["repository"]},
           // probeRepository "" : image.repository + "-probe" (commgate.probeImage).
           {"commgate-probe.Dockerfile",
            values["image"]["repository"].get<std::string>() + "-probe"}}) {
    const std::string build =
        "docker build -f images/" + file + " -t " + repository + ":" + version + " .";
    EXPECT_NE(docs.find(build), std::string::npos) << "docs/install.md lacks: " << build;
    EXPECT_NE(read_file(source_path("images/" + file)).find(build), std::string::npos)
        << "images/" << file << " lacks: " << build;
  }
  // The operator's built-in default (used only without --probe-image; the chart always
  // passes one) carries the same version.
  const std::string builtin = op::ProbeLaunchSettings{}.image;
  EXPECT_EQ(builtin.substr(builtin.rfind(':') + 1), version) << builtin;
}

TEST(Images, the_parser_reads_continuations_comments_and_stages) {
  const auto stages = parse_dockerfile(
      "ARG A=1\nFROM x AS build\n# c\nRUN a \\\n  # inside\n  && b\nfrom y\nuser 1:1\n");
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].from, "x AS build");
  ASSERT_EQ(stages[0].instructions.size(), 1u);
  EXPECT_EQ(stages[0].instructions[0].args, "a    && b");
  EXPECT_EQ(all_of(stages[1], "USER"), std::vector<std::string>{"1:1"});
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
