#include "operator/policy_counters.h"

#include <utility>

#include "kube/api_error.h"
#include "kube/retry_on_conflict.h"

namespace commgate::op {

using nlohmann::json;

std::vector<std::string> counters_for(const Decision& d) {
  std::vector<std::string> out;
  switch (d.action) {
    case Action::kAdmit:
      out.push_back("admitted");
      if (d.reason == reason::kExempt) out.push_back("exempted");
      if (d.reason == reason::kDryRun && d.would_action) {
        out.push_back(*d.would_action == Action::kDeny ? "dryRunWouldDeny" : "dryRunWouldDownsize");
      }
      break;
    case Action::kDownsize:
      out.push_back("downsized");
      break;
    case Action::kDeny:
      out.push_back("denied");
      break;
    case Action::kWarn:
      out.push_back("warned");
      break;
    case Action::kGate:
      out.push_back("gated");
      break;
  }
  return out;
}

json with_counted(const json& status, const std::vector<std::string>& counters, TimePoint now) {
  json out = status.is_object() ? status : json::object();
  json& counts = out["decisionCounts"];
  if (!counts.is_object()) counts = json::object();
  if (!counts.contains("countingSince")) counts["countingSince"] = format_rfc3339(now);
  for (const std::string& name : counters) {
    const json& current = counts.value(name, json(0));
    const int64_t n = current.is_number_integer() ? current.get<int64_t>() : 0;
    counts[name] = n + 1;
  }
  return out;
}

PolicyCounters::PolicyCounters(const kube::Reader& reader, kube::StatusWriter& status_writer,
                               int attempts)
    : reader_(reader), status_writer_(status_writer), attempts_(attempts < 1 ? 1 : attempts) {}

std::string PolicyCounters::policy_path(const std::string& name) {
  return "/apis/commgate.io/v1alpha1/commpolicies/" + name;
}

json PolicyCounters::read(const std::string& path) {
  json object = reader_.get(path);
  if (auto mine = own_writes_.newer_than(path, object)) return std::move(*mine);
  return object;
}

PolicyCounters::Outcome PolicyCounters::count(const std::string& policy_name,
                                              const Decision& decision, TimePoint now) {
  if (policy_name.empty() || policy_name == kBuiltinPolicyName) return Outcome::kNoPolicyObject;
  const std::vector<std::string> counters = counters_for(decision);
  const std::string path = policy_path(policy_name);
  std::lock_guard lock(mu_);
  try {
    return kube::retry_on_conflict(
        [&] {
          json object = read(path);
          object["status"] = with_counted(object.value("status", json()), counters, now);
          try {
            own_writes_.remember(path, status_writer_.update_status(path, object),
                                 OwnWrites::Keep::kObject);
          } catch (const kube::ApiError&) {
            own_writes_.forget(path);
            throw;
          }
          return Outcome::kCounted;
        },
        attempts_);
  } catch (const kube::ApiError& e) {
    if (e.not_found()) return Outcome::kNoPolicyObject;
    throw;
  }
}

}  // namespace commgate::op
