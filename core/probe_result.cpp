#include "core/probe_result.h"

#include <stdexcept>

#include "core/object_meta.h"
#include "core/object_reader.h"
#include "core/significant_digits.h"

namespace commgate {
namespace {

using P = Presence;

nlohmann::json compute_json(const ComputeResult& c, bool compact) {
  auto r = [&](double v) { return compact ? round_significant(v) : v; };
  return {{"parameters", c.parameters},
          {"gradientDtype", c.gradient_dtype},
          {"model", c.model},
          {"precision", c.precision},
          {"batchSize", c.batch_size},
          {"optimizer", c.optimizer},
          {"iterations", c.iterations},
          {"stepTimeMs", r(c.step_time_ms)},
          {"forwardMs", r(c.forward_ms)},
          {"backwardMs", r(c.backward_ms)},
          {"optimizerMs", r(c.optimizer_ms)},
          {"p10Ms", r(c.p10_ms)},
          {"p90Ms", r(c.p90_ms)},
          {"rounds", c.rounds},
          {"slowestRankStepMs", r(c.slowest_rank_step_ms)},
          {"slowestRank", c.slowest_rank}};
}

nlohmann::json ddp_json(const DdpStepResult& d, bool compact) {
  auto r = [&](double v) { return compact ? round_significant(v) : v; };
  nlohmann::json j = {{"bucketCapBytes", d.bucket_cap_bytes},
                      {"firstBucketBytes", d.first_bucket_bytes},
                      {"buckets", d.buckets},
                      {"stepTimeMs", r(d.step_time_ms)},
                      {"computeOnlyStepTimeMs", r(d.compute_only_step_time_ms)},
                      {"exposedCommMs", r(d.exposed_comm_ms)},
                      {"commShare", r(d.comm_share)}};
  if (d.allreduce_ms > 0) j["allReduceMs"] = r(d.allreduce_ms);
  return j;
}

nlohmann::json to_json_impl(const ProbeResult& p, bool compact) {
  auto r = [&](double v) { return compact ? round_significant(v) : v; };
  nlohmann::json j = {{"apiVersion", kProbeResultApiVersion},
                      {"kind", kProbeResultKind},
                      {"startTime", format_rfc3339(p.start_time)},
                      {"durationSeconds", r(p.duration_seconds)},
                      {"world", {{"nodes", p.nodes}, {"procsPerNode", p.procs_per_node}}},
                      {"backend", p.backend},
                      {"transport", p.transport},
                      {"interface", p.interface_name},
                      {"device", p.device},
                      {"gpuProduct", p.gpu_product}};
  if (p.links) j["links"] = to_json(*p.links);
  if (!compact) j["hostnames"] = p.hostnames;
  nlohmann::json ar = {{"dtype", p.allreduce_dtype},
                       {"warmupIterations", p.warmup_iterations},
                       {"iterations", p.iterations}};
  nlohmann::json results = nlohmann::json::array();
  // The compact form keeps only the largest size: the headline busbw.
  for (size_t i = compact && !p.allreduce.empty() ? p.allreduce.size() - 1 : 0;
       i < p.allreduce.size(); ++i) {
    const auto& a = p.allreduce[i];
    results.push_back({{"bytes", a.bytes},
                       {"timeUs", r(a.time_us)},
                       {"algbwGBps", r(a.algbw_gbps)},
                       {"busbwGBps", r(a.busbw_gbps)},
                       {"dataCheck", a.data_check_ok ? "ok" : "failed"}});
  }
  ar["results"] = results;
  nlohmann::json fit = {{"latencyUs", r(p.fit.latency_s * 1e6)},
                        {"busbwGBps", r(to_gbps(p.fit.busbw_bytes_per_s))},
                        {"maxRelativeResidual", r(p.fit.max_relative_residual)},
                        {"poor", p.fit.poor}};
  if (!p.fit.note.empty()) fit["note"] = p.fit.note;
  ar["fit"] = fit;
  j["allReduce"] = ar;
  if (p.compute) j["compute"] = compute_json(*p.compute, compact);
  if (p.ddp_step) j["ddpStep"] = ddp_json(*p.ddp_step, compact);
  if (!p.additional_models.empty()) {
    nlohmann::json models = nlohmann::json::array();
    for (const ModelResult& m : p.additional_models) {
      nlohmann::json one = {{"compute", compute_json(m.compute, compact)}};
      if (m.ddp_step) one["ddpStep"] = ddp_json(*m.ddp_step, compact);
      models.push_back(std::move(one));
    }
    j["additionalModels"] = std::move(models);
  }
  if (p.error) j["error"] = {{"stage", p.error->stage}, {"message", p.error->message}};
  if (!p.note.empty() && !compact) j["note"] = p.note;
  return j;
}

ComputeResult read_compute(ObjectReader c) {
  ComputeResult cr;
  cr.parameters = c.quantity("parameters", P::kRequired, 1.0).value_or(0);
  cr.gradient_dtype = c.one_of("gradientDtype", P::kOptional, kGradientDtypes).value_or("fp32");
  cr.model = c.string("model", P::kOptional, true).value_or("");
  cr.precision = c.string("precision", P::kOptional, true).value_or("");
  cr.batch_size = static_cast<int>(c.integer("batchSize", P::kOptional, 0).value_or(0));
  cr.optimizer = c.one_of("optimizer", P::kOptional, kOptimizers).value_or(kUnrecordedOptimizer);
  cr.iterations = static_cast<int>(c.integer("iterations", P::kOptional, 0).value_or(0));
  cr.step_time_ms = c.number("stepTimeMs", P::kRequired, 0.0).value_or(0);
  cr.forward_ms = c.number("forwardMs", P::kOptional, 0.0).value_or(0);
  cr.backward_ms = c.number("backwardMs", P::kOptional, 0.0).value_or(0);
  cr.optimizer_ms = c.number("optimizerMs", P::kOptional, 0.0).value_or(0);
  cr.p10_ms = c.number("p10Ms", P::kOptional, 0.0).value_or(0);
  cr.p90_ms = c.number("p90Ms", P::kOptional, 0.0).value_or(0);
  cr.rounds = static_cast<int>(c.integer("rounds", P::kOptional, 0, 1000).value_or(0));
  cr.slowest_rank_step_ms = c.number("slowestRankStepMs", P::kOptional, 0.0).value_or(0);
  cr.slowest_rank =
      static_cast<int>(c.integer("slowestRank", P::kOptional, -1, 1 << 20).value_or(-1));
  return cr;
}

DdpStepResult read_ddp_step(ObjectReader d) {
  DdpStepResult dr;
  dr.bucket_cap_bytes = d.number("bucketCapBytes", P::kOptional, 0.0).value_or(0);
  dr.first_bucket_bytes = d.number("firstBucketBytes", P::kOptional, 0.0).value_or(0);
  dr.buckets = static_cast<int>(d.integer("buckets", P::kOptional, 0).value_or(0));
  dr.step_time_ms = d.number("stepTimeMs", P::kRequired, 0.0).value_or(0);
  dr.compute_only_step_time_ms = d.number("computeOnlyStepTimeMs", P::kRequired, 0.0).value_or(0);
  dr.exposed_comm_ms = d.number("exposedCommMs", P::kOptional, 0.0).value_or(0);
  dr.comm_share = d.number("commShare", P::kOptional, 0.0, 1.0).value_or(0);
  dr.allreduce_ms = d.number("allReduceMs", P::kOptional, 0.0).value_or(0);
  return dr;
}

}  // namespace

ComputeSpread spread_of(const ComputeResult& c) {
  ComputeSpread s;
  s.median_ms = c.step_time_ms;
  s.p10_ms = c.p10_ms;
  s.p90_ms = c.p90_ms;
  s.samples = c.iterations;
  s.rounds = c.rounds;
  s.slowest_rank_ms = c.slowest_rank_step_ms;
  s.slowest_rank = c.slowest_rank;
  return s;
}

nlohmann::json to_json(const ProbeResult& result) {
  return to_json_impl(result, false);
}

std::string compact_probe_result(const ProbeResult& result) {
  ProbeResult copy = result;
  std::string out = to_json_impl(copy, true).dump();
  if (out.size() > kTerminationMessageLimit && copy.error) {
    // An error message is the only unbounded field: cut it rather than lose the report.
    copy.error->message = copy.error->message.substr(0, 1024) + "...";
    out = to_json_impl(copy, true).dump();
  }
  if (out.size() > kTerminationMessageLimit) {
    throw std::length_error("compact probe result is " + std::to_string(out.size()) +
                            " bytes, over the termination message limit of 4096");
  }
  return out;
}

ProbeResult parse_probe_result(const nlohmann::json& doc) {
  FieldErrors errors;
  ProbeResult p;
  Document document =
      read_document(doc, kProbeResultApiVersion, kProbeResultKind, errors, MetadataRule::kNone);
  ObjectReader& root = document.root;
  p.start_time = root.time("startTime", P::kRequired).value_or(TimePoint{});
  p.duration_seconds = root.number("durationSeconds", P::kOptional, 0.0).value_or(0);
  auto world = root.object("world", P::kRequired);
  p.nodes = static_cast<int>(world.integer("nodes", P::kRequired, 1, 100000).value_or(0));
  p.procs_per_node =
      static_cast<int>(world.integer("procsPerNode", P::kOptional, 1, 1024).value_or(1));
  p.backend = root.one_of("backend", P::kRequired, {"gloo", "nccl"}).value_or("");
  p.transport = root.string("transport", P::kOptional, true).value_or("");
  p.interface_name = root.string("interface", P::kOptional, true).value_or("");
  p.device = root.string("device", P::kOptional, true).value_or("");
  p.gpu_product = root.string("gpuProduct", P::kOptional, true).value_or("");
  p.hostnames = root.string_list("hostnames", P::kOptional).value_or(std::vector<std::string>{});
  if (auto links = root.object("links"); links.present()) p.links = read_pool_link(links);
  p.note = root.string("note", P::kOptional, true).value_or("");

  auto ar = root.object("allReduce", P::kRequired);
  p.allreduce_dtype = ar.one_of("dtype", P::kOptional, kGradientDtypes).value_or("fp32");
  p.warmup_iterations =
      static_cast<int>(ar.integer("warmupIterations", P::kOptional, 0).value_or(0));
  p.iterations = static_cast<int>(ar.integer("iterations", P::kOptional, 0).value_or(0));
  for (auto& item : ar.object_list("results", P::kOptional)) {
    AllReduceResult a;
    a.bytes = item.number("bytes", P::kRequired, 1.0).value_or(0);
    a.time_us = item.number("timeUs", P::kRequired, 0.0).value_or(0);
    a.algbw_gbps = item.number("algbwGBps", P::kOptional, 0.0).value_or(0);
    a.busbw_gbps = item.number("busbwGBps", P::kOptional, 0.0).value_or(0);
    a.data_check_ok =
        item.one_of("dataCheck", P::kOptional, {"ok", "failed"}).value_or("ok") == "ok";
    p.allreduce.push_back(a);
  }
  auto fit = ar.object("fit", P::kRequired);
  p.fit.ranks = p.nodes * p.procs_per_node;
  p.fit.latency_s = fit.number("latencyUs", P::kRequired, 0.0).value_or(0) * 1e-6;
  p.fit.busbw_bytes_per_s = fit.number("busbwGBps", P::kRequired, 0.0).value_or(0) * 1e9;
  p.fit.max_relative_residual = fit.number("maxRelativeResidual", P::kOptional, 0.0).value_or(0);
  p.fit.poor = fit.boolean("poor", P::kOptional).value_or(false);
  p.fit.note = fit.string("note", P::kOptional, true).value_or("");

  auto c = root.object("compute");
  if (c.present()) p.compute = read_compute(c);
  auto d = root.object("ddpStep");
  if (d.present()) p.ddp_step = read_ddp_step(d);
  for (auto& item : root.object_list("additionalModels", P::kOptional)) {
    ModelResult m;
    m.compute = read_compute(item.object("compute", P::kRequired));
    auto md = item.object("ddpStep");
    if (md.present()) m.ddp_step = read_ddp_step(md);
    p.additional_models.push_back(std::move(m));
  }
  auto e = root.object("error");
  if (e.present()) {
    p.error = ProbeError{e.string("stage", P::kOptional, true).value_or(""),
                         e.string("message", P::kOptional, true).value_or("")};
  }
  errors.throw_if_any("invalid ProbeResult");
  return p;
}

}  // namespace commgate
