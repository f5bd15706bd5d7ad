#include "operator/probe_history.h"

namespace commgate::op {
namespace {

using nlohmann::json;

std::string string_member(const json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

std::optional<TimePoint> time_member(const json& o, const char* key) {
  const std::string text = string_member(o, key);
  return text.empty() ? std::nullopt : parse_rfc3339(text);
}

}  // namespace

ProbeHistory probe_history_of(const json& profile) {
  ProbeHistory h;
  if (!profile.is_object()) return h;
  const auto status = profile.find("status");
  if (status == profile.end() || !status->is_object()) return h;
  const auto probe = status->find("probe");
  if (probe == status->end() || !probe->is_object()) return h;
  if (const auto n = probe->find("failedAttempts"); n != probe->end() && n->is_number_integer() &&
                                                    n->get<int64_t>() > 0 &&
                                                    n->get<int64_t>() < 1'000'000)
    h.failed_attempts = n->get<int>();
  h.next_probe_time = time_member(*probe, "nextProbeTime");
  h.last_probe_uid = string_member(*probe, "lastProbeUID");
  if (const auto f = probe->find("lastFailure"); f != probe->end() && f->is_object()) {
    h.last_failure_reason = string_member(*f, "reason");
    h.last_failure_message = string_member(*f, "message");
    h.last_failure_time = time_member(*f, "time");
  }
  return h;
}

json to_json(const ProbeHistory& h) {
  json out = json::object();
  if (h.failed_attempts > 0) out["failedAttempts"] = h.failed_attempts;
  if (h.next_probe_time) out["nextProbeTime"] = format_rfc3339(*h.next_probe_time);
  if (!h.last_probe_uid.empty()) out["lastProbeUID"] = h.last_probe_uid;
  if (!h.last_failure_reason.empty() || h.last_failure_time) {
    json f = {{"reason", h.last_failure_reason}, {"message", h.last_failure_message}};
    if (h.last_failure_time) f["time"] = format_rfc3339(*h.last_failure_time);
    out["lastFailure"] = std::move(f);
  }
  return out;
}

}  // namespace commgate::op
