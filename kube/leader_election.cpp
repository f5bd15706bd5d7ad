#include "kube/leader_election.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace commgate::kube {
namespace {

using nlohmann::json;
using std::chrono::seconds;

int64_t whole_seconds(Clock::duration d) {
  return std::chrono::duration_cast<seconds>(d).count();
}

// The holder a Lease spec names; nullopt when the field is there but not a string.
std::optional<std::string> holder_of(const json& spec) {
  const auto it = spec.find("holderIdentity");
  if (it == spec.end() || it->is_null()) return std::string();
  if (!it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

int64_t int_field(const json& spec, const char* key) {
  const auto it = spec.find(key);
  return it != spec.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

json spec_of(const json& lease) {
  const auto it = lease.find("spec");
  return it != lease.end() && it->is_object() ? *it : json::object();
}

}  // namespace

const char* to_string(LeaseClient::Outcome outcome) {
  switch (outcome) {
    case LeaseClient::Outcome::kOk:
      return "ok";
    case LeaseClient::Outcome::kNotFound:
      return "not found";
    case LeaseClient::Outcome::kConflict:
      return "conflict";
    case LeaseClient::Outcome::kError:
      return "error";
  }
  return "unknown";
}

void validate(const LeaderElectionOptions& o) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("leader election: " + what);
  };
  if (o.lease_namespace.empty()) fail("lease_namespace is empty");
  if (o.lease_name.empty()) fail("lease_name is empty");
  if (o.identity.empty()) fail("identity is empty");
  if (o.retry_period <= Clock::duration::zero()) fail("retry_period must be positive");
  if (o.renew_deadline <= o.retry_period) fail("renew_deadline must exceed retry_period");
  if (o.lease_duration <= o.renew_deadline) fail("lease_duration must exceed renew_deadline");
  if (o.lease_duration != seconds(whole_seconds(o.lease_duration))) {
    fail("lease_duration must be a whole number of seconds (spec.leaseDurationSeconds)");
  }
  if (!o.clock) fail("clock is null");
}

std::string format_micro_time(std::chrono::system_clock::time_point t) {
  const auto secs = std::chrono::floor<seconds>(t);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
  const std::time_t tt = std::chrono::system_clock::to_time_t(secs);
  std::tm utc{};
  gmtime_r(&tt, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &utc);
  char fraction[8];  // ".123456": micros is in [0, 999999]
  std::snprintf(fraction, sizeof fraction, ".%06d", static_cast<int>(micros));
  return std::string(date) + fraction + "Z";
}

LeaderElector::LeaderElector(std::shared_ptr<LeaseClient> client, LeaderElectionOptions options)
    : client_(std::move(client)), options_(std::move(options)) {
  validate(options_);
  if (!client_) throw std::invalid_argument("leader election: client is null");
  next_attempt_ = Clock::time_point::min();
}

void LeaderElector::run() {
  for (;;) {
    const Clock::time_point next = step();
    std::unique_lock lock(mu_);
    if (stopping_) break;
    options_.clock->wait_until(lock, cv_, next, [this] { return stopping_; });
    if (stopping_) break;
  }
  if (options_.release_on_stop) {
    release();
  } else {
    stop_leading("stopped");
  }
}

void LeaderElector::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

Clock::time_point LeaderElector::step() {
  const Clock::time_point now = options_.clock->now();
  bool leading, attempt_due;
  Clock::time_point renew_by;
  {
    std::lock_guard lock(mu_);
    leading = leading_;
    renew_by = last_renew_ + options_.renew_deadline;
    attempt_due = now >= next_attempt_;
  }
  if (leading && now >= renew_by) {
    stop_leading("renew deadline passed");
    leading = false;
  }
  if (attempt_due) {
    const bool ok = try_acquire_or_renew();
    std::string holder;
    {
      std::lock_guard lock(mu_);
      next_attempt_ = now + options_.retry_period;
      if (ok) last_renew_ = now;  // the request's start: the Lease is at least this fresh
      renew_by = last_renew_ + options_.renew_deadline;
      holder = observed_holder_;
    }
    if (ok && !leading) start_leading();
    if (!ok && leading && !holder.empty() && holder != options_.identity) {
      stop_leading("another replica holds the lease");
    }
  }
  std::lock_guard lock(mu_);
  return leading_ ? std::min(next_attempt_, renew_by) : next_attempt_;
}

bool LeaderElector::try_acquire_or_renew() {
  const auto& o = options_;
  const LeaseClient::Reply got = client_->get(o.lease_namespace, o.lease_name);
  // When the reply came, not when the request went (client-go's observedTime): a read that
  // stalled (a 429 with Retry-After, retried) judged the record by its start, and the next
  // round, reading the same record, found it a lease old and took it from a healthy leader
  // (issue #19 item 9).
  const Clock::time_point now = o.clock->now();
  if (got.outcome == LeaseClient::Outcome::kNotFound) {
    const LeaseClient::Reply created = client_->create(desired_lease(
        json{{"apiVersion", "coordination.k8s.io/v1"},
             {"kind", "Lease"},
             {"metadata", {{"name", o.lease_name}, {"namespace", o.lease_namespace}}}},
        false));
    if (created.outcome != LeaseClient::Outcome::kOk) {
      o.log.warning("could not create the lease", {{"lease", o.lease_name},
                                                   {"outcome", to_string(created.outcome)},
                                                   {"error", created.message}});
      return false;
    }
    observe(spec_of(created.object), o.clock->now());
    return true;
  }
  if (got.outcome != LeaseClient::Outcome::kOk) {
    o.log.warning(
        "could not read the lease",
        {{"lease", o.lease_name}, {"outcome", to_string(got.outcome)}, {"error", got.message}});
    return false;
  }
  const json spec = spec_of(got.object);
  const std::optional<std::string> holder = holder_of(spec);
  if (!holder) {
    o.log.warning("lease spec.holderIdentity is not a string", {{"lease", o.lease_name}});
    return false;
  }
  observe(spec, now);
  if (!holder->empty() && *holder != o.identity) {
    const int64_t lease_seconds = int_field(spec, "leaseDurationSeconds");
    const Clock::duration lease =
        lease_seconds > 0 ? Clock::duration(seconds(lease_seconds)) : o.lease_duration;
    std::lock_guard lock(mu_);
    if (now < observed_time_ + lease) return false;  // a live holder, by our own clock
  }
  const LeaseClient::Reply updated =
      client_->update(desired_lease(got.object, *holder == o.identity));
  if (updated.outcome != LeaseClient::Outcome::kOk) {
    o.log.warning("could not update the lease", {{"lease", o.lease_name},
                                                 {"outcome", to_string(updated.outcome)},
                                                 {"error", updated.message}});
    return false;
  }
  observe(spec_of(updated.object), o.clock->now());
  return true;
}

// client-go's observedRecord/observedTime: the time is when *we* first saw this record.
void LeaderElector::observe(const json& spec, Clock::time_point now) {
  const std::string holder = holder_of(spec).value_or("");
  bool holder_changed;
  {
    std::lock_guard lock(mu_);
    if (spec == observed_spec_) return;
    observed_spec_ = spec;
    observed_time_ = now;
    holder_changed = holder != observed_holder_;
    observed_holder_ = holder;
  }
  if (holder_changed) options_.on_new_leader(holder);
}

json LeaderElector::desired_lease(const json& current, bool renewing) const {
  json lease = current;
  json spec = spec_of(current);
  const std::string now = format_micro_time(options_.wall_clock());
  if (!renewing) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] =
        current.contains("spec") ? int_field(spec, "leaseTransitions") + 1 : 0;
  }
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = whole_seconds(options_.lease_duration);
  spec["renewTime"] = now;
  lease["spec"] = spec;
  return lease;
}

bool LeaderElector::release() {
  const auto& o = options_;
  stop_leading("releasing the lease");
  const LeaseClient::Reply got = client_->get(o.lease_namespace, o.lease_name);
  if (got.outcome != LeaseClient::Outcome::kOk) return false;
  if (holder_of(spec_of(got.object)) != o.identity) return false;  // not ours to release
  json lease = got.object;
  const std::string now = format_micro_time(o.wall_clock());
  // As client-go: no holder, a one-second lease, the transitions count kept.
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["acquireTime"] = now;
  lease["spec"]["renewTime"] = now;
  const LeaseClient::Reply updated = client_->update(lease);
  if (updated.outcome != LeaseClient::Outcome::kOk) {
    o.log.warning("could not release the lease", {{"lease", o.lease_name},
                                                  {"outcome", to_string(updated.outcome)},
                                                  {"error", updated.message}});
    return false;
  }
  observe(spec_of(updated.object), o.clock->now());
  o.log.info("released the lease", {{"lease", o.lease_name}, {"identity", o.identity}});
  return true;
}

bool LeaderElector::is_leader() const {
  const Clock::time_point now = options_.clock->now();
  std::lock_guard lock(mu_);
  return leading_ && now < last_renew_ + options_.renew_deadline;
}

std::string LeaderElector::observed_leader() const {
  std::lock_guard lock(mu_);
  return observed_holder_;
}

void LeaderElector::start_leading() {
  {
    std::lock_guard lock(mu_);
    if (leading_) return;
    leading_ = true;
  }
  options_.log.info("started leading",
                    {{"lease", options_.lease_name}, {"identity", options_.identity}});
  options_.on_started_leading();
}

void LeaderElector::stop_leading(const char* why) {
  {
    std::lock_guard lock(mu_);
    if (!leading_) return;
    leading_ = false;
  }
  options_.log.warning(
      "stopped leading",
      {{"lease", options_.lease_name}, {"identity", options_.identity}, {"reason", why}});
  options_.on_stopped_leading();
}

}  // namespace commgate::kube
