#include "operator/kueue_should_act.h"

namespace commgate::op::kueue {
namespace {

ActDecision should_act_not(std::string reason) {
  return ActDecision{.act = false, .checks = {}, .reason = std::move(reason)};
}

std::string should_act_why_not(const AdmissionCheckState& entry) {
  switch (entry.state) {
    case CheckState::kRetry:
      return "left until Kueue resets it to Pending";
    case CheckState::kReady:
    case CheckState::kRejected:
      return "already decided";
    case CheckState::kPending:
      break;
  }
  return "";
}

}  // namespace

ActDecision should_act(const Workload& wl, const std::set<std::string>& our_checks) {
  if (wl.conditions.finished) return should_act_not("the workload is finished");
  if (wl.conditions.evicted) return should_act_not("the workload is evicted");
  if (!wl.active) return should_act_not("the workload is not active (spec.active is false)");
  if (!wl.conditions.quota_reserved) return should_act_not("no quota is reserved yet");

  ActDecision out;
  std::string not_pending;
  for (const AdmissionCheckState& entry : wl.admission_checks) {
    if (!our_checks.contains(entry.name)) continue;
    if (entry.state == CheckState::kPending) {
      out.checks.push_back(entry.name);
    } else if (not_pending.empty()) {
      not_pending = "our check " + entry.name + " is " + to_string(entry.state) + ": " +
                    should_act_why_not(entry);
    }
  }
  if (!out.checks.empty()) {
    out.act = true;
    return out;
  }
  if (!not_pending.empty()) return should_act_not(not_pending);
  return should_act_not("none of its admission checks is commgate's");
}

}  // namespace commgate::op::kueue
