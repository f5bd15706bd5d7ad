// Events (events.k8s.io/v1) for `kubectl describe`, aggregated as client-go's recorders
// do, so a reconcile loop that hits the same problem every second cannot flood the API
// server or the object's event list:
//
// - Series: the same type, reason, action, note and regarding object within
//   `series_window` of the last occurrence is one Event whose `series.count` and
//   `series.lastObservedTime` are patched, not a new object (client-go tools/events'
//   isomorphic events).
// - Spam filter: a token bucket per regarding object (client-go's
//   EventSourceObjectSpamFilter: burst 25, one token per 5 minutes) gates the API writes.
//   An occurrence without a token is still counted, so the next write carries the true
//   count.
//
// record() writes on the caller's thread (client-go queues to a goroutine); it is
// thread-safe. Shortcut: no `related` object, and series entries are forgotten once their
// window has passed (checked on each record()).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "core/log.h"
#include "kube/clock.h"

namespace commgate::kube {

// The two writes the recorder makes. Production: POST and merge-PATCH on
// /apis/events.k8s.io/v1/namespaces/NS/events[/NAME]. Return false on any failure.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual bool create(const nlohmann::json& event) = 0;
  virtual bool patch(const std::string& ns, const std::string& name,
                     const nlohmann::json& merge_patch) = 0;
};

struct ObjectRef {
  std::string api_version;
  std::string kind;
  std::string ns;
  std::string name;
  std::string uid;
};

struct EventRecorderOptions {
  std::string reporting_controller = "commgate.io/operator";
  std::string reporting_instance;  // the replica (pod name)
  Clock::duration series_window = std::chrono::minutes(6);
  int burst = 25;                                          // writes per object at once
  Clock::duration refill_every = std::chrono::minutes(5);  // one more write per object
  std::shared_ptr<Clock> clock = steady_clock();
  // Only for eventTime and series.lastObservedTime.
  std::function<std::chrono::system_clock::time_point()> wall_clock = [] {
    return std::chrono::system_clock::now();
  };
  Logger log;
};

class EventRecorder {
 public:
  enum class Outcome {
    kCreated,        // a new Event
    kSeriesUpdated,  // series.count of an existing Event patched
    kThrottled,      // counted, not written: the object's token bucket is empty
    kFailed,         // the sink failed (logged)
  };

  EventRecorder(std::shared_ptr<EventSink> sink, EventRecorderOptions options);

  // type: "Normal" or "Warning".
  Outcome record(const ObjectRef& regarding, const std::string& type, const std::string& reason,
                 const std::string& action, const std::string& note);

  // The series and token buckets held: those past their window (or refilled) are let go
  // at most one sweep interval (a sixth of series_window) after they expire.
  std::size_t tracked();

 private:
  struct Series {
    std::string ns, name;  // the Event written
    int64_t count = 0;     // occurrences, written or not
    bool written = false;  // the Event exists
    Clock::time_point last{};
  };
  struct Bucket {
    double tokens = 0;
    Clock::time_point refilled{};
  };

  bool take_token(const std::string& object, Clock::time_point now);
  void forget_old(Clock::time_point now);
  nlohmann::json new_event(const ObjectRef& regarding, const std::string& type,
                           const std::string& reason, const std::string& action,
                           const std::string& note, const std::string& name) const;

  std::shared_ptr<EventSink> sink_;
  EventRecorderOptions options_;
  std::mutex mu_;  // held across the sink's calls: records of one recorder are serial
  std::map<std::string, Series> series_;   // by the aggregation key
  std::map<std::string, Bucket> buckets_;  // by regarding object
  uint64_t sequence_ = 0;                  // makes Event names unique
  Clock::time_point swept_{};              // the last forget_old pass
};
const char* to_string(EventRecorder::Outcome outcome);

}  // namespace commgate::kube
