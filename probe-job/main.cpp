// commgate-probe: measures all-reduce and compute for a DDP job on its target nodes and
// prints a ProbeResult (docs/probe.md). main only wires the pieces together.
#include <malloc.h>

#include <iostream>
#include <string>
#include <vector>

#include "probe-job/local_ranks.h"
#include "probe-job/probe_config.h"
#include "probe-job/probe_runner.h"

namespace {

// Tensors freed at one step are allocated again at the next. A Python training process
// keeps them in glibc's heap: its first free of a large mmapped block raises the mmap
// threshold to that size (at most 32 MiB) and the trim threshold to twice it. In this
// binary that adjustment did not take hold, so every gradient came from a fresh mmap and
// its pages were faulted in again each step: an MLP's backward took 75 ms against eager
// PyTorch's 40 on one CPU thread, with 40,000 page faults a step. Start where Python's
// heuristic ends. (A GPU's caching allocator keeps device memory the same way.)
void keep_freed_tensors_like_python() {
  constexpr int kMmapThreshold = 32 * 1024 * 1024;  // glibc's DEFAULT_MMAP_THRESHOLD_MAX
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, 2 * kMmapThreshold);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace commgate::probe;
  keep_freed_tensors_like_python();
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
