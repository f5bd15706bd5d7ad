#include <gtest/gtest.h>

#include "core/comm_policy.h"
#include "core/probe_timeout.h"
#include "core/yaml_json.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using Json = nlohmann::json;

Json minimal_policy() {
  return {{"apiVersion", "commgate.io/v1alpha1"},
          {"kind", "CommPolicy"},
          {"metadata", {{"name", "team-a"}}},
          {"spec", {{"maxCommShare", 0.3}}}};
}

struct Case {
  std::string name;
  std::string pointer;
  std::optional<Json> value;
  std::string want_path;
  std::string want_message;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class CommPolicyErrors : public ::testing::TestWithParam<Case> {};

TEST_P(CommPolicyErrors, names_the_field) {
  const Case& c = GetParam();
  Json doc = minimal_policy();
  Json::json_pointer p(c.pointer);
  if (c.value)
    doc[p] = *c.value;
  else
    doc[p.parent_pointer()].erase(p.back());
  try {
    parse_comm_policy(doc);
    FAIL() << "expected a ValidationError";
  } catch (const ValidationError& e) {
    bool found = false;
    for (const auto& fe : e.errors().all()) {
      if (fe.path == c.want_path && fe.message.find(c.want_message) != std::string::npos)
        found = true;
    }
    EXPECT_TRUE(found) << "want " << c.want_path << ": ..." << c.want_message << "\ngot:\n"
                       << e.errors().to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Parsing, CommPolicyErrors,
    ::testing::Values(
        Case{"missing_max_comm_share", "/spec/maxCommShare", std::nullopt, "spec.maxCommShare",
             "required"},
        Case{"max_comm_share_above_one", "/spec/maxCommShare", 1.5, "spec.maxCommShare",
             "must be <= 1, got 1.5"},
        Case{"max_comm_share_percent_string", "/spec/maxCommShare", "30%", "spec.maxCommShare",
             "must be a number"},
        Case{"efficiency_negative", "/spec/minScalingEfficiency", -0.1, "spec.minScalingEfficiency",
             "must be >= 0"},
        Case{"unknown_action", "/spec/enforcementAction", "reject", "spec.enforcementAction",
             "must be one of downsize, deny, warn, dryrun"},
        Case{"unknown_missing_action", "/spec/onMissingMeasurement", "wait",
             "spec.onMissingMeasurement", "must be one of gate, admit, deny"},
        Case{"ttl_without_unit", "/spec/measurementTTL", "24", "spec.measurementTTL",
             "must be a duration"},
        Case{"ttl_in_days", "/spec/measurementTTL", "1d", "spec.measurementTTL",
             "must be a duration"},
        Case{"ttl_as_number", "/spec/measurementTTL", 3600, "spec.measurementTTL",
             "must be a duration string"},
        Case{"namespaced_policy", "/metadata/namespace", "default", "metadata.namespace",
             "cluster-scoped"},
        Case{"selector_bad_operator", "/spec/namespaceSelector",
             Json{{"matchExpressions",
                   {{{"key", "team"}, {"operator", "Equals"}, {"values", {"a"}}}}}},
             "spec.namespaceSelector.matchExpressions[0].operator", "must be one of In, NotIn"},
        Case{"selector_in_without_values", "/spec/namespaceSelector",
             Json{{"matchExpressions", {{{"key", "team"}, {"operator", "In"}}}}},
             "spec.namespaceSelector.matchExpressions[0].values", "must be non-empty"},
        Case{"probe_backend_mpi", "/spec/probe", Json{{"backend", "mpi"}}, "spec.probe.backend",
             "must be one of auto"},
        Case{"probe_timeout_too_short", "/spec/probe", Json{{"timeoutSeconds", 1}},
             "spec.probe.timeoutSeconds", "must be >= 10"},
        Case{"probe_sizes_inverted", "/spec/probe",
             Json{{"sizes", {{"min", "64Mi"}, {"max", "1Mi"}}}}, "spec.probe.sizes.min",
             "must be <= spec.probe.sizes.max"},
        Case{"probe_max_nodes_one", "/spec/probe", Json{{"maxNodes", 1}}, "spec.probe.maxNodes",
             "must be >= 2"},
        Case{"toleration_key_blank", "/spec/probe",
             Json{{"tolerationKeys", {"nvidia.com/gpu", ""}}}, "spec.probe.tolerationKeys[1]",
             "must be a taint key such as nvidia.com/gpu"},
        Case{"toleration_keys_not_a_list", "/spec/probe", Json{{"tolerationKeys", "a"}},
             "spec.probe.tolerationKeys", "must be a list of strings"},
        Case{"service_account_without_namespace", "/spec/exemptions",
             Json{{"serviceAccounts", {"nightly"}}}, "spec.exemptions.serviceAccounts[0]",
             "must be \"namespace/name\""},
        Case{"users_not_a_list", "/spec/exemptions", Json{{"users", "alice"}},
             "spec.exemptions.users", "must be a list of strings"},
        Case{"retry_max_below_base", "/spec/retryStrategy",
             Json{{"backoffBaseSeconds", 60}, {"backoffMaxSeconds", 10}},
             "spec.retryStrategy.backoffMaxSeconds", "must be >= backoffBaseSeconds (60)"},
        Case{"unknown_field_hint", "/spec/maxCommShar", 0.3, "spec.maxCommShar",
             "unknown field (did you mean \"maxCommShare\"?)"},
        Case{"action_typo_gets_a_hint", "/spec/enforcementAction", "downsise",
             "spec.enforcementAction", "got \"downsise\" (did you mean \"downsize\"?)"},
        Case{"max_extrapolation_zero", "/spec/maxExtrapolation", 0, "spec.maxExtrapolation",
             "must be >= 1, got 0"},
        Case{"max_extrapolation_fraction", "/spec/maxExtrapolation", 1.5, "spec.maxExtrapolation",
             "must be an integer"},
        Case{"null_match_expression", "/spec/namespaceSelector",
             Json{{"matchExpressions", Json::array({nullptr})}},
             "spec.namespaceSelector.matchExpressions[0]", "must be an object, got null"},
        Case{"max_pending_below_a_minute", "/spec/admissionCheck", Json{{"maxPendingSeconds", 59}},
             "spec.admissionCheck.maxPendingSeconds", "must be >= 60, got 59"},
        Case{"max_pending_above_a_day", "/spec/admissionCheck", Json{{"maxPendingSeconds", 86401}},
             "spec.admissionCheck.maxPendingSeconds", "must be <= 86400, got 86401"},
        Case{"max_pending_as_a_duration", "/spec/admissionCheck",
             Json{{"maxPendingSeconds", "30m"}}, "spec.admissionCheck.maxPendingSeconds",
             "must be an integer"},
        Case{"without_model_lower_case", "/spec/admissionCheck", Json{{"withoutModel", "ready"}},
             "spec.admissionCheck.withoutModel",
             "must be one of Ready, Rejected, got \"ready\" (did you mean \"Ready\"?)"},
        Case{"admission_check_not_an_object", "/spec/admissionCheck", "Rejected",
             "spec.admissionCheck", "must be an object"},
        Case{"admission_check_unknown_field", "/spec/admissionCheck",
             Json{{"maxPendingSecond", 600}}, "spec.admissionCheck.maxPendingSecond",
             "unknown field (did you mean \"maxPendingSeconds\"?)"},
        Case{"creation_timestamp_february_30", "/metadata/creationTimestamp",
             "2026-02-30T00:00:00Z", "metadata.creationTimestamp", "must be an RFC 3339 time"}),
    [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

TEST(CommPolicyParsing, applies_defaults) {
  CommPolicy p = parse_comm_policy(minimal_policy());
  EXPECT_EQ(p.spec.enforcement_action, EnforcementAction::kDownsize);
  EXPECT_EQ(p.spec.on_missing_measurement, MissingMeasurementAction::kGate);
  EXPECT_EQ(p.spec.measurement_ttl, std::chrono::hours(24));
  EXPECT_FALSE(p.spec.min_scaling_efficiency);
  EXPECT_EQ(p.spec.probe.backend, "auto");
  EXPECT_EQ(p.spec.probe.max_nodes, 4);
  EXPECT_EQ(p.spec.probe.toleration_keys, std::vector<std::string>{"nvidia.com/gpu"});
  EXPECT_TRUE(p.spec.namespace_selector.empty());
  EXPECT_EQ(p.spec.max_extrapolation, 4);
  EXPECT_EQ(p.spec.max_extrapolation, default_comm_policy().spec.max_extrapolation);
  EXPECT_EQ(p.spec.admission_check.max_pending_seconds, 1800);
  EXPECT_EQ(p.spec.admission_check.without_model, WithoutModelAction::kReady);
}

// The default bound on a Pending check outlasts a probe of the default timeout's size, with
// margin for the probe's pods to schedule and one retry.
TEST(CommPolicyParsing, default_pending_bound_outlasts_the_base_probe_timeout) {
  EXPECT_GE(kDefaultMaxPendingSeconds, 4 * kBaseProbeTimeoutSeconds);
}

TEST(CommPolicyParsing, max_pending_seconds_takes_each_bound) {
  for (int seconds : {60, 600, 86400}) {
    Json doc = minimal_policy();
    doc["spec"]["admissionCheck"] = {{"maxPendingSeconds", seconds}};
    EXPECT_EQ(parse_comm_policy(doc).spec.admission_check.max_pending_seconds, seconds);
  }
}

// One table per enum: every member parses to itself and prints its own name.
TEST(CommPolicyParsing, enum_names_parse_and_print_from_one_table) {
  for (const auto& [action, name] : kEnforcementActions) {
    Json doc = minimal_policy();
    doc["spec"]["enforcementAction"] = name;
    EXPECT_EQ(parse_comm_policy(doc).spec.enforcement_action, action) << name;
    EXPECT_STREQ(to_string(action), name);
  }
  for (const auto& [action, name] : kMissingMeasurementActions) {
    Json doc = minimal_policy();
    doc["spec"]["onMissingMeasurement"] = name;
    EXPECT_EQ(parse_comm_policy(doc).spec.on_missing_measurement, action) << name;
    EXPECT_STREQ(to_string(action), name);
  }
  for (const auto& [action, name] : kWithoutModelActions) {
    Json doc = minimal_policy();
    doc["spec"]["admissionCheck"] = {{"withoutModel", name}};
    EXPECT_EQ(parse_comm_policy(doc).spec.admission_check.without_model, action) << name;
    EXPECT_STREQ(to_string(action), name);
  }
}

TEST(CommPolicyParsing, round_trips_through_json) {
  auto docs = parse_manifests(R"(
apiVersion: commgate.io/v1alpha1
kind: CommPolicy
metadata: {name: strict}
spec:
  maxCommShare: 0.25
  minScalingEfficiency: 0.8
  enforcementAction: deny
  onMissingMeasurement: admit
  measurementTTL: 1h30m
  namespaceSelector:
    matchLabels: {team: nlp}
    matchExpressions: [{key: tier, operator: NotIn, values: [dev]}]
  probe: {image: "probe:1", timeoutSeconds: 120, sizes: {min: 8Ki, max: 64Mi}, iterations: 10, backend: gloo, maxNodes: 3}
  exemptions: {users: [alice], groups: [admins], serviceAccounts: [bench/nightly]}
  retryStrategy: {backoffLimitCount: 5, backoffBaseSeconds: 10, backoffMaxSeconds: 300}
  maxExtrapolation: 2
  admissionCheck: {maxPendingSeconds: 900, withoutModel: Rejected}
)");
  CommPolicy a = parse_comm_policy(docs.at(0));
  CommPolicy b = parse_comm_policy(to_json(a));
  EXPECT_EQ(to_json(a), to_json(b));
  EXPECT_EQ(b.spec.measurement_ttl, std::chrono::minutes(90));
  EXPECT_EQ(b.spec.max_extrapolation, 2);
  EXPECT_EQ(b.spec.admission_check.max_pending_seconds, 900);
  EXPECT_EQ(b.spec.admission_check.without_model, WithoutModelAction::kRejected);
  EXPECT_DOUBLE_EQ(b.spec.probe.max_bytes, 64.0 * 1048576);
  EXPECT_TRUE(b.spec.namespace_selector.matches({{"team", "nlp"}, {"tier", "prod"}}));
  EXPECT_FALSE(b.spec.namespace_selector.matches({{"team", "nlp"}, {"tier", "dev"}}));
  EXPECT_FALSE(b.spec.namespace_selector.matches({{"tier", "prod"}}));
}

TEST(LabelSelector, operators_behave_as_in_kubernetes) {
  LabelSelector s;
  s.match_expressions = {{"a", "Exists", {}}, {"b", "DoesNotExist", {}}, {"c", "In", {"1", "2"}}};
  EXPECT_TRUE(s.matches({{"a", ""}, {"c", "2"}}));
  EXPECT_FALSE(s.matches({{"a", ""}, {"b", "x"}, {"c", "2"}}));
  EXPECT_FALSE(s.matches({{"a", ""}, {"c", "3"}}));
  EXPECT_TRUE(LabelSelector{}.matches({}));
}

// YAML's .inf, -.inf and .nan are numbers JSON cannot hold: named as written, not "null".
TEST(CommPolicyParsing, non_finite_yaml_numbers_are_named) {
  auto docs = parse_manifests(
      "apiVersion: commgate.io/v1alpha1\nkind: CommPolicy\nmetadata: {name: p}\n"
      "spec: {maxCommShare: .inf, minScalingEfficiency: .NaN, maxExtrapolation: -.Inf,"
      " probe: {sizes: {max: +.inf}}}\n");
  ASSERT_EQ(docs.size(), 1u);
  try {
    parse_comm_policy(docs[0]);
    FAIL() << "expected a ValidationError";
  } catch (const ValidationError& e) {
    const std::string what = e.what();
    for (const char* want : {"spec.maxCommShare: must be a finite number, got .inf",
                             "spec.minScalingEfficiency: must be a finite number, got .nan",
                             "spec.maxExtrapolation: must be a finite number, got -.inf",
                             "spec.probe.sizes.max: must be a finite number, got .inf"}) {
      EXPECT_NE(what.find(want), std::string::npos) << want << "\n" << what;
    }
    EXPECT_EQ(what.find("null"), std::string::npos) << what;
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
