// The event recorder (kube/event_recorder.h) against an in-memory EventSink on the fake
// clock: repeats aggregate into a series, each object has its own token bucket.
#include "kube/event_recorder.h"

#include <gtest/gtest.h>

namespace commgate::kube {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using std::chrono::minutes;
using std::chrono::seconds;

// Stores Events by namespace/name and applies merge patches to them.
class FakeEventSink : public EventSink {
 public:
  bool create(const json& event) override {
    if (fail) return false;
    const std::string key = event["metadata"]["namespace"].get<std::string>() + "/" +
                            event["metadata"]["name"].get<std::string>();
    if (events.count(key)) return false;  // AlreadyExists
    events[key] = event;
    ++writes;
    return true;
  }
  bool patch(const std::string& ns, const std::string& name, const json& merge_patch) override {
    if (fail) return false;
    const auto it = events.find(ns + "/" + name);
    if (it == events.end()) return false;
    it->second.merge_patch(merge_patch);
    ++writes;
    return true;
  }

  bool fail = false;
  int writes = 0;
  std::map<std::string, json> events;
};

const ObjectRef kJob{"commgate.io/v1alpha1", "TrainingJob", "ml", "bert", "uid-1"};
const ObjectRef kOtherJob{"commgate.io/v1alpha1", "TrainingJob", "ml", "gpt", "uid-2"};

struct Fixture {
  Fixture() : clock(std::make_shared<FakeClock>()), sink(std::make_shared<FakeEventSink>()) {
    EventRecorderOptions o;
    o.reporting_instance = "operator-0";
    o.clock = clock;
    o.wall_clock = [c = clock.get()] {
      return std::chrono::system_clock::time_point(seconds(1'790'000'000)) +
             std::chrono::duration_cast<std::chrono::system_clock::duration>(
                 c->now().time_since_epoch());
    };
    o.log = Logger([](const LogRecord&) {}, LogLevel::kError);
    recorder = std::make_unique<EventRecorder>(sink, o);
  }
  EventRecorder::Outcome record(const ObjectRef& o, const std::string& note,
                                const std::string& reason = "ProbeFailed") {
    return recorder->record(o, "Warning", reason, "Probe", note);
  }
  std::shared_ptr<FakeClock> clock;
  std::shared_ptr<FakeEventSink> sink;
  std::unique_ptr<EventRecorder> recorder;
};

using Outcome = EventRecorder::Outcome;

struct Step {
  Clock::duration after;  // time since the previous step
  ObjectRef object;
  std::string note;
  Outcome want;
};
struct AggregationCase {
  std::string name;
  std::vector<Step> steps;
  size_t want_events;
  int64_t want_largest_count;  // 1: no event has a series
};

TEST(EventRecorder, AggregatesRepeatsIntoOneEventWithASeries) {
  const std::vector<AggregationCase> cases = {
      {"repeats_within_the_window_are_one_event_with_a_series",
       {{{}, kJob, "pod 0 unschedulable", Outcome::kCreated},
        {minutes(1), kJob, "pod 0 unschedulable", Outcome::kSeriesUpdated},
        {minutes(1), kJob, "pod 0 unschedulable", Outcome::kSeriesUpdated}},
       1,
       3},
      {"the_window_runs_from_the_last_occurrence",
       {{{}, kJob, "n", Outcome::kCreated},
        {minutes(5), kJob, "n", Outcome::kSeriesUpdated},
        {minutes(5), kJob, "n", Outcome::kSeriesUpdated},
        {minutes(5), kJob, "n", Outcome::kSeriesUpdated}},
       1,
       4},
      {"a_repeat_after_the_window_is_a_new_event",
       {{{}, kJob, "n", Outcome::kCreated}, {minutes(6), kJob, "n", Outcome::kCreated}},
       2,
       1},
      {"a_repeat_after_the_window_is_new_also_when_no_sweep_ran_since",
       {{{}, kJob, "n", Outcome::kCreated},
        {seconds(330), kOtherJob, "m", Outcome::kCreated},  // sweeps: n is 5.5 min old
        {seconds(30), kJob, "n", Outcome::kCreated}},       // 30 s later: no sweep
       3,
       1},
      {"a_different_note_is_a_different_event",
       {{{}, kJob, "4 nodes", Outcome::kCreated}, {seconds(1), kJob, "3 nodes", Outcome::kCreated}},
       2,
       1},
      {"another_object_is_a_different_event",
       {{{}, kJob, "n", Outcome::kCreated}, {seconds(1), kOtherJob, "n", Outcome::kCreated}},
       2,
       1},
  };
  for (const AggregationCase& c : cases) {
    SCOPED_TRACE(c.name);
    Fixture f;
    for (size_t i = 0; i < c.steps.size(); ++i) {
      f.clock->advance(c.steps[i].after);
      EXPECT_EQ(to_string(f.record(c.steps[i].object, c.steps[i].note)),
                std::string(to_string(c.steps[i].want)))
          << "step " << i;
    }
    EXPECT_EQ(f.sink->events.size(), c.want_events);
    int64_t largest = 1;
    for (const auto& [key, event] : f.sink->events) {
      if (event.contains("series"))
        largest = std::max(largest, event["series"]["count"].get<int64_t>());
    }
    EXPECT_EQ(largest, c.want_largest_count);
  }
}

// What the recorder holds follows the events of the last window, not every object it ever
// saw: one series and one bucket per object until they expire.
TEST(EventRecorder, LetsGoOfSeriesAndBucketsOnceTheyExpire) {
  Fixture f;
  for (const ObjectRef& o : {kJob, kOtherJob}) f.record(o, "n");
  EXPECT_EQ(f.recorder->tracked(), 4u);
  f.clock->advance(minutes(5) + seconds(59));
  EXPECT_EQ(f.recorder->tracked(), 2u) << "the buckets refilled; the series are in their window";
  f.clock->advance(seconds(1));
  EXPECT_EQ(f.recorder->tracked(), 2u) << "past the window, but no sweep is due yet";
  f.clock->advance(minutes(1));
  EXPECT_EQ(f.recorder->tracked(), 0u);
}

TEST(EventRecorder, ALoopCannotFloodTheApiServerButTheCountStaysTrue) {
  Fixture f;
  int throttled = 0;
  for (int i = 0; i < 100; ++i) throttled += f.record(kJob, "again") == Outcome::kThrottled;
  EXPECT_EQ(f.sink->writes, 25) << "the burst";
  EXPECT_EQ(throttled, 75);
  EXPECT_EQ(f.record(kOtherJob, "again"), Outcome::kCreated) << "buckets are per object";

  f.clock->advance(minutes(5));  // one token back, still within the series window
  EXPECT_EQ(f.record(kJob, "again"), Outcome::kSeriesUpdated);
  ASSERT_EQ(f.sink->events.size(), 2u);
  for (const auto& [key, event] : f.sink->events) {
    if (event["regarding"]["name"] == "bert") {
      EXPECT_EQ(event["series"]["count"], 101) << "throttled repeats were counted";
      EXPECT_EQ(event["series"]["lastObservedTime"], "2026-09-21T14:18:20.000000Z");
    }
  }
  EXPECT_EQ(f.record(kJob, "again"), Outcome::kThrottled);
}

TEST(EventRecorder, AFailedCreateIsRetriedByTheNextOccurrence) {
  Fixture f;
  f.sink->fail = true;
  EXPECT_EQ(f.record(kJob, "n"), Outcome::kFailed);
  f.sink->fail = false;
  EXPECT_EQ(f.record(kJob, "n"), Outcome::kCreated);
  ASSERT_EQ(f.sink->events.size(), 1u);
  EXPECT_EQ(f.sink->events.begin()->second["series"]["count"], 2);
}

TEST(EventRecorder, WritesAnEventsV1EventAboutTheObject) {
  Fixture f;
  const ObjectRef node{"v1", "Node", "", "gpu-1", ""};
  ASSERT_EQ(f.recorder->record(node, "Normal", "Probed", "Probe", std::string(2000, 'x')),
            Outcome::kCreated);
  ASSERT_EQ(f.sink->events.size(), 1u);
  const json& event = f.sink->events.begin()->second;
  EXPECT_EQ(event["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(event["metadata"]["namespace"], "default") << "cluster-scoped object";
  EXPECT_EQ(event["metadata"]["name"].get<std::string>().rfind("gpu-1.", 0), 0u);
  EXPECT_EQ(event["eventTime"], "2026-09-21T14:13:20.000000Z");
  EXPECT_EQ(event["reportingController"], "commgate.io/operator");
  EXPECT_EQ(event["reportingInstance"], "operator-0");
  EXPECT_EQ(event["type"], "Normal");
  EXPECT_EQ(event["reason"], "Probed");
  EXPECT_EQ(event["action"], "Probe");
  EXPECT_EQ(event["note"].get<std::string>().size(), 1024u) << "the API's limit";
  EXPECT_EQ(event["regarding"], (json{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "gpu-1"}}));
  EXPECT_FALSE(event.contains("series"));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::kube
