#include "cli/local_probe.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "cli/subprocess.h"
#include "core/probe_memory.h"
#include "core/quantity.h"

namespace commgate {
namespace fs = std::filesystem;

std::string find_probe_binary(const std::string& explicit_path) {
  if (!explicit_path.empty()) return access(explicit_path.c_str(), X_OK) == 0 ? explicit_path : "";
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path sibling = self.parent_path() / "commgate-probe";
    if (access(sibling.c_str(), X_OK) == 0) return sibling.string();
  }
  return find_on_path("commgate-probe");
}

ProbeResult run_local_probe(const ModelSpec& model, const LocalProbeOptions& options) {
  std::string probe = find_probe_binary(options.probe_path);
  if (probe.empty()) {
    throw std::runtime_error("no measurement given and commgate-probe was not found (looked " +
                             (options.probe_path.empty()
                                  ? std::string("next to commgate and on $PATH")
                                  : "at " + options.probe_path) +
                             "); build it with `make build`, or pass --measurement FILE");
  }
  // A job with stepTimeHintMs whose model would not fit here needs no compute step: the
  // probe would only refuse it (core/probe_memory.h). Without the hint it is asked, and
  // its refusal says what the model needs and to give the hint.
  const bool fits_here = [&] {
    if (!model.torch_script.empty()) return true;
    const auto available = memory_available();
    return !available ||
           memory_refusal(
               estimate_probe_memory(model.parameters, model.batch_size, model.optimizer),
               model.parameters, model.optimizer, *available, options.ranks)
               .empty();
  }();
  const bool measure_compute =
      model.parameters <= options.max_compute_parameters && (fits_here || !model.step_time_hint_ms);
  // The probe's all-reduce data is fp32 and its synthetic model trains in fp32 on CPU,
  // so its compute step matches fp32-gradient jobs; others need stepTimeHintMs.
  std::vector<std::string> argv = {
      probe,
      "--local-ranks",
      std::to_string(options.ranks),
      "--timeout",
      std::to_string(options.timeout_seconds),
      "--batch-size",
      std::to_string(model.batch_size),
      "--termination-log",
      "",
      "--quiet",
      "--max-bytes",
      std::to_string(static_cast<long long>(std::min(model.gradient_bytes(), 64.0 * 1048576)))};
  if (measure_compute) {
    // The optimizer's step is part of the compute step the probe times.
    argv.insert(argv.end(),
                {"--params", std::to_string(static_cast<long long>(model.parameters)),
                 "--optimizer", model.optimizer, "--gradient-dtype", model.gradient_dtype});
  } else {
    argv.push_back("--no-compute");
  }
  const Captured run = run_capture(argv);
  const std::string& out = run.out;
  const int rc = run.code;
  // Its stderr's end: what a failure says last.
  const std::string err = run.err.size() > 2000 ? run.err.substr(run.err.size() - 2000) : run.err;
  if (rc != 0) {
    // Rank 0's result names the failed stage (with --quiet it is not on stderr).
    std::string stage_error;
    if (const auto doc = nlohmann::json::parse(out, nullptr, false);
        doc.is_object() && doc.contains("error") && doc["error"].is_object()) {
      stage_error = "stage " + doc["error"].value("stage", std::string("?")) + ": " +
                    doc["error"].value("message", std::string()) + "\n";
    }
    throw std::runtime_error("commgate-probe failed (exit " + std::to_string(rc) + "):\n" +
                             stage_error + err);
  }
  try {
    return parse_probe_result(nlohmann::json::parse(out));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("commgate-probe printed an unreadable result: ") +
                             e.what());
  }
}

}  // namespace commgate
