// The caution a decision carries when the probe's compute step was unsteady or one rank
// lagged (#20: bert's step measured 22.5 s on a busy node, 4.9 s on an idle one).
#include "core/compute_spread.h"

#include <gtest/gtest.h>

#include "core/comm_profile.h"
#include "core/measurement.h"
#include "core/profile_recording.h"
#include "tests/support/builders.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

struct SpreadCase {
  std::string name;
  ComputeSpread spread;
  std::vector<std::string> want;  // substrings; empty: no caution
};

void PrintTo(const SpreadCase& c, std::ostream* os) {
  *os << c.name;
}

class ComputeNoiseCaution : public ::testing::TestWithParam<SpreadCase> {};

TEST_P(ComputeNoiseCaution, says_what_was_unsteady) {
  const SpreadCase& c = GetParam();
  const std::string got = compute_noise_caution(c.spread);
  if (c.want.empty()) {
    EXPECT_EQ(got, "");
    return;
  }
  for (const auto& w : c.want) EXPECT_NE(got.find(w), std::string::npos) << w << "\n in: " << got;
}

INSTANTIATE_TEST_SUITE_P(
    Spreads, ComputeNoiseCaution,
    ::testing::Values(
        SpreadCase{"steady_and_even", {500, 480, 560, 10, 1, 520, 1}, {}},
        // The idle 2-rank run kSteadySpread was set by: 0.34.
        SpreadCase{"an_idle_machines_jitter_is_steady", {41.7, 35.9, 50.0, 10, 3, 41.7, 0}, {}},
        // (700 - 450) / 500 = 0.5: at the bound is steady.
        SpreadCase{"spread_at_the_bound_is_steady", {500, 450, 700, 10, 1, 0, -1}, {}},
        // The busy run: 0.67, and its slow rank 1.245x the mean.
        SpreadCase{"a_busy_core",
                   {70.6, 40.9, 87.8, 10, 3, 87.9, 1},
                   {"unsteady (p10 41 ms, median 71 ms, p90 88 ms over 10 steps, still after 3 "
                    "rounds) and its rank 1 computed 1.2x the ranks' mean (88 ms against 71 ms)"}},
        SpreadCase{"unsteady_after_three_rounds",
                   {6100, 4900, 22500, 10, 3, 0, -1},
                   {" Caution: the probe's compute step was unsteady (p10 4.9 s, median 6.1 s, "
                    "p90 22.5 s over 10 steps, still after 3 rounds)",
                    "other work on the probe's nodes may have slowed it",
                    "have the pool measured again when it is quiet."}},
        SpreadCase{"one_round_says_no_rounds",
                   {300, 100, 900, 10, 1, 0, -1},
                   {"(p10 100 ms, median 300 ms, p90 900 ms over 10 steps)"}},
        SpreadCase{"slow_rank",
                   {4900, 4800, 5000, 10, 1, 11200, 1},
                   {" Caution: its rank 1 computed 2.3x the ranks' mean (11.2 s against 4.9 s)"}},
        SpreadCase{"rank_at_the_bound_is_even", {1000, 990, 1010, 10, 1, 1150, 1}, {}},
        SpreadCase{"both",
                   {300, 100, 900, 10, 2, 900, 0},
                   {"still after 2 rounds) and its rank 0 computed 3.0x"}},
        // A record without a median (written before spreads were kept) says nothing.
        SpreadCase{"not_recorded", {0, 0, 0, 0, 0, 0, -1}, {}}),
    [](const ::testing::TestParamInfo<SpreadCase>& p) { return p.param.name; });

// The probe's spread travels into the pool's CommProfile, survives its JSON, and reaches
// the measurement a decision reads.
TEST(ComputeSpreadRecord, goes_from_the_probe_through_the_profile_to_the_measurement) {
  ProbeResult r;
  r.start_time = testing::test_now();
  r.nodes = 2;
  r.fit.ranks = 2;
  r.fit.busbw_bytes_per_s = 1e9;
  ComputeResult c;
  c.parameters = 25e6;
  c.batch_size = 32;
  c.optimizer = "sgd";
  c.iterations = 10;
  c.step_time_ms = 6100;
  c.forward_ms = 2000;
  c.backward_ms = 4000;
  c.optimizer_ms = 100;
  c.p10_ms = 4900;
  c.p90_ms = 22500;
  c.rounds = 3;
  c.slowest_rank_step_ms = 7300;
  c.slowest_rank = 1;
  r.compute = c;
  CommProfile p;
  p.metadata.name = "pool-a";
  record_probe_result(p, r);
  const CommProfile read = parse_comm_profile(to_json(p), testing::test_now());
  ASSERT_EQ(read.status.compute_steps.size(), 1u);
  ASSERT_TRUE(read.status.compute_steps[0].spread);
  const ComputeSpread& s = *read.status.compute_steps[0].spread;
  EXPECT_EQ(s.median_ms, 6100);
  EXPECT_EQ(s.p10_ms, 4900);
  EXPECT_EQ(s.p90_ms, 22500);
  EXPECT_EQ(s.samples, 10);
  EXPECT_EQ(s.rounds, 3);
  EXPECT_EQ(s.slowest_rank_ms, 7300);
  EXPECT_EQ(s.slowest_rank, 1);

  ModelSpec model;
  model.parameters = 25e6;
  model.batch_size = 32;
  model.optimizer = "sgd";
  const auto m = measurement_from_profile(read, model);
  ASSERT_TRUE(m && m->compute_spread);
  EXPECT_NE(compute_noise_caution(*m->compute_spread).find("unsteady"), std::string::npos);

  // A probe that reported no spread (an older probe image) records none.
  r.compute->p10_ms = r.compute->p90_ms = 0;
  CommProfile old;
  record_probe_result(old, r);
  EXPECT_FALSE(old.status.compute_steps[0].spread);
  EXPECT_FALSE(to_json(old)["status"]["computeSteps"][0].contains("spread"));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
