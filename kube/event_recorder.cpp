#include "kube/event_recorder.h"

#include <algorithm>
#include <cstdio>

#include "kube/leader_election.h"  // format_micro_time

namespace commgate::kube {
namespace {

using nlohmann::json;

constexpr size_t kMaxNote = 1024;  // events.k8s.io/v1 rejects a longer note

std::string object_key(const ObjectRef& o) {
  return o.api_version + "/" + o.kind + "/" + o.ns + "/" + o.name + "/" + o.uid;
}

}  // namespace

const char* to_string(EventRecorder::Outcome outcome) {
  switch (outcome) {
    case EventRecorder::Outcome::kCreated:
      return "created";
    case EventRecorder::Outcome::kSeriesUpdated:
      return "series updated";
    case EventRecorder::Outcome::kThrottled:
      return "throttled";
    case EventRecorder::Outcome::kFailed:
      return "failed";
  }
  return "unknown";
}

EventRecorder::EventRecorder(std::shared_ptr<EventSink> sink, EventRecorderOptions options)
    : sink_(std::move(sink)), options_(std::move(options)) {}

EventRecorder::Outcome EventRecorder::record(const ObjectRef& regarding, const std::string& type,
                                             const std::string& reason, const std::string& action,
                                             const std::string& note) {
  std::lock_guard lock(mu_);
  const Clock::time_point now = options_.clock->now();
  forget_old(now);
  const std::string object = object_key(regarding);
  const std::string key =
      type + '\x1f' + reason + '\x1f' + action + '\x1f' + note + '\x1f' + object;
  // A series past its window starts over, whether or not a sweep has let it go yet.
  if (auto old = series_.find(key);
      old != series_.end() && now - old->second.last >= options_.series_window)
    series_.erase(old);
  auto [it, is_new] = series_.try_emplace(key);
  Series& series = it->second;
  if (is_new) {
    char suffix[40];
    std::snprintf(suffix, sizeof suffix, ".%llx%llx",
                  static_cast<unsigned long long>(options_.wall_clock().time_since_epoch() /
                                                  std::chrono::nanoseconds(1)),
                  static_cast<unsigned long long>(++sequence_));
    series.ns = regarding.ns.empty() ? "default" : regarding.ns;
    series.name = regarding.name + suffix;
  }
  ++series.count;
  series.last = now;
  if (!take_token(object, now)) return Outcome::kThrottled;

  const std::string observed = format_micro_time(options_.wall_clock());
  if (!series.written) {
    json event = new_event(regarding, type, reason, action, note, series.name);
    if (series.count > 1)
      event["series"] = {{"count", series.count}, {"lastObservedTime", observed}};
    if (!sink_->create(event)) {
      options_.log.warning("could not create an event",
                           {{"reason", reason}, {"object", regarding.name}});
      return Outcome::kFailed;
    }
    series.written = true;
    return Outcome::kCreated;
  }
  const json patch = {{"series", {{"count", series.count}, {"lastObservedTime", observed}}}};
  if (!sink_->patch(series.ns, series.name, patch)) {
    options_.log.warning("could not update an event's series",
                         {{"reason", reason}, {"object", regarding.name}});
    return Outcome::kFailed;
  }
  return Outcome::kSeriesUpdated;
}

bool EventRecorder::take_token(const std::string& object, Clock::time_point now) {
  auto [it, is_new] = buckets_.try_emplace(object);
  Bucket& bucket = it->second;
  if (is_new) {
    bucket.tokens = options_.burst;
  } else {
    const double refill = std::chrono::duration<double>(now - bucket.refilled) /
                          std::chrono::duration<double>(options_.refill_every);
    bucket.tokens = std::min<double>(options_.burst, bucket.tokens + refill);
  }
  bucket.refilled = now;
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  return true;
}

// Lets go of the series past their window and of the buckets that have refilled (a
// refilled bucket is as good as a new one). A pass reads every entry, so it runs at most
// once per sixth of the window: a pass per record made recording O(objects), which the
// operator's benchmark showed at 10,000 TrainingJobs (issue #27). record() checks its own
// series' window, so the answer never depends on when the last pass ran.
void EventRecorder::forget_old(Clock::time_point now) {
  if (swept_ != Clock::time_point{} && now - swept_ < options_.series_window / 6) return;
  swept_ = now;
  std::erase_if(series_, [&](const auto& entry) {
    return now - entry.second.last >= options_.series_window;
  });
  std::erase_if(buckets_, [&](const auto& entry) {
    const Bucket& b = entry.second;
    return b.tokens + (now - b.refilled) / options_.refill_every >= options_.burst;
  });
}

std::size_t EventRecorder::tracked() {
  std::lock_guard lock(mu_);
  forget_old(options_.clock->now());
  return series_.size() + buckets_.size();
}

json EventRecorder::new_event(const ObjectRef& regarding, const std::string& type,
                              const std::string& reason, const std::string& action,
                              const std::string& note, const std::string& name) const {
  json ref = {
      {"apiVersion", regarding.api_version}, {"kind", regarding.kind}, {"name", regarding.name}};
  if (!regarding.ns.empty()) ref["namespace"] = regarding.ns;
  if (!regarding.uid.empty()) ref["uid"] = regarding.uid;
  return {{"apiVersion", "events.k8s.io/v1"},
          {"kind", "Event"},
          {"metadata",
           {{"name", name}, {"namespace", regarding.ns.empty() ? "default" : regarding.ns}}},
          {"eventTime", format_micro_time(options_.wall_clock())},
          {"reportingController", options_.reporting_controller},
          {"reportingInstance", options_.reporting_instance},
          {"type", type},
          {"reason", reason},
          {"action", action},
          {"note", note.substr(0, kMaxNote)},
          {"regarding", ref}};
}

}  // namespace commgate::kube
