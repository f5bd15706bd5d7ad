// events.k8s.io/v1 Events in core/v1 lists (sim/event_views.h), so kubectl describe shows
// what a controller records with the new API.
#include "sim/event_views.h"

#include <gtest/gtest.h>

namespace commgate::sim {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

json new_style_event(const std::string& name, const std::string& regarding_name) {
  return {{"apiVersion", "events.k8s.io/v1"},
          {"kind", "Event"},
          {"metadata", {{"name", name}, {"namespace", "nlp"}, {"labels", {{"team", "nlp"}}}}},
          {"eventTime", "2026-12-02T01:00:00.000000Z"},
          {"series", {{"count", 3}, {"lastObservedTime", "2026-12-02T01:05:00.000000Z"}}},
          {"reportingController", "commgate.io/operator"},
          {"reportingInstance", "commgate-operator-0"},
          {"action", "Decide"},
          {"reason", "Downsized"},
          {"type", "Normal"},
          {"note", "4 -> 2 nodes: predicted comm share 41% > 30%"},
          {"regarding",
           {{"apiVersion", "commgate.io/v1alpha1"},
            {"kind", "TrainingJob"},
            {"namespace", "nlp"},
            {"name", regarding_name},
            {"uid", "u-1"}}},
          {"deprecatedCount", 0}};
}

TEST(CoreEventFromEventsV1, renames_fields_as_upstreams_conversion) {
  const json core = core_event_from_events_v1(new_style_event("e1", "bert"));
  EXPECT_EQ(core["apiVersion"], "v1");
  EXPECT_EQ(core["kind"], "Event");
  EXPECT_EQ(core["involvedObject"]["name"], "bert");
  EXPECT_EQ(core["involvedObject"]["kind"], "TrainingJob");
  EXPECT_EQ(core["message"], "4 -> 2 nodes: predicted comm share 41% > 30%");
  EXPECT_EQ(core["reportingComponent"], "commgate.io/operator");
  EXPECT_EQ(core["reportingInstance"], "commgate-operator-0");
  EXPECT_EQ(core["reason"], "Downsized");
  EXPECT_EQ(core["type"], "Normal");
  EXPECT_EQ(core["action"], "Decide");
  EXPECT_EQ(core["eventTime"], "2026-12-02T01:00:00.000000Z");
  EXPECT_EQ(core["series"]["count"], 3);
  EXPECT_EQ(core["count"], 0);
  EXPECT_EQ(core["source"], json::object());
  EXPECT_TRUE(core["firstTimestamp"].is_null());
  EXPECT_EQ(core["metadata"]["name"], "e1");
  EXPECT_FALSE(core.contains("note"));
  EXPECT_FALSE(core.contains("regarding"));
}

TEST(CoreEventsView, adds_matching_new_style_events_in_store_order) {
  const json old_style = {{"metadata", {{"name", "e2"}, {"namespace", "nlp"}}},
                          {"involvedObject", {{"kind", "TrainingJob"}, {"name", "bert"}}},
                          {"message", "old"}};
  const std::vector<json> v1 = {new_style_event("e3", "bert"), new_style_event("e1", "bert"),
                                new_style_event("e4", "gpt"),
                                new_style_event("e2", "bert")};  // same key as a core one
  const auto fields = FieldSelectorQuery::parse(
      "involvedObject.kind=TrainingJob,involvedObject.name=bert,involvedObject.namespace=nlp");
  const auto view = core_events_view({old_style}, v1, LabelSelectorQuery::parse(""), fields);
  ASSERT_EQ(view.size(), 3u);
  EXPECT_EQ(view[0]["metadata"]["name"], "e1");
  EXPECT_EQ(view[1]["metadata"]["name"], "e2");
  EXPECT_EQ(view[1]["message"], "old");  // the core/v1 one, listed once
  EXPECT_EQ(view[2]["metadata"]["name"], "e3");

  EXPECT_EQ(core_events_view({}, v1, LabelSelectorQuery::parse("team=vision"),
                             FieldSelectorQuery::parse(""))
                .size(),
            0u);
}

}  // namespace
}  // namespace commgate::sim
