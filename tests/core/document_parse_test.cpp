// The opening every parser shares (read_document), the manifest splitter and the one
// reader of times: a document that is not an object, a null list item or an impossible
// date is named where it is, whichever kind is being read (issue 9).
#include <gtest/gtest.h>

#include <functional>

#include "core/comm_policy.h"
#include "core/comm_profile.h"
#include "core/probe_result.h"
#include "core/training_job.h"
#include "core/yaml_json.h"
#include "tests/support/builders.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using Json = nlohmann::json;

struct Parser {
  std::string kind;
  std::function<void(const Json&)> parse;  // throws ValidationError
};

const std::vector<Parser>& parsers() {
  static const std::vector<Parser> p = {
      {"TrainingJob", [](const Json& d) { parse_training_job(d); }},
      {"TrainingJob", [](const Json& d) { parse_training_job(d, ObjectSource::kAdmission); }},
      {"CommPolicy", [](const Json& d) { parse_comm_policy(d); }},
      {"CommProfile", [](const Json& d) { parse_comm_profile(d, testing::test_now()); }},
      {"ProbeResult", [](const Json& d) { parse_probe_result(d); }},
  };
  return p;
}

struct NotAnObject {
  std::string name;
  Json doc;
  std::string want_got;
};

void PrintTo(const NotAnObject& c, std::ostream* os) {
  *os << c.name;
}

class DocumentNotAnObject : public ::testing::TestWithParam<NotAnObject> {};

// A null document used to parse as a TrainingJob with 0 nodes and no name.
TEST_P(DocumentNotAnObject, is_refused_by_every_parser_alone) {
  const NotAnObject& c = GetParam();
  for (const Parser& p : parsers()) {
    try {
      p.parse(c.doc);
      ADD_FAILURE() << p.kind << " accepted " << c.doc.dump();
    } catch (const ValidationError& e) {
      ASSERT_EQ(e.errors().size(), 1u) << p.kind << ": nothing else can be said\n" << e.what();
      EXPECT_EQ(e.errors().all()[0].message,
                "the document must be a " + p.kind + " object, got " + c.want_got);
      EXPECT_EQ(std::string(e.what()).rfind("invalid " + p.kind + ":", 0), 0u) << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Parsing, DocumentNotAnObject,
    ::testing::Values(NotAnObject{"null", nullptr, "null"},
                      NotAnObject{"list", Json::array({Json::object()}), "a list"},
                      NotAnObject{"string", "kind: TrainingJob", "string \"kind: TrainingJob\""},
                      NotAnObject{"number", 4, "number 4"}),
    [](const ::testing::TestParamInfo<NotAnObject>& p) { return p.param.name; });

TEST(ReadDocument, checks_type_and_metadata_once_for_every_kind) {
  // An empty object: each parser names apiVersion, kind and metadata in the same words.
  for (const Parser& p : parsers()) {
    try {
      p.parse(Json::object());
      ADD_FAILURE() << p.kind;
    } catch (const ValidationError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("\napiVersion: required field is missing"), std::string::npos) << what;
      EXPECT_NE(what.find("\nkind: required field is missing"), std::string::npos) << what;
      const bool has_metadata = p.kind != "ProbeResult";
      EXPECT_EQ(what.find("\nmetadata: required field is missing") != std::string::npos,
                has_metadata)
          << what;
    }
  }
}

TEST(ReadDocument, wrong_kind_is_named_with_the_kind_wanted) {
  Json doc = testing::a_training_job().json();
  doc["kind"] = "CommPolicy";
  try {
    parse_training_job(doc);
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("kind: must be TrainingJob, got \"CommPolicy\""),
              std::string::npos)
        << e.what();
  }
}

TEST(ReadDocument, generate_name_must_not_be_empty) {
  Json doc = testing::a_training_job().remove("/metadata/name").json();
  doc["metadata"]["generateName"] = "";
  try {
    parse_training_job(doc, ObjectSource::kAdmission);
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("metadata.generateName: must not be empty"),
              std::string::npos)
        << e.what();
  }
}

// ---------------------------------------------------------------------------------
// Splitting a file into manifests: each must be an object, named by its place.

struct SplitCase {
  std::string name;
  std::string text;
  std::string want_error;  // empty: parses
};

void PrintTo(const SplitCase& c, std::ostream* os) {
  *os << c.name;
}

class ManifestSplit : public ::testing::TestWithParam<SplitCase> {};

TEST_P(ManifestSplit, names_the_place_of_a_non_object) {
  const SplitCase& c = GetParam();
  if (c.want_error.empty()) {
    EXPECT_NO_THROW(parse_manifests(c.text));
    return;
  }
  try {
    parse_manifests(c.text);
    FAIL() << "accepted " << c.text;
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), c.want_error);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Parsing, ManifestSplit,
    ::testing::Values(
        SplitCase{"json_list_of_null", "[null]",
                  "[0]: must be an object (a Kubernetes manifest), got null"},
        SplitCase{"json_list_second_item_a_number", R"([{"kind": "TrainingJob"}, 7])",
                  "[1]: must be an object (a Kubernetes manifest), got number 7"},
        SplitCase{"kubernetes_list_with_null_item", R"({"kind": "List", "items": [{}, null]})",
                  "items[1]: must be an object (a Kubernetes manifest), got null"},
        SplitCase{"yaml_document_a_scalar", "a: 1\n---\nhello\n",
                  "document 2: must be an object (a Kubernetes manifest), got string \"hello\""},
        SplitCase{"yaml_document_a_list", "- a\n- b\n",
                  "document 1: must be an object (a Kubernetes manifest), got a list"},
        // As kubectl does, empty YAML documents are skipped, not reported.
        SplitCase{"yaml_empty_documents_skipped", "---\n---\na: 1\n---\nnull\n", ""},
        SplitCase{"json_empty_list", "[]", ""}),
    [](const ::testing::TestParamInfo<SplitCase>& p) { return p.param.name; });

// ---------------------------------------------------------------------------------
// One reader of RFC 3339 times.

TEST(Rfc3339, refuses_dates_and_offsets_that_do_not_exist) {
  for (const char* bad :
       {"2026-02-29T00:00:00Z", "2026-02-30T00:00:00Z", "2026-04-31T00:00:00Z",
        "2026-11-30T17:30:11+24:00", "2026-11-30T17:30:11+01:60", "2026-11-30T24:00:00Z"}) {
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
  }
  for (const char* good : {"2028-02-29T00:00:00Z", "2000-02-29T00:00:00Z", "2026-12-31T23:59:59Z",
                           "2026-11-30T17:30:11-08:00"}) {
    EXPECT_TRUE(parse_rfc3339(good)) << good;
  }
  EXPECT_FALSE(parse_rfc3339("1900-02-29T00:00:00Z"));  // not a leap year
}

TEST(Rfc3339, every_parser_names_a_bad_time_the_same_way) {
  const std::string want =
      "must be an RFC 3339 time such as 2026-11-30T17:30:00Z, got string "
      "\"2026-02-30T10:00:00Z\"";
  auto message_at = [](const std::function<void()>& parse, const std::string& path) {
    try {
      parse();
    } catch (const ValidationError& e) {
      for (const auto& fe : e.errors().all())
        if (fe.path == path) return fe.message;
      return "no error at " + path + ":\n" + e.errors().to_string();
    }
    return std::string("accepted");
  };
  Json job =
      testing::a_training_job().set("/metadata/creationTimestamp", "2026-02-30T10:00:00Z").json();
  EXPECT_EQ(message_at([&] { parse_training_job(job); }, "metadata.creationTimestamp"), want);

  ProbeResult r;
  r.nodes = 2;
  r.backend = "gloo";
  Json probe = to_json(r);
  probe["startTime"] = "2026-02-30T10:00:00Z";
  EXPECT_EQ(message_at([&] { parse_probe_result(probe); }, "startTime"), want);

  Json profile = {{"apiVersion", "commgate.io/v1alpha1"},
                  {"kind", "CommProfile"},
                  {"metadata", {{"name", "pool-all"}}},
                  {"status",
                   {{"link",
                     {{"latencyUs", 50},
                      {"busbwGBps", 1},
                      {"nodesProbed", 2},
                      {"measuredAt", "2026-02-30T10:00:00Z"}}}}}};
  EXPECT_EQ(message_at([&] { parse_comm_profile(profile, testing::test_now()); },
                       "status.link.measuredAt"),
            want);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
