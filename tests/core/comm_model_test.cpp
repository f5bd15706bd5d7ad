#include "core/comm_model.h"

#include <gtest/gtest.h>

namespace commgate {
namespace {

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
  // 2 nodes: alpha = 2(2-1) hops; bus factor 1.
  EXPECT_NEAR(link.allreduce_seconds(100e6, 2, 1), 2 * 25e-6 + 100e6 / 1e9, 1e-12);
  // 4 nodes x 1: alpha = 6 hops, factor 1.5.
  EXPECT_NEAR(link.allreduce_seconds(100e6, 4, 1), 6 * 25e-6 + 1.5 * 100e6 / 1e9, 1e-12);
  // 2 nodes x 8 procs: factor over 16 ranks, latency over 2 nodes.
  EXPECT_NEAR(link.allreduce_seconds(100e6, 2, 8), 2 * 25e-6 + 1.875 * 100e6 / 1e9, 1e-12);
  EXPECT_EQ(link.allreduce_seconds(100e6, 1, 8), 0.0);
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

TEST(Prediction, table_covers_every_count) {
  auto t = predict_table(inputs(25e6, 1e9, 0.2), 6);
  ASSERT_EQ(t.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t[i].nodes, i + 1);
}

}  // namespace
}  // namespace commgate
