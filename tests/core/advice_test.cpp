// The advice (core/advice.h), table-driven: each counterfactual answers its question (the
// model passes at the bandwidth or batch it names and fails just short of it), says so
// when nothing can help, and never changes a verdict.
#include "core/advice.h"

#include <gtest/gtest.h>

#include <optional>

#include "core/decision.h"
#include "core/quantity.h"
#include "tests/support/builders.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using testing::a_measurement;
using testing::a_policy;
using testing::a_training_job;
using testing::test_now;

// decision_test.cpp's scenario: 25M fp32 parameters (100 MB of gradients), a 300 ms
// compute step (100 forward, 200 backward when split as from_step_time does it), a
// 0.5 GB/s link.
ModelInputs inputs(double busbw_gbps, double hop_latency_us, double step_ms,
                   double gradient_bytes = 100e6) {
  ModelInputs m;
  m.compute = ComputeProfile::from_step_time(step_ms / 1e3);
  m.link.busbw_bytes_per_s = busbw_gbps * 1e9;
  m.link.hop_latency_s = hop_latency_us / 1e6;
  m.gradient_bytes = gradient_bytes;
  return m;
}

CommPolicySpec limit(double max_share, std::optional<double> min_efficiency = std::nullopt) {
  CommPolicySpec p;
  p.max_comm_share = max_share;
  p.min_scaling_efficiency = min_efficiency;
  return p;
}

ModelInputs at_busbw(ModelInputs m, double busbw) {
  m.link.busbw_bytes_per_s = busbw;
  return m;
}

ModelInputs at_batch_factor(ModelInputs m, double f) {
  m.compute.forward_s *= f;
  m.compute.backward_s *= f;
  return m;
}

struct LinkCase {
  std::string name;
  ModelInputs model;
  CommPolicySpec policy;
  int nodes;
  bool some_link_passes;
};

class BusbwNeeded : public ::testing::TestWithParam<LinkCase> {};

TEST_P(BusbwNeeded, passes_at_the_bandwidth_it_names_and_fails_a_tenth_below) {
  const LinkCase& c = GetParam();
  const std::optional<double> needed = busbw_needed(c.model, c.policy, c.nodes);
  ASSERT_EQ(needed.has_value(), c.some_link_passes);
  if (!needed) return;
  EXPECT_TRUE(meets_policy(predict_step(at_busbw(c.model, *needed), c.nodes), c.policy));
  // Rounded up to 2 significant digits: at most a tenth above what the model needs.
  EXPECT_FALSE(meets_policy(predict_step(at_busbw(c.model, *needed * 0.9), c.nodes), c.policy));
}

INSTANTIATE_TEST_SUITE_P(
    Table, BusbwNeeded,
    ::testing::Values(
        // 35.9% at 4 nodes on 0.5 GB/s: a faster link brings it under 30%.
        LinkCase{"bert_at_4", inputs(0.5, 200, 300), limit(0.3), 4, true},
        LinkCase{"bert_at_64", inputs(0.5, 200, 300), limit(0.3), 64, true},
        // An efficiency floor as well as the share.
        LinkCase{"with_efficiency", inputs(0.5, 200, 300), limit(0.5, 0.9), 16, true},
        // A 1 ms step and 5 ms hops: the ring's latency alone is over any limit.
        LinkCase{"latency_bound", inputs(100, 5000, 1, 4e6), limit(0.3), 8, false}),
    [](const auto& info) { return info.param.name; });

TEST(BatchFactorNeeded, passes_at_the_factor_it_names_and_fails_just_short) {
  const ModelInputs m = inputs(0.5, 200, 300);
  const CommPolicySpec p = limit(0.2);
  const std::optional<double> f = batch_factor_needed(m, p, 8);
  ASSERT_TRUE(f);
  EXPECT_GT(*f, 1);
  EXPECT_TRUE(meets_policy(predict_step(at_batch_factor(m, *f), 8), p));
  EXPECT_FALSE(meets_policy(predict_step(at_batch_factor(m, *f / 1.01), 8), p));
  // Already passing: no larger batch needed.
  EXPECT_EQ(batch_factor_needed(m, limit(0.99), 2), 1.0);
  // Latency-bound beyond any batch up to kMaxBatchFactor: a 1 us step.
  EXPECT_FALSE(batch_factor_needed(inputs(100, 5000, 0.001, 4e6), limit(0.3), 8));
}

TEST(Advice, one_line_of_each_kind_with_its_numbers) {
  ModelSpec job;
  job.parameters = 25e6;
  job.batch_size = 32;
  const std::vector<Advice> a = advise(inputs(0.5, 200, 300), limit(0.3), job, 4, 2);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0].kind, advice_kind::kLink);
  EXPECT_NE(a[0].text.find("4 nodes would pass with an all-reduce bus bandwidth of "),
            std::string::npos)
      << a[0].text;
  const std::string share = format_percent(predict_step(inputs(0.5, 200, 300), 4).comm_share);
  EXPECT_NE(
      a[0].text.find("this pool's effective bandwidth is 0.5 GB/s (" + share + " at 4 nodes)"),
      std::string::npos)
      << a[0].text;
  EXPECT_EQ(a[1].kind, advice_kind::kCompression);
  EXPECT_NE(a[1].text.find("the model predicts "), std::string::npos) << a[1].text;
  EXPECT_NE(a[1].text.find("PowerSGD"), std::string::npos) << a[1].text;
  EXPECT_EQ(a[2].kind, advice_kind::kBatch);
  EXPECT_NE(a[2].text.find("(now 32) 4 nodes would pass"), std::string::npos) << a[2].text;
  EXPECT_NE(a[2].text.find("learning rate"), std::string::npos) << a[2].text;
  EXPECT_EQ(a[3].kind, advice_kind::kLargestCount);
  EXPECT_NE(a[3].text.find("the largest count that passes is 2 nodes, "), std::string::npos)
      << a[3].text;
  EXPECT_NE(a[3].text.find("scaling efficiency"), std::string::npos) << a[3].text;
}

TEST(Advice, says_so_where_a_counterfactual_cannot_help) {
  ModelSpec job;
  job.parameters = 1e6;
  job.gradient_dtype = "bf16";
  job.batch_size = 8;
  const std::vector<Advice> a = advise(inputs(100, 5000, 0.001, 2e6), limit(0.3), job, 8, 1);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_NE(a[0].text.find("No link makes 8 nodes pass: with unlimited bandwidth the "
                           "all-reduces' latency alone"),
            std::string::npos)
      << a[0].text;
  EXPECT_NE(a[1].text.find("the gradients are already bf16"), std::string::npos) << a[1].text;
  EXPECT_NE(a[2].text.find("no per-GPU batch up to 1024 times 8 makes 8 nodes pass"),
            std::string::npos)
      << a[2].text;
  EXPECT_NE(a[3].text.find("only 1 node passes"), std::string::npos) << a[3].text;
}

// A per-step overhead the probe's DDP step measured: where it alone is over the policy,
// the link line says so (no link, and no latency, helps); where the latency and it
// together are, it names both.
TEST(Advice, says_when_the_step_overhead_keeps_a_count_over_the_policy) {
  ModelSpec job;
  job.parameters = 25e6;
  job.batch_size = 32;
  ModelInputs m = inputs(0.5, 100, 300);
  m.step_overhead_s = 0.2;  // 200 ms on a 300 ms step: 40% by itself
  const std::vector<Advice> over = advise(m, limit(0.3), job, 4, 1);
  EXPECT_NE(over[0].text.find("No link makes 4 nodes pass: the 200 ms each step pays beyond its "
                              "all-reduces (what the probe's DDP step exposed beyond its buckets "
                              "all-reduced alone: copies, scaling) is by itself 40.0% of the "
                              "step at 4 nodes, over the limit."),
            std::string::npos)
      << over[0].text;
  m.step_overhead_s = 0.1;      // 25% by itself
  m.link.hop_latency_s = 0.01;  // and 10 ms a ring step: 60 ms a bucket at 4 nodes
  const std::vector<Advice> both = advise(m, limit(0.3), job, 4, 1);
  EXPECT_NE(both[0].text.find("with unlimited bandwidth the all-reduces' latency (from the "
                              "measured hop latency 10k us) and the 100 ms each step pays "
                              "beyond them are "),
            std::string::npos)
      << both[0].text;
}

// The compression line's share is the model's with half the bytes, judged by the policy.
TEST(Advice, compression_halves_the_bytes_of_fp32_gradients) {
  ModelSpec job;
  job.parameters = 25e6;
  const StepPrediction halved = predict_step(inputs(0.5, 200, 300, 50e6), 4);
  for (const double max_share : {0.3, halved.comm_share - 0.01}) {
    const std::vector<Advice> a = advise(inputs(0.5, 200, 300), limit(max_share), job, 4, 2);
    const bool passes = halved.comm_share <= max_share;
    EXPECT_NE(a[1].text.find("predicts " + format_percent(halved.comm_share) + " at 4 nodes, " +
                             (passes ? "within the policy" : "still over the policy")),
              std::string::npos)
        << a[1].text;
  }
  EXPECT_LT(halved.comm_share, predict_step(inputs(0.5, 200, 300), 4).comm_share);
}

// Over the policy: advice in the decision and its status, the verdict as it was; within
// it, none.
TEST(Advice, decide_adds_it_over_the_policy_only_and_keeps_the_verdict) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  Measurement m = a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build();
  CommPolicy over = a_policy().max_comm_share(0.3).build();
  const Decision d = decide({&job, &over, &m, {}, test_now()});
  EXPECT_EQ(d.action, Action::kDownsize);
  EXPECT_EQ(d.admitted_nodes, 2);
  ASSERT_EQ(d.advice.size(), 4u);
  const nlohmann::json j = decision_to_json(d);
  ASSERT_EQ(j["advice"].size(), 4u);
  EXPECT_EQ(j["advice"][0]["kind"], "link");
  EXPECT_EQ(j["advice"][3]["text"], d.advice[3].text);
  CommPolicy within = a_policy().max_comm_share(0.5).build();
  const Decision ok = decide({&job, &within, &m, {}, test_now()});
  EXPECT_EQ(ok.action, Action::kAdmit);
  EXPECT_TRUE(ok.advice.empty());
  EXPECT_FALSE(decision_to_json(ok).contains("advice"));
}

// The link slower than its hardware: InfiniBand unused, or a bus bandwidth under half the
// slowest node's rated speed; nothing when no rate was read or the link keeps up.
TEST(LinkRateAdvice, names_the_settings_when_the_link_runs_below_its_hardware) {
  struct Case {
    const char* name;
    double busbw_gbps;
    const char* backend;
    const char* transport;
    std::optional<PoolLink> links;
    const char* says;  // nullptr: no advice
  };
  const PoolLink hundred_gbit{1e11, 2, 2, false};  // 12.5 GB/s
  const PoolLink with_ib{1e11, 2, 2, true};
  const PoolLink one_of_two{2.5e10, 1, 2, false};  // 3.125 GB/s
  const Case cases[] = {
      {"no rate read", 0.1, "nccl", "socket", std::nullopt, nullptr},
      {"no physical interface", 0.1, "nccl", "socket", PoolLink{0, 0, 2, false}, nullptr},
      {"keeps up with the rate", 11, "nccl", "ib", hundred_gbit, nullptr},
      {"at half the rate exactly", 6.25, "nccl", "socket", hundred_gbit, nullptr},
      {"under half the rate", 1.2, "nccl", "socket", hundred_gbit,
       "reached 1.2 GB/s, 9.6% of the slowest node's rated 100 Gbit/s (interface eth0) (a "
       "ring all-reduce approaches the rate): check the interface NCCL uses"},
      {"one rank of two knows", 1, "gloo", "socket", one_of_two,
       "of the slowest rate that 1 of the 2 ranks report, rated 25 Gbit/s"},
      {"infiniband unused by nccl", 11, "nccl", "socket", with_ib, "NCCL_IB_DISABLE is not 1"},
      {"infiniband and gloo", 0.1, "gloo", "socket", with_ib, "Gloo runs over TCP sockets"},
      {"infiniband used", 11, "nccl", "ib", with_ib, nullptr},
  };
  for (const auto& c : cases) {
    const auto advice =
        link_rate_advice(c.busbw_gbps * 1e9, c.backend, c.transport, "eth0", c.links);
    if (!c.says) {
      EXPECT_EQ(advice, std::nullopt) << c.name << ": " << advice->text;
      continue;
    }
    ASSERT_TRUE(advice) << c.name;
    EXPECT_EQ(advice->kind, advice_kind::kLinkRate) << c.name;
    EXPECT_NE(advice->text.find(c.says), std::string::npos) << c.name << ": " << advice->text;
  }
}

TEST(LinkRateAdvice, decide_adds_it_after_the_counterfactuals) {
  TrainingJob job = a_training_job("bert").nodes(4).params(25e6).build();
  Measurement m = a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build();
  m.links = PoolLink{1e11, 2, 2, false};
  m.backend = "nccl";
  m.transport = "socket";
  CommPolicy over = a_policy().max_comm_share(0.3).build();
  const Decision d = decide({&job, &over, &m, {}, test_now()});
  EXPECT_EQ(d.action, Action::kDownsize);
  ASSERT_EQ(d.advice.size(), 5u);
  EXPECT_EQ(d.advice[4].kind, advice_kind::kLinkRate);
  EXPECT_NE(d.advice[4].text.find("reached 0.5 GB/s, 4.0% of the slowest node's rated 100 Gbit/s"),
            std::string::npos)
      << d.advice[4].text;
  m.links.reset();
  EXPECT_EQ(decide({&job, &over, &m, {}, test_now()}).advice.size(), 4u);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
