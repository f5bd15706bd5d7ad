// The model held to real PyTorch DDP (issue #22), on the measurements of one validation
// run: bench/ddp-validation/run.sh kept every probe result and every real DDP step of that
// run (KEEP=DIR) in bench/ddp-validation/results/. The prediction is a pure function of
// the probe result, so this replays what `commgate evaluate` predicts from each probe
// (2 nodes probed) at 2, 3 and 4 nodes against what real DDP measured on the same
// emulated nodes in the same run, as `FROM=DIR bench/ddp-validation/run.sh` does (and over
// the rounds of bench/ddp-validation/repeat.sh, as `FROM=DIR repeat.sh` does). A change
// of core's model that moves a prediction away from real DDP fails here, with the table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "core/decision.h"
#include "core/measurement.h"
#include "core/probe_result.h"
#include "core/training_job.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
const fs::path kResults = fs::path(COMMGATE_SOURCE_DIR) / "bench" / "ddp-validation" / "results";

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

// A link's rate in bits per second from the RATE its configuration starts with ("5gbit",
// "2500mbit", any case), as scripts/netsim.sh reads it; 0 when it names none.
double link_bits(const std::string& config) {
  std::string rate = config.substr(0, config.find('-'));
  std::transform(rate.begin(), rate.end(), rate.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::pair<const char*, double> units[] = {{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}};
  for (const auto& [unit, scale] : units) {
    const size_t at = rate.size() - std::min(rate.size(), std::strlen(unit));
    if (rate.compare(at, std::string::npos, unit) == 0) return std::atof(rate.c_str()) * scale;
  }
  return 0;
}

struct Point {
  std::string config;  // "5gbit-25M-adamw"
  int nodes = 0;
  double real = 0;              // real DDP's share
  std::optional<double> again;  // the same point measured again at the end
  std::optional<double> again_step_ms;
  double predicted = 0;  // the model's (or the probe's, at the probed count)
  double real_step_ms = 0, predicted_step_ms = 0;
  // How much of its link's rate real DDP's buckets alone moved: a ring all-reduce sends
  // 2(n-1)/n of the buckets' bytes from each node, in allReduceMs (run.sh's "link carried").
  double carried = 0;

  double error_points() const { return (predicted - real) * 100; }
  double step_error_percent() const {
    return (predicted_step_ms - real_step_ms) / real_step_ms * 100;
  }
  // How far the two measurements of the point lie apart, in points (0 when measured once).
  double spread_points() const { return again ? std::fabs(*again - real) * 100 : 0; }
  // The error against the nearer of the point's measurements.
  double nearest_error_points() const {
    double e = std::fabs(error_points());
    if (again) e = std::min(e, std::fabs(predicted - *again) * 100);
    return e;
  }
};

// Every point of the kept run: probe-RATE-SIZE-OPT.json, ddp-RATE-SIZE-OPT-N.json and,
// for the points measured twice, again-RATE-SIZE-OPT-N.json.
std::vector<Point> replay(const fs::path& run) {
  std::vector<Point> points;
  std::vector<fs::path> probes;
  for (const auto& e : fs::directory_iterator(run))
    if (e.path().filename().string().rfind("probe-", 0) == 0) probes.push_back(e.path());
  std::sort(probes.begin(), probes.end());
  for (const fs::path& probe : probes) {
    const std::string stem = probe.stem().string().substr(6);  // RATE-SIZE-OPT
    const double rate_bits = link_bits(stem);
    const ProbeResult r = parse_probe_result(read_json(probe));
    if (!r.compute) ADD_FAILURE() << probe << " has no compute";
    if (!r.compute) continue;
    // The job run.sh evaluates: the probe's model, fp32 gradients, one process per node.
    TrainingJobSpec job;
    job.num_nodes = 4;
    job.num_proc_per_node = 1;
    job.model.parameters = r.compute->parameters;
    job.model.gradient_dtype = "fp32";
    job.model.batch_size = r.compute->batch_size;
    job.model.optimizer = r.compute->optimizer;
    const Measurement m = measurement_from_probe(r, job.model, probe.string());
    const std::vector<StepPrediction> predicted = predict_counts(m, job, {2, 3, 4});
    EXPECT_EQ(predicted.size(), 3u) << probe;
    for (const StepPrediction& p : predicted) {
      const std::string n = std::to_string(p.nodes);
      const fs::path real = run / ("ddp-" + stem + "-" + n + ".json");
      const fs::path again = run / ("again-" + stem + "-" + n + ".json");
      if (!fs::exists(real)) ADD_FAILURE() << real << " is missing";
      if (!fs::exists(real)) continue;
      const nlohmann::json d = read_json(real);
      Point pt;
      pt.config = stem;
      pt.nodes = p.nodes;
      pt.real = d.at("commShare").get<double>();
      if (fs::exists(again)) {
        const nlohmann::json a = read_json(again);
        pt.again = a.at("commShare").get<double>();
        pt.again_step_ms = a.at("stepMs").get<double>();
      }
      pt.predicted = p.comm_share;
      pt.real_step_ms = d.at("stepMs").get<double>();
      pt.predicted_step_ms = p.step_s * 1e3;
      double bucket_bytes = 0;
      for (const auto& b : d.at("bucketBytes")) bucket_bytes += b.get<double>();
      const double seconds = d.at("allReduceMs").get<double>() / 1e3;
      const double bits_per_node = 8 * bucket_bytes * 2 * (p.nodes - 1) / p.nodes;
      if (seconds > 0 && rate_bits > 0) pt.carried = bits_per_node / seconds / rate_bits;
      points.push_back(pt);
    }
  }
  return points;
}

struct Summary {
  double mean = 0, mean_fastest = 0;  // every point's; the run's fastest link's
  double mean_extrapolated = 0;       // away from the probed count (2): the model's own rows
};

// The mean of |error| over the points `counted` selects (0 when it selects none).
template <typename Counted>
double mean_error(const std::vector<Point>& points, Counted counted) {
  double sum = 0;
  int n = 0;
  for (const Point& p : points) {
    if (!counted(p)) continue;
    sum += std::fabs(p.error_points());
    ++n;
  }
  return n > 0 ? sum / n : 0;
}

// Prints the table (what the test's output shows when a bound fails) and the means.
Summary summarize(const std::vector<Point>& points) {
  int within = 0;
  std::printf("%-22s %5s %8s %8s %9s %7s %7s %8s\n", "config", "nodes", "real", "again",
              "predicted", "error", "spread", "carried");
  for (const Point& p : points) {
    char again[16] = "";
    if (p.again) std::snprintf(again, sizeof again, "%.1f%%", *p.again * 100);
    std::printf("%-22s %5d %7.1f%% %7s %8.1f%% %+7.1f %7.1f %7.0f%%\n", p.config.c_str(), p.nodes,
                p.real * 100, again, p.predicted * 100, p.error_points(), p.spread_points(),
                p.carried * 100);
    within += std::fabs(p.error_points()) <= 3;
  }
  double fastest = 0;
  for (const Point& p : points) fastest = std::max(fastest, link_bits(p.config));
  auto at_fastest = [fastest](const Point& p) { return link_bits(p.config) == fastest; };
  EXPECT_EQ(std::count_if(points.begin(), points.end(), at_fastest), 12);
  Summary out;
  out.mean = mean_error(points, [](const Point&) { return true; });
  out.mean_fastest = mean_error(points, at_fastest);
  out.mean_extrapolated = mean_error(points, [](const Point& p) { return p.nodes != 2; });
  std::printf("mean error %.2f points; %d of %zu within 3\n", out.mean, within, points.size());
  std::printf("fastest link mean %.2f; away from the probed count mean %.2f\n", out.mean_fastest,
              out.mean_extrapolated);
  return out;
}

// A run's regression bounds (its results, rounded up), in points.
struct Bounds {
  double mean = 0, mean_fastest = 0;  // every point's; the run's fastest link's
  double mean_extrapolated = std::numeric_limits<double>::infinity();
  double largest = 0;  // every point
  double tight = 0;    // the points tight_where selects
  double largest_step_percent = std::numeric_limits<double>::infinity();  // every point
};

// Every point within `b.largest` points of real DDP and its step within
// `b.largest_step_percent`, and those `tight_where` selects within `b.tight`.
template <typename TightWhere>
void expect_every_point_within(const std::vector<Point>& points, const Bounds& b,
                               TightWhere tight_where) {
  for (const Point& p : points) {
    SCOPED_TRACE(p.config + " at " + std::to_string(p.nodes) + " nodes");
    EXPECT_LE(std::fabs(p.error_points()), b.largest);
    EXPECT_LE(std::fabs(p.step_error_percent()), b.largest_step_percent);
    if (tight_where(p)) {
      EXPECT_LE(std::fabs(p.error_points()), b.tight);
    }
  }
}

bool at_200mbit(const Point& p) {
  return p.config.rfind("200mbit", 0) == 0;
}

// Replays the kept run `name` and holds it to `b`; returns its points for a case's own
// checks.
template <typename TightWhere>
std::vector<Point> expect_run_within(const std::string& name, const Bounds& b,
                                     TightWhere tight_where) {
  const std::vector<Point> points = replay(kResults / name);
  EXPECT_EQ(points.size(), 36u) << "3 links x 2 sizes x 2 optimizers x 2, 3, 4 nodes";
  const Summary got = summarize(points);
  EXPECT_LE(got.mean, b.mean);
  EXPECT_LE(got.mean_fastest, b.mean_fastest);
  EXPECT_LE(got.mean_extrapolated, b.mean_extrapolated);
  expect_every_point_within(points, b, tight_where);
  return points;
}

TEST(DdpValidationReplay, predictions_hold_against_real_ddp) {
  // Regression bounds from this run, not the bar (docs/benchmarks.md says where
  // and why the 5 Gbit/s points miss it): the mean error was 2.88 points with the
  // all-reduce as max(latency, transfer), 3.07 with their sum (the model until
  // 2026-12-07); at 5 Gbit/s 6.3 (6.9 with the sum); the largest 12.0 (13.5 with the
  // sum); at 200 Mbit/s every point within 1.2.
  expect_run_within("2026-12-07", {.mean = 3.0, .mean_fastest = 6.5, .largest = 12.5, .tight = 3.0},
                    at_200mbit);
}

// The second run of 2026-12-07, whose probes also timed their DDP step's buckets alone
// (ddpStep.allReduceMs): the calibration takes the link from them and the step's excess
// over them as a cost per step. Bounds from this run, rounded up: the mean error was
// 2.0 points (2.3 with the same probes calibrated by the step alone), at 5 Gbit/s 3.5
// (4.3), away from the probed count 1.5 (1.9); the largest 11.5, the probed point of
// 25M AdamW at 5 Gbit/s, whose second measurement lay 11.4 points from its first.
TEST(DdpValidationReplay, predictions_hold_when_the_probe_timed_its_buckets_alone) {
  const std::string run = "2026-12-07b";
  expect_run_within(
      run,
      {.mean = 2.1, .mean_fastest = 3.6, .mean_extrapolated = 1.6, .largest = 12.0, .tight = 4.5},
      [](const Point& p) { return at_200mbit(p) || p.nodes > 2; });
  // Every probe of this run timed its buckets, and every calibration used them.
  for (const auto& e : fs::directory_iterator(kResults / run)) {
    if (e.path().filename().string().rfind("probe-", 0) != 0) continue;
    const ProbeResult r = parse_probe_result(read_json(e.path()));
    ASSERT_TRUE(r.ddp_step) << e.path();
    EXPECT_GT(r.ddp_step->allreduce_ms, 0) << e.path();
  }
}

// The third run of 2026-12-07, with the probe of this repository (its DDP step also divides
// each gradient as it copies it into its bucket, as DDP's Reducer does). Bounds from this
// run, rounded up: mean 2.2 points (2.3 calibrated by the step alone), 5 Gbit/s 4.1 (4.4),
// away from the probed count 2.2 (2.4); the largest 14.4, 25M AdamW at 5 Gbit/s, whose
// two measurements lay 10.1 points apart and whose compute-only step real DDP took 277 ms
// against the probe's 226 (the emulation's shared memory: docs/benchmarks.md).
TEST(DdpValidationReplay, predictions_hold_when_the_probe_divides_as_ddp_does) {
  expect_run_within(
      "2026-12-07c",
      {.mean = 2.25, .mean_fastest = 4.2, .mean_extrapolated = 2.3, .largest = 15.0, .tight = 1.0},
      at_200mbit);
}

// The fourth run of 2026-12-07: the probe and model of the third, the harness changed so
// that the emulation's compute moves less under the measurements (every process on the
// emulated nodes keeps the memory its steps free, and the nodes a measurement leaves out
// run the same model's compute: docs/benchmarks.md). Bounds from this run, rounded up:
// mean 1.3 points, 5 Gbit/s 2.7, away from the probed count 1.1, the largest 6.1.
TEST(DdpValidationReplay, predictions_hold_when_the_idle_nodes_are_kept_busy) {
  expect_run_within(
      "2026-12-07d",
      {.mean = 1.35, .mean_fastest = 2.75, .mean_extrapolated = 1.15, .largest = 6.5, .tight = 0.5},
      at_200mbit);
}

// How many of a run's points meet the bar: within 3 points of real DDP, or within
// the spread of the point's two measurements of the nearer one.
long points_within_bar(const std::vector<Point>& points) {
  return std::count_if(points.begin(), points.end(), [](const Point& p) {
    return p.nearest_error_points() <= std::max(3.0, p.spread_points());
  });
}

// The fifth run of 2026-12-07, with this repository's probe (which no longer trims its
// heap either). 34 of 36 points met the bar (33 within 3); the other two, 25M
// AdamW probed at 1 Gbit/s and at 4 nodes at 5 Gbit/s, lay 3.5 and 3.4 points off: within
// the emulation's noise there, as five rounds of that configuration and the next run
// showed (below). Bounds from this run, rounded up: mean 0.9 points, 5 Gbit/s 1.3, away
// from the probed count 0.9, the largest 3.5, the largest step error 15.92%.
TEST(DdpValidationReplay, predictions_hold_when_the_probe_keeps_its_heap) {
  const std::vector<Point> points = expect_run_within("2026-12-07e",
                                                      {.mean = 0.95,
                                                       .mean_fastest = 1.35,
                                                       .mean_extrapolated = 0.95,
                                                       .largest = 3.6,
                                                       .tight = 1.0,
                                                       .largest_step_percent = 15.95},
                                                      at_200mbit);
  EXPECT_GE(points_within_bar(points), 34);
}

// The sixth run of 2026-12-07: the probe and model of the fifth, the harness fixed since
// (the idle nodes' first busy step waited for afresh each measurement). 34 of 36 points
// met the bar (31 within 3); the other two are probed points: 5M SGD at 5 Gbit/s,
// -3.7 (+0.3 in the fifth run: the probe's own measurement moved, its DDP step exposing 39
// ms against 45), and 5M AdamW at 1 Gbit/s, +3.3 (+2.3 in the fifth run; -0.7 over five
// rounds of that configuration and +0.2 in the seventh run: no bias shown). Bounds from
// this run, rounded up: mean 1.23 points, 5 Gbit/s 2.09, away from the probed count 1.23,
// the largest 5.28 (25M AdamW at 3 nodes at 5 Gbit/s, 0.3 from its second measurement),
// the largest step error 11.96%.
TEST(DdpValidationReplay, predictions_hold_on_the_latest_run) {
  const std::vector<Point> points = expect_run_within("2026-12-07f",
                                                      {.mean = 1.25,
                                                       .mean_fastest = 2.1,
                                                       .mean_extrapolated = 1.25,
                                                       .largest = 5.3,
                                                       .tight = 1.0,
                                                       .largest_step_percent = 12.0},
                                                      at_200mbit);
  EXPECT_GE(points_within_bar(points), 34);
}

// One point measured in several rounds, as bench/ddp-validation/repeat.sh reads them (each
// round a run.sh of its own: its own probe, predictions and real DDP).
struct RepeatedPoint {
  std::string config;
  int nodes = 0;
  int rounds = 0;
  int measured = 0;  // real DDP's measurements: one a round, and any taken again
  double real_mean = 0, predicted_mean = 0;
  double real_low = 0, real_high = 0;  // real DDP's lowest and highest share
  double real_step_mean_ms = 0, predicted_step_mean_ms = 0;

  double error_points() const { return (predicted_mean - real_mean) * 100; }
  double real_range_points() const { return (real_high - real_low) * 100; }
  double step_error_percent() const {
    return (predicted_step_mean_ms - real_step_mean_ms) / real_step_mean_ms * 100;
  }
};

// Every round of a kept repeat.sh run (DIR/round-1, round-2, ...) replayed as a run, and
// each point's means: real DDP's over all its measurements, the prediction's over the
// rounds; prints them.
std::vector<RepeatedPoint> replay_rounds(const fs::path& dir) {
  std::map<std::pair<std::string, int>, std::vector<Point>> by_point;
  int rounds = 0;
  while (fs::exists(dir / ("round-" + std::to_string(rounds + 1)))) {
    ++rounds;
    for (const Point& p : replay(dir / ("round-" + std::to_string(rounds))))
      by_point[{p.config, p.nodes}].push_back(p);
  }
  std::vector<RepeatedPoint> out;
  std::printf("%-22s %5s %16s %9s %10s %7s\n", "config", "nodes", "real (range)", "measured",
              "predicted", "error");
  for (const auto& [key, rounds_of_point] : by_point) {
    EXPECT_EQ(rounds_of_point.size(), static_cast<size_t>(rounds))
        << key.first << " at " << key.second;
    RepeatedPoint r;
    r.config = key.first;
    r.nodes = key.second;
    r.rounds = static_cast<int>(rounds_of_point.size());
    r.real_low = r.real_high = rounds_of_point.front().real;
    double real_sum = 0, real_step_sum = 0;
    for (const Point& p : rounds_of_point) {
      r.predicted_mean += p.predicted / r.rounds;
      r.predicted_step_mean_ms += p.predicted_step_ms / r.rounds;
      const std::pair<std::optional<double>, std::optional<double>> measurements[] = {
          {p.real, p.real_step_ms}, {p.again, p.again_step_ms}};
      for (const auto& [share, step_ms] : measurements) {
        if (!share || !step_ms) continue;
        real_sum += *share;
        real_step_sum += *step_ms;
        ++r.measured;
        r.real_low = std::min(r.real_low, *share);
        r.real_high = std::max(r.real_high, *share);
      }
    }
    r.real_mean = real_sum / r.measured;
    r.real_step_mean_ms = real_step_sum / r.measured;
    std::printf("%-22s %5d %5.1f%% (%4.1f) %9d %9.1f%% %+7.1f\n", r.config.c_str(), r.nodes,
                r.real_mean * 100, r.real_range_points(), r.measured, r.predicted_mean * 100,
                r.error_points());
    out.push_back(r);
  }
  return out;
}

// Every point of a kept repeat.sh run within `largest` points of real DDP (the error of
// the means) and its predicted step within `step_percent` of real DDP's mean step, and
// the mean of the errors within `mean`; returns the points.
std::vector<RepeatedPoint> expect_rounds_within(const std::string& name, size_t points_expected,
                                                int rounds, double largest, double mean,
                                                double step_percent) {
  const std::vector<RepeatedPoint> points = replay_rounds(kResults / name);
  EXPECT_EQ(points.size(), points_expected);
  double sum = 0;
  for (const RepeatedPoint& p : points) {
    SCOPED_TRACE(p.config + " at " + std::to_string(p.nodes) + " nodes");
    EXPECT_EQ(p.rounds, rounds);
    EXPECT_LE(std::fabs(p.error_points()), largest);
    EXPECT_LE(std::fabs(p.step_error_percent()), step_percent);
    sum += std::fabs(p.error_points());
  }
  EXPECT_LE(sum / static_cast<double>(std::max<size_t>(points.size(), 1)), mean);
  return points;
}

// The two points the fifth run left off the bar (25M AdamW: probed at 1 Gbit/s,
// -3.5; 4 nodes at 5 Gbit/s, +3.4) and the four others of that configuration, measured in
// five rounds (bench/ddp-validation/repeat.sh, 2026-12-07 14:54-15:14 UTC, the harness
// fixed since the fifth run). Real DDP's share at one point moved up to 8.8 points between
// its measurements, and 7 of the 30 single-round predictions missed their round's real DDP
// by more than 3 points (from -5.0 to +4.8); the means lie within 3 points at every point:
// the bar. Bounds from this run, rounded up: the largest error of the means 2.044
// (bound 2.05), their mean 1.052 (1.06), the largest step error 7.69% (7.7).
TEST(DdpValidationReplay, repeated_rounds_hold_within_three_points_on_average) {
  int misses_seen = 0;
  for (const RepeatedPoint& p : expect_rounds_within("2026-12-07-rounds", 6, 5, 2.05, 1.06, 7.7)) {
    // The account's premise, in the kept measurements: at the fifth run's two misses,
    // real DDP alone moved further between its measurements than the miss.
    if ((p.config == "1gbit-25M-adamw" && p.nodes == 2) ||
        (p.config == "5gbit-25M-adamw" && p.nodes == 4)) {
      ++misses_seen;
      EXPECT_GT(p.real_range_points(), 3.5) << p.config << " at " << p.nodes;
    }
  }
  EXPECT_EQ(misses_seen, 2);
}

// The fifth and sixth runs (the same probe and model; 2026-12-07-e-and-f links to both, as
// two rounds of every point): each point's error of the means within 3 points at all 36,
// where each run alone left two points off the bar, at different points. Bounds from
// these runs, rounded up: the largest 2.78 (5M AdamW probed at 1 Gbit/s, over real DDP in
// both runs, and not in the seventh run or in rounds: below), the mean 0.70, the largest
// step error 7.49% (7.5).
TEST(DdpValidationReplay, predictions_hold_over_the_last_two_runs) {
  expect_rounds_within("2026-12-07-e-and-f", 36, 2, 2.8, 0.71, 7.5);
}

// The seventh run of 2026-12-07 (18:20-18:56 UTC): the probe, model and harness of the
// sixth, on a machine whose compute ran slower that evening (real DDP's compute-only step
// of 5M AdamW at 2 nodes 65-82 ms, against 34-50 in the fifth and sixth runs). The largest
// error, 25M AdamW at 3 nodes at 1 Gbit/s (+6.5), is partly real DDP's irregular figure
// (its compute-only step there took 463 ms against 367 and 373 at 2 and 4 nodes) and
// partly the probe's compute-only step running under real DDP's (issue #22 open). Four 5
// Gbit/s steps lay more than 10% off both of real DDP's measurements (11-17% off the
// nearer), where the links carried 60-81% of their rate (below). Bounds from this run,
// rounded up: mean 1.49 points, 5 Gbit/s 1.85, away from the probed count 1.6, the
// largest 6.5, the largest step error 16.79%.
TEST(DdpValidationReplay, predictions_hold_on_the_seventh_run) {
  const std::vector<Point> points = expect_run_within("2026-12-07g",
                                                      {.mean = 1.49,
                                                       .mean_fastest = 1.85,
                                                       .mean_extrapolated = 1.6,
                                                       .largest = 6.5,
                                                       .tight = 1.25,
                                                       .largest_step_percent = 16.8},
                                                      at_200mbit);
  EXPECT_GE(points_within_bar(points), 34);
}

// Rounds in one sitting may share a state of the machine. The 5M configurations at 1 and 5 Gbit/s
// in five rounds (2026-12-07 17:47-18:07 UTC) left 5M AdamW at 5 Gbit/s off the bar at every count,
// its means +5.4, +6.2 and +4.7 over real DDP (each of the five rounds over it at the probed
// count), while 5M AdamW probed at 1 Gbit/s, which the fifth and sixth runs had put +2.3 and +3.3
// over, lay -0.7. Five more rounds of 5M AdamW at 5 Gbit/s from 18:12 put it at -0.5, +0.4 and
// +2.9. Between the two sittings real DDP's mean at the probed count moved 1.0 point (over all its
// measurements) and the probe's 4.9: in the first sitting the probe's compute-only step inside its
// DDP loop ran 8.5 ms under its own compute phase and 12 under real DDP's, in the second not; why
// is not known (docs/benchmarks.md, the Goal and "Repeated rounds"). Bounds from these rounds,
// rounded up: the first sitting's largest error of the means 6.209, their mean 2.093, the largest
// step error 15.57%; the later sitting's 2.876, 1.270, 5.74%.
TEST(DdpValidationReplay, rounds_in_one_sitting_lean_together) {
  const std::vector<RepeatedPoint> first =
      expect_rounds_within("2026-12-07-rounds-5M", 12, 5, 6.21, 2.1, 15.6);
  const std::vector<RepeatedPoint> later =
      expect_rounds_within("2026-12-07-rounds-5M-later", 3, 5, 2.88, 1.28, 5.75);
  auto probed_5m_adamw_at_5gbit = [](const std::vector<RepeatedPoint>& points) {
    const auto it = std::find_if(points.begin(), points.end(), [](const RepeatedPoint& p) {
      return p.config == "5gbit-5M-adamw" && p.nodes == 2;
    });
    EXPECT_NE(it, points.end());
    return it == points.end() ? RepeatedPoint{} : *it;
  };
  const RepeatedPoint a = probed_5m_adamw_at_5gbit(first);
  const RepeatedPoint b = probed_5m_adamw_at_5gbit(later);
  // What the docs say of the kept measurements: between the sittings the probe's share at
  // the probed count moved more than 4.5 points, real DDP's less than 1.5, and the later
  // sitting's error lies within 1 point (the first's is bounded above by the case's
  // bounds).
  EXPECT_LT(std::fabs(b.error_points()), 1.0);
  EXPECT_LT(std::fabs(a.real_mean - b.real_mean) * 100, 1.5);
  EXPECT_GT(std::fabs(a.predicted_mean - b.predicted_mean) * 100, 4.5);
}

// The fifth, sixth and seventh runs (2026-12-07-e-f-g links to the three as three rounds:
// 12:17, 15:24 and 18:20 UTC, the same probe and model): each point's error of the means
// within 3 points at all 36 and every mean step within 10%, where each run alone left
// about two points off the bar (the steps' mean holds with the two runs on a faster
// machine; the seventh alone missed four 5 Gbit/s steps by 11-17% of the nearer of real
// DDP's two measurements). Bounds from these
// runs, rounded up: the largest 1.914, the mean 0.587, the largest step error 9.38%.
TEST(DdpValidationReplay, predictions_hold_over_the_last_three_runs) {
  expect_rounds_within("2026-12-07-e-f-g", 36, 3, 1.92, 0.59, 9.4);
}

// The eighth run of 2026-12-07 (21:28-22:04 UTC): the probe and model of the fifth to
// seventh runs, the fastest link 2.5 Gbit/s instead of 5 Gbit/s (which these nodes do not
// carry at its rate: below), on a machine as slow as the seventh run's. 35 of 36 points met
// the bar (31 within 3); the other, 5M SGD probed at 2.5 Gbit/s, +3.2, with every
// 2.5 Gbit/s SGD point over real DDP (+1.3 to +3.6), where the probe's compute-only step
// ran 5-16% under real DDP's (docs/benchmarks.md, the Goal). 35 of 36 steps within 10% of
// the first measurement: the other, 5M AdamW probed at 2.5 Gbit/s (-14.2%; -3.2% from its
// second). Bounds from this run, rounded up: mean 1.204 points, 2.5 Gbit/s 2.173, away
// from the probed count 1.174, the largest 5.138 (5M AdamW at 3 nodes, 0.2 from its
// second measurement), at 200 Mbit/s 0.821, the largest step error 14.230%.
TEST(DdpValidationReplay, predictions_hold_on_the_eighth_run) {
  const std::vector<Point> points = expect_run_within("2026-12-07h",
                                                      {.mean = 1.21,
                                                       .mean_fastest = 2.18,
                                                       .mean_extrapolated = 1.18,
                                                       .largest = 5.14,
                                                       .tight = 0.85,
                                                       .largest_step_percent = 14.24},
                                                      at_200mbit);
  EXPECT_GE(points_within_bar(points), 35);
  // Every other step within 10% of real DDP's first measurement.
  for (const Point& p : points) {
    if (p.config == "2500mbit-5M-adamw" && p.nodes == 2) continue;
    EXPECT_LE(std::fabs(p.step_error_percent()), 10) << p.config << " at " << p.nodes;
  }
}

// A premise check on kept data, not a regression test (no change of core can fail it):
// what docs/benchmarks.md ("What 5 Gbit/s measured") says of the kept runs' links. Real
// DDP's buckets alone moved 88% or more of the link's rate at every 200 Mbit/s and 1
// Gbit/s point of the fifth, sixth and seventh runs (the lowest, 88.1%, 25M SGD at 3 nodes
// at 1 Gbit/s in the seventh), and at most 93.2% at 5 Gbit/s (5M SGD at 3 nodes in the
// fifth); in the seventh run, whose 5 Gbit/s steps missed, at most 80.5%, at its worst
// step miss (25M SGD at 4 nodes) 60.0%. In the eighth run (2.5 Gbit/s the fastest) one
// point's first measurement carried under 85% (5M AdamW probed, 83.5%). First
// measurements only; the docs give the second ones beside them.
TEST(DdpValidationReplay, kept_runs_carried_what_the_docs_say) {
  for (const std::string run : {"2026-12-07e", "2026-12-07f", "2026-12-07g"}) {
    for (const Point& p : replay(kResults / run)) {
      SCOPED_TRACE(run + " " + p.config + " at " + std::to_string(p.nodes) + " nodes");
      if (link_bits(p.config) < 5e9) {
        EXPECT_GE(p.carried, 0.88);
        continue;
      }
      EXPECT_LE(p.carried, 0.94);
      if (run == "2026-12-07g") EXPECT_LE(p.carried, 0.81);
      if (run == "2026-12-07g" && p.config == "5gbit-25M-sgd" && p.nodes == 4) {
        EXPECT_LT(p.carried, 0.605);
      }
    }
  }
  for (const Point& p : replay(kResults / "2026-12-07h")) {
    const bool the_short_one = p.config == "2500mbit-5M-adamw" && p.nodes == 2;
    EXPECT_EQ(p.carried < 0.85, the_short_one) << p.config << " at " << p.nodes;
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
