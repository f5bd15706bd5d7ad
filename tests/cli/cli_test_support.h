// Running the real `commgate` binary as a user does, for the tests of its subcommands:
// argv in, exit code, stdout and stderr out; temporary files; the examples' paths.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/subprocess.h"

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

// An SVG document read back by a real XML parser (Python's xml.etree, /usr/bin/python3 as
// the other tests use it): `ok` and, when it parsed, what a test looks for:
//   "ids":     {id: {attribute: value, ..., "tag": element}}
//   "classes": {class: count}
//   "bars":    [{attribute: value}] of the <g class="bar"> elements, in order
//   "texts":   [the text of every <text>, <tspan>, <title> and <desc>, entities resolved]
// A document that does not parse: `ok` false and the parser's message in `error`.
struct ParsedSvg {
  bool ok = false;
  std::string error;
  nlohmann::json doc;
};

inline ParsedSvg parse_svg_file(const std::string& path) {
  static const char* kScript = R"PY(
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = '{http://www.w3.org/2000/svg}'
out = {'root': root.tag.replace(ns, ''), 'ids': {}, 'classes': {}, 'bars': [], 'texts': []}
for el in root.iter():
    tag = el.tag.replace(ns, '')
    if 'id' in el.attrib:
        out['ids'][el.attrib['id']] = dict(el.attrib, tag=tag)
    cls = el.attrib.get('class')
    if cls:
        out['classes'][cls] = out['classes'].get(cls, 0) + 1
    if cls == 'bar':
        out['bars'].append(dict(el.attrib))
    if tag in ('text', 'tspan', 'title', 'desc') and el.text:
        out['texts'].append(el.text)
print(json.dumps(out))
)PY";
  std::string python = "/usr/bin/python3";
  if (!std::filesystem::exists(python)) python = find_on_path("python3");
  ParsedSvg r;
  if (python.empty()) {
    r.error = "no python3 to parse the SVG with (scripts/install-deps.sh installs it)";
    return r;
  }
  const Captured c = run_capture({python, "-c", kScript, path});
  if (c.code != 0) {
    r.error = c.err;
    return r;
  }
  r.doc = nlohmann::json::parse(c.out, nullptr, false);
  r.ok = r.doc.is_object();
  if (!r.ok) r.error = "the parser printed no JSON: " + c.out;
  return r;
}

}  // namespace commgate::testing
