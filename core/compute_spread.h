// How steady the probe's compute step was: its spread over the timed steps and how far its
// slowest rank lagged. A node shared with other work (a training running beside the probe)
// times a slower and unsteadier step than the job will see on nodes of its own (#20: bert's
// step measured 22.5 s on a busy node, 4.9 s on an idle one). The probe repeats an
// unsteady round; what stays unsteady the decision says, instead of passing it off as solid.
#pragma once

#include <string>

namespace commgate {

struct ComputeSpread {
  double median_ms = 0;  // the ranks' mean of their median step
  double p10_ms = 0;     // the ranks' mean of their 10th and 90th percentile steps
  double p90_ms = 0;
  int samples = 0;  // timed steps per rank, in the round reported
  int rounds = 0;   // rounds of timed steps the probe ran (0: a probe that did not count them)
  double slowest_rank_ms = 0;  // the slowest rank's median step (0: not reported)
  int slowest_rank = -1;
};

// A round of steps is steady when (p90 - p10) / median is at most this. Measured here (2
// ranks of a 5M model on a 2-core VM, `commgate-probe --local-ranks 2`): 0.34 on an idle
// machine, 0.67 with a busy loop taking one core on and off; so a step's own jitter stays
// under it and a neighbour's load does not.
inline constexpr double kSteadySpread = 0.5;
// The slowest rank's median over the ranks' mean beyond which one node was slower than
// the others (DDP waits for the slowest rank at every all-reduce): 1.0 idle, 1.24 busy in
// the run above; with two ranks the mean holds the slow one, so 1.15 is one rank 35%
// behind the other, with many ranks about 15% behind the rest.
inline constexpr double kUnevenRanks = 1.15;
// Rounds of timed steps the probe runs at most while a round is unsteady.
inline constexpr int kMaxComputeRounds = 3;

// (p90 - p10) / median; 0 when the median is not positive.
double relative_spread(double p10, double p90, double median);
bool steady(double p10, double p90, double median);

// " Caution: ..." naming what was unsteady or uneven, with the numbers; "" when the step
// was steady and even, or its spread was not recorded.
std::string compute_noise_caution(const ComputeSpread& spread);

}  // namespace commgate
