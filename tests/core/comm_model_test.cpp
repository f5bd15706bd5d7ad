#include "core/comm_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace commgate {
namespace COMMGATE_TEST_UNIT {

constexpr double MiB = 1048576.0;

ModelInputs inputs(double params, double busbw, double step_s) {
  ModelInputs in;
  in.compute = ComputeProfile::from_step_time(step_s);
  in.link.busbw_bytes_per_s = busbw;
  in.link.hop_latency_s = 50e-6;
  in.gradient_bytes = params * 4;
  return in;
}

TEST(LinkModel, ring_closed_form) {
  LinkModel link{25e-6, 1e9};
  // A bandwidth-bound all-reduce: the ring's pipelined segments hide the latency.
  // 2 nodes: bus factor 1.
  EXPECT_NEAR(link.allreduce_seconds(100e6, 2, 1), 100e6 / 1e9, 1e-12);
  // 4 nodes x 1: factor 1.5.
  EXPECT_NEAR(link.allreduce_seconds(100e6, 4, 1), 1.5 * 100e6 / 1e9, 1e-12);
  // 2 nodes x 8 procs: factor over 16 ranks.
  EXPECT_NEAR(link.allreduce_seconds(100e6, 2, 8), 1.875 * 100e6 / 1e9, 1e-12);
  EXPECT_EQ(link.allreduce_seconds(100e6, 1, 8), 0.0);
  // A latency-bound one: 2(n-1) hops, counted by nodes (the ranks on a node share it).
  EXPECT_NEAR(link.allreduce_seconds(1000, 2, 1), 2 * 25e-6, 1e-12);
  EXPECT_NEAR(link.allreduce_seconds(1000, 4, 1), 6 * 25e-6, 1e-12);
  EXPECT_NEAR(link.allreduce_seconds(1000, 2, 8), 2 * 25e-6, 1e-12);
}

// Where the transfer and the latency are alike the cost is the larger, never the sum:
// each step's latency passes while the other segment in flight moves.
TEST(LinkModel, latency_hidden_under_transfer_not_added) {
  LinkModel link{1e-3, 1e9};                                     // 1 ms a hop: alpha(4) = 6 ms
  EXPECT_NEAR(link.allreduce_seconds(4e6, 4, 1), 6e-3, 1e-12);   // transfer 6 ms
  EXPECT_NEAR(link.allreduce_seconds(2e6, 4, 1), 6e-3, 1e-12);   // transfer 3 ms
  EXPECT_NEAR(link.allreduce_seconds(8e6, 4, 1), 12e-3, 1e-12);  // transfer 12 ms
  EXPECT_LT(link.allreduce_seconds(4e6, 3, 1), link.allreduce_seconds(4e6, 4, 1));
}

TEST(LinkModel, from_fit_spreads_latency_over_ring_steps) {
  LinkFit fit;
  fit.latency_s = 600e-6;
  fit.busbw_bytes_per_s = 2e9;
  LinkModel m = LinkModel::from_fit(fit, 4);
  EXPECT_NEAR(m.hop_latency_s, 100e-6, 1e-12);
  EXPECT_NEAR(m.allreduce_seconds(8, 4, 1), 600e-6, 1e-8);  // reproduces the probed alpha
}

TEST(DdpBuckets, first_bucket_small_then_capped) {
  auto b = ddp_bucket_sizes(100 * MiB, DdpConfig{});
  ASSERT_EQ(b.size(), 5u);  // 1 + 25 + 25 + 25 + 24
  EXPECT_DOUBLE_EQ(b[0], 1 * MiB);
  EXPECT_DOUBLE_EQ(b[1], 25 * MiB);
  EXPECT_DOUBLE_EQ(b.back(), 24 * MiB);
  EXPECT_EQ(ddp_bucket_sizes(0.5 * MiB, DdpConfig{}).size(), 1u);
  EXPECT_TRUE(ddp_bucket_sizes(0, DdpConfig{}).empty());
}

TEST(Prediction, one_node_has_no_communication) {
  auto p = predict_step(inputs(350e6, 0.118e9, 0.5), 1);
  EXPECT_DOUBLE_EQ(p.step_s, 0.5);
  EXPECT_DOUBLE_EQ(p.comm_share, 0);
  EXPECT_DOUBLE_EQ(p.speedup, 1);
  EXPECT_DOUBLE_EQ(p.scaling_efficiency, 1);
}

TEST(Prediction, overlap_bounds_hold) {
  for (double params : {1e6, 5e6, 25e6, 350e6}) {
    for (double bw : {0.025e9, 0.118e9, 1.2e9, 12e9}) {
      for (int n : {2, 3, 4, 8, 16}) {
        auto in = inputs(params, bw, 0.3);
        auto p = predict_step(in, n);
        // Never faster than compute, never slower than compute plus all communication.
        EXPECT_GE(p.step_s, p.compute_s - 1e-12);
        EXPECT_LE(p.step_s, p.compute_s + p.allreduce_s + 1e-12);
        // Communication that outlasts backward is at least what cannot overlap at all:
        // everything past the end of backward.
        double after_backward = p.allreduce_s - in.compute.backward_s;
        EXPECT_GE(p.exposed_comm_s, after_backward - 1e-12);
        EXPECT_GE(p.comm_share, 0);
        EXPECT_LT(p.comm_share, 1);
        EXPECT_NEAR(p.scaling_efficiency, 1 - p.comm_share, 1e-9);
      }
    }
  }
}

TEST(Prediction, small_gradients_hide_behind_backward) {
  // 1M params = 4 MB over 12 GB/s: well under the 180 ms backward; only the last
  // bucket's tail can be exposed.
  auto p = predict_step(inputs(1e6, 12e9, 0.3), 4);
  EXPECT_LT(p.comm_share, 0.01);
}

TEST(Prediction, monotonic_in_nodes_and_bandwidth) {
  for (double params : {5e6, 25e6, 350e6}) {
    double prev_share = -1, prev_step = 0;
    for (int n = 1; n <= 16; ++n) {
      auto p = predict_step(inputs(params, 0.118e9, 0.3), n);
      EXPECT_GE(p.comm_share, prev_share - 1e-12) << params << " n=" << n;
      EXPECT_GE(p.step_s, prev_step - 1e-12) << params << " n=" << n;
      prev_share = p.comm_share;
      prev_step = p.step_s;
    }
    double prev = 2;
    for (double bw : {0.01e9, 0.025e9, 0.118e9, 1e9, 10e9, 100e9}) {
      auto p = predict_step(inputs(params, bw, 0.3), 4);
      EXPECT_LE(p.comm_share, prev + 1e-12) << params << " bw=" << bw;
      prev = p.comm_share;
    }
  }
}

TEST(Prediction, large_model_on_slow_link_is_communication_bound) {
  // 350M fp32 gradients (1.4 GB) over 0.118 GB/s at 4 nodes: ~17.8 s of all-reduce
  // against a 0.5 s compute step.
  auto p = predict_step(inputs(350e6, 0.118e9, 0.5), 4);
  EXPECT_NEAR(p.allreduce_s, 1.5 * 1.4e9 / 0.118e9, 0.1);
  EXPECT_GT(p.comm_share, 0.9);
  EXPECT_LT(p.speedup, 1.0);
}

// The closed form against the bucket-by-bucket replay, on gradients that fill no bucket,
// one, many, and leave a remainder or none; links from latency-bound to bandwidth-bound;
// compute from backward-dominated to optimizer-dominated.
struct ScheduleCase {
  std::string name;
  double gradient_bytes;
  double busbw;
  double hop_latency_s;
  ComputeProfile compute;
  int procs_per_node = 1;
};

std::vector<ScheduleCase> schedule_cases() {
  const ComputeProfile typical{0.06, 0.12, 0.02};
  const ComputeProfile long_backward{0.01, 2.0, 0.01};
  const ComputeProfile optimizer_bound{0.02, 0.03, 0.3};
  return {
      {"empty_gradient", 0, 1e9, 50e-6, typical},
      {"smaller_than_the_first_bucket", 0.5 * MiB, 1e9, 50e-6, typical},
      {"exactly_the_first_bucket", 1 * MiB, 1e9, 50e-6, typical},
      {"first_bucket_and_a_remainder", 3 * MiB, 0.1e9, 50e-6, typical},
      {"first_and_one_full_bucket", 26 * MiB, 0.1e9, 50e-6, typical},
      {"full_buckets_and_a_remainder", 100 * MiB, 0.118e9, 200e-6, typical},
      {"full_buckets_no_remainder", 101 * MiB, 0.5e9, 200e-6, typical},
      {"bandwidth_bound_350M", 1.4e9, 0.118e9, 10e-6, typical},
      {"latency_bound_many_buckets", 4e9, 400e9, 5e-3, typical},
      {"hidden_behind_a_long_backward", 400 * MiB, 10e9, 20e-6, long_backward},
      {"optimizer_bound", 400 * MiB, 1e9, 20e-6, optimizer_bound},
      {"eight_procs_per_node", 700 * MiB, 12e9, 30e-6, typical, 8},
      {"non_integral_bytes", 123456789.5, 0.7e9, 40e-6, typical},
      {"zero_bandwidth_means_latency_only", 200 * MiB, 0, 40e-6, typical},
  };
}

TEST(ClosedForm, equals_the_bucket_replay_on_every_case_and_count) {
  for (const auto& c : schedule_cases()) {
    ModelInputs in;
    in.compute = c.compute;
    in.link = LinkModel{c.hop_latency_s, c.busbw};
    in.gradient_bytes = c.gradient_bytes;
    in.procs_per_node = c.procs_per_node;
    for (int n : {1, 2, 3, 4, 7, 16, 100, 10000}) {
      in.overlap = n % 2 == 0 ? 1.0 : 0.4;
      in.step_overhead_s = n % 3 == 0 ? 0.015 : 0;
      const StepPrediction fast = predict_step(in, n);
      const StepPrediction slow = replay_step(in, n);
      const double tol = 1e-12 * std::max(1.0, slow.step_s);
      EXPECT_NEAR(fast.step_s, slow.step_s, tol) << c.name << " n=" << n;
      EXPECT_NEAR(fast.allreduce_s, slow.allreduce_s, 1e-12 * std::max(1.0, slow.allreduce_s))
          << c.name << " n=" << n;
      EXPECT_NEAR(fast.comm_share, slow.comm_share, 1e-12) << c.name << " n=" << n;
      EXPECT_EQ(fast.ranks, slow.ranks);
    }
  }
}

TEST(ClosedForm, bucket_schedule_counts_what_the_list_holds) {
  for (const auto& c : schedule_cases()) {
    const auto list = ddp_bucket_sizes(c.gradient_bytes, DdpConfig{});
    const BucketSchedule s = ddp_buckets(c.gradient_bytes, DdpConfig{});
    EXPECT_EQ(s.count(), static_cast<int64_t>(list.size())) << c.name;
    if (list.empty()) continue;
    EXPECT_DOUBLE_EQ(s.first, list.front()) << c.name;
    if (s.last > 0) {
      EXPECT_DOUBLE_EQ(s.last, list.back()) << c.name;
    }
  }
  // At the CRD's limit (1e15 fp32 parameters) the schedule is counted, not listed.
  EXPECT_EQ(ddp_buckets(4e15, DdpConfig{}).count(), 152587892);
}

TEST(ClosedForm, costs_the_same_at_the_crd_limits) {
  ModelInputs in;
  in.compute = ComputeProfile{0.06, 0.12, 0.02};
  in.link = LinkModel{20e-6, 12e9};
  in.gradient_bytes = 4e15;  // 1e15 fp32 parameters
  in.procs_per_node = 8;
  const StepPrediction p = predict_step(in, 10000);
  // At 10,000 nodes a bucket's ring latency (0.4 s) outlasts its 25 MiB transfer (4.4
  // ms): every bucket costs its latency, all of it exposed.
  EXPECT_NEAR(p.allreduce_s, 152587892 * 2.0 * 9999 * 20e-6, 1e-6 * p.allreduce_s);
  EXPECT_GT(p.comm_share, 0.999);
}

TEST(Prediction, overlap_moves_the_exposed_part_between_the_schedule_and_the_whole_all_reduce) {
  for (double params : {5e6, 25e6, 350e6}) {
    for (double bw : {0.118e9, 1.2e9, 12e9}) {
      for (int n : {2, 3, 4, 16}) {
        ModelInputs in = inputs(params, bw, 0.3);
        const StepPrediction full = predict_step(in, n);
        in.overlap = 0;
        const StepPrediction none = predict_step(in, n);
        // No overlap: the step is the compute plus every all-reduce.
        EXPECT_NEAR(none.exposed_comm_s, none.allreduce_s, 1e-12)
            << params << " " << bw << " " << n;
        in.overlap = 0.25;
        const StepPrediction quarter = predict_step(in, n);
        const double hidden = full.allreduce_s - full.exposed_comm_s;
        EXPECT_NEAR(quarter.exposed_comm_s, full.exposed_comm_s + 0.75 * hidden, 1e-12);
        EXPECT_EQ(quarter.allreduce_s, full.allreduce_s);
      }
    }
  }
}

// What the validation against real DDP showed on CPU-capped nodes (issue #22): when no
// communication hides, exposed communication must grow from the probed count as the ring
// all-reduce does, not faster.
TEST(Prediction, without_overlap_exposed_communication_grows_as_the_ring_all_reduce) {
  ModelInputs in = inputs(25e6, 0.6e9, 0.2);
  in.link.hop_latency_s = 0;
  in.overlap = 0;
  const double at2 = predict_step(in, 2).exposed_comm_s;
  EXPECT_NEAR(predict_step(in, 3).exposed_comm_s / at2, 4.0 / 3, 1e-9);
  EXPECT_NEAR(predict_step(in, 4).exposed_comm_s / at2, 1.5, 1e-9);
}

TEST(Prediction, overlap_keeps_the_share_monotonic_in_nodes) {
  for (double overlap : {0.0, 0.3, 0.8}) {
    double prev = -1;
    for (int n = 1; n <= 16; ++n) {
      ModelInputs in = inputs(25e6, 1.2e9, 0.3);
      in.overlap = overlap;
      const double share = predict_step(in, n).comm_share;
      EXPECT_GE(share, prev - 1e-12) << overlap << " n=" << n;
      prev = share;
    }
  }
}

// Each kind of measured step and what the calibration explains it with: between the
// schedule and no overlap, the overlap (at the swept bandwidth); slower than no overlap,
// a lower bandwidth; faster than the schedule, a higher one.
TEST(Calibration, explains_a_measured_step_by_overlap_first_then_bandwidth) {
  struct Case {
    const char* name;
    double factor;   // the link the step "ran" on, over the swept one
    double overlap;  // and how much of the schedule's hiding it did
    double want_factor;
    double want_overlap;
  };
  const std::vector<Case> cases = {
      {"full_overlap_as_swept", 1, 1, 1, 1},
      {"some_overlap", 1, 0.6, 1, 0.6},
      {"no_overlap", 1, 0, 1, 0},
      {"no_overlap_slower_link", 0.7, 0, 0.7, 0},
      {"no_overlap_much_slower_link", 0.3, 0, 0.3, 0},
      {"full_overlap_faster_link", 1.8, 1, 1.8, 1},
  };
  const ModelInputs in = inputs(25e6, 0.5e9, 0.3);
  for (const Case& c : cases) {
    ModelInputs actual = in;
    actual.link.busbw_bytes_per_s *= c.factor;
    actual.overlap = c.overlap;
    const double measured = predict_step(actual, 2).exposed_comm_s;
    const StepCalibration got = calibrate_to_ddp_step(in, 2, measured);
    EXPECT_TRUE(got.exact) << c.name;
    EXPECT_NEAR(got.factor, c.want_factor, 1e-9) << c.name;
    EXPECT_NEAR(got.overlap, c.want_overlap, 1e-9) << c.name;
  }
}

// Whatever produced the step, the calibrated model reproduces it at the probed count.
TEST(Calibration, the_calibrated_model_reproduces_the_measured_step) {
  const ModelInputs in = inputs(25e6, 0.5e9, 0.3);
  for (double factor : {0.2, 0.7, 1.0, 2.5}) {
    for (double overlap : {0.0, 0.5, 1.0}) {
      ModelInputs actual = in;
      actual.link.busbw_bytes_per_s *= factor;
      actual.overlap = overlap;
      const double measured = predict_step(actual, 2).exposed_comm_s;
      const StepCalibration c = calibrate_to_ddp_step(in, 2, measured);
      ModelInputs calibrated = in;
      calibrated.link.busbw_bytes_per_s *= c.factor;
      calibrated.overlap = c.overlap;
      EXPECT_NEAR(predict_step(calibrated, 2).exposed_comm_s, measured, 1e-9 * measured)
          << factor << " " << overlap;
    }
  }
}

TEST(Calibration, a_step_no_bandwidth_explains_is_not_corrected_upwards) {
  ModelInputs in = inputs(25e6, 0.5e9, 0.3);
  // Less exposed communication than the latency alone would give: left as it is.
  StepCalibration faster = calibrate_to_ddp_step(in, 2, -0.01);
  EXPECT_FALSE(faster.exact);
  EXPECT_DOUBLE_EQ(faster.factor, 1.0);
  EXPECT_DOUBLE_EQ(faster.overlap, 1.0);
  // Far more than any bandwidth down to the floor gives: corrected to the floor, nothing
  // hidden.
  StepCalibration slower = calibrate_to_ddp_step(in, 2, 1e6);
  EXPECT_FALSE(slower.exact);
  EXPECT_DOUBLE_EQ(slower.factor, kMinBusbwCorrection);
  EXPECT_DOUBLE_EQ(slower.overlap, 0.0);
}

// The per-step overhead: paid once wherever the step all-reduces between nodes, the same
// at every count, so the share still never falls as nodes are added.
TEST(Prediction, the_step_overhead_is_paid_once_from_two_nodes_on) {
  ModelInputs in = inputs(25e6, 0.6e9, 0.2);
  in.overlap = 0.3;
  ModelInputs with = in;
  with.step_overhead_s = 0.04;
  EXPECT_EQ(predict_step(with, 1).step_s, predict_step(in, 1).step_s);
  double prev = -1;
  for (int n = 2; n <= 64; n *= 2) {
    EXPECT_NEAR(predict_step(with, n).step_s - predict_step(in, n).step_s, 0.04, 1e-12) << n;
    EXPECT_EQ(predict_step(with, n).allreduce_s, predict_step(in, n).allreduce_s) << n;
    EXPECT_GE(predict_step(with, n).comm_share, prev) << n;
    prev = predict_step(with, n).comm_share;
  }
}

// With the buckets' all-reduce timed alone, the step's excess over it is read as a cost
// per step, not as a slower link: from the probed count's two times the calibration finds
// the link, the overlap and the overhead the step ran with, and so predicts other counts
// as that step would run there (the 5 Gbit/s points of issue #22, where reading the excess
// as bandwidth grew it by the ring's bus factor).
TEST(Calibration, buckets_timed_alone_separate_the_link_from_a_per_step_cost) {
  struct Case {
    const char* name;
    double factor, overlap, overhead_s;  // what the step "ran" with
  };
  const std::vector<Case> cases = {
      {"slower_link_no_overlap_and_an_overhead", 0.8, 0, 0.06},
      {"swept_link_no_overlap_and_an_overhead", 1, 0, 0.03},
      {"slower_link_some_overlap", 0.7, 0.4, 0},
      {"faster_link_full_overlap", 1.5, 1, 0},
      {"much_slower_link_and_a_small_overhead", 0.2, 0, 0.005},
  };
  const ModelInputs in = inputs(25e6, 0.6e9, 0.2);
  for (const Case& c : cases) {
    ModelInputs actual = in;
    actual.link.busbw_bytes_per_s *= c.factor;
    actual.overlap = c.overlap;
    actual.step_overhead_s = c.overhead_s;
    const StepPrediction at2 = predict_step(actual, 2);
    const StepCalibration got = calibrate_to_ddp_step(in, 2, at2.exposed_comm_s, at2.allreduce_s);
    EXPECT_TRUE(got.exact) << c.name;
    EXPECT_TRUE(got.from_buckets_alone) << c.name;
    EXPECT_NEAR(got.factor, c.factor, 1e-9) << c.name;
    EXPECT_NEAR(got.overlap, c.overlap, 1e-6) << c.name;
    EXPECT_NEAR(got.step_overhead_s, c.overhead_s, 1e-9) << c.name;
    ModelInputs calibrated = in;
    calibrated.link.busbw_bytes_per_s *= got.factor;
    calibrated.overlap = got.overlap;
    calibrated.step_overhead_s = got.step_overhead_s;
    for (int n : {2, 3, 4, 16})
      EXPECT_NEAR(predict_step(calibrated, n).step_s, predict_step(actual, n).step_s, 1e-6)
          << c.name << " n=" << n;
  }
}

// A buckets' time no factor in 0.05-4x gives, or a step that exposed less than the
// schedule does at their bandwidth: calibrated by the step alone, as without the time.
TEST(Calibration, a_buckets_time_that_explains_nothing_is_left_out) {
  const ModelInputs in = inputs(25e6, 0.6e9, 0.2);
  const double exposed = predict_step(in, 2).allreduce_s * 1.3;
  const StepCalibration alone = calibrate_to_ddp_step(in, 2, exposed);
  using Unused = StepCalibration::BucketsUnused;
  EXPECT_EQ(alone.buckets_unused, Unused::kNo);  // none timed
  for (double buckets_s : {1e-9, 1e6, exposed * 10}) {
    const StepCalibration got = calibrate_to_ddp_step(in, 2, exposed, buckets_s);
    EXPECT_FALSE(got.from_buckets_alone) << buckets_s;
    EXPECT_EQ(got.buckets_unused,
              buckets_s == exposed * 10 ? Unused::kStepExposedLess : Unused::kNoBandwidthGivesIt)
        << buckets_s;
    EXPECT_EQ(got.factor, alone.factor) << buckets_s;
    EXPECT_EQ(got.overlap, alone.overlap) << buckets_s;
    EXPECT_EQ(got.step_overhead_s, 0) << buckets_s;
  }
  // Less exposed than the schedule at the buckets' bandwidth (all of it hidden and more).
  ModelInputs slow = in;
  slow.link.busbw_bytes_per_s *= 0.5;
  const double buckets_s = predict_step(slow, 2).allreduce_s;
  const double little = predict_step(slow, 2).exposed_comm_s * 0.5;
  const StepCalibration got = calibrate_to_ddp_step(in, 2, little, buckets_s);
  const StepCalibration want = calibrate_to_ddp_step(in, 2, little);
  EXPECT_FALSE(got.from_buckets_alone);
  EXPECT_EQ(got.buckets_unused, Unused::kStepExposedLess);
  EXPECT_EQ(got.factor, want.factor);
  EXPECT_EQ(got.overlap, want.overlap);
}

TEST(Prediction, table_covers_every_count) {
  auto t = predict_table(inputs(25e6, 1e9, 0.2), 6);
  ASSERT_EQ(t.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t[i].nodes, i + 1);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
