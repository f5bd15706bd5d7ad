// Running the real `commgate` binary as a user does, for the tests of its subcommands:
// argv in, exit code, stdout and stderr out; temporary files; the examples' paths.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace commgate::testing {

struct CliRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  if (in) s << in.rdbuf();
  return s.str();
}

// `commgate ARGS...` in `cwd` (default: the test's own), through /bin/sh with every
// argument single-quoted.
inline CliRun run_commgate_in(const std::string& cwd, const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  static int calls = 0;
  fs::path dir = fs::temp_directory_path() /
                 ("cg-cli-" + std::to_string(getpid()) + "-" + std::to_string(calls++));
  fs::create_directories(dir);
  std::string cmd = cwd.empty() ? "" : "cd '" + cwd + "' && ";
  cmd += std::string(COMMGATE_BIN);
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " >" + (dir / "out").string() + " 2>" + (dir / "err").string() + " </dev/null";
  CliRun r;
  int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

inline CliRun run(const std::vector<std::string>& args) {
  return run_commgate_in("", args);
}

inline std::string example(const std::string& rel) {
  return std::string(COMMGATE_SOURCE_DIR) + "/examples/" + rel;
}

// A file with `content` for the life of the object.
class TempFile {
 public:
  explicit TempFile(const std::string& content, const std::string& suffix = ".json") {
    path_ = std::filesystem::temp_directory_path() /
            ("cg-test-" + std::to_string(getpid()) + "-" + std::to_string(counter_++) + suffix);
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

}  // namespace commgate::testing
