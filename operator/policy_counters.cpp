#include "operator/policy_counters.h"

#include <exception>
#include <utility>

#include "kube/api_error.h"
#include "kube/retry_on_conflict.h"

namespace commgate::op {

using nlohmann::json;

std::vector<std::string> counters_for(const Decision& d) {
  std::vector<std::string> out;
  switch (d.action) {
    case commgate::Action::kAdmit:
      out.push_back("admitted");
      if (d.reason == reason::kExempt) out.push_back("exempted");
      if (d.reason == reason::kDryRun && d.would_action) {
        out.push_back(*d.would_action == commgate::Action::kDeny ? "dryRunWouldDeny"
                                                                 : "dryRunWouldDownsize");
      }
      break;
    case commgate::Action::kDownsize:
      out.push_back("downsized");
      break;
    case commgate::Action::kDeny:
      out.push_back("denied");
      break;
    case commgate::Action::kWarn:
      out.push_back("warned");
      break;
    case commgate::Action::kGate:
      out.push_back("gated");
      break;
  }
  return out;
}

json with_increments(const json& status, const std::map<std::string, int64_t>& increments,
                     TimePoint now) {
  json out = status.is_object() ? status : json::object();
  json& counts = out["decisionCounts"];
  if (!counts.is_object()) counts = json::object();
  if (!counts.contains("countingSince")) counts["countingSince"] = format_rfc3339(now);
  for (const auto& [name, by] : increments) {
    const json& current = counts.value(name, json(0));
    const int64_t n = current.is_number_integer() ? current.get<int64_t>() : 0;
    counts[name] = n + by;
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

void PolicyCounters::write(const std::string& policy_name, const Pending& pending) {
  const std::string path = policy_path(policy_name);
  try {
    kube::retry_on_conflict(
        [&] {
          json object = read(path);
          object["status"] =
              with_increments(object.value("status", json()), pending.increments, pending.first);
          try {
            own_writes_.remember(path, status_writer_.update_status(path, object),
                                 OwnWrites::Keep::kObject);
          } catch (const kube::ApiError&) {
            own_writes_.forget(path);
            throw;
          }
          return true;
        },
        attempts_);
  } catch (const kube::ApiError& e) {
    if (!e.not_found()) throw;  // deleted since: nothing to count on
  }
}

PolicyCounters::Outcome PolicyCounters::count(const std::string& policy_name,
                                              const Decision& decision, TimePoint now) {
  if (policy_name.empty() || policy_name == kBuiltinPolicyName) return Outcome::kNoPolicyObject;
  Pending one;
  for (const std::string& counter : counters_for(decision)) ++one.increments[counter];
  one.first = now;
  std::lock_guard lock(mu_);
  merge_locked(policy_name, one);
  return Outcome::kQueued;
}

void PolicyCounters::merge_locked(const std::string& policy_name, const Pending& more) {
  Pending& p = pending_[policy_name];
  for (const auto& [counter, by] : more.increments) p.increments[counter] += by;
  if (p.first == TimePoint{} || more.first < p.first) p.first = more.first;
}

std::size_t PolicyCounters::flush() {
  std::lock_guard flushing(flush_mu_);
  std::map<std::string, Pending> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(pending_);
  }
  std::size_t written = 0;
  std::map<std::string, Pending> failed;
  std::exception_ptr first_error;
  for (auto& [name, p] : batch) {
    try {
      write(name, p);
      ++written;
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
      failed.emplace(name, std::move(p));
    }
  }
  if (first_error) {
    // What was not written stays pending, with what was counted since.
    std::lock_guard lock(mu_);
    for (const auto& [name, unwritten] : failed) merge_locked(name, unwritten);
    std::rethrow_exception(first_error);
  }
  return written;
}

std::map<std::string, std::map<std::string, int64_t>> PolicyCounters::pending() const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::map<std::string, int64_t>> out;
  for (const auto& [name, p] : pending_) out[name] = p.increments;
  return out;
}

}  // namespace commgate::op
