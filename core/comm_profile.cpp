#include "core/comm_profile.h"

#include <algorithm>
#include <cstdio>

#include "core/object_reader.h"
#include "core/significant_digits.h"
#include "core/training_job.h"

namespace commgate {
namespace {

using P = Presence;

// A measurement's time: required, and not in the future beyond the clock skew tolerated.
TimePoint read_measured_at(ObjectReader& r, TimePoint now) {
  auto t = r.time("measuredAt", P::kRequired);
  if (t && *t > now + kClockSkewTolerance) {
    r.errors().add(r.path_of("measuredAt"), "must not be in the future (more than " +
                                                std::to_string(kClockSkewTolerance.count()) +
                                                "m after " + format_rfc3339(now) + "), got \"" +
                                                format_rfc3339(*t) + "\"");
  }
  return t.value_or(TimePoint{});
}

LinkRecord read_link(ObjectReader& link, TimePoint now) {
  LinkRecord l;
  l.latency_us = link.number("latencyUs", P::kRequired, 0.0).value_or(0);
  l.busbw_gbps = link.positive("busbwGBps", P::kRequired).value_or(0);
  l.algbw_gbps = link.number("algbwGBps", P::kOptional, 0.0).value_or(0);
  // One node has no link: a fit from fewer than two says nothing about the network.
  l.nodes_probed =
      static_cast<int>(link.integer("nodesProbed", P::kRequired, 2, kMaxNodes).value_or(0));
  l.procs_per_node =
      static_cast<int>(link.integer("procsPerNode", P::kOptional, 1, 1024).value_or(1));
  l.max_relative_residual = link.number("maxRelativeResidual", P::kOptional, 0.0).value_or(0);
  l.poor = link.boolean("poor", P::kOptional).value_or(false);
  l.note = link.string("note", P::kOptional, true).value_or("");
  l.measured_at = read_measured_at(link, now);
  return l;
}

DdpStepRecord read_ddp_step(ObjectReader& s) {
  DdpStepRecord d;
  d.nodes = static_cast<int>(s.integer("nodes", P::kRequired, 2, kMaxNodes).value_or(0));
  d.procs_per_node = static_cast<int>(s.integer("procsPerNode", P::kOptional, 1, 1024).value_or(1));
  d.step_time_ms = s.positive("stepTimeMs", P::kRequired).value_or(0);
  d.compute_only_step_time_ms = s.positive("computeOnlyStepTimeMs", P::kRequired).value_or(0);
  d.exposed_comm_ms = s.number("exposedCommMs", P::kOptional).value_or(0);
  d.comm_share = s.number("commShare", P::kOptional).value_or(0);
  d.allreduce_ms = s.number("allReduceMs", P::kOptional, 0.0).value_or(0);
  d.bucket_cap_bytes = s.number("bucketCapBytes", P::kOptional, 0.0).value_or(0);
  d.first_bucket_bytes = s.number("firstBucketBytes", P::kOptional, 0.0).value_or(0);
  d.buckets = static_cast<int>(s.integer("buckets", P::kOptional, 0).value_or(0));
  d.link_busbw_gbps = s.number("linkBusbwGBps", P::kOptional, 0.0).value_or(0);
  d.link_latency_us = s.number("linkLatencyUs", P::kOptional, 0.0).value_or(0);
  s.reject_unknown_fields();
  return d;
}

ComputeSpread read_spread(ObjectReader& s) {
  ComputeSpread out;
  out.median_ms = s.number("medianMs", P::kRequired, 0.0).value_or(0);
  out.p10_ms = s.number("p10Ms", P::kRequired, 0.0).value_or(0);
  out.p90_ms = s.number("p90Ms", P::kRequired, 0.0).value_or(0);
  out.samples = static_cast<int>(s.integer("samples", P::kOptional, 0, 1 << 20).value_or(0));
  out.rounds = static_cast<int>(s.integer("rounds", P::kOptional, 0, 1000).value_or(0));
  out.slowest_rank_ms = s.number("slowestRankStepMs", P::kOptional, 0.0).value_or(0);
  out.slowest_rank =
      static_cast<int>(s.integer("slowestRank", P::kOptional, -1, 1 << 20).value_or(-1));
  s.reject_unknown_fields();
  return out;
}

ComputeStepRecord read_compute_step(ObjectReader& c, TimePoint now) {
  ComputeStepRecord r;
  r.parameters = c.quantity("parameters", P::kRequired, 1).value_or(0);
  r.gradient_dtype = c.one_of("gradientDtype", P::kOptional, kGradientDtypes).value_or("fp32");
  r.batch_size = static_cast<int>(c.integer("batchSize", P::kOptional, 0, 1 << 20).value_or(0));
  r.optimizer = c.one_of("optimizer", P::kOptional, kOptimizers).value_or(kUnrecordedOptimizer);
  r.gpu_product = c.string("gpuProduct", P::kOptional, true).value_or("");
  r.step_time_ms = c.positive("stepTimeMs", P::kRequired).value_or(0);
  r.forward_ms = c.number("forwardMs", P::kOptional, 0.0).value_or(0);
  r.backward_ms = c.number("backwardMs", P::kOptional, 0.0).value_or(0);
  r.optimizer_ms = c.number("optimizerMs", P::kOptional, 0.0).value_or(0);
  r.measured_at = read_measured_at(c, now);
  if (auto ddp = c.object("ddpStep"); ddp.present()) r.ddp_step = read_ddp_step(ddp);
  if (auto s = c.object("spread"); s.present()) r.spread = read_spread(s);
  return r;
}

}  // namespace

std::string pool_name(const std::map<std::string, std::string>& node_selector,
                      const std::vector<std::string>& hostnames) {
  if (node_selector.empty() && hostnames.empty()) return "pool-all";
  // FNV-1a over "k=v\n" in key order: std::map iterates sorted, so equal selectors
  // written in any order name the same pool. Hostnames follow as "@name\n" (a label key
  // cannot start with "@"), sorted, so a selector alone hashes as it always did.
  uint64_t h = 1469598103934665603ULL;
  const auto mix = [&h](const std::string& text) {
    for (char c : text) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ULL;
    }
  };
  for (const auto& [k, v] : node_selector) mix(k + "=" + v + "\n");
  std::vector<std::string> names = hostnames;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const std::string& n : names) mix("@" + n + "\n");
  char buf[32];
  std::snprintf(buf, sizeof buf, "pool-%016llx", static_cast<unsigned long long>(h));
  return buf;
}

CommProfile parse_comm_profile(const nlohmann::json& doc, TimePoint now) {
  FieldErrors errors;
  CommProfile p;
  Document d = read_document(doc, kApiVersion, "CommProfile", errors);
  ObjectReader& root = d.root;
  p.metadata = std::move(d.metadata);
  auto spec = root.object("spec");
  p.node_selector =
      spec.string_map("nodeSelector", P::kOptional).value_or(std::map<std::string, std::string>{});
  p.hostnames = spec.string_list("hostnames", P::kOptional).value_or(std::vector<std::string>{});
  if (p.hostnames.size() > kMaxPoolHostnames)
    errors.add("spec.hostnames", "at most " + std::to_string(kMaxPoolHostnames) +
                                     " hostnames, got " + std::to_string(p.hostnames.size()));
  spec.reject_unknown_fields();
  auto status = root.object("status");
  auto link = status.object("link");
  if (link.present()) p.status.link = read_link(link, now);
  p.status.backend = status.string("backend", P::kOptional, true).value_or("");
  p.status.transport = status.string("transport", P::kOptional, true).value_or("");
  p.status.interface_name = status.string("interface", P::kOptional, true).value_or("");
  p.status.device = status.string("device", P::kOptional, true).value_or("");
  p.status.gpu_product = status.string("gpuProduct", P::kOptional, true).value_or("");
  if (auto links = status.object("links"); links.present()) p.status.links = read_pool_link(links);
  for (auto& c : status.object_list("computeSteps"))
    p.status.compute_steps.push_back(read_compute_step(c, now));
  // Status is the operator's output: fields this reader does not know (conditions,
  // observedGeneration, or a newer operator's) are ignored, not rejected.
  root.allow({"status"});
  root.reject_unknown_fields();
  errors.throw_if_any("invalid CommProfile");
  return p;
}

nlohmann::json to_json(const CommProfile& p) {
  // Measured times and rates to the 4 significant digits a measurement supports (the
  // probe's compact result has no more; the phases scaled to the DDP step and unit
  // conversions would otherwise show 10119.999999999998 in kubectl describe, issue #21).
  // Parameter counts and byte sizes are exact and stay so.
  const auto r = [](double v) { return round_significant(v); };
  nlohmann::json status = nlohmann::json::object();
  if (p.status.link) {
    const LinkRecord& l = *p.status.link;
    status["link"] = {{"latencyUs", r(l.latency_us)},
                      {"busbwGBps", r(l.busbw_gbps)},
                      {"algbwGBps", r(l.algbw_gbps)},
                      {"nodesProbed", l.nodes_probed},
                      {"procsPerNode", l.procs_per_node},
                      {"maxRelativeResidual", r(l.max_relative_residual)},
                      {"poor", l.poor},
                      {"measuredAt", format_rfc3339(l.measured_at)}};
    if (!l.note.empty()) status["link"]["note"] = l.note;
    status["lastProbeTime"] = format_rfc3339(l.measured_at);
  }
  status["backend"] = p.status.backend;
  status["transport"] = p.status.transport;
  status["interface"] = p.status.interface_name;
  status["device"] = p.status.device;
  status["gpuProduct"] = p.status.gpu_product;
  if (p.status.links) status["links"] = to_json(*p.status.links);
  status["computeSteps"] = nlohmann::json::array();
  for (const auto& c : p.status.compute_steps) {
    status["computeSteps"].push_back({{"parameters", c.parameters},
                                      {"gradientDtype", c.gradient_dtype},
                                      {"batchSize", c.batch_size},
                                      {"optimizer", c.optimizer},
                                      {"gpuProduct", c.gpu_product},
                                      {"stepTimeMs", r(c.step_time_ms)},
                                      {"forwardMs", r(c.forward_ms)},
                                      {"backwardMs", r(c.backward_ms)},
                                      {"optimizerMs", r(c.optimizer_ms)},
                                      {"measuredAt", format_rfc3339(c.measured_at)}});
    if (const auto& d = c.ddp_step) {
      status["computeSteps"].back()["ddpStep"] = {
          {"nodes", d->nodes},
          {"procsPerNode", d->procs_per_node},
          {"stepTimeMs", r(d->step_time_ms)},
          {"computeOnlyStepTimeMs", r(d->compute_only_step_time_ms)},
          {"exposedCommMs", r(d->exposed_comm_ms)},
          {"commShare", r(d->comm_share)},
          {"bucketCapBytes", d->bucket_cap_bytes},
          {"firstBucketBytes", d->first_bucket_bytes},
          {"buckets", d->buckets}};
      auto& step = status["computeSteps"].back()["ddpStep"];
      if (d->allreduce_ms > 0) step["allReduceMs"] = r(d->allreduce_ms);
      if (d->link_busbw_gbps > 0) {
        step["linkBusbwGBps"] = d->link_busbw_gbps;
        step["linkLatencyUs"] = d->link_latency_us;
      }
    }
    if (const auto& s = c.spread) {
      status["computeSteps"].back()["spread"] = {
          {"medianMs", r(s->median_ms)},   {"p10Ms", r(s->p10_ms)},
          {"p90Ms", r(s->p90_ms)},         {"samples", s->samples},
          {"rounds", s->rounds},           {"slowestRankStepMs", r(s->slowest_rank_ms)},
          {"slowestRank", s->slowest_rank}};
    }
  }
  nlohmann::json spec = nlohmann::json::object();
  if (!p.node_selector.empty()) spec["nodeSelector"] = p.node_selector;
  if (!p.hostnames.empty()) spec["hostnames"] = p.hostnames;
  return {{"apiVersion", kApiVersion},
          {"kind", "CommProfile"},
          {"metadata", object_meta_to_json(p.metadata)},
          {"spec", spec},
          {"status", status}};
}

}  // namespace commgate
