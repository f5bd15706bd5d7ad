// A CommProfile drives admission decisions, so its status is validated like every other
// input (issue 12, defect 5): each case breaks one measurement of a valid profile and
// names the field path and message the admin must see.
#include <gtest/gtest.h>

#include "core/comm_profile.h"
#include "tests/support/builders.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using Json = nlohmann::json;
using testing::test_now;

Json valid_profile() {
  return Json::parse(R"({
    "apiVersion": "commgate.io/v1alpha1", "kind": "CommProfile", "metadata": {"name": "pool-1"},
    "spec": {"nodeSelector": {"commgate.io/pool": "cpu-1gbe"}},
    "status": {
      "link": {"latencyUs": 210.5, "busbwGBps": 0.118, "algbwGBps": 0.112, "nodesProbed": 2,
               "procsPerNode": 1, "maxRelativeResidual": 0.04, "poor": false,
               "measuredAt": "2026-11-30T11:00:00Z"},
      "backend": "gloo", "transport": "socket",
      "computeSteps": [{"parameters": 25000000, "gradientDtype": "fp32", "batchSize": 32,
                        "optimizer": "sgd", "stepTimeMs": 300, "forwardMs": 90,
                        "backwardMs": 180, "optimizerMs": 30,
                        "measuredAt": "2026-11-30T11:00:00Z"}]
    }
  })");
}

struct Case {
  std::string name;
  std::string pointer;        // JSON pointer to change
  std::optional<Json> value;  // nullopt: remove the field
  std::string want_path;
  std::string want_message;  // substring
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class CommProfileErrors : public ::testing::TestWithParam<Case> {};

TEST_P(CommProfileErrors, names_the_field) {
  const Case& c = GetParam();
  Json doc = valid_profile();
  Json::json_pointer p(c.pointer);
  if (c.value)
    doc[p] = *c.value;
  else
    doc[p.parent_pointer()].erase(p.back());
  try {
    parse_comm_profile(doc, test_now());
    FAIL() << "expected a ValidationError for " << c.name;
  } catch (const ValidationError& e) {
    bool found = false;
    for (const auto& fe : e.errors().all()) {
      if (fe.path == c.want_path && fe.message.find(c.want_message) != std::string::npos)
        found = true;
    }
    EXPECT_TRUE(found) << "want " << c.want_path << ": ...\"" << c.want_message << "\"...\ngot:\n"
                       << e.errors().to_string();
  }
}

// test_now() is 2026-11-30T12:00:00Z.
INSTANTIATE_TEST_SUITE_P(
    Parsing, CommProfileErrors,
    ::testing::Values(
        // The findings of issue 12: a zero bandwidth gave a 1.10 ms all-reduce and a pass.
        Case{"zero_bandwidth", "/status/link/busbwGBps", 0, "status.link.busbwGBps",
             "must be > 0, got 0"},
        Case{"negative_bandwidth", "/status/link/busbwGBps", -1, "status.link.busbwGBps",
             "must be > 0, got -1"},
        Case{"zero_step_time", "/status/computeSteps/0/stepTimeMs", 0,
             "status.computeSteps[0].stepTimeMs", "must be > 0, got 0"},
        Case{"link_measured_in_2099_counts_as_fresh_forever", "/status/link/measuredAt",
             "2099-01-01T00:00:00Z", "status.link.measuredAt",
             "must not be in the future (more than 5m after 2026-11-30T12:00:00Z), got "
             "\"2099-01-01T00:00:00Z\""},
        Case{"link_measured_just_past_the_clock_skew", "/status/link/measuredAt",
             "2026-11-30T12:05:01Z", "status.link.measuredAt", "must not be in the future"},
        Case{"compute_measured_in_the_future", "/status/computeSteps/0/measuredAt",
             "2026-12-01T00:00:00Z", "status.computeSteps[0].measuredAt",
             "must not be in the future"},
        Case{"one_node_probed", "/status/link/nodesProbed", 1, "status.link.nodesProbed",
             "must be >= 2, got 1"},
        Case{"negative_latency", "/status/link/latencyUs", -5, "status.link.latencyUs",
             "must be >= 0"},
        Case{"negative_residual", "/status/link/maxRelativeResidual", -0.1,
             "status.link.maxRelativeResidual", "must be >= 0"},
        Case{"missing_bandwidth", "/status/link/busbwGBps", std::nullopt, "status.link.busbwGBps",
             "required field is missing"},
        Case{"missing_measured_at", "/status/link/measuredAt", std::nullopt,
             "status.link.measuredAt", "required field is missing"},
        Case{"measured_at_not_a_time", "/status/link/measuredAt", "yesterday",
             "status.link.measuredAt", "must be an RFC 3339 time"},
        Case{"negative_forward_phase", "/status/computeSteps/0/forwardMs", -1,
             "status.computeSteps[0].forwardMs", "must be >= 0"},
        Case{"null_compute_step", "/status/computeSteps", Json::array({nullptr}),
             "status.computeSteps[0]", "must be an object, got null"},
        Case{"optimizer_typo", "/status/computeSteps/0/optimizer", "adamw ",
             "status.computeSteps[0].optimizer", "(did you mean \"adamw\"?)"},
        Case{"link_not_an_object", "/status/link", "fast", "status.link", "must be an object"},
        Case{"negative_spread", "/status/computeSteps/0/spread",
             Json{{"medianMs", 300}, {"p10Ms", -1}, {"p90Ms", 320}},
             "status.computeSteps[0].spread.p10Ms", "must be >= 0"},
        Case{"spread_without_median", "/status/computeSteps/0/spread",
             Json{{"p10Ms", 290}, {"p90Ms", 320}}, "status.computeSteps[0].spread.medianMs",
             "required field is missing"}),
    [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

TEST(CommProfileParsing, accepts_a_time_within_the_clock_skew) {
  Json doc = valid_profile();
  doc["status"]["link"]["measuredAt"] = "2026-11-30T12:05:00Z";  // now + 5m exactly
  doc["status"]["computeSteps"][0]["measuredAt"] = "2026-11-30T12:04:59Z";
  EXPECT_NO_THROW(parse_comm_profile(doc, test_now()));
  // The same profile read later is fine: the tolerance is against the reader's clock.
  doc["status"]["link"]["measuredAt"] = "2026-11-30T13:00:00Z";
  EXPECT_THROW(parse_comm_profile(doc, test_now()), ValidationError);
  EXPECT_NO_THROW(parse_comm_profile(doc, test_now() + std::chrono::hours(1)));
}

TEST(CommProfileParsing, reports_every_garbage_measurement_in_one_pass) {
  Json doc = valid_profile();
  doc["status"]["link"]["busbwGBps"] = 0;
  doc["status"]["link"]["nodesProbed"] = 1;
  doc["status"]["link"]["measuredAt"] = "2099-01-01T00:00:00Z";
  doc["status"]["computeSteps"][0]["stepTimeMs"] = 0;
  try {
    parse_comm_profile(doc, test_now());
    FAIL();
  } catch (const ValidationError& e) {
    EXPECT_EQ(e.errors().size(), 4u) << e.what();
  }
}

TEST(CommProfileParsing, optimizer_of_a_compute_record) {
  Json doc = valid_profile();
  EXPECT_EQ(parse_comm_profile(doc, test_now()).status.compute_steps.at(0).optimizer, "sgd");
  // Records written before the field existed timed Adam.
  doc["status"]["computeSteps"][0].erase("optimizer");
  const CommProfile p = parse_comm_profile(doc, test_now());
  EXPECT_EQ(p.status.compute_steps.at(0).optimizer, "adam");
  // to_json writes it, so the record keeps saying what it measured.
  EXPECT_EQ(to_json(p)["status"]["computeSteps"][0]["optimizer"], "adam");
  EXPECT_EQ(to_json(parse_comm_profile(to_json(p), test_now())), to_json(p));
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
