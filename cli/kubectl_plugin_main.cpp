// kubectl-commgate: the `kubectl commgate` plugin (cli/kubectl_plugin.h). kubectl finds it
// on PATH by its name and passes the arguments after `commgate`; every request to the
// cluster goes through kubectl itself ($KUBECTL, else the kubectl on PATH).
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli/kubectl_plugin.h"

int main(int argc, char** argv) {
  using namespace commgate;
  const std::vector<std::string> args(argv + 1, argv + argc);
  const char* from_env = std::getenv("KUBECTL");
  const std::string kubectl =
      from_env != nullptr && *from_env != '\0' ? from_env : find_on_path("kubectl");
  if (kubectl.empty()) {
    std::cerr << "kubectl commgate: kubectl was not found on PATH (or set $KUBECTL)\n";
    return kPluginError;
  }
  const KubectlRunner run = [&](const std::vector<std::string>& kubectl_args) {
    std::vector<std::string> argv_ = {kubectl};
    argv_.insert(argv_.end(), kubectl_args.begin(), kubectl_args.end());
    return run_capture(argv_);
  };
  return run_kubectl_plugin(args, run, std::cout, std::cerr, std::chrono::system_clock::now());
}
