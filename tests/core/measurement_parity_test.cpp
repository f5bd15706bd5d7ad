// One probe, one decision (issue #9): for every recording in examples/measurements/, the
// decision from the probe result itself (`commgate evaluate --measurement`) and the
// decision from the CommProfile the probe result makes (record_probe_result, written out,
// read back through the YAML reader and the CommProfile parser, as the webhook reads it)
// are identical, for every example job, every example policy, and the recording's own
// model at its probed count and beyond (the measured and the extrapolated rows).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/comm_policy.h"
#include "core/comm_profile.h"
#include "core/decision.h"
#include "core/measurement.h"
#include "core/probe_result.h"
#include "core/profile_recording.h"
#include "core/significant_digits.h"
#include "core/training_job.h"
#include "core/yaml_json.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

namespace fs = std::filesystem;
const fs::path kExamples = fs::path(COMMGATE_SOURCE_DIR) / "examples";

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The recording's own model (what its probe timed), at `nodes`.
TrainingJob job_of_recording(const ProbeResult& r, int nodes) {
  TrainingJob job;
  job.metadata.name = "own-model";
  job.metadata.namespace_ = "parity";
  job.spec.num_nodes = nodes;
  job.spec.model.parameters = r.compute->parameters;
  job.spec.model.gradient_dtype = r.compute->gradient_dtype;
  job.spec.model.batch_size = r.compute->batch_size;
  job.spec.model.optimizer = r.compute->optimizer;
  return job;
}

std::vector<TrainingJob> jobs_for(const ProbeResult& r) {
  std::vector<TrainingJob> jobs;
  for (const auto& f : files_in(kExamples / "jobs"))
    jobs.push_back(parse_training_job(parse_manifests(slurp(f)).at(0)));
  if (r.compute) {
    for (int k : {1, 2, 4}) jobs.push_back(job_of_recording(r, k * r.nodes));
    jobs.push_back(job_of_recording(r, r.nodes + 1));
  }
  return jobs;
}

// The CommProfile path: recorded, written as the operator writes it, read back as the
// webhook reads it (JSON is YAML's flow style; the YAML reader's scalars are the ones a
// kubectl-applied manifest would give).
Measurement through_profile(const ProbeResult& r, const TrainingJob& job, TimePoint now) {
  CommProfile written;
  written.node_selector = job.spec.node_selector;
  written.metadata.name = pool_name(written.node_selector);
  record_probe_result(written, r);
  const std::string text = to_json(written).dump(2);
  CommProfile read = parse_comm_profile(yaml_documents_to_json(text).at(0), now);
  return *measurement_from_profile(read, job.spec.model);
}

TEST(MeasurementParity, probe_and_profile_paths_decide_alike_for_every_recording) {
  int compared = 0, measured_rows = 0, from_buckets_alone = 0;
  for (const auto& recording : files_in(kExamples / "measurements"))
    // Each recording as it is, and as a probe that also timed its buckets alone would have
    // written it (an unrounded time, which both paths must round alike).
    for (const double buckets_share : {0.0, 0.8123456}) {
      SCOPED_TRACE(recording.filename().string() + " buckets " + std::to_string(buckets_share));
      ProbeResult r = parse_probe_result(nlohmann::json::parse(slurp(recording)));
      r.ddp_step->allreduce_ms = buckets_share * r.ddp_step->exposed_comm_ms;
      const TimePoint now = r.start_time + std::chrono::hours(1);
      for (const TrainingJob& job : jobs_for(r)) {
        SCOPED_TRACE(job.metadata.name + " at " + std::to_string(job.spec.num_nodes));
        const Measurement from_probe = measurement_from_probe(r, job.spec.model, recording);
        const Measurement from_profile = through_profile(r, job, now);
        for (const auto& f : files_in(kExamples / "policies")) {
          SCOPED_TRACE(f.filename().string());
          const CommPolicy policy = parse_comm_policy(parse_manifests(slurp(f)).at(0));
          const Decision a = decide({&job, &policy, &from_probe, {}, now});
          const Decision b = decide({&job, &policy, &from_profile, {}, now});
          EXPECT_EQ(decision_to_json(a).dump(2), decision_to_json(b).dump(2));
          ++compared;
          for (const auto& p : a.predictions) measured_rows += p.measured;
          from_buckets_alone += a.correction && a.correction->from_buckets_alone;
        }
      }
    }
  // The comparison covered the recordings, and the measured rows among them.
  EXPECT_GE(compared, 2 * 6 * 3 * 7);
  EXPECT_GT(measured_rows, 0);
  EXPECT_GT(from_buckets_alone, 0);
}

// What the profile stores is what the decision uses: the phases scaled to the probe's
// DDP step without communication (on the shipped recordings the unscaled phases differ
// from it by 0.97x to 1.86x), and the DDP step itself.
TEST(MeasurementParity, the_profile_stores_the_scaled_compute_and_the_ddp_step) {
  for (const auto& recording : files_in(kExamples / "measurements")) {
    SCOPED_TRACE(recording.filename().string());
    const ProbeResult r = parse_probe_result(nlohmann::json::parse(slurp(recording)));
    ASSERT_TRUE(r.compute && r.ddp_step);
    CommProfile p;
    record_probe_result(p, r);
    ASSERT_EQ(p.status.compute_steps.size(), 1u);
    const ComputeStepRecord& c = p.status.compute_steps[0];
    // Each phase recorded to 4 significant digits: their sum within 0.05% of the step.
    const double step = r.ddp_step->compute_only_step_time_ms;
    EXPECT_NEAR(c.step_time_ms, step, 5e-4 * step);
    EXPECT_NEAR(c.forward_ms + c.backward_ms + c.optimizer_ms, step, 5e-4 * step);
    for (const double v : {c.step_time_ms, c.forward_ms, c.backward_ms, c.optimizer_ms})
      EXPECT_EQ(round_significant(v), v) << "more than 4 significant digits: " << v;
    ASSERT_TRUE(c.ddp_step);
    EXPECT_EQ(c.ddp_step->nodes, r.nodes);
    EXPECT_DOUBLE_EQ(c.ddp_step->step_time_ms, round_significant(r.ddp_step->step_time_ms));
  }
}

// The optimizer is part of the signature: an SGD job and an AdamW job of the same model
// get different compute profiles, each its own probe's.
TEST(MeasurementParity, the_optimizer_keys_the_compute_record) {
  const ProbeResult base = parse_probe_result(nlohmann::json::parse(
      slurp(kExamples / "measurements" / "probe-netns-2-nodes-1gbit-25M-params.json")));
  ProbeResult sgd = base, adamw = base;
  sgd.compute->optimizer = "sgd";
  sgd.compute->optimizer_ms = 20;  // SGD's step is a fraction of Adam's
  sgd.ddp_step.reset();
  adamw.compute->optimizer = "adamw";
  adamw.ddp_step.reset();
  CommProfile p;
  record_probe_result(p, sgd);
  record_probe_result(p, adamw);
  ASSERT_EQ(p.status.compute_steps.size(), 2u);  // one record per optimizer

  TrainingJob sgd_job = job_of_recording(sgd, 4), adamw_job = job_of_recording(adamw, 4);
  auto sgd_m = measurement_from_profile(p, sgd_job.spec.model);
  auto adamw_m = measurement_from_profile(p, adamw_job.spec.model);
  ASSERT_TRUE(sgd_m->compute && adamw_m->compute);
  EXPECT_NEAR(sgd_m->compute->optimizer_s, 0.020, 1e-12);
  EXPECT_NEAR(adamw_m->compute->optimizer_s, round_significant(base.compute->optimizer_ms) / 1e3,
              1e-12);
  EXPECT_LT(sgd_m->compute->total_s(), adamw_m->compute->total_s());

  // A job whose optimizer no probe timed has no compute measurement, and says why.
  TrainingJob adagrad = job_of_recording(base, 4);
  adagrad.spec.model.optimizer = "adagrad";
  auto none = measurement_from_profile(p, adagrad.spec.model);
  EXPECT_FALSE(none->compute);
  EXPECT_NE(none->compute_missing_reason.find("with adagrad (the probes measured 25M fp32 at "
                                              "batch 32 with sgd; 25M fp32 at batch 32 with "
                                              "adamw)"),
            std::string::npos)
      << none->compute_missing_reason;
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
