// The measurement harness, as nccl-tests structures it: collectives are rows of a table
// (name, bytes for a count, bus factor) and one harness owns warm-up, timing, the data
// check and the report. Only all-reduce is in the table today: it is what DDP runs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/link_fit.h"
#include "core/probe_result.h"
#include "probe-job/communicator.h"

namespace commgate::probe {

struct CollectiveSpec {
  std::string name;
  // Bytes one rank contributes for `count` elements of `element_size` bytes.
  double (*bytes)(int64_t count, int element_size, int ranks);
  // busbw = algbw * bus_factor(n): makes busbw comparable with the link rate whatever n.
  double (*bus_factor)(int ranks);
};

// The collective table.
const std::vector<CollectiveSpec>& collectives();
const CollectiveSpec& allreduce_collective();

// Message sizes min, min*factor, ... below max, then max itself; multiples of
// element_size, never repeated.
std::vector<double> sweep_sizes(double min_bytes, double max_bytes, double factor,
                                int element_size = 4);

// One row of the report: algbw = bytes / time, busbw = algbw * bus factor.
AllReduceResult make_result(const CollectiveSpec& spec, double bytes, double seconds, int ranks,
                            bool data_ok);
// The ring fit (core's fit_ring_allreduce) over the rows.
LinkFit fit_results(const std::vector<AllReduceResult>& rows, int ranks);

// Timed repetitions for a size whose warm-up took `warmup_seconds` per op: at least
// `iterations`, more for short messages until `budget_s` is spent, at most 20x.
int iterations_for(double warmup_seconds, int iterations, double budget_s);

struct SweepOptions {
  double min_bytes = 4096;
  double max_bytes = 64.0 * 1024 * 1024;
  double factor = 4;
  int warmup = 1;
  int iterations = 5;
  double size_time_budget_s = 0.1;
};

struct SweepReport {
  std::vector<AllReduceResult> results;
  LinkFit fit;
  bool data_ok = true;
};

// The mean over ranks of a per-rank number (a time), so every rank reports the same.
double mean_over_ranks(Communicator& comm, double value);
// Every rank's value of a per-rank number, indexed by rank, on every rank.
std::vector<double> values_of_ranks(Communicator& comm, double value);

// Fills a tensor of `count` floats with a rank-dependent pattern, all-reduces it and
// checks every element against the expected sum. All ranks agree on the verdict.
bool check_allreduce_sum(Communicator& comm, int64_t count);

// Runs the sweep on every rank (collective: all ranks call it with the same options).
// `on_stage` is told what is about to run ("allreduce 16 MiB"), for the watchdog.
SweepReport run_allreduce_sweep(Communicator& comm, const SweepOptions& opts,
                                const std::function<void(const std::string&)>& on_stage);

}  // namespace commgate::probe
