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

// Tensors freed at one step are allocated again at the next. A GPU's caching allocator keeps
// device memory for that; on CPU glibc would hand large blocks back to the kernel (munmap,
// heap trimming) and fault their pages in again, zeroed, in the node's CPU time: every
// gradient came from a fresh mmap at first (an MLP's backward 75 ms against eager
// PyTorch's 40 on one CPU thread, 40,000 page faults a step), and with the heap trimmed
// past 64 MiB (where glibc's dynamic thresholds end) 25M AdamW still faulted 17,000
// pages a step. Keep every freed block: blocks up to 32 MiB (the largest mmap
// threshold glibc accepts) come from the heap, and the heap is never trimmed.
// bench/ddp-validation/run.sh gives real PyTorch DDP the same settings (GLIBC_TUNABLES).
void keep_freed_tensors() {
  constexpr int kMmapThreshold = 32 * 1024 * 1024;  // glibc's DEFAULT_MMAP_THRESHOLD_MAX
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, -1);  // mallopt(3): -1 disables trimming
}

}  // namespace

int main(int argc, char** argv) {
  using namespace commgate::probe;
  keep_freed_tensors();
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
