#include "operator/state_metrics.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "core/prometheus_text.h"
#include "operator/trainingjob_phases.h"

namespace commgate::op {

using nlohmann::json;

namespace {

constexpr const char* kNoPhaseYet = "Pending";

void gauge_family(std::string& out, const std::string& name, std::string_view help) {
  out += "# HELP " + name + " " + prometheus_escape_help(help) + "\n";
  out += "# TYPE " + name + " gauge\n";
}

void labelled_sample(std::string& out, const std::string& name, const std::string& label,
                     const std::string& value, double v) {
  out += name + "{" + label + "=\"" + prometheus_escape_label(value) + "\"} " +
         prometheus_number(v) + "\n";
}

}  // namespace

std::string state_metrics_text(const std::vector<std::shared_ptr<const json>>& trainingjobs,
                               TimePoint now, std::string_view prefix) {
  const std::string p(prefix);
  std::map<std::string, double> by_phase;
  for (const char* phase :
       {kNoPhaseYet, phase::kGated, phase::kProbing, phase::kAdmitted, phase::kDownsized,
        phase::kRejected, phase::kRunning, phase::kSucceeded, phase::kFailed})
    by_phase[phase] = 0;
  double oldest_wait_s = 0;
  for (const auto& object : trainingjobs) {
    if (!object || !object->is_object()) continue;
    const json& status = object->value("status", json::object());
    std::string phase = status.is_object() ? status.value("phase", "") : "";
    if (phase.empty()) phase = kNoPhaseYet;
    by_phase[phase] += 1;  // a phase this version does not know is counted under its name
    if (phase != phase::kGated && phase != phase::kProbing) continue;
    const json& meta = object->value("metadata", json::object());
    const auto created = parse_rfc3339(meta.is_object() ? meta.value("creationTimestamp", "") : "");
    if (created)
      oldest_wait_s =
          std::max(oldest_wait_s, std::chrono::duration<double>(now - *created).count());
  }
  std::string out;
  gauge_family(out, p + "_trainingjobs", "TrainingJobs in the operator's cache, by status.phase.");
  for (const auto& [phase, n] : by_phase)
    labelled_sample(out, p + "_trainingjobs", "phase", phase, n);
  append_prometheus_sample(out, p + "_gated_job_oldest_wait_seconds", "gauge",
                           "Seconds since the oldest Gated or Probing TrainingJob was created "
                           "(0 when none waits).",
                           oldest_wait_s);
  return out;
}

}  // namespace commgate::op
