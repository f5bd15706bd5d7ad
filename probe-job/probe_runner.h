// One rank of the probe, end to end: rendezvous, backend, all-reduce sweep, compute, the
// DDP-style step, and (rank 0) the report. Each stage tells the watchdog its name.
#pragma once

#include <ostream>

#include "probe-job/probe_config.h"

namespace commgate::probe {

// Returns kExitOk on success. On failure it reports (rank 0: the result with its error)
// and exits the process with the ExitCode at once, as the watchdog does on --timeout.
// `out` gets rank 0's JSON; `err` the summary and errors.
int run_rank(const ProbeConfig& cfg, std::ostream& out, std::ostream& err);

// Threads for torch (and OpenBLAS) when --threads is not given: the cores this process may
// run on, shared among the ranks of this machine.
int default_threads(int local_world_size);

}  // namespace commgate::probe
