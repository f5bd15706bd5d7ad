#include "sim/event_views.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

namespace commgate::sim {

using nlohmann::json;

namespace {

std::pair<std::string, std::string> key_of(const json& obj) {
  const json& meta = obj.contains("metadata") ? obj["metadata"] : json::object();
  return {meta.value("namespace", ""), meta.value("name", "")};
}

}  // namespace

json core_event_from_events_v1(const json& event) {
  json out = {{"kind", "Event"}, {"apiVersion", "v1"}};
  // Same names in both versions.
  for (const char* key : {"metadata", "eventTime", "series", "related", "action", "reason", "type",
                          "reportingInstance"})
    if (event.contains(key)) out[key] = event[key];
  // Renamed (upstream's Convert_v1_Event_To_core_Event).
  const std::pair<const char*, const char*> renamed[] = {
      {"regarding", "involvedObject"},
      {"note", "message"},
      {"reportingController", "reportingComponent"},
      {"deprecatedSource", "source"},
      {"deprecatedFirstTimestamp", "firstTimestamp"},
      {"deprecatedLastTimestamp", "lastTimestamp"},
      {"deprecatedCount", "count"}};
  for (const auto& [from, to] : renamed)
    if (event.contains(from)) out[to] = event[from];
  // Non-pointer fields the core/v1 JSON always carries.
  if (!out.contains("involvedObject")) out["involvedObject"] = json::object();
  if (!out.contains("source")) out["source"] = json::object();
  if (!out.contains("firstTimestamp")) out["firstTimestamp"] = nullptr;
  if (!out.contains("lastTimestamp")) out["lastTimestamp"] = nullptr;
  if (!out.contains("eventTime")) out["eventTime"] = nullptr;
  if (!out.contains("reportingComponent")) out["reportingComponent"] = "";
  if (!out.contains("reportingInstance")) out["reportingInstance"] = "";
  return out;
}

std::vector<json> core_events_view(std::vector<json> core, const std::vector<json>& events_v1,
                                   const LabelSelectorQuery& labels,
                                   const FieldSelectorQuery& fields) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& e : core) seen.insert(key_of(e));
  for (const auto& e : events_v1) {
    json converted = core_event_from_events_v1(e);
    if (seen.count(key_of(converted)) > 0) continue;
    if (!labels.matches(converted) || !fields.matches(converted)) continue;
    core.push_back(std::move(converted));
  }
  std::stable_sort(core.begin(), core.end(),
                   [](const json& a, const json& b) { return key_of(a) < key_of(b); });
  return core;
}

}  // namespace commgate::sim
