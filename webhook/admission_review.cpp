#include "webhook/admission_review.h"

#include <array>
#include <cstring>

#include "core/json_parse.h"
#include "core/json_write.h"

namespace commgate::webhook {
namespace {

using Json = nlohmann::json;

// base64 of the JSONPatch, appended to `out`.
void append_base64(std::string& out, std::string_view text) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const size_t start = out.size();
  out.resize(start + (text.size() + 2) / 3 * 4);
  char* p = out.data() + start;
  for (size_t i = 0; i < text.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(text[i])) << 16;
    if (i + 1 < text.size())
      n |= static_cast<uint32_t>(static_cast<unsigned char>(text[i + 1])) << 8;
    if (i + 2 < text.size()) n |= static_cast<unsigned char>(text[i + 2]);
    *p++ = kAlphabet[(n >> 18) & 63];
    *p++ = kAlphabet[(n >> 12) & 63];
    *p++ = i + 1 < text.size() ? kAlphabet[(n >> 6) & 63] : '=';
    *p++ = i + 2 < text.size() ? kAlphabet[n & 63] : '=';
  }
}

// The JSONPatch as text: [{"op":..,"path":..,"value":..}, ...], keys in dump()'s order.
std::string patch_text(const std::vector<JsonPatchOp>& ops) {
  std::string out = "[";
  out.reserve(1024);
  for (const auto& op : ops) {
    if (out.size() > 1) out += ',';
    out += "{\"op\":";
    append_json_string(out, op.op);
    out += ",\"path\":";
    append_json_string(out, op.path);
    if (op.op != "remove") {
      out += ",\"value\":";
      if (op.value.is_string()) {
        append_json_string(out, op.value.get_ref<const std::string&>());
      } else {
        out += op.value.dump();
      }
    }
    out += '}';
  }
  out += ']';
  return out;
}

std::string string_at(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

}  // namespace

std::string decision_label(const std::string& action, const std::string& reason) {
  return reason == reason::kExempt ? "Exempt" : action;
}

AdmissionResponse allowed() {
  return AdmissionResponse{};
}

AdmissionResponse denied(std::string message, int code) {
  AdmissionResponse r;
  r.allowed = false;
  r.code = code;
  switch (code) {
    case 400:
      r.reason = "BadRequest";
      break;
    case 422:
      r.reason = "Invalid";
      break;
    case 500:
      r.reason = "InternalError";
      break;
    case 503:
      r.reason = "ServiceUnavailable";
      break;
    default:
      r.reason = "Forbidden";
  }
  r.message = std::move(message);
  return r;
}

AdmissionResponse invalid(const ValidationError& error) {
  AdmissionResponse r = denied(error.what(), 422);
  r.decision = "Invalid";
  for (const auto& e : error.errors().all())
    r.details.causes.push_back({"FieldValueInvalid", e.message, e.path});
  return r;
}

AdmissionResponse invalid(std::string field, std::string message) {
  AdmissionResponse r = denied(field + ": " + message, 422);
  r.decision = "Invalid";
  r.details.causes.push_back({"FieldValueInvalid", std::move(message), std::move(field)});
  return r;
}

AdmissionResponse with_request_details(AdmissionResponse response,
                                       const AdmissionRequest& request) {
  if (response.details.causes.empty()) return response;
  response.details.name = request.name;
  if (request.sub_resource == "scale") {
    response.details.group = "autoscaling";
    response.details.kind = "Scale";
  } else {
    response.details.group = request.resource.group;
    response.details.kind = request.kind;
  }
  return response;
}

AdmissionResponse patched(std::vector<JsonPatchOp> ops) {
  AdmissionResponse r;
  r.patch = std::move(ops);
  return r;
}

std::optional<int64_t> scale_replicas(const nlohmann::json& scale, const char* part,
                                      std::string* why) {
  const Json* replicas = nullptr;
  if (scale.is_object()) {
    if (auto s = scale.find(part); s != scale.end() && s->is_object()) {
      if (auto r = s->find("replicas"); r != s->end()) replicas = &*r;
    }
  }
  if (!replicas) {
    // The apiserver omits replicas: 0 (omitempty).
    return 0;
  }
  if (!replicas->is_number_integer()) {
    *why = "must be an integer, got " + replicas->dump();
    return std::nullopt;
  }
  return replicas->get<int64_t>();
}

AdmissionResponse with_decision(AdmissionResponse response, std::string decision) {
  response.decision = std::move(decision);
  return response;
}

AdmissionResponse with_warnings(AdmissionResponse response, std::vector<std::string> warnings) {
  for (auto& w : warnings) response.warnings.push_back(std::move(w));
  return response;
}

// parse_admission_review: webhook/review_parse.cpp.

nlohmann::json admission_review_response(const std::string& uid, const std::string& api_version,
                                         const AdmissionResponse& response) {
  Json out = {{"uid", uid}, {"allowed", response.allowed}};
  if (!response.allowed || !response.message.empty()) {
    Json status = {{"message", response.message}};
    if (!response.allowed) {
      status["code"] = response.code == 0 ? 403 : response.code;
      status["reason"] = response.reason.empty() ? "Forbidden" : response.reason;
      status["status"] = "Failure";
      const StatusDetails& d = response.details;
      if (!d.causes.empty()) {
        Json causes = Json::array();
        for (const auto& c : d.causes)
          causes.push_back({{"reason", c.reason}, {"message", c.message}, {"field", c.field}});
        Json details = {{"causes", std::move(causes)}};
        if (!d.name.empty()) details["name"] = d.name;
        if (!d.group.empty()) details["group"] = d.group;
        if (!d.kind.empty()) details["kind"] = d.kind;
        status["details"] = std::move(details);
      }
    }
    out["status"] = status;
  }
  if (!response.patch.empty()) {
    Json ops = Json::array();
    for (const auto& op : response.patch) {
      Json j = {{"op", op.op}, {"path", op.path}};
      if (op.op != "remove") j["value"] = op.value;
      ops.push_back(std::move(j));
    }
    out["patchType"] = "JSONPatch";
    std::string b64;
    append_base64(b64, ops.dump());
    out["patch"] = b64;
  }
  if (!response.warnings.empty()) out["warnings"] = response.warnings;
  if (!response.audit_annotations.empty()) out["auditAnnotations"] = response.audit_annotations;
  return {{"apiVersion", api_version.empty() ? kAdmissionV1 : api_version},
          {"kind", "AdmissionReview"},
          {"response", out}};
}

namespace {

// status.details with its trailing comma, or nothing without causes; keys sorted as the
// tree dumps them (causes, group, kind, name; field, message, reason).
void append_details(std::string& out, const StatusDetails& d) {
  if (d.causes.empty()) return;
  out += "\"details\":{\"causes\":[";
  for (size_t i = 0; i < d.causes.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"field\":";
    append_json_string(out, d.causes[i].field);
    out += ",\"message\":";
    append_json_string(out, d.causes[i].message);
    out += ",\"reason\":";
    append_json_string(out, d.causes[i].reason);
    out += '}';
  }
  out += ']';
  if (!d.group.empty()) {
    out += ",\"group\":";
    append_json_string(out, d.group);
  }
  if (!d.kind.empty()) {
    out += ",\"kind\":";
    append_json_string(out, d.kind);
  }
  if (!d.name.empty()) {
    out += ",\"name\":";
    append_json_string(out, d.name);
  }
  out += "},";
}

}  // namespace

std::string admission_review_response_bytes(const std::string& uid, const std::string& api_version,
                                            const AdmissionResponse& response) {
  // Keys in the order nlohmann's std::map-backed objects dump them (sorted).
  std::string out;
  out.reserve(2048 + response.message.size());
  out += "{\"apiVersion\":";
  append_json_string(out, api_version.empty() ? kAdmissionV1 : api_version);
  out += ",\"kind\":\"AdmissionReview\",\"response\":{\"allowed\":";
  out += response.allowed ? "true" : "false";
  if (!response.audit_annotations.empty()) {
    out += ",\"auditAnnotations\":{";
    bool first = true;
    for (const auto& [key, value] : response.audit_annotations) {
      if (!first) out += ',';
      first = false;
      append_json_string(out, key);
      out += ':';
      append_json_string(out, value);
    }
    out += '}';
  }
  if (!response.patch.empty()) {
    out += ",\"patch\":\"";
    append_base64(out, patch_text(response.patch));  // base64 needs no escaping
    out += "\",\"patchType\":\"JSONPatch\"";
  }
  if (!response.allowed || !response.message.empty()) {
    out += ",\"status\":{";
    if (!response.allowed) {
      out += "\"code\":";
      out += std::to_string(response.code == 0 ? 403 : response.code);
      out += ',';
      append_details(out, response.details);
    }
    out += "\"message\":";
    append_json_string(out, response.message);
    if (!response.allowed) {
      out += ",\"reason\":";
      append_json_string(out, response.reason.empty() ? "Forbidden" : response.reason);
      out += ",\"status\":\"Failure\"";
    }
    out += '}';
  }
  out += ",\"uid\":";
  append_json_string(out, uid);
  if (!response.warnings.empty()) {
    out += ",\"warnings\":[";
    for (size_t i = 0; i < response.warnings.size(); ++i) {
      if (i > 0) out += ',';
      append_json_string(out, response.warnings[i]);
    }
    out += ']';
  }
  out += "}}";
  return out;
}

int json_nesting_depth(std::string_view body, int limit) {
  // Bytes that matter outside strings; everything else is skipped by one table look-up.
  static constexpr auto kStructural = [] {
    std::array<bool, 256> t{};
    for (unsigned char c : {'"', '{', '[', '}', ']'}) t[c] = true;
    return t;
  }();
  const char* p = body.data();
  const char* const end = p + body.size();
  int depth = 0;
  while (p < end) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (!kStructural[c]) {
      ++p;
      continue;
    }
    if (c == '"') {
      // The string ends at the next quote preceded by an even number of backslashes
      // (memchr finds quotes at memory speed; strings are most of an object's bytes).
      const char* q = p + 1;
      for (;;) {
        q = static_cast<const char*>(std::memchr(q, '"', static_cast<size_t>(end - q)));
        if (q == nullptr) return depth;  // unterminated: nothing after it counts
        size_t backslashes = 0;
        while (q - backslashes > p + 1 && *(q - backslashes - 1) == '\\') ++backslashes;
        if (backslashes % 2 == 0) break;
        ++q;
      }
      p = q + 1;
      continue;
    }
    if (c == '{' || c == '[') {
      if (++depth > limit) return depth;
    } else {
      --depth;
    }
    ++p;
  }
  return depth;
}

std::string try_read_uid(std::string_view body) {
  if (json_nesting_depth(body, kMaxJsonDepth) > kMaxJsonDepth) return "";
  Json doc = Json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return "";
  auto req = doc.find("request");
  if (req == doc.end() || !req->is_object()) return "";
  return string_at(*req, "uid");
}

std::string json_pointer_token(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Requester requester_of(const UserInfo& user) {
  return Requester{user.username, user.groups};
}

TrainingJob job_under_admission(const AdmissionRequest& request) {
  TrainingJob job = parse_training_job(request.object, ObjectSource::kAdmission, Verbatim::kSkip);
  if (job.metadata.namespace_.empty()) job.metadata.namespace_ = request.namespace_;
  return job;
}

}  // namespace commgate::webhook
