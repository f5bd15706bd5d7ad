// The CRDs and the C++ parsers must accept the same objects: a field the apiserver
// stores but commgate refuses (or the reverse) is a bug a user meets at the worst time.
// These tests read crds/*.yaml and, for each kind, compare the schema with the parser
// on generated documents: every field, every bound, every enum member, every required
// field, every default. Rules the schema cannot express are listed, with the parser's
// verdict, so docs/api.md can say who enforces them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "core/comm_policy.h"
#include "core/comm_profile.h"
#include "core/decision.h"
#include "core/model_names.h"
#include "core/profile_recording.h"
#include "core/quantity.h"
#include "core/training_job.h"
#include "core/yaml_json.h"
#include "tests/crds/schema_check.h"
#include "tests/support/builders.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using testing::a_measurement;
using testing::a_policy;
using testing::a_training_job;
using testing::crd_schema;
using testing::for_each_property;
using testing::Json;
using testing::load_crd;
using testing::schema_at;
using testing::validate;

// ---------------------------------------------------------------------------------
// The three kinds as the parsers see them.

// What a parser made of a document, as JSON, so that two parses compare with ==.
Json job_fingerprint(const TrainingJob& j) {
  const TrainingJobSpec& s = j.spec;
  const ModelSpec& m = s.model;
  const RunPolicy& r = s.run_policy;
  auto opt = [](const auto& o) { return o ? Json(*o) : Json(); };
  return {{"numNodes", s.num_nodes},
          {"minNodes", s.min_nodes},
          {"numProcPerNode", s.num_proc_per_node},
          {"suspend", s.suspend},
          {"nodeSelector", s.node_selector},
          {"tolerations", s.tolerations},
          {"model",
           {{"parameters", m.parameters},
            {"gradientDtype", m.gradient_dtype},
            {"torchScript", m.torch_script},
            {"inputShape", m.input_shape},
            {"batchSize", m.batch_size},
            {"optimizer", m.optimizer},
            {"stepTimeHintMs", opt(m.step_time_hint_ms)}}},
          {"template", s.pod_template},
          {"policyRef", s.policy_ref},
          {"runPolicy",
           {{"backoffLimit", opt(r.backoff_limit)},
            {"activeDeadlineSeconds", opt(r.active_deadline_seconds)},
            {"ttlSecondsAfterFinished", opt(r.ttl_seconds_after_finished)}}}};
}

Json policy_fingerprint(const CommPolicy& p) {
  Json j = to_json(p);
  // to_json prints byte sizes with 4 significant digits; compare the exact values.
  j["spec"]["probe"]["sizes"] = {{"min", p.spec.probe.min_bytes}, {"max", p.spec.probe.max_bytes}};
  j["spec"]["measurementTTL"] = p.spec.measurement_ttl.count();
  return j;
}

struct Kind {
  std::string name;
  std::string crd_file;
  std::function<Json(const Json&)> parse;  // throws ValidationError
  Json minimal;
  Json full;  // every field of the schema, valid
  // Subtrees the parser keeps or skips without reading: the schema alone decides there.
  std::vector<std::string> parser_ignores;
};

Json full_condition() {
  return {{"type", "Admitted"},
          {"status", "True"},
          {"observedGeneration", 2},
          {"lastTransitionTime", "2026-11-30T12:00:00Z"},
          {"reason", "OverPolicyDownsized"},
          {"message", "Downsized from 4 to 2 nodes"}};
}

Kind training_job_kind() {
  Kind k;
  k.name = "TrainingJob";
  k.crd_file = "trainingjobs.commgate.io.yaml";
  k.parse = [](const Json& doc) { return job_fingerprint(parse_training_job(doc)); };
  k.minimal = a_training_job("bert").json();
  k.full = Json::parse(R"({
    "apiVersion": "commgate.io/v1alpha1", "kind": "TrainingJob",
    "metadata": {"name": "bert-large", "namespace": "nlp"},
    "spec": {
      "numNodes": 4, "minNodes": 2, "numProcPerNode": 2, "suspend": false,
      "nodeSelector": {"commgate.io/pool": "gpu-a100"},
      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                       "effect": "NoExecute", "tolerationSeconds": 300}],
      "model": {"parameters": "340M", "gradientDtype": "bf16", "torchScript": "/models/bert.pt",
                "inputShape": [128], "batchSize": 16, "optimizer": "sgd-momentum",
                "stepTimeHintMs": 250.5},
      "template": {"metadata": {"labels": {"app": "bert"}},
                   "spec": {"containers": [{"name": "trainer", "image": "registry.example/bert:2",
                                            "command": ["torchrun", "train.py"]}]}},
      "policyRef": {"name": "strict"},
      "runPolicy": {"backoffLimit": 2, "activeDeadlineSeconds": 86400, "ttlSecondsAfterFinished": 3600}
    },
    "status": {
      "phase": "Downsized", "observedGeneration": 2, "admittedNodes": 2,
      "workloadUID": "6d0c7a8e-3c1f-4b7e-9a52-0e4b8f3d2a11",
      "probeAttempts": 1, "nextProbeTime": "2026-11-30T11:05:00Z",
      "measurement": {"source": "CommProfile pool-all", "probeTime": "2026-11-30T11:00:00Z",
        "computeMeasuredAt": "2026-11-30T10:00:00Z", "nodesProbed": 2, "procsPerNode": 1, "backend": "gloo", "transport": "socket",
        "interface": "eth0", "device": "cpu", "gpuProduct": "", "busbwGBps": 0.118,
        "algbwGBps": 0.112, "latencyUs": 210.5, "fitPoor": false, "fitNote": "",
        "computeStepMs": 300, "computeSource": "measured", "measuredStepMs": 412.0,
        "exposedCommMs": 112.0, "measuredCommShare": 0.27},
      "decision": {"action": "Downsize", "reason": "OverPolicyDownsized", "message": "Downsized.",
        "policy": "default", "requestedNodes": 4, "admittedNodes": 2, "largestPassingNodes": 2,
        "wouldAction": "Downsize", "wouldAdmitNodes": 2, "predictedCommShare": 0.359,
        "nodesProbed": 2,
        "predictions": [{"nodes": 1, "measured": false, "stepTimeMs": 300, "computeMs": 300,
                         "allReduceMs": 0, "exposedCommMs": 0, "commShare": 0, "speedup": 1,
                         "scalingEfficiency": 1}],
        "correction": {"applied": true, "note": "", "busbwFactor": 0.9, "overlap": 0.4,
                       "reproducesMeasuredStep": true, "fromBucketsAlone": true,
                       "stepOverheadMs": 0},
        "advice": [{"kind": "link", "text": "The link: 4 nodes would pass with ..."}],
        "rawPredictions": [{"nodes": 1, "measured": false, "stepTimeMs": 300, "computeMs": 300,
                            "allReduceMs": 0, "exposedCommMs": 0, "commShare": 0, "speedup": 1,
                            "scalingEfficiency": 1}]}
    }
  })");
  k.full["status"]["conditions"] = Json::array({full_condition()});
  k.parser_ignores = {"status"};
  return k;
}

Kind comm_policy_kind() {
  Kind k;
  k.name = "CommPolicy";
  k.crd_file = "commpolicies.commgate.io.yaml";
  k.parse = [](const Json& doc) { return policy_fingerprint(parse_comm_policy(doc)); };
  k.minimal = Json::parse(R"({"apiVersion": "commgate.io/v1alpha1", "kind": "CommPolicy",
                              "metadata": {"name": "p"}, "spec": {"maxCommShare": 0.3}})");
  k.full = Json::parse(R"({
    "apiVersion": "commgate.io/v1alpha1", "kind": "CommPolicy", "metadata": {"name": "strict"},
    "spec": {
      "maxCommShare": 0.25, "minScalingEfficiency": 0.75, "enforcementAction": "deny",
      "namespaceSelector": {"matchLabels": {"team": "nlp"},
                            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]},
      "measurementTTL": "12h", "onMissingMeasurement": "deny", "maxExtrapolation": 8,
      "unmanagedWorkloads": "deny", "onInsufficientNodes": "deny",
      "admissionCheck": {"maxPendingSeconds": 900, "withoutModel": "Rejected"},
      "probe": {"image": "registry.example/commgate-probe:0.1", "timeoutSeconds": 600,
                "sizes": {"min": "16Ki", "max": "128Mi"}, "iterations": 30, "warmupIterations": 3,
                "backend": "nccl", "maxNodes": 8, "tolerationKeys": ["nvidia.com/gpu", "pool"]},
      "exemptions": {"users": ["alice"], "groups": ["ml-platform-admins"],
                     "serviceAccounts": ["benchmarks/nightly"]},
      "retryStrategy": {"backoffLimitCount": 5, "backoffBaseSeconds": 10, "backoffMaxSeconds": 300}
    },
    "status": {"observedGeneration": 1,
               "decisionCounts": {"countingSince": "2026-11-30T00:00:00Z", "admitted": 10,
                 "downsized": 2, "denied": 1, "warned": 0, "gated": 3, "exempted": 1,
                 "dryRunWouldDownsize": 0, "dryRunWouldDeny": 0},
               "governance": {"governedNamespaces": ["nlp-a"], "governedNamespaceCount": 1,
                 "shadowedNamespaceCount": 0}}
  })");
  k.full["status"]["conditions"] = Json::array({full_condition()});
  k.full["status"]["lastValid"] = {
      {"generation", 1}, {"resourceVersion", "41"}, {"spec", k.full["spec"]}};
  k.parser_ignores = {"status"};
  return k;
}

Kind comm_profile_kind() {
  Kind k;
  k.name = "CommProfile";
  k.crd_file = "commprofiles.commgate.io.yaml";
  k.parse = [](const Json& doc) { return to_json(parse_comm_profile(doc, testing::test_now())); };
  k.minimal = Json::parse(R"({"apiVersion": "commgate.io/v1alpha1", "kind": "CommProfile",
                              "metadata": {"name": "pool-all"}})");
  k.full = Json::parse(R"({
    "apiVersion": "commgate.io/v1alpha1", "kind": "CommProfile", "metadata": {"name": "pool-1"},
    "spec": {"nodeSelector": {"commgate.io/pool": "cpu-1gbe"}, "hostnames": ["gpu-1", "gpu-2"]},
    "status": {
      "link": {"latencyUs": 210.5, "busbwGBps": 0.118, "algbwGBps": 0.112, "nodesProbed": 2,
               "procsPerNode": 1, "maxRelativeResidual": 0.04, "poor": false, "note": "",
               "measuredAt": "2026-11-30T11:00:00Z"},
      "lastProbeTime": "2026-11-30T11:00:00Z", "backend": "gloo", "transport": "socket",
      "interface": "eth0", "device": "cpu", "gpuProduct": "",
      "links": {"rateBitsPerSecond": 25000000000, "ranksKnown": 2, "ranks": 2,
                "infinibandPresent": false},
      "computeSteps": [{"parameters": 25000000, "gradientDtype": "fp32", "batchSize": 32,
                        "optimizer": "sgd", "gpuProduct": "", "stepTimeMs": 300, "forwardMs": 90, "backwardMs": 180,
                        "optimizerMs": 30, "measuredAt": "2026-11-30T11:00:00Z",
                        "ddpStep": {"nodes": 2, "procsPerNode": 1, "stepTimeMs": 412,
                                    "computeOnlyStepTimeMs": 300, "exposedCommMs": 112,
                                    "commShare": 0.27, "allReduceMs": 95,
                                    "bucketCapBytes": 26214400,
                                    "firstBucketBytes": 1048576, "buckets": 4,
                                    "linkBusbwGBps": 0.118, "linkLatencyUs": 210.5},
                        "spread": {"medianMs": 310, "p10Ms": 290, "p90Ms": 340, "samples": 10,
                                   "rounds": 1, "slowestRankStepMs": 330, "slowestRank": 1}}],
      "probe": {"failedAttempts": 1, "nextProbeTime": "2026-11-30T11:05:00Z",
                "lastProbeUID": "0b5d7e3c-1", "lastFailure": {"reason": "ProbeFailed",
                "message": "rank 0 exited 3", "time": "2026-11-30T11:04:30Z"}},
      "observedGeneration": 1
    }
  })");
  k.full["status"]["conditions"] = Json::array({full_condition()});
  // The measurement controller's bookkeeping (operator/probe_history.h reads and writes
  // it), not the measurement core's reader and the webhook read.
  k.parser_ignores = {"status.conditions", "status.observedGeneration", "status.lastProbeTime",
                      "status.probe"};
  return k;
}

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {training_job_kind(), comm_policy_kind(), comm_profile_kind()};
  return k;
}

const Kind& kind_named(const std::string& name) {
  for (const auto& k : kinds()) {
    if (k.name == name) return k;
  }
  throw std::runtime_error("no kind " + name);
}

// The parser's verdict on a document.
struct Verdict {
  std::optional<Json> parsed;
  std::vector<FieldError> errors;
  bool ok() const { return parsed.has_value(); }
  const FieldError* at(const std::string& path) const {
    for (const auto& e : errors) {
      if (e.path == path) return &e;
    }
    return nullptr;
  }
  std::string describe() const {
    std::string out;
    for (const auto& e : errors) out += "  " + e.to_string() + "\n";
    return out;
  }
};

Verdict run_parser(const Kind& kind, const Json& doc) {
  Verdict v;
  try {
    v.parsed = kind.parse(doc);
  } catch (const ValidationError& e) {
    v.errors = e.errors().all();
  }
  return v;
}

bool schema_names(const std::vector<testing::SchemaIssue>& issues, const std::string& path) {
  for (const auto& i : issues) {
    if (i.path == path) return true;
  }
  return false;
}

bool starts_with_path(const std::string& path, const std::string& prefix) {
  return path == prefix || path.rfind(prefix + ".", 0) == 0 || path.rfind(prefix + "[", 0) == 0;
}

std::string schema_path_of(const std::string& field_path) {
  static const std::regex kIndex(R"(\[[0-9]+\])");
  return std::regex_replace(field_path, kIndex, "[]");
}

std::string parent_pointer(const std::string& pointer) {
  return pointer.substr(0, pointer.rfind('/'));
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class KindTest : public ::testing::TestWithParam<std::string> {
 protected:
  const Kind& kind = kind_named(GetParam());
  Json crd = load_crd(kind.crd_file);
  const Json& schema = crd_schema(crd);
};

std::string kind_test_name(const ::testing::TestParamInfo<std::string>& p) {
  return p.param;
}

// ---------------------------------------------------------------------------------
// Field names: the full documents hold every schema field, and both sides accept them.

TEST_P(KindTest, full_document_fits_schema_and_parser) {
  auto issues = validate(schema, kind.full);
  EXPECT_TRUE(issues.empty()) << testing::to_string(issues);
  Verdict v = run_parser(kind, kind.full);
  EXPECT_TRUE(v.ok()) << v.describe();
}

TEST_P(KindTest, every_schema_field_appears_in_the_full_document) {
  // The parser rejects unknown fields, so a schema field it does not know would make the
  // full document fail to parse; this test makes sure the full document has them all.
  std::set<std::string> present;
  for (const auto& leaf : testing::leaves(schema, kind.full)) {
    std::string p = schema_path_of(leaf.path);
    while (!p.empty()) {
      present.insert(p);
      size_t cut = p.find_last_of(".[");
      p = cut == std::string::npos ? "" : p.substr(0, cut);
    }
  }
  std::vector<std::string> missing;
  for_each_property(schema, "", [&](const std::string& path, const Json&) {
    if (path.back() == '}' || starts_with_path(path, "metadata") || path == "apiVersion" ||
        path == "kind") {
      return;
    }
    if (!present.count(path)) missing.push_back(path);
  });
  EXPECT_TRUE(missing.empty()) << "schema fields missing from the full " << kind.name
                               << " document: " << ::testing::PrintToString(missing);
}

// ---------------------------------------------------------------------------------
// Generated agreement: change one field of the full document at a time; the schema and
// the parser must both accept or both refuse, and a refusal must name the same field.

struct Mutation {
  std::string label;
  std::string path;           // field path of the change ("spec.tolerations[0].key")
  std::string pointer;        // JSON pointer to it
  std::optional<Json> value;  // nullopt: remove the field
  bool want_valid;
};

// Cross-field rules tie some fields together: changing one means adjusting its partner,
// or the document fails for an unrelated reason. Keyed by schema path; gets the document
// and the pointer of the object holding the field.
using Companion = std::function<void(Json&, const std::string&, const std::optional<Json>&)>;

const std::map<std::string, Companion>& companions() {
  static const std::map<std::string, Companion> c = {
      {"spec.numNodes",
       [](Json& d, const std::string&, const auto&) { d["spec"].erase("minNodes"); }},
      {"spec.minNodes",
       [](Json& d, const std::string&, const auto&) { d["spec"]["numNodes"] = 10000; }},
      {"spec.model.inputShape",
       [](Json& d, const std::string&, const auto& v) {
         if (!v) d["spec"]["model"].erase("torchScript");
       }},
      {"spec.tolerations[].operator",
       [](Json& d, const std::string& parent, const auto& v) {
         if (v && *v == "Exists") d[Json::json_pointer(parent)].erase("value");
       }},
      {"spec.tolerations[].effect",
       [](Json& d, const std::string& parent, const auto& v) {
         if (!v || *v != "NoExecute") d[Json::json_pointer(parent)].erase("tolerationSeconds");
       }},
      {"spec.tolerations[].key",
       [](Json& d, const std::string& parent, const auto&) {
         Json& t = d[Json::json_pointer(parent)];
         t["operator"] = "Exists";
         t.erase("value");
       }},
      {"spec.namespaceSelector.matchExpressions[].operator",
       [](Json& d, const std::string& parent, const auto& v) {
         Json& e = d[Json::json_pointer(parent)];
         if (v && (*v == "Exists" || *v == "DoesNotExist")) e.erase("values");
       }},
      {"spec.namespaceSelector.matchExpressions[].values",
       [](Json& d, const std::string& parent, const auto& v) {
         if (!v) d[Json::json_pointer(parent)]["operator"] = "Exists";
       }},
      {"spec.probe.sizes.max",
       [](Json& d, const std::string&, const auto&) { d["spec"]["probe"]["sizes"]["min"] = 4; }},
      {"spec.retryStrategy.backoffBaseSeconds",
       [](Json& d, const std::string&, const auto&) {
         d["spec"]["retryStrategy"]["backoffMaxSeconds"] = 86400;
       }},
      {"spec.retryStrategy.backoffMaxSeconds",
       [](Json& d, const std::string&, const auto&) {
         d["spec"]["retryStrategy"]["backoffBaseSeconds"] = 1;
       }},
  };
  return c;
}

void add_bounds(std::vector<Mutation>& out, const testing::Leaf& leaf, const Json& s,
                bool integral) {
  auto add = [&](const std::string& label, Json v, bool valid) {
    out.push_back({label, leaf.path, leaf.pointer, std::move(v), valid});
  };
  if (s.contains("minimum")) {
    if (integral) {
      const int64_t min = s["minimum"];
      add("minimum", min, true);
      add("below minimum", min - 1, false);
    } else {
      const double min = s["minimum"];
      if (s.value("exclusiveMinimum", false)) {
        add("exclusive minimum", min, false);
        add("just above exclusive minimum", min + 0.5, true);
      } else {
        add("minimum", min, true);
        add("below minimum", min - 0.01, false);
      }
    }
  }
  if (s.contains("maximum")) {
    if (integral) {
      const int64_t max = s["maximum"];
      add("maximum", max, true);
      add("above maximum", max + 1, false);
    } else {
      const double max = s["maximum"];
      add("maximum", max, true);
      add("above maximum", max + 0.01, false);
    }
  }
}

std::vector<Mutation> mutations_of(const Kind& kind, const Json& schema) {
  std::vector<Mutation> out;
  auto ignored = [&](const std::string& path) {
    // Type and object metadata are the apiserver's to check.
    if (starts_with_path(path, "metadata") || path == "apiVersion" || path == "kind") return true;
    for (const auto& p : kind.parser_ignores) {
      if (starts_with_path(path, p)) return true;
    }
    return false;
  };
  for (const auto& leaf : testing::leaves(schema, kind.full)) {
    if (!leaf.schema || ignored(leaf.path)) continue;
    const Json& s = *leaf.schema;
    auto add = [&](const std::string& label, Json v, bool valid) {
      out.push_back({label, leaf.path, leaf.pointer, std::move(v), valid});
    };
    if (s.value("x-kubernetes-int-or-string", false)) {
      add("wrong type", true, false);
      add_bounds(out, leaf, s, true);
      continue;
    }
    const std::string type = s.value("type", "");
    if (type == "integer") {
      add("wrong type", "x", false);
      add("fraction", 2.5, false);
      add_bounds(out, leaf, s, true);
    } else if (type == "number") {
      add("wrong type", "x", false);
      add_bounds(out, leaf, s, false);
    } else if (type == "boolean") {
      add("wrong type", "yes", false);
      add("true", true, true);
      add("false", false, true);
    } else if (type == "string") {
      add("wrong type", 5, false);
      if (s.contains("enum")) {
        for (const auto& member : s["enum"]) add("enum member " + member.dump(), member, true);
        add("not an enum member", "not-a-member", false);
      } else if (s.value("format", "") == "date-time") {
        add("not a date-time", "yesterday", false);
      } else if (!s.contains("pattern")) {
        add("empty string", "", s.value("minLength", 0) == 0);
      }
    }
  }
  // Required fields refused when removed; optional ones accepted.
  std::function<void(const Json&, const Json&, const std::string&, const std::string&)> walk;
  walk = [&](const Json& s, const Json& v, const std::string& path, const std::string& pointer) {
    if (v.is_array() && s.contains("items")) {
      for (size_t i = 0; i < v.size(); ++i) {
        walk(s["items"], v[i], index_path(path, i), pointer + "/" + std::to_string(i));
      }
      return;
    }
    if (!v.is_object() || !s.contains("properties")) return;
    std::set<std::string> required;
    for (const auto& r : s.value("required", Json::array())) required.insert(r.get<std::string>());
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!s["properties"].contains(it.key())) continue;
      const std::string child = join_path(path, it.key());
      if (ignored(child)) continue;
      const std::string child_pointer = pointer + "/" + it.key();
      out.push_back({required.count(it.key()) ? "remove required" : "remove optional", child,
                     child_pointer, std::nullopt, !required.count(it.key())});
      walk(s["properties"][it.key()], it.value(), child, child_pointer);
    }
  };
  walk(schema, kind.full, "", "");
  return out;
}

// "must be one of fp32, fp16, bf16, got ..." -> {"fp32", "fp16", "bf16"}
std::set<std::string> allowed_in_message(const std::string& message) {
  std::set<std::string> out;
  const std::string head = "must be one of ";
  if (message.rfind(head, 0) != 0) return out;
  std::string list = message.substr(head.size(), message.find(", got") - head.size());
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(", ", start);
    std::string item =
        list.substr(start, end == std::string::npos ? std::string::npos : end - start);
    out.insert(item == "\"\"" ? "" : item);  // the empty member is printed as ""
    if (end == std::string::npos) break;
    start = end + 2;
  }
  return out;
}

TEST_P(KindTest, schema_and_parser_agree_on_every_single_field_change) {
  const auto mutations = mutations_of(kind, schema);
  EXPECT_GT(mutations.size(), 30u) << "the generator found too few fields";
  std::vector<std::string> disagreements;
  for (const auto& m : mutations) {
    Json doc = kind.full;
    auto companion = companions().find(schema_path_of(m.path));
    if (companion != companions().end()) companion->second(doc, parent_pointer(m.pointer), m.value);
    Json::json_pointer ptr(m.pointer);
    if (m.value)
      doc[ptr] = *m.value;
    else
      doc[ptr.parent_pointer()].erase(ptr.back());

    const std::string what =
        m.path + " (" + m.label + (m.value ? ": " + m.value->dump() : "") + ")";
    const auto issues = validate(schema, doc);
    const Verdict verdict = run_parser(kind, doc);
    if (issues.empty() != m.want_valid) {
      disagreements.push_back(what + ": the CRD schema " +
                              (m.want_valid ? "refuses it:\n" : "accepts it") +
                              testing::to_string(issues));
    }
    if (verdict.ok() != m.want_valid) {
      disagreements.push_back(what + ": the parser " +
                              (m.want_valid ? "refuses it:\n" : "accepts it") + verdict.describe());
    }
    if (!m.want_valid && !verdict.ok() && !verdict.at(m.path)) {
      disagreements.push_back(what + ": the parser does not name the field:\n" +
                              verdict.describe());
    }
    if (!m.want_valid && !issues.empty() && !schema_names(issues, m.path)) {
      disagreements.push_back(what + ": the schema does not name the field:\n" +
                              testing::to_string(issues));
    }
    // The parser's list of allowed values is the CRD's enum, exactly.
    if (m.label == "not an enum member" && verdict.at(m.path)) {
      const Json& e = (*schema_at(schema, schema_path_of(m.path)))["enum"];
      std::set<std::string> crd_enum(e.begin(), e.end());
      if (allowed_in_message(verdict.at(m.path)->message) != crd_enum) {
        disagreements.push_back(what + ": the parser allows \"" + verdict.at(m.path)->message +
                                "\", the CRD enum is " + e.dump());
      }
    }
  }
  EXPECT_TRUE(disagreements.empty()) << disagreements.size() << " disagreements:\n"
                                     << ::testing::PrintToString(disagreements);
}

// ---------------------------------------------------------------------------------
// Defaults: writing a declared default out changes nothing the parser sees, and writing
// another value does (so the default is really what the parser assumes).

Json another_value(const Json& schema, const Json& def) {
  if (schema.contains("enum")) {
    for (const auto& m : schema["enum"]) {
      if (m != def) return m;
    }
  }
  if (def.is_boolean()) return !def.get<bool>();
  if (def.is_number_integer()) {
    const int64_t d = def;
    return schema.contains("maximum") && d + 1 > schema["maximum"].get<int64_t>() ? d - 1 : d + 1;
  }
  if (schema.value("x-kubernetes-int-or-string", false)) return "16Ki";
  if (def.is_string()) return "1h";
  return Json();
}

std::vector<std::string> default_paths(const Json& schema) {
  std::vector<std::string> out;
  for_each_property(schema, "", [&](const std::string& path, const Json& node) {
    if (node.contains("default")) out.push_back(path);
  });
  return out;
}

Json::json_pointer pointer_of(const std::string& dotted) {
  std::string p;
  std::stringstream ss(dotted);
  for (std::string part; std::getline(ss, part, '.');) p += "/" + part;
  return Json::json_pointer(p);
}

TEST_P(KindTest, declared_defaults_are_the_parser_defaults) {
  for (const auto& path : default_paths(schema)) {
    ASSERT_EQ(path.find('['), std::string::npos)
        << path << ": defaults inside lists are not covered";
    const Json& node = *schema_at(schema, path);
    Json absent = kind.minimal;
    // Create the parents as empty objects, as a user who writes "probe: {}" would.
    Json::json_pointer ptr = pointer_of(path);
    if (!absent.contains(ptr.parent_pointer())) absent[ptr.parent_pointer()] = Json::object();
    Json explicit_default = absent;
    explicit_default[ptr] = node["default"];
    Verdict a = run_parser(kind, absent), b = run_parser(kind, explicit_default);
    ASSERT_TRUE(a.ok()) << path << "\n" << a.describe();
    ASSERT_TRUE(b.ok()) << path << "\n" << b.describe();
    EXPECT_EQ(*a.parsed, *b.parsed) << path << ": the CRD default " << node["default"].dump()
                                    << " is not what the parser assumes";
    Json other = another_value(node, node["default"]);
    if (other.is_null()) continue;  // {} for a parent object: its fields are checked one by one
    Json changed = absent;
    changed[ptr] = other;
    Verdict c = run_parser(kind, changed);
    ASSERT_TRUE(c.ok()) << path << " = " << other.dump() << "\n" << c.describe();
    EXPECT_NE(*a.parsed, *c.parsed) << path << ": " << other.dump() << " parses like the default";
  }
}

TEST_P(KindTest, apiserver_defaulting_changes_nothing_the_parser_sees) {
  Json defaulted = testing::apply_defaults(schema, kind.minimal);
  auto issues = validate(schema, defaulted);
  EXPECT_TRUE(issues.empty()) << testing::to_string(issues);
  Verdict a = run_parser(kind, kind.minimal), b = run_parser(kind, defaulted);
  ASSERT_TRUE(a.ok()) << a.describe();
  ASSERT_TRUE(b.ok()) << b.describe();
  EXPECT_EQ(*a.parsed, *b.parsed) << "defaulted:\n" << defaulted.dump(2);
}

INSTANTIATE_TEST_SUITE_P(Kinds, KindTest,
                         ::testing::Values("TrainingJob", "CommPolicy", "CommProfile"),
                         kind_test_name);

// The same, spelled out field by field: what kubectl explain says is the default is
// what commgate assumes.
TEST(CrdDefaults, name_the_parser_defaults_field_by_field) {
  struct Want {
    std::string path;
    Json parser_value;  // what the parser assumes when the field is absent
  };
  const TrainingJob job = parse_training_job(kind_named("TrainingJob").minimal);
  const std::vector<Want> job_defaults = {
      {"spec.minNodes", job.spec.min_nodes},
      {"spec.numProcPerNode", job.spec.num_proc_per_node},
      {"spec.suspend", job.spec.suspend},
      {"spec.model.gradientDtype", job.spec.model.gradient_dtype},
      {"spec.model.batchSize", job.spec.model.batch_size},
      {"spec.model.optimizer", job.spec.model.optimizer},
  };
  const CommPolicySpec p = parse_comm_policy(kind_named("CommPolicy").minimal).spec;
  auto bytes = [](const Json& q) {
    return q.is_string() ? *parse_quantity(q.get<std::string>(), nullptr) : q.get<double>();
  };
  auto nanos = [](const Json& d) { return parse_duration(d.get<std::string>(), nullptr)->count(); };
  const std::vector<Want> policy_defaults = {
      {"spec.enforcementAction", to_string(p.enforcement_action)},
      {"spec.measurementTTL", p.measurement_ttl.count()},
      {"spec.onMissingMeasurement", to_string(p.on_missing_measurement)},
      {"spec.maxExtrapolation", p.max_extrapolation},
      {"spec.unmanagedWorkloads", to_string(p.unmanaged_workloads)},
      {"spec.onInsufficientNodes", to_string(p.on_insufficient_nodes)},
      {"spec.admissionCheck", Json::object()},
      {"spec.admissionCheck.maxPendingSeconds", p.admission_check.max_pending_seconds},
      {"spec.admissionCheck.withoutModel", to_string(p.admission_check.without_model)},
      {"spec.probe", Json::object()},
      {"spec.probe.sizes", Json::object()},
      {"spec.probe.sizes.min", p.probe.min_bytes},
      {"spec.probe.sizes.max", p.probe.max_bytes},
      {"spec.probe.iterations", p.probe.iterations},
      {"spec.probe.warmupIterations", p.probe.warmup_iterations},
      {"spec.probe.backend", p.probe.backend},
      {"spec.probe.maxNodes", p.probe.max_nodes},
      {"spec.probe.tolerationKeys", p.probe.toleration_keys},
      {"spec.retryStrategy", Json::object()},
      {"spec.retryStrategy.backoffLimitCount", p.retry_strategy.backoff_limit_count},
      {"spec.retryStrategy.backoffBaseSeconds", p.retry_strategy.backoff_base_seconds},
      {"spec.retryStrategy.backoffMaxSeconds", p.retry_strategy.backoff_max_seconds},
  };
  struct Crd {
    std::string file;
    std::vector<Want> wants;
  };
  for (const Crd& c : {Crd{"trainingjobs.commgate.io.yaml", job_defaults},
                       Crd{"commpolicies.commgate.io.yaml", policy_defaults},
                       Crd{"commprofiles.commgate.io.yaml", {}}}) {
    const Json crd = load_crd(c.file);
    std::vector<std::string> want_paths;
    for (const auto& w : c.wants) {
      want_paths.push_back(w.path);
      const Json* node = schema_at(crd_schema(crd), w.path);
      ASSERT_NE(node, nullptr) << w.path;
      ASSERT_TRUE(node->contains("default")) << c.file << ": " << w.path << " declares no default";
      const Json& d = (*node)["default"];
      Json declared = d;
      if (w.path == "spec.measurementTTL") declared = nanos(d);
      if (w.path.find("sizes.") != std::string::npos) declared = bytes(d);
      EXPECT_EQ(declared, w.parser_value) << w.path << ": the CRD declares " << d.dump();
    }
    auto declared = default_paths(crd_schema(crd));
    EXPECT_EQ(std::set<std::string>(declared.begin(), declared.end()),
              std::set<std::string>(want_paths.begin(), want_paths.end()))
        << c.file << ": every default is listed here";
  }
}

TEST(CrdDefaults, required_fields_have_no_default) {
  const Json job = load_crd("trainingjobs.commgate.io.yaml");
  EXPECT_FALSE(schema_at(crd_schema(job), "spec.numNodes")->contains("default"));
  const Json policy = load_crd("commpolicies.commgate.io.yaml");
  EXPECT_FALSE(schema_at(crd_schema(policy), "spec.maxCommShare")->contains("default"));
}

TEST(CrdDefaults, defaulted_minimal_policy_is_the_builtin_default_policy) {
  const Kind& k = kind_named("CommPolicy");
  Json doc = k.minimal;
  doc["metadata"]["name"] = "default";
  doc = testing::apply_defaults(crd_schema(load_crd(k.crd_file)), doc);
  // The built-in default's spec, under an object's name (the built-in one's name is one no
  // object can have).
  CommPolicy builtin = default_comm_policy();
  builtin.metadata.name = "default";
  EXPECT_EQ(policy_fingerprint(parse_comm_policy(doc)), policy_fingerprint(builtin));
  auto example = parse_manifests(
      read_file(std::filesystem::path(COMMGATE_SOURCE_DIR) / "examples/policies/default.yaml"));
  ASSERT_EQ(example.size(), 1u);
  EXPECT_EQ(policy_fingerprint(parse_comm_policy(example[0])), policy_fingerprint(builtin));
}

// ---------------------------------------------------------------------------------
// Enums that mirror C++ enums: the CRD lists exactly the names the code prints.

std::set<std::string> enum_at(const std::string& file, const std::string& path) {
  const Json crd = load_crd(file);
  const Json* node = schema_at(crd_schema(crd), path);
  if (!node || !node->contains("enum")) return {};
  return {(*node)["enum"].begin(), (*node)["enum"].end()};
}

TEST(CrdEnums, mirror_the_code_enums) {
  std::set<std::string> actions;
  for (Action a :
       {Action::kAdmit, Action::kDownsize, Action::kDeny, Action::kWarn, Action::kGate}) {
    actions.insert(to_string(a));
  }
  EXPECT_EQ(enum_at("trainingjobs.commgate.io.yaml", "status.decision.action"), actions);
  std::set<std::string> enforcement;
  for (auto a : {EnforcementAction::kDownsize, EnforcementAction::kDeny, EnforcementAction::kWarn,
                 EnforcementAction::kDryRun}) {
    enforcement.insert(to_string(a));
  }
  EXPECT_EQ(enum_at("commpolicies.commgate.io.yaml", "spec.enforcementAction"), enforcement);
  std::set<std::string> missing;
  for (auto a : {MissingMeasurementAction::kGate, MissingMeasurementAction::kAdmit,
                 MissingMeasurementAction::kDeny}) {
    missing.insert(to_string(a));
  }
  EXPECT_EQ(enum_at("commpolicies.commgate.io.yaml", "spec.onMissingMeasurement"), missing);
  std::set<std::string> without_model;
  for (const auto& [value, name] : kWithoutModelActions) without_model.insert(name);
  EXPECT_EQ(enum_at("commpolicies.commgate.io.yaml", "spec.admissionCheck.withoutModel"),
            without_model);
  // The model settings several kinds share: one list in core/model_names.h.
  const std::set<std::string> dtypes(kGradientDtypes.begin(), kGradientDtypes.end());
  const std::set<std::string> optimizers(kOptimizers.begin(), kOptimizers.end());
  EXPECT_EQ(enum_at("trainingjobs.commgate.io.yaml", "spec.model.gradientDtype"), dtypes);
  EXPECT_EQ(enum_at("commprofiles.commgate.io.yaml", "status.computeSteps[].gradientDtype"),
            dtypes);
  EXPECT_EQ(enum_at("trainingjobs.commgate.io.yaml", "spec.model.optimizer"), optimizers);
  EXPECT_EQ(enum_at("commprofiles.commgate.io.yaml", "status.computeSteps[].optimizer"),
            optimizers);
  // wouldAction is what enforcement does: downsize, or deny when no count passes.
  EXPECT_EQ(enum_at("trainingjobs.commgate.io.yaml", "status.decision.wouldAction"),
            (std::set<std::string>{"Downsize", "Deny"}));
  EXPECT_EQ(enum_at("trainingjobs.commgate.io.yaml", "status.phase"),
            (std::set<std::string>{"Gated", "Probing", "Admitted", "Downsized", "Rejected",
                                   "Running", "Succeeded", "Failed"}));
}

// ---------------------------------------------------------------------------------
// Patterns: the CRD's regular expressions accept what the parsers accept.

struct PatternCase {
  std::string text;
  bool want_schema;
  bool want_parser;
};

TEST(CrdPatterns, quantity_pattern_accepts_what_parse_quantity_accepts) {
  const Json job = load_crd("trainingjobs.commgate.io.yaml");
  const Json policy = load_crd("commpolicies.commgate.io.yaml");
  const Json& node = *schema_at(crd_schema(job), "spec.model.parameters");
  EXPECT_EQ((*schema_at(crd_schema(policy), "spec.probe.sizes.min"))["pattern"], node["pattern"]);
  EXPECT_EQ((*schema_at(crd_schema(policy), "spec.probe.sizes.max"))["pattern"], node["pattern"]);
  const std::regex re(node["pattern"].get<std::string>());
  for (const auto& [text, want] : std::vector<std::pair<std::string, bool>>{
           {"340M", true},  {"7G", true},   {"1", true},     {"1.5Gi", true},   {".5", true},
           {"5.", true},    {"+3k", true},  {"-8Ki", true},  {"7e9", true},     {"7E3", true},
           {"1E", true},    {"1e+3", true}, {"1e-3", true},  {"2m", true},      {"100n", true},
           {"3u", true},    {"8Ki", true},  {"256Mi", true}, {"7B", false},     {"7K", false},
           {"", false},     {"abc", false}, {"1e", false},   {"1e1234", false}, {"1.2.3", false},
           {"M", false},    {"1 M", false}, {"0x10", false}, {"1ki", false},    {".", false},
           {"1Mi5", false}, {"1e+", false}}) {
    EXPECT_EQ(std::regex_search(text, re), want) << "pattern on \"" << text << "\"";
    EXPECT_EQ(parse_quantity(text, nullptr).has_value(), want)
        << "parse_quantity on \"" << text << "\"";
  }
}

TEST(CrdPatterns, duration_pattern_accepts_what_the_policy_parser_accepts) {
  const Json crd = load_crd("commpolicies.commgate.io.yaml");
  const Json& node = *schema_at(crd_schema(crd), "spec.measurementTTL");
  for (const PatternCase& c :
       std::vector<PatternCase>{{"24h", true, true},
                                {"90m", true, true},
                                {"1h30m", true, true},
                                {"1.5h", true, true},
                                {"300ms", true, true},
                                {"10us", true, true},
                                {"10µs", true, true},
                                {"5ns", true, true},
                                {".5h", true, true},
                                {"1.h", true, true},
                                {"", false, false},
                                {"h", false, false},
                                {"1d", false, false},
                                {"-1h", false, false},
                                {"1h 30m", false, false},
                                {"24", false, false},
                                {"24H", false, false},
                                {"1m30", false, false},
                                {"0", false, false},
                                // A zero duration has the form of a duration; only the parser knows
                                // it is not positive (docs/api.md says so).
                                {"0s", true, false},
                                {"0h0m", true, false}}) {
    EXPECT_EQ(validate(node, c.text).empty(), c.want_schema) << "pattern on \"" << c.text << "\"";
    Json doc = kind_named("CommPolicy").minimal;
    doc["spec"]["measurementTTL"] = c.text;
    Verdict v = run_parser(kind_named("CommPolicy"), doc);
    EXPECT_EQ(v.ok(), c.want_parser) << "parser on \"" << c.text << "\"\n" << v.describe();
    if (!v.ok()) {
      EXPECT_TRUE(v.at("spec.measurementTTL")) << v.describe();
    }
  }
}

TEST(CrdPatterns, service_account_pattern_accepts_what_the_policy_parser_accepts) {
  const Json crd = load_crd("commpolicies.commgate.io.yaml");
  const Json& node = *schema_at(crd_schema(crd), "spec.exemptions.serviceAccounts[]");
  for (const PatternCase& c : std::vector<PatternCase>{{"benchmarks/nightly", true, true},
                                                       {"ns", false, false},
                                                       {"/name", false, false},
                                                       {"ns/", false, false},
                                                       {"a/b/c", false, false},
                                                       {"", false, false}}) {
    EXPECT_EQ(validate(node, c.text).empty(), c.want_schema) << "pattern on \"" << c.text << "\"";
    Json doc = kind_named("CommPolicy").minimal;
    doc["spec"]["exemptions"]["serviceAccounts"] = {c.text};
    Verdict v = run_parser(kind_named("CommPolicy"), doc);
    EXPECT_EQ(v.ok(), c.want_parser) << "parser on \"" << c.text << "\"\n" << v.describe();
  }
}

// ---------------------------------------------------------------------------------
// Rules across fields. Some are CEL rules (x-kubernetes-validations) in the CRD; the
// rest the schema cannot express and only the parser enforces. Either way the parser
// must refuse the document and name the field.

struct CrossFieldCase {
  std::string name;
  std::string kind;
  std::function<void(Json&)> change;
  std::string want_path;
  std::string cel_node;  // schema path holding the CEL rule; empty: parser only
  std::string cel_rule;  // a substring of the rule
};

void PrintTo(const CrossFieldCase& c, std::ostream* os) {
  *os << c.name;
}

class CrossField : public ::testing::TestWithParam<CrossFieldCase> {};

TEST_P(CrossField, parser_refuses_and_crd_has_the_rule_or_says_it_cannot) {
  const CrossFieldCase& c = GetParam();
  const Kind& kind = kind_named(c.kind);
  const Json crd = load_crd(kind.crd_file);
  Json doc = kind.full;
  c.change(doc);
  Verdict v = run_parser(kind, doc);
  EXPECT_FALSE(v.ok());
  EXPECT_TRUE(v.at(c.want_path)) << "want an error at " << c.want_path << ", got:\n"
                                 << v.describe();
  // The structural schema alone does not catch these.
  auto issues = validate(crd_schema(crd), doc);
  EXPECT_TRUE(issues.empty()) << testing::to_string(issues);
  if (c.cel_node.empty()) return;
  const Json* node = schema_at(crd_schema(crd), c.cel_node);
  ASSERT_NE(node, nullptr);
  bool found = false;
  for (const auto& rule : node->value("x-kubernetes-validations", Json::array())) {
    found = found || rule["rule"].get<std::string>().find(c.cel_rule) != std::string::npos;
  }
  EXPECT_TRUE(found) << c.cel_node << " has no CEL rule with " << c.cel_rule;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, CrossField,
    ::testing::Values(
        CrossFieldCase{"min_nodes_over_num_nodes", "TrainingJob",
                       [](Json& d) { d["spec"]["minNodes"] = 5; }, "spec.minNodes", "spec",
                       "self.minNodes <= self.numNodes"},
        CrossFieldCase{"torch_script_without_input_shape", "TrainingJob",
                       [](Json& d) { d["spec"]["model"].erase("inputShape"); },
                       "spec.model.inputShape", "spec.model", "has(self.inputShape)"},
        CrossFieldCase{"backoff_max_under_base", "CommPolicy",
                       [](Json& d) { d["spec"]["retryStrategy"]["backoffMaxSeconds"] = 5; },
                       "spec.retryStrategy.backoffMaxSeconds", "spec.retryStrategy",
                       "self.backoffMaxSeconds >= self.backoffBaseSeconds"},
        CrossFieldCase{
            "in_without_values", "CommPolicy",
            [](Json& d) { d["spec"]["namespaceSelector"]["matchExpressions"][0].erase("values"); },
            "spec.namespaceSelector.matchExpressions[0].values",
            "spec.namespaceSelector.matchExpressions[]", "size(self.values) > 0"},
        CrossFieldCase{"exists_with_values", "CommPolicy",
                       [](Json& d) {
                         d["spec"]["namespaceSelector"]["matchExpressions"][0]["operator"] =
                             "Exists";
                       },
                       "spec.namespaceSelector.matchExpressions[0].values",
                       "spec.namespaceSelector.matchExpressions[]", "size(self.values) == 0"},
        CrossFieldCase{"toleration_exists_with_value", "TrainingJob",
                       [](Json& d) { d["spec"]["tolerations"][0]["operator"] = "Exists"; },
                       "spec.tolerations[0].value", "spec.tolerations[]",
                       "self.operator != 'Exists' || !has(self.value) || self.value == ''"},
        CrossFieldCase{"toleration_seconds_needs_no_execute", "TrainingJob",
                       [](Json& d) { d["spec"]["tolerations"][0]["effect"] = "NoSchedule"; },
                       "spec.tolerations[0].tolerationSeconds", "spec.tolerations[]",
                       "!has(self.tolerationSeconds) || (has(self.effect) && self.effect == "
                       "'NoExecute')"},
        CrossFieldCase{"toleration_without_key_must_be_exists", "TrainingJob",
                       [](Json& d) { d["spec"]["tolerations"][0].erase("key"); },
                       "spec.tolerations[0].operator", "spec.tolerations[]",
                       "(has(self.key) && self.key != '') || (has(self.operator) && self.operator "
                       "== 'Exists')"},
        // Parser only: the values of quantity strings, the order of two quantities and a
        // zero duration are beyond the schema (docs/api.md lists them).
        CrossFieldCase{"parameters_not_whole", "TrainingJob",
                       [](Json& d) { d["spec"]["model"]["parameters"] = "1.5"; },
                       "spec.model.parameters", "", ""},
        CrossFieldCase{"parameters_string_over_1e15", "TrainingJob",
                       [](Json& d) { d["spec"]["model"]["parameters"] = "2P"; },
                       "spec.model.parameters", "", ""},
        CrossFieldCase{"parameters_string_zero", "TrainingJob",
                       [](Json& d) { d["spec"]["model"]["parameters"] = "0"; },
                       "spec.model.parameters", "", ""},
        CrossFieldCase{"sizes_min_over_max", "CommPolicy",
                       [](Json& d) {
                         d["spec"]["probe"]["sizes"] = {{"min", "1Gi"}, {"max", "64Mi"}};
                       },
                       "spec.probe.sizes.min", "", ""},
        CrossFieldCase{"sizes_string_under_4_bytes", "CommPolicy",
                       [](Json& d) { d["spec"]["probe"]["sizes"]["min"] = "2"; },
                       "spec.probe.sizes.min", "", ""},
        CrossFieldCase{"measurement_ttl_zero", "CommPolicy",
                       [](Json& d) { d["spec"]["measurementTTL"] = "0s"; }, "spec.measurementTTL",
                       "", ""},
        // A time relative to the reader's clock is beyond any schema (CEL has no now()).
        CrossFieldCase{"link_measured_in_the_future", "CommProfile",
                       [](Json& d) { d["status"]["link"]["measuredAt"] = "2099-01-01T00:00:00Z"; },
                       "status.link.measuredAt", "", ""},
        CrossFieldCase{
            "compute_measured_in_the_future", "CommProfile",
            [](Json& d) { d["status"]["computeSteps"][0]["measuredAt"] = "2026-11-30T12:06:00Z"; },
            "status.computeSteps[0].measuredAt", "", ""}),
    [](const ::testing::TestParamInfo<CrossFieldCase>& p) { return p.param.name; });

// ---------------------------------------------------------------------------------
// The examples fit the CRDs, and the invalid ones are refused by both at the same fields.

const Kind* kind_of(const Json& doc) {
  for (const auto& k : kinds()) {
    if (doc.value("kind", "") == k.name) return &k;
  }
  return nullptr;
}

std::vector<std::filesystem::path> example_files(const std::string& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e :
       std::filesystem::directory_iterator(std::filesystem::path(COMMGATE_SOURCE_DIR) / dir)) {
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CrdExamples, every_example_job_and_policy_fits_its_crd) {
  int checked = 0;
  for (const char* dir : {"examples/jobs", "examples/policies"}) {
    for (const auto& file : example_files(dir)) {
      for (const Json& doc : parse_manifests(read_file(file))) {
        const Kind* kind = kind_of(doc);
        ASSERT_NE(kind, nullptr) << file << ": no CRD for kind " << doc.value("kind", "");
        auto issues = validate(crd_schema(load_crd(kind->crd_file)), doc);
        EXPECT_TRUE(issues.empty()) << file << ":\n" << testing::to_string(issues);
        Verdict v = run_parser(*kind, doc);
        EXPECT_TRUE(v.ok()) << file << ":\n" << v.describe();
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 6);
}

TEST(CrdExamples, invalid_examples_are_refused_by_both_at_the_same_fields) {
  for (const auto& file : example_files("examples/invalid")) {
    for (const Json& doc : parse_manifests(read_file(file))) {
      const Kind* kind = kind_of(doc);
      ASSERT_NE(kind, nullptr) << file;
      Verdict v = run_parser(*kind, doc);
      ASSERT_FALSE(v.ok()) << file;
      auto issues = validate(crd_schema(load_crd(kind->crd_file)), doc);
      for (const auto& e : v.errors) {
        if (starts_with_path(e.path, "metadata")) continue;  // names are the apiserver's to check
        EXPECT_TRUE(schema_names(issues, e.path))
            << file << ": the parser refuses " << e.to_string() << " but the CRD does not:\n"
            << testing::to_string(issues);
      }
    }
  }
}

// ---------------------------------------------------------------------------------
// What commgate writes fits the CRDs: status.decision for every kind of decision, a
// CommProfile after a probe, and a CommPolicy as to_json prints it.

TEST(CrdOutputs, every_decision_fits_status_decision) {
  const Json crd = load_crd("trainingjobs.commgate.io.yaml");
  const Json& status_schema = *schema_at(crd_schema(crd), "status");
  const Measurement m = a_measurement().busbw_gbps(0.5).latency_us(200).compute_ms(300).build();
  struct Scenario {
    std::string name;
    TrainingJob job;
    CommPolicy policy;
    const Measurement* measurement;
    Requester who;
  };
  TrainingJob invalid = a_training_job().nodes(2).build();
  invalid.spec.min_nodes = 5;
  // Calibrated by the probe's DDP step: a measured row, rawPredictions and correction.
  Measurement calibrated = m;
  calibrated.measured_ddp_step =
      DdpStepResult{25 * 1048576.0, 1048576.0, 5, 450, 300, 150, 1 / 3.0};
  calibrated.measured_ddp_nodes = 2;
  const std::vector<Scenario> scenarios = {
      {"calibrated",
       a_training_job().nodes(4).params(25e6).build(),
       a_policy().max_comm_share(0.9).build(),
       &calibrated,
       {}},
      {"extrapolation_too_far",
       a_training_job().nodes(40).params(25e6).build(),
       a_policy().build(),
       &m,
       {}},
      {"admit",
       a_training_job().nodes(4).params(25e6).build(),
       a_policy().max_comm_share(0.4).build(),
       &m,
       {}},
      {"downsize", a_training_job().nodes(4).params(25e6).build(), a_policy().build(), &m, {}},
      {"no_count",
       a_training_job().nodes(4).min_nodes(3).params(25e6).build(),
       a_policy().build(),
       &m,
       {}},
      {"deny",
       a_training_job().nodes(4).params(25e6).build(),
       a_policy().action(EnforcementAction::kDeny).build(),
       &m,
       {}},
      {"warn",
       a_training_job().nodes(4).params(25e6).build(),
       a_policy().action(EnforcementAction::kWarn).build(),
       &m,
       {}},
      {"dryrun",
       a_training_job().nodes(4).params(25e6).build(),
       a_policy().action(EnforcementAction::kDryRun).build(),
       &m,
       {}},
      {"gate", a_training_job().nodes(4).build(), a_policy().build(), nullptr, {}},
      {"exempt",
       a_training_job().nodes(4).build(),
       a_policy().exempt_user("alice").build(),
       nullptr,
       {"alice", {}}},
      {"single_node", a_training_job().nodes(1).build(), a_policy().build(), nullptr, {}},
      {"invalid_spec", invalid, a_policy().build(), nullptr, {}},
  };
  std::set<std::string> actions;
  for (const auto& s : scenarios) {
    Decision d = decide({&s.job, &s.policy, s.measurement, s.who, testing::test_now()});
    actions.insert(to_string(d.action));
    Json status = {{"phase", "Admitted"},
                   {"admittedNodes", d.admitted_nodes},
                   {"decision", decision_to_json(d)}};
    auto issues = validate(status_schema, status, "status");
    EXPECT_TRUE(issues.empty()) << s.name << ":\n" << testing::to_string(issues) << status.dump(2);
  }
  EXPECT_EQ(actions, enum_at("trainingjobs.commgate.io.yaml", "status.decision.action"));
}

TEST(CrdOutputs, a_profile_after_a_probe_fits_and_round_trips) {
  ProbeResult r;
  r.start_time = testing::test_now();
  r.nodes = 2;
  r.backend = "gloo";
  r.transport = "socket";
  r.interface_name = "eth0";
  r.device = "cpu";
  r.allreduce = {{8192, 300, 0.027, 0.027, true}, {268435456, 2.3e6, 0.117, 0.117, true}};
  r.fit.ranks = 2;
  r.fit.latency_s = 210e-6;
  r.fit.busbw_bytes_per_s = 0.118e9;
  r.fit.poor = true;
  r.fit.note = "residual 31% at 8 KiB";
  r.fit.max_relative_residual = 0.31;
  r.compute = ComputeResult{.parameters = 25e6,
                            .gradient_dtype = "fp32",
                            .model = "synthetic-mlp",
                            .precision = "fp32",
                            .batch_size = 32,
                            .optimizer = "sgd",
                            .iterations = 20,
                            .step_time_ms = 300,
                            .forward_ms = 90,
                            .backward_ms = 180,
                            .optimizer_ms = 30,
                            .p10_ms = 290,
                            .p90_ms = 310};
  CommProfile profile;
  profile.node_selector = {{"commgate.io/pool", "cpu-1gbe"}};
  profile.metadata.name = pool_name(profile.node_selector);
  record_probe_result(profile, r);
  const Json doc = to_json(profile);
  auto issues = validate(crd_schema(load_crd("commprofiles.commgate.io.yaml")), doc);
  EXPECT_TRUE(issues.empty()) << testing::to_string(issues) << doc.dump(2);
  EXPECT_EQ(to_json(parse_comm_profile(doc, testing::test_now())), doc);
}

TEST(CrdOutputs, a_policy_as_to_json_prints_it_fits_and_parses_back) {
  const Kind& k = kind_named("CommPolicy");
  const CommPolicy p = parse_comm_policy(k.full);
  const Json doc = to_json(p);
  auto issues = validate(crd_schema(load_crd(k.crd_file)), doc);
  EXPECT_TRUE(issues.empty()) << testing::to_string(issues) << doc.dump(2);
  const CommPolicy back = parse_comm_policy(doc);
  Json a = policy_fingerprint(p), b = policy_fingerprint(back);
  // to_json prints sizes with 4 significant digits (128Mi -> "134.2M").
  EXPECT_NEAR(b["spec"]["probe"]["sizes"]["max"].get<double>(), p.spec.probe.max_bytes,
              1e-3 * p.spec.probe.max_bytes);
  a["spec"]["probe"].erase("sizes");
  b["spec"]["probe"].erase("sizes");
  EXPECT_EQ(a, b);
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
