#include "sim/api_status.h"

#include <algorithm>

namespace commgate::sim {
namespace {

nlohmann::json details(const ResourceInfo& r, const std::string& name, const std::string& kind) {
  nlohmann::json d = {{"name", name}, {"kind", kind}};
  if (!r.group.empty()) d["group"] = r.group;
  return d;
}

}  // namespace

nlohmann::json failure_status(int code, const std::string& reason, const std::string& message) {
  nlohmann::json s = {
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"code", code}};
  if (!reason.empty()) s["reason"] = reason;
  return s;
}

nlohmann::json success_status(const ResourceInfo& r, const std::string& name,
                              const std::string& uid) {
  nlohmann::json d = details(r, name, r.plural);
  d["uid"] = uid;
  return {{"kind", "Status"},
          {"apiVersion", "v1"},
          {"metadata", nlohmann::json::object()},
          {"status", "Success"},
          {"details", d}};
}

ApiError not_found(const ResourceInfo& r, const std::string& name) {
  auto s = failure_status(404, "NotFound", r.qualified_plural() + " \"" + name + "\" not found");
  s["details"] = details(r, name, r.plural);
  return ApiError(s);
}

ApiError already_exists(const ResourceInfo& r, const std::string& name) {
  auto s = failure_status(409, "AlreadyExists",
                          r.qualified_plural() + " \"" + name + "\" already exists");
  s["details"] = details(r, name, r.plural);
  return ApiError(s);
}

ApiError conflict(const ResourceInfo& r, const std::string& name) {
  auto s =
      failure_status(409, "Conflict",
                     "Operation cannot be fulfilled on " + r.qualified_plural() + " \"" + name +
                         "\": the object has been modified; please apply your changes to "
                         "the latest version and try again");
  s["details"] = details(r, name, r.plural);
  return ApiError(s);
}

ApiError precondition_conflict(const ResourceInfo& r, const std::string& name,
                               const std::string& why) {
  auto s = failure_status(
      409, "Conflict",
      "Operation cannot be fulfilled on " + r.qualified_kind() + " \"" + name + "\": " + why);
  s["details"] = details(r, name, r.kind);
  return ApiError(s);
}

ApiError invalid(const ResourceInfo& r, const std::string& name, const std::string& field,
                 const std::string& cause_reason, const std::string& message) {
  auto s = failure_status(
      422, "Invalid",
      r.qualified_kind() + " \"" + name + "\" is invalid: " + field + ": " + message);
  auto d = details(r, name, r.kind);
  d["causes"] = {{{"reason", cause_reason}, {"message", message}, {"field", field}}};
  s["details"] = d;
  return ApiError(s);
}

ApiError invalid(const ResourceInfo& r, const std::string& name,
                 const std::vector<FieldError>& errors) {
  // ToAggregate drops repeated messages; one error is written without brackets.
  std::vector<std::string> texts;
  nlohmann::json causes = nlohmann::json::array();
  for (const auto& e : errors) {
    const std::string text = e.field + ": " + e.message;
    if (std::find(texts.begin(), texts.end(), text) != texts.end()) continue;
    texts.push_back(text);
    causes.push_back({{"reason", e.reason}, {"message", e.message}, {"field", e.field}});
  }
  std::string joined;
  for (const auto& t : texts) joined += (joined.empty() ? "" : ", ") + t;
  if (texts.size() > 1) joined = "[" + joined + "]";
  auto s = failure_status(422, "Invalid",
                          r.qualified_kind() + " \"" + name + "\" is invalid: " + joined);
  auto d = details(r, name, r.kind);
  d["causes"] = causes;
  s["details"] = d;
  return ApiError(s);
}

ApiError bad_request(const std::string& message) {
  return ApiError(failure_status(400, "BadRequest", message));
}

ApiError expired(const std::string& message) {
  return ApiError(failure_status(410, "Expired", message));
}

ApiError unsupported_media_type(const std::string& content_type, const std::string& accepted) {
  return ApiError(failure_status(415, "UnsupportedMediaType",
                                 "the body of the request was in an unknown format - accepted "
                                 "media types include: " +
                                     accepted + " (got " + content_type + ")"));
}

ApiError method_not_supported(const ResourceInfo& r, const std::string& verb) {
  auto s = failure_status(
      405, "MethodNotAllowed",
      verb + " is not supported on resources of kind \"" + r.qualified_plural() + "\"");
  s["details"] = details(r, "", r.plural);
  return ApiError(s);
}

}  // namespace commgate::sim
