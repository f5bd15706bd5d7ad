// commgate: the admission gate's command line. Subcommands wire the libraries together.
#include <iostream>
#include <string>
#include <vector>

#include "cli/evaluate_command.h"
#include "cli/operator_command.h"
#include "cli/profile_command.h"
#include "cli/webhook_command.h"

namespace {

constexpr const char* kUsage =
    R"(commgate: measures the communication cost of multi-node PyTorch DDP jobs and
gates them by policy.

Usage: commgate <command> [options]

Commands:
  evaluate   predict the communication share of a TrainingJob and print the decision
  operator   run the TrainingJob controller (probe, decide, launch, follow)
  profile    print the CommProfile manifest of a node pool from a commgate-probe result
  webhook    serve the admission webhook over HTTPS
  version    print the version

Run 'commgate <command> --help' for a command's options.
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  if (command == "evaluate") return commgate::run_evaluate(args, std::cout, std::cerr);
  if (command == "profile") return commgate::run_profile(args, std::cout, std::cerr);
  if (command == "webhook") return commgate::run_webhook(args, std::cout, std::cerr);
  if (command == "operator") return commgate::run_operator(args, std::cout, std::cerr);
  if (command == "version") {
    std::cout << "commgate " << COMMGATE_VERSION << "\n";
    return 0;
  }
  std::cerr << "commgate: unknown command \"" << command << "\"\n" << kUsage;
  return 2;
}
