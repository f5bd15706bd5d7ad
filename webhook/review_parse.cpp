// parse_admission_review (admission_review.h): the request side of the envelope.
//
// The review is read straight from simdjson's DOM: the envelope's fields (uid, kind,
// resource, userInfo, ...) as strings, and only request.object and request.oldObject are
// converted into the nlohmann trees the handlers and core's parsers read. Building a tree
// for the whole review cost more than everything else in a /mutate (#9).
#include <simdjson.h>

#include <new>

#include "core/json_parse.h"
#include "webhook/admission_review.h"

namespace commgate::webhook {
namespace {

using Json = nlohmann::json;
using simdjson::dom::element;
using simdjson::dom::element_type;

// The member `key` of an object as nlohmann's find() sees it: the last one of that name.
std::optional<element> member(simdjson::dom::object obj, std::string_view key) {
  std::optional<element> found;
  for (auto field : obj) {
    if (field.key == key) found = field.value;
  }
  return found;
}

std::optional<simdjson::dom::object> object_member(simdjson::dom::object obj,
                                                   std::string_view key) {
  auto m = member(obj, key);
  if (!m || !m->is_object()) return std::nullopt;
  return simdjson::dom::object(*m);
}

// A string member, or "" when it is missing or not a string.
std::string string_at(simdjson::dom::object obj, std::string_view key) {
  auto m = member(obj, key);
  if (!m || !m->is_string()) return "";
  return std::string(std::string_view(*m));
}

void append_strings(element array, std::vector<std::string>& out) {
  if (!array.is_array()) return;
  for (auto v : simdjson::dom::array(array)) {
    if (v.is_string()) out.emplace_back(std::string_view(v));
  }
}

AdmissionRequest read_review(element root) {
  if (!root.is_object()) throw MalformedReview(400, "", "", "body is not a JSON object");
  const simdjson::dom::object doc(root);
  const std::string api_version = string_at(doc, "apiVersion");
  if (api_version != kAdmissionV1 && api_version != kAdmissionV1beta1) {
    throw MalformedReview(
        400, "", "",
        "apiVersion must be admission.k8s.io/v1 (or v1beta1), got \"" + api_version + "\"");
  }
  if (const std::string kind = string_at(doc, "kind"); kind != "AdmissionReview")
    throw MalformedReview(400, "", "", "kind must be AdmissionReview, got \"" + kind + "\"");
  const auto req = object_member(doc, "request");
  if (!req) throw MalformedReview(400, "", "", "request is missing or not an object");
  AdmissionRequest r;
  r.uid = string_at(*req, "uid");
  if (r.uid.empty()) throw MalformedReview(400, "", "", "request.uid is missing or empty");
  r.api_version = api_version;

  // From here the uid is known: problems are answered as allowed=false reviews.
  auto fail = [&](const std::string& message) {
    throw MalformedReview(200, r.uid, api_version, message);
  };
  r.operation = string_at(*req, "operation");
  if (r.operation != "CREATE" && r.operation != "UPDATE" && r.operation != "DELETE" &&
      r.operation != "CONNECT") {
    fail("request.operation must be CREATE, UPDATE, DELETE or CONNECT, got \"" + r.operation +
         "\"");
  }
  if (auto k = object_member(*req, "kind")) r.kind = string_at(*k, "kind");
  if (r.kind.empty()) fail("request.kind.kind is missing");
  if (auto res = object_member(*req, "resource")) {
    r.resource = {string_at(*res, "group"), string_at(*res, "version"),
                  string_at(*res, "resource")};
  }
  if (r.resource.resource.empty()) fail("request.resource.resource is missing");
  r.sub_resource = string_at(*req, "subResource");
  r.name = string_at(*req, "name");
  r.namespace_ = string_at(*req, "namespace");
  if (auto u = object_member(*req, "userInfo")) {
    r.user_info.username = string_at(*u, "username");
    r.user_info.uid = string_at(*u, "uid");
    if (auto g = member(*u, "groups")) append_strings(*g, r.user_info.groups);
    if (auto e = object_member(*u, "extra")) {
      for (auto field : *e) {
        auto& out = r.user_info.extra[std::string(field.key)];
        out.clear();  // a duplicate key: the last one wins, as in a JSON tree
        append_strings(field.value, out);
      }
    }
  }
  if (auto o = member(*req, "object")) r.object = to_nlohmann(*o);
  if (auto o = member(*req, "oldObject")) r.old_object = to_nlohmann(*o);
  if (auto d = member(*req, "dryRun"); d && d->is_bool()) r.dry_run = bool(*d);
  if ((r.operation == "CREATE" || r.operation == "UPDATE") && !r.object.is_object())
    fail("request.object must be an object for " + r.operation);
  if (r.operation == "UPDATE" && !r.old_object.is_object())
    fail("request.oldObject must be an object for UPDATE");
  return r;
}

}  // namespace

// A DOM parser that refuses documents nested deeper than kMaxJsonDepth: its depth counts
// every array and object (an object's member one more), so a review it reads needs no
// separate nesting check (json_nesting_depth was 5% of a /mutate's CPU, #9). It keeps the
// limit when it grows its buffers for a larger document.
static simdjson::dom::parser bounded_parser() {
  simdjson::dom::parser parser;
  if (parser.allocate(64 * 1024, kMaxJsonDepth) != simdjson::SUCCESS) throw std::bad_alloc();
  return parser;
}

AdmissionRequest parse_admission_review(std::string_view body) {
  // One parser per thread: it keeps its buffers between documents.
  thread_local simdjson::dom::parser bounded = bounded_parser();
  struct Shrink {
    ~Shrink() {
      if (bounded.capacity() > kKeptParserBytes) bounded = bounded_parser();
    }
  } shrink;
  element root;
  if (bounded.parse(body.data(), body.size()).get(root) == simdjson::SUCCESS)
    return read_review(root);
  // simdjson refuses the text. Too deep is said first, before any parser recurses into it.
  if (json_nesting_depth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    throw MalformedReview(400, "", "",
                          "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  // nlohmann's parser names why, with the byte offset, or the number that overflows a
  // double ("number overflow parsing '1e999'"); what it accepts (an integer beyond 64 bits,
  // read as a double; a text simdjson's depth count refuses at the limit) is read again from
  // its own output by a parser without the bound.
  Json doc;
  try {
    doc = Json::parse(body);
  } catch (const Json::exception& e) {
    throw MalformedReview(400, "", "", std::string("body is not valid JSON: ") + e.what());
  }
  const std::string text = doc.dump();
  // Rare (what simdjson refused but nlohmann read): a parser for this document only.
  simdjson::dom::parser unbounded;
  if (unbounded.parse(text.data(), text.size()).get(root) != simdjson::SUCCESS)
    throw MalformedReview(400, "", "", "body is not valid JSON: unreadable after normalising");
  return read_review(root);
}

}  // namespace commgate::webhook
