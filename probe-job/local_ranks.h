// Workstation mode (--local-ranks N): this program re-executes itself N times as ranks
// 0..N-1 over loopback, each rank standing for one node. Rank 0's stdout is ours (so
// stdout is exactly rank 0's JSON, which `commgate evaluate` reads); the other ranks'
// stdout is discarded; all stderr is passed through.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "probe-job/probe_config.h"

namespace commgate::probe {

// The flags for a spawned rank: the original ones without the world flags
// (--local-ranks, --rank, --world-size, --master-addr, --master-port), plus --threads
// when it was not given.
std::vector<std::string> local_rank_args(const std::vector<std::string>& args, int threads);

// Runs the ranks, waits for them (at most --timeout + 15 s, then kills them) and returns
// rank 0's exit code, or the first failing rank's when rank 0 succeeded.
int run_local_ranks(const ProbeConfig& cfg, const std::vector<std::string>& args, std::ostream& out,
                    std::ostream& err);

}  // namespace commgate::probe
