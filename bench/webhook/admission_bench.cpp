// The webhook's work per request without sockets: AdmissionService::admit on the benchmark
// AdmissionReview (parse, snapshot, decide, JSONPatch, serialize, metrics), with the inputs
// bench/webhook/run.sh uses. The difference to run.sh's server CPU per request is TLS and
// HTTP. Run: build/bin/webhook_admission_bench (after commgate-webhook-bench-inputs DIR).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/json_parse.h"
#include "webhook/admission_review.h"
#include "webhook/file_policy_source.h"
#include "webhook/handlers.h"
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
  commgate::webhook::WebhookConfig config;
  config.decide_on_pool = state.range(0) != 0;
  state.SetLabel(config.decide_on_pool ? "pool" : "inline");
  commgate::webhook::AdmissionService service(source, config);
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
// CPU of the whole process: on the pool (/1, WebhookConfig::decide_on_pool) the handler
// runs on the DeadlineRunner's thread, so the calling thread's clock alone misses most of
// the work; /0 runs it inline, as the webhook does by default.
BENCHMARK(BM_AdmitMutate)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime();

// The JSON parse alone, both ways: why core/json_parse.h exists.
std::string review_or_skip(benchmark::State& state) {
  const char* dir = std::getenv("COMMGATE_BENCH_INPUTS");
  if (dir == nullptr) state.SkipWithError("set COMMGATE_BENCH_INPUTS");
  return dir == nullptr ? "" : read(std::string(dir) + "/review.json");
}

std::shared_ptr<const commgate::Snapshot> snapshot_or_skip(benchmark::State& state) {
  const char* dir = std::getenv("COMMGATE_BENCH_INPUTS");
  if (dir == nullptr) return nullptr;
  commgate::webhook::FilePolicySource::Options o;
  o.profile_dir = std::string(dir) + "/profiles";
  commgate::webhook::FilePolicySource source(o);
  source.load_initial();
  auto snapshot = source.snapshot();
  if (!snapshot) state.SkipWithError("no snapshot");
  return snapshot;
}

// The stages of BM_AdmitMutate, each on the calling thread (CPU: this thread's clock).
void BM_StageParseReview(benchmark::State& state) {
  const std::string body = review_or_skip(state);
  for (auto _ : state) benchmark::DoNotOptimize(commgate::webhook::parse_admission_review(body));
}
BENCHMARK(BM_StageParseReview)->Unit(benchmark::kMicrosecond);

void BM_StageHandleMutate(benchmark::State& state) {
  const std::string body = review_or_skip(state);
  const auto snapshot = snapshot_or_skip(state);
  if (!snapshot) return;
  const auto request = commgate::webhook::parse_admission_review(body);
  const auto now = std::chrono::system_clock::now();
  for (auto _ : state)
    benchmark::DoNotOptimize(commgate::webhook::handle_mutate(request, *snapshot, now));
}
BENCHMARK(BM_StageHandleMutate)->Unit(benchmark::kMicrosecond);

void BM_StageResponseBytes(benchmark::State& state) {
  const std::string body = review_or_skip(state);
  const auto snapshot = snapshot_or_skip(state);
  if (!snapshot) return;
  const auto request = commgate::webhook::parse_admission_review(body);
  const auto answer =
      commgate::webhook::handle_mutate(request, *snapshot, std::chrono::system_clock::now());
  for (auto _ : state) {
    benchmark::DoNotOptimize(commgate::webhook::admission_review_response_bytes(
        request.uid, request.api_version, answer));
  }
}
BENCHMARK(BM_StageResponseBytes)->Unit(benchmark::kMicrosecond);

// What the string writer replaced: the response as a JSON tree, dumped.
void BM_ResponseTreeDump(benchmark::State& state) {
  const std::string body = review_or_skip(state);
  const auto snapshot = snapshot_or_skip(state);
  if (!snapshot) return;
  const auto request = commgate::webhook::parse_admission_review(body);
  const auto answer =
      commgate::webhook::handle_mutate(request, *snapshot, std::chrono::system_clock::now());
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        commgate::webhook::admission_review_response(request.uid, request.api_version, answer)
            .dump());
  }
}
BENCHMARK(BM_ResponseTreeDump)->Unit(benchmark::kMicrosecond);

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
