// One admission decision end to end: parse a ~3 KB TrainingJob JSON (as the webhook
// receives it), then decide against a policy and a cached measurement.
// Goal (issue 2): <= 50 us per decision on this machine.
#include <benchmark/benchmark.h>

#include "bench/realistic_job.h"
#include "core/comm_policy.h"
#include "core/decision.h"
#include "core/measurement.h"
#include "core/training_job.h"

namespace {

using commgate::bench::realistic_job_json;

using commgate::Json;

commgate::Measurement cached_measurement() {
  commgate::Measurement m;
  m.source = "CommProfile pool-h100";
  m.measured_at = commgate::Clock::now();
  m.nodes_probed = 2;
  m.procs_per_node = 8;
  m.link.latency_s = 40e-6;
  m.link.busbw_bytes_per_s = 11.5e9;
  m.backend = "nccl";
  m.transport = "ib";
  m.compute = commgate::ComputeProfile{0.060, 0.120, 0.020};
  return m;
}

void BM_ParseAndDecide(benchmark::State& state) {
  const std::string body = realistic_job_json();
  const commgate::CommPolicy policy = commgate::default_comm_policy();
  const commgate::Measurement measurement = cached_measurement();
  const auto now = commgate::Clock::now();
  for (auto _ : state) {
    commgate::TrainingJob job =
        commgate::parse_training_job(Json::parse(body), commgate::ObjectSource::kAdmission);
    commgate::Decision d = commgate::decide({&job, &policy, &measurement, {}, now});
    benchmark::DoNotOptimize(d);
  }
  state.counters["job_bytes"] = static_cast<double>(body.size());
}
BENCHMARK(BM_ParseAndDecide)->Unit(benchmark::kMicrosecond);

void BM_ParseOnly(benchmark::State& state) {
  const std::string body = realistic_job_json();
  for (auto _ : state) {
    auto job = commgate::parse_training_job(Json::parse(body), commgate::ObjectSource::kAdmission);
    benchmark::DoNotOptimize(job);
  }
}
BENCHMARK(BM_ParseOnly)->Unit(benchmark::kMicrosecond);

// The JSON parse alone: the floor under BM_ParseOnly.
void BM_JsonParseOnly(benchmark::State& state) {
  const std::string body = realistic_job_json();
  for (auto _ : state) {
    auto doc = Json::parse(body);
    benchmark::DoNotOptimize(doc);
  }
}
BENCHMARK(BM_JsonParseOnly)->Unit(benchmark::kMicrosecond);

void BM_DecideOnly(benchmark::State& state) {
  const auto job = commgate::parse_training_job(Json::parse(realistic_job_json()));
  const commgate::CommPolicy policy = commgate::default_comm_policy();
  const commgate::Measurement measurement = cached_measurement();
  const auto now = commgate::Clock::now();
  for (auto _ : state) {
    commgate::Decision d = commgate::decide({&job, &policy, &measurement, {}, now});
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_DecideOnly)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
