#include "tests/support/kubectl.h"

#include <fstream>
#include <utility>

#include "tests/support/child_process.h"

namespace commgate::testing {

Kubectl::Kubectl(std::string program, std::filesystem::path kubeconfig, std::filesystem::path dir,
                 std::chrono::milliseconds timeout)
    : program_(std::move(program)),
      kubeconfig_(std::move(kubeconfig)),
      dir_(std::move(dir)),
      timeout_(timeout) {}

Kubectl Kubectl::with_kubeconfig(std::string program, const std::filesystem::path& dir,
                                 const std::string& kubeconfig_text,
                                 std::chrono::milliseconds timeout) {
  const std::filesystem::path kubeconfig = dir / "kubeconfig";
  std::ofstream(kubeconfig) << kubeconfig_text;
  return Kubectl(std::move(program), kubeconfig, dir, timeout);
}

KubectlResult Kubectl::run(const std::vector<std::string>& args,
                           const std::vector<std::string>& env) {
  std::vector<std::string> argv;
  if (!env.empty()) {
    argv.push_back("/usr/bin/env");
    argv.insert(argv.end(), env.begin(), env.end());
  }
  argv.insert(argv.end(), {program_, "--kubeconfig", kubeconfig_.string(), "--cache-dir",
                           (dir_ / "cache").string(), "--request-timeout=10s"});
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess p(argv, dir_ / ("kubectl-" + std::to_string(++calls_) + ".out"));
  const int code = p.wait_exit(timeout_);
  return {code, p.output()};
}

}  // namespace commgate::testing
