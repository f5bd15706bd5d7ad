// commgate-probe: measures all-reduce and compute for a DDP job on its target nodes and
// prints a ProbeResult (docs/probe.md). main only wires the pieces together.
#include <iostream>
#include <string>
#include <vector>

#include "probe-job/local_ranks.h"
#include "probe-job/probe_config.h"
#include "probe-job/probe_runner.h"

int main(int argc, char** argv) {
  using namespace commgate::probe;
  const std::vector<std::string> args(argv + 1, argv + argc);
  ParseOutcome parsed = parse_probe_config(args, process_env());
  if (parsed.help) {
    std::cout << probe_usage();
    return kExitOk;
  }
  if (!parsed.config) {
    std::cerr << "commgate-probe: " << parsed.error
              << "\n(commgate-probe --help lists the flags)\n";
    return kExitUsage;
  }
  if (parsed.config->local_ranks > 0)
    return run_local_ranks(*parsed.config, args, std::cout, std::cerr);
  return run_rank(*parsed.config, std::cout, std::cerr);
}
