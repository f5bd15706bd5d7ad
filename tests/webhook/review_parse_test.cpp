// parse_admission_review reads the review from simdjson's DOM and builds JSON trees only
// for request.object and request.oldObject (#9). Its oracle here is the reader it replaced:
// the whole review parsed into one nlohmann tree (core's parse_json) and read from it. Both
// must agree on every field, every tree and every refusal (status, uid, message), over the
// fuzz seeds, the real apiserver requests, the example jobs and the cases a tree reader
// decides in its own way (duplicate keys, wrong types, huge numbers, a byte-order mark).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>

#include "core/json_parse.h"
#include "core/yaml_json.h"
#include "tests/webhook/webhook_test_support.h"
#include "webhook/admission_review.h"

namespace commgate::webhook {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;
using namespace commgate::webhook::testing;

std::string string_at(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// The tree reader as it was before #9's change (commit 96e0602's admission_review.cpp).
AdmissionRequest tree_reference_parse(std::string_view body) {
  if (json_nesting_depth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    throw MalformedReview(400, "", "",
                          "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  json doc;
  try {
    doc = parse_json(body);
  } catch (const json::exception& e) {
    throw MalformedReview(400, "", "", std::string("body is not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) throw MalformedReview(400, "", "", "body is not a JSON object");
  const std::string api_version = string_at(doc, "apiVersion");
  if (api_version != "admission.k8s.io/v1" && api_version != "admission.k8s.io/v1beta1") {
    throw MalformedReview(
        400, "", "",
        "apiVersion must be admission.k8s.io/v1 (or v1beta1), got \"" + api_version + "\"");
  }
  if (string_at(doc, "kind") != "AdmissionReview") {
    throw MalformedReview(400, "", "",
                          "kind must be AdmissionReview, got \"" + string_at(doc, "kind") + "\"");
  }
  auto req_it = doc.find("request");
  if (req_it == doc.end() || !req_it->is_object())
    throw MalformedReview(400, "", "", "request is missing or not an object");
  json& req = *req_it;
  AdmissionRequest r;
  r.uid = string_at(req, "uid");
  if (r.uid.empty()) throw MalformedReview(400, "", "", "request.uid is missing or empty");
  r.api_version = api_version;
  auto fail = [&](const std::string& message) {
    throw MalformedReview(200, r.uid, api_version, message);
  };
  r.operation = string_at(req, "operation");
  if (r.operation != "CREATE" && r.operation != "UPDATE" && r.operation != "DELETE" &&
      r.operation != "CONNECT") {
    fail("request.operation must be CREATE, UPDATE, DELETE or CONNECT, got \"" + r.operation +
         "\"");
  }
  if (auto k = req.find("kind"); k != req.end() && k->is_object()) r.kind = string_at(*k, "kind");
  if (r.kind.empty()) fail("request.kind.kind is missing");
  if (auto res = req.find("resource"); res != req.end() && res->is_object()) {
    r.resource = {string_at(*res, "group"), string_at(*res, "version"),
                  string_at(*res, "resource")};
  }
  if (r.resource.resource.empty()) fail("request.resource.resource is missing");
  r.sub_resource = string_at(req, "subResource");
  r.name = string_at(req, "name");
  r.namespace_ = string_at(req, "namespace");
  if (auto u = req.find("userInfo"); u != req.end() && u->is_object()) {
    r.user_info.username = string_at(*u, "username");
    r.user_info.uid = string_at(*u, "uid");
    if (auto g = u->find("groups"); g != u->end() && g->is_array()) {
      for (const auto& v : *g) {
        if (v.is_string()) r.user_info.groups.push_back(v.get<std::string>());
      }
    }
    if (auto e = u->find("extra"); e != u->end() && e->is_object()) {
      for (const auto& [key, values] : e->items()) {
        auto& out = r.user_info.extra[key];
        if (!values.is_array()) continue;
        for (const auto& v : values) {
          if (v.is_string()) out.push_back(v.get<std::string>());
        }
      }
    }
  }
  if (auto o = req.find("object"); o != req.end()) r.object = std::move(*o);
  if (auto o = req.find("oldObject"); o != req.end()) r.old_object = std::move(*o);
  if (auto d = req.find("dryRun"); d != req.end() && d->is_boolean()) r.dry_run = d->get<bool>();
  if ((r.operation == "CREATE" || r.operation == "UPDATE") && !r.object.is_object())
    fail("request.object must be an object for " + r.operation);
  if (r.operation == "UPDATE" && !r.old_object.is_object())
    fail("request.oldObject must be an object for UPDATE");
  return r;
}

struct Refusal {
  int http_status;
  std::string uid, api_version, message;
};
using Outcome = std::variant<AdmissionRequest, Refusal>;

template <typename Parse>
Outcome outcome_of(Parse parse, std::string_view body) {
  try {
    return parse(body);
  } catch (const MalformedReview& e) {
    return Refusal{e.http_status(), e.uid(), e.api_version(), e.what()};
  }
}

void expect_same(std::string_view body) {
  SCOPED_TRACE(std::string(body.substr(0, 300)));
  const Outcome got = outcome_of(parse_admission_review, body);
  const Outcome want = outcome_of(tree_reference_parse, body);
  ASSERT_EQ(got.index(), want.index())
      << (got.index() == 1 ? std::get<1>(got).message : std::get<1>(want).message);
  if (const auto* w = std::get_if<Refusal>(&want)) {
    const auto& g = std::get<Refusal>(got);
    EXPECT_EQ(g.http_status, w->http_status);
    EXPECT_EQ(g.uid, w->uid);
    EXPECT_EQ(g.api_version, w->api_version);
    EXPECT_EQ(g.message, w->message);
    return;
  }
  const auto& g = std::get<AdmissionRequest>(got);
  const auto& w = std::get<AdmissionRequest>(want);
  EXPECT_EQ(g.uid, w.uid);
  EXPECT_EQ(g.api_version, w.api_version);
  EXPECT_EQ(g.kind, w.kind);
  EXPECT_EQ(g.resource.group, w.resource.group);
  EXPECT_EQ(g.resource.version, w.resource.version);
  EXPECT_EQ(g.resource.resource, w.resource.resource);
  EXPECT_EQ(g.sub_resource, w.sub_resource);
  EXPECT_EQ(g.name, w.name);
  EXPECT_EQ(g.namespace_, w.namespace_);
  EXPECT_EQ(g.operation, w.operation);
  EXPECT_EQ(g.user_info.username, w.user_info.username);
  EXPECT_EQ(g.user_info.uid, w.user_info.uid);
  EXPECT_EQ(g.user_info.groups, w.user_info.groups);
  EXPECT_EQ(g.user_info.extra, w.user_info.extra);
  EXPECT_EQ(g.dry_run, w.dry_run);
  // Same values and the same types (an integer stays an integer): the same dump.
  EXPECT_EQ(g.object.dump(), w.object.dump());
  EXPECT_EQ(g.old_object.dump(), w.old_object.dump());
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ReviewParse, ReadsTheSeedsTheRealRequestsAndTheExamplesAsTheTreeReaderDid) {
  const std::filesystem::path testdata = COMMGATE_WEBHOOK_TESTDATA;
  int compared = 0;
  for (const auto& dir : {testdata, testdata / "../fuzz/corpus"}) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      SCOPED_TRACE(e.path().string());
      expect_same(read_file(e.path()));
      ++compared;
    }
  }
  for (const auto& e : std::filesystem::directory_iterator(testdata / "../../../examples/jobs")) {
    for (const json& job : yaml_documents_to_json(read_file(e.path()))) {
      SCOPED_TRACE(e.path().string());
      json raised = job;
      raised["spec"]["numNodes"] = job["spec"].value("numNodes", 1) * 2;
      expect_same(a_create_of(job).body());
      expect_same(an_update_of(job, raised).body());
      compared += 2;
    }
  }
  EXPECT_GT(compared, 10);
}

const std::string kHead = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)";
const std::string kRequest =
    R"("uid":"u1","operation":"CREATE","kind":{"kind":"TrainingJob"},)"
    R"("resource":{"group":"commgate.io","version":"v1alpha1","resource":"trainingjobs"},)";

// A review whose object.x holds `levels` times open ... close around 1.
std::string nested_review(int levels, const std::string& open, const std::string& close) {
  std::string inner = "1";
  for (int i = 0; i < levels; ++i) inner = open + inner + close;
  return kHead + R"("request":{)" + kRequest + R"("object":{"x":)" + inner + "}}}";
}

class ReviewParseCase : public ::testing::TestWithParam<std::string> {};

TEST_P(ReviewParseCase, IsReadOrRefusedAsTheTreeReaderDid) {
  expect_same(GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ReviewParseCase,
    ::testing::Values(
        // Duplicate keys: the last one wins, in the envelope, the request, userInfo.extra
        // and the object.
        kHead + R"("kind":"Nope","request":{)" + kRequest + R"("object":{}}})",
        kHead + R"("request":{)" + kRequest +
            R"("uid":"u2","operation":"UPDATE","object":{"a":1},"oldObject":{"b":2}}})",
        kHead + R"("request":{)" + kRequest +
            R"("userInfo":{"username":"a","username":"b","groups":["x",1,null,"y"],)"
            R"("extra":{"k":["1"],"k":["2","3"],"j":"notalist","i":[true,"s"]}},)"
            R"("object":{"spec":{"numNodes":1,"numNodes":2},"z":0,"a":{"b":[1,2.5,-3]}}}})",
        // Wrong types read as missing.
        kHead + R"("request":{)" + kRequest +
            R"("name":7,"namespace":null,"subResource":[],"userInfo":[],"dryRun":"true",)"
            R"("object":{}}})",
        kHead + R"("request":{"uid":"u1","operation":"CREATE","kind":"TrainingJob",)"
                R"("resource":{"resource":"trainingjobs"},"object":{}}})",
        kHead + R"("request":{"uid":"u1","operation":"CREATE","kind":{"kind":"X"},)"
                R"("resource":"trainingjobs","object":{}}})",
        kHead + R"("request":{)" + kRequest + R"("dryRun":true,"object":{}}})",
        // Numbers: beyond 64 bits (read as a double), unsigned, negative, exponent; and one
        // no double holds.
        kHead + R"("request":{)" + kRequest +
            R"("object":{"a":18446744073709551617,"b":18446744073709551615,"c":-9223372036854775808,)"
            R"("d":1e300,"e":-0.0,"f":12.50}}})",
        kHead + R"("request":{)" + kRequest + R"("object":{"a":1e999}}})",
        // A UTF-8 byte-order mark (nlohmann skips it), escapes, non-ASCII.
        "\xEF\xBB\xBF" + kHead + R"("request":{)" + kRequest + R"("object":{"s":"\u00e9\n"}}})",
        kHead + R"("request":{)" + kRequest + R"("name":"d\u00e9j\u00e0 \"vu\"","object":{}}})",
        // Refusals.
        std::string("{\"apiVersion\": "), std::string("[1]"), std::string("\"x\""), std::string(""),
        kHead + R"("request":null})", kHead + R"("request":{"uid":""}})",
        kHead + R"("request":{"uid":"u","operation":"PATCH"}})",
        kHead + R"("request":{)" + kRequest + R"("object":null}})",
        kHead + R"("request":{)" + kRequest + R"("operation":"UPDATE","object":{}}})",
        kHead + R"("request":{)" + kRequest + R"("object":{}}} trailing)",
        std::string(R"({"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview"})"),
        std::string(200, '[') + std::string(200, ']'),
        // At the nesting limit (128, the envelope's 3 levels included) and one past it, in
        // arrays, objects and both; and past it after a megabyte, where the parser has grown.
        nested_review(125, "[", "]"), nested_review(126, "[", "]"),
        nested_review(125, "{\"a\":", "}"), nested_review(126, "{\"a\":", "}"),
        nested_review(62, "[{\"a\":", "}]"), nested_review(63, "[{\"a\":", "}]"),
        nested_review(63, "{\"a\":[", "]}"),
        kHead + R"("request":{)" + kRequest + R"("name":")" + std::string(1 << 20, 'n') + R"(",)" +
            nested_review(126, "[", "]").substr(kHead.size() + 11)));

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::webhook
