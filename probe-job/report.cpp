#include "probe-job/report.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/measurement.h"
#include "core/quantity.h"
#include "core/training_job.h"

namespace commgate::probe {

std::optional<std::string> resolve_termination_log(const std::optional<std::string>& flag) {
  if (flag) {
    if (flag->empty()) return std::nullopt;
    return *flag;
  }
  const char* kDefault = "/dev/termination-log";
  if (access(kDefault, W_OK) == 0) return std::string(kDefault);
  return std::nullopt;
}

std::optional<StepPrediction> predict_at_probe(const ProbeResult& r, const ComputeResult& compute,
                                               const DdpStepResult* ddp, const ProbeConfig& cfg) {
  if (r.nodes * r.procs_per_node < 2 || !(r.fit.busbw_bytes_per_s > 0)) return std::nullopt;
  ModelInputs in;
  // The same baseline the decision uses (core/measurement.h).
  in.compute = compute_profile_of(compute, ddp);
  in.link = LinkModel::from_fit(r.fit, r.nodes);
  in.gradient_bytes = compute.parameters * dtype_bytes(compute.gradient_dtype);
  in.procs_per_node = r.procs_per_node;
  in.ddp.bucket_cap_bytes = cfg.bucket_cap_bytes;
  in.ddp.first_bucket_bytes = cfg.first_bucket_bytes;
  return predict_step(in, r.nodes);
}

std::optional<StepPrediction> predict_at_probe(const ProbeResult& r, const ProbeConfig& cfg) {
  if (!r.compute) return std::nullopt;
  return predict_at_probe(r, *r.compute, r.ddp_step ? &*r.ddp_step : nullptr, cfg);
}

namespace {

// One timed model's lines: its compute step, its DDP step, the model's prediction there.
void model_summary(std::ostream& s, const ProbeResult& r, const ComputeResult& c,
                   const DdpStepResult* ddp, const ProbeConfig& cfg) {
  char line[512];
  std::snprintf(line, sizeof line,
                "  compute: %s, %s params, %s gradients, batch %d, %s, %s: step %.1f ms (fwd %.1f, "
                "bwd %.1f, opt %.1f; "
                "p10 %.1f, p90 %.1f; %d round(s); slowest rank %d: %.1f)\n",
                c.model.c_str(), format_count(c.parameters).c_str(), c.gradient_dtype.c_str(),
                c.batch_size, c.precision.c_str(), c.optimizer.c_str(), c.step_time_ms,
                c.forward_ms, c.backward_ms, c.optimizer_ms, c.p10_ms, c.p90_ms, c.rounds,
                c.slowest_rank, c.slowest_rank_step_ms);
  s << line;
  if (const std::string caution = compute_noise_caution(spread_of(c)); !caution.empty())
    s << " " << caution << "\n";
  if (ddp) {
    std::snprintf(
        line, sizeof line,
        "  ddp step (%d buckets): %.1f ms with all-reduce, %.1f ms compute only -> exposed "
        "%.1f ms, comm share %.1f%%\n",
        ddp->buckets, ddp->step_time_ms, ddp->compute_only_step_time_ms, ddp->exposed_comm_ms,
        ddp->comm_share * 100);
    s << line;
  }
  if (auto p = predict_at_probe(r, c, ddp, cfg)) {
    std::snprintf(line, sizeof line, "  model at %d nodes: step %.1f ms, comm share %.1f%%",
                  p->nodes, p->step_s * 1e3, p->comm_share * 100);
    s << line;
    if (ddp) {
      std::snprintf(line, sizeof line, " (measured %.1f%%)", ddp->comm_share * 100);
      s << line;
    }
    s << "\n";
  }
}

}  // namespace

std::string human_summary(const ProbeResult& r, const ProbeConfig& cfg) {
  std::ostringstream s;
  char line[512];
  s << "commgate-probe: " << r.nodes << " node(s) x " << r.procs_per_node << " rank(s), backend "
    << r.backend << ", transport " << r.transport << ", interface "
    << (r.interface_name.empty() ? "?" : r.interface_name) << ", device " << r.device
    << (r.gpu_product.empty() ? "" : " (" + r.gpu_product + ")") << "\n";
  if (!r.allreduce.empty()) {
    s << "  all-reduce (fp32, " << r.warmup_iterations << " warm-up, >= " << r.iterations
      << " timed iterations):\n";
    std::snprintf(line, sizeof line, "  %12s %12s %10s %10s %6s\n", "size", "time(us)", "algbw",
                  "busbw", "check");
    s << line;
    for (const auto& a : r.allreduce) {
      std::snprintf(line, sizeof line, "  %12s %12.1f %10.4f %10.4f %6s\n",
                    format_bytes(a.bytes).c_str(), a.time_us, a.algbw_gbps, a.busbw_gbps,
                    a.data_check_ok ? "ok" : "FAIL");
      s << line;
    }
    std::snprintf(
        line, sizeof line, "  fit: latency %.1f us, busbw %.4f GB/s, max residual %.0f%%%s%s\n",
        r.fit.latency_s * 1e6, to_gbps(r.fit.busbw_bytes_per_s), r.fit.max_relative_residual * 100,
        r.fit.poor ? " (POOR: " : "", r.fit.poor ? (r.fit.note + ")").c_str() : "");
    s << line;
  }
  if (r.compute) model_summary(s, r, *r.compute, r.ddp_step ? &*r.ddp_step : nullptr, cfg);
  for (const ModelResult& m : r.additional_models)
    model_summary(s, r, m.compute, m.ddp_step ? &*m.ddp_step : nullptr, cfg);
  if (r.error) s << "  ERROR in stage " << r.error->stage << ": " << r.error->message << "\n";
  std::snprintf(line, sizeof line, "  took %.1f s\n", r.duration_seconds);
  s << line;
  return s.str();
}

std::string termination_message(const ProbeResult& result) {
  try {
    return compact_probe_result(result);
  } catch (const std::length_error&) {
  }
  // Over the limit (a long error beside several models): the first model's measurement
  // before the others', then the link alone.
  try {
    ProbeResult first_model = result;
    first_model.additional_models.clear();
    return compact_probe_result(first_model);
  } catch (const std::length_error&) {
    ProbeResult minimal;
    minimal.start_time = result.start_time;
    minimal.duration_seconds = result.duration_seconds;
    minimal.nodes = result.nodes;
    minimal.procs_per_node = result.procs_per_node;
    minimal.backend = result.backend;
    minimal.fit = result.fit;
    minimal.fit.note.clear();
    minimal.error = ProbeError{result.error ? result.error->stage : "report",
                               "the compact result exceeded the termination message limit"};
    return compact_probe_result(minimal);
  }
}

ReportWriter::ReportWriter(const ProbeConfig& cfg, std::ostream& out, std::ostream& err)
    : cfg_(cfg), out_(out), err_(err), start_(std::chrono::steady_clock::now()) {}

void ReportWriter::update(const std::function<void(ProbeResult&)>& change) {
  std::lock_guard<std::mutex> lock(mu_);
  change(result_);
}

ProbeResult ReportWriter::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return result_;
}

void ReportWriter::set_nccl_version(const std::string& version) {
  std::lock_guard<std::mutex> lock(mu_);
  nccl_version_ = version;
}

bool ReportWriter::publish(const std::function<void(ProbeResult&)>& last_change) {
  std::lock_guard<std::mutex> lock(mu_);
  if (published_) return false;
  published_ = true;
  result_.duration_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (last_change) last_change(result_);
  nlohmann::json doc = to_json(result_);
  if (!nccl_version_.empty()) doc["ncclVersion"] = nccl_version_;
  const std::string full = doc.dump(2);
  out_ << full << "\n";
  out_.flush();
  if (!cfg_.output_path.empty()) {
    std::ofstream f(cfg_.output_path);
    f << full << "\n";
    if (!f) {
      err_ << "commgate-probe: cannot write --output " << cfg_.output_path
           << " (the result is on stdout)\n";
      output_failed_ = true;
    }
  }
  if (auto path = resolve_termination_log(cfg_.termination_log)) {
    std::ofstream f(*path);
    f << termination_message(result_);
    if (!f) err_ << "commgate-probe: cannot write the termination message to " << *path << "\n";
  }
  if (!cfg_.quiet) err_ << human_summary(result_, cfg_);
  err_.flush();
  return true;
}

}  // namespace commgate::probe
