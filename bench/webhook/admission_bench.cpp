// The webhook's work per request without sockets: AdmissionService::admit on the benchmark
// AdmissionReview (parse, snapshot, decide, JSONPatch, serialize, metrics), with the inputs
// bench/webhook/run.sh uses. The difference to run.sh's server CPU per request is TLS and
// HTTP. Run: build/bin/webhook_admission_bench (after commgate-webhook-bench-inputs DIR).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/json_parse.h"
#include "webhook/file_policy_source.h"
#include "webhook/webhook_server.h"

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  if (!in) throw std::runtime_error("cannot read " + path);
  return s.str();
}

void BM_AdmitMutate(benchmark::State& state) {
  const char* dir = std::getenv("COMMGATE_BENCH_INPUTS");
  if (dir == nullptr) {
    state.SkipWithError("set COMMGATE_BENCH_INPUTS to a commgate-webhook-bench-inputs dir");
    return;
  }
  commgate::webhook::FilePolicySource::Options o;
  o.profile_dir = std::string(dir) + "/profiles";
  auto source = std::make_shared<commgate::webhook::FilePolicySource>(o);
  source->load_initial();
  commgate::webhook::AdmissionService service(source, {});
  commgate::server::Request request;
  request.method = "POST";
  request.path = request.target = "/mutate";
  request.headers = {{"Content-Type", "application/json"}};
  request.body = read(std::string(dir) + "/review.json");
  for (auto _ : state) {
    auto response = service.admit(request, true);
    benchmark::DoNotOptimize(response);
  }
}
BENCHMARK(BM_AdmitMutate)->Unit(benchmark::kMicrosecond);

// The JSON parse alone, both ways: why core/json_parse.h exists.
std::string review_or_skip(benchmark::State& state) {
  const char* dir = std::getenv("COMMGATE_BENCH_INPUTS");
  if (dir == nullptr) state.SkipWithError("set COMMGATE_BENCH_INPUTS");
  return dir == nullptr ? "" : read(std::string(dir) + "/review.json");
}

void BM_ParseReviewNlohmann(benchmark::State& state) {
  const std::string body = review_or_skip(state);
  for (auto _ : state) benchmark::DoNotOptimize(nlohmann::json::parse(body));
}
BENCHMARK(BM_ParseReviewNlohmann)->Unit(benchmark::kMicrosecond);

void BM_ParseReviewSimdjsonToNlohmann(benchmark::State& state) {
  const std::string body = review_or_skip(state);
  for (auto _ : state) benchmark::DoNotOptimize(commgate::parse_json(body));
}
BENCHMARK(BM_ParseReviewSimdjsonToNlohmann)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
