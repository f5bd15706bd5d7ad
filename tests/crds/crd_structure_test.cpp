// The CRDs in crds/ as the apiserver will read them: names, scope, the one served and
// stored version, subresources, printer columns that name real schema fields, and the
// structural-schema rules (a type everywhere, int-or-string spelled exactly, defaults
// that validate, list-map keys that are required).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/crds/schema_check.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using testing::crd_schema;
using testing::for_each_property;
using testing::Json;
using testing::load_crd;
using testing::schema_at;
using testing::validate;

struct CrdCase {
  std::string file;
  std::string kind;
  std::string plural;
  std::string singular;
  std::string short_name;
  std::string scope;
  std::vector<std::string> columns;
};

void PrintTo(const CrdCase& c, std::ostream* os) {
  *os << c.kind;
}

const std::vector<CrdCase> kCrds = {
    {"trainingjobs.commgate.io.yaml",
     "TrainingJob",
     "trainingjobs",
     "trainingjob",
     "tj",
     "Namespaced",
     {"Nodes", "Requested", "CommShare", "Decision", "Phase", "Reason", "Failure", "Age"}},
    {"commpolicies.commgate.io.yaml",
     "CommPolicy",
     "commpolicies",
     "commpolicy",
     "cpol",
     "Cluster",
     {"MaxCommShare", "Action", "OnMissing", "OnInsufficientNodes", "TTL", "Governs", "Age"}},
    {"commprofiles.commgate.io.yaml",
     "CommProfile",
     "commprofiles",
     "commprofile",
     "cprof",
     "Cluster",
     {"BusBW", "Nodes", "Backend", "Transport", "Probe", "LastProbe", "Age"}},
};

class CrdStructure : public ::testing::TestWithParam<CrdCase> {
 protected:
  Json crd = load_crd(GetParam().file);
  const Json& version() const { return crd["spec"]["versions"][0]; }
  const Json& schema() const { return crd_schema(crd); }
};

TEST_P(CrdStructure, names_group_scope_and_one_stored_version) {
  const CrdCase& c = GetParam();
  EXPECT_EQ(crd["apiVersion"], "apiextensions.k8s.io/v1");
  EXPECT_EQ(crd["kind"], "CustomResourceDefinition");
  EXPECT_EQ(crd["metadata"]["name"], c.plural + ".commgate.io");
  const Json& spec = crd["spec"];
  EXPECT_EQ(spec["group"], "commgate.io");
  EXPECT_EQ(spec["scope"], c.scope);
  EXPECT_EQ(spec["names"]["kind"], c.kind);
  EXPECT_EQ(spec["names"]["listKind"], c.kind + "List");
  EXPECT_EQ(spec["names"]["plural"], c.plural);
  EXPECT_EQ(spec["names"]["singular"], c.singular);
  EXPECT_EQ(spec["names"]["shortNames"], Json::array({c.short_name}));
  EXPECT_EQ(spec["names"]["categories"], Json::array({"commgate"}));
  ASSERT_EQ(spec["versions"].size(), 1u);
  EXPECT_EQ(version()["name"], "v1alpha1");
  EXPECT_EQ(version()["served"], true);
  EXPECT_EQ(version()["storage"], true);
  EXPECT_EQ(version()["subresources"]["status"], Json::object());
}

TEST_P(CrdStructure, schema_is_structural_and_every_field_is_described) {
  EXPECT_EQ(schema()["type"], "object");
  EXPECT_EQ(schema()["properties"]["metadata"], Json::parse(R"({"type": "object"})"))
      << "metadata may only be {type: object} in a CRD schema";
  std::vector<std::string> problems;
  const std::set<std::string> kValueOnly = {"anyOf", "allOf", "oneOf", "not"};
  for_each_property(schema(), "", [&](const std::string& path, const Json& node) {
    const bool int_or_string = node.value("x-kubernetes-int-or-string", false);
    const bool preserve = node.value("x-kubernetes-preserve-unknown-fields", false);
    if (int_or_string) {
      if (node.contains("type")) problems.push_back(path + ": int-or-string must not set type");
      if (node.value("anyOf", Json()) != Json::parse(R"([{"type":"integer"},{"type":"string"}])")) {
        problems.push_back(path + ": int-or-string needs anyOf [integer, string]");
      }
    } else {
      if (!node.contains("type") && !preserve) problems.push_back(path + ": no type");
      for (const auto& k : kValueOnly) {
        if (node.contains(k)) problems.push_back(path + ": " + k + " outside int-or-string");
      }
    }
    const bool is_item = path.back() == ']' || path.back() == '}';
    if (!is_item && path != "metadata" && node.value("description", "").empty()) {
      problems.push_back(path + ": no description (kubectl explain shows it)");
    }
    if (node.contains("default")) {
      auto issues = validate(node, node["default"], path);
      if (!issues.empty())
        problems.push_back(path + ": default does not validate:\n" + testing::to_string(issues));
    }
    if (node.value("x-kubernetes-list-type", "") == "map") {
      for (const auto& key : node["x-kubernetes-list-map-keys"]) {
        bool required = false;
        for (const auto& r : node["items"].value("required", Json::array()))
          required = required || r == key;
        if (!required)
          problems.push_back(path + ": list-map key " + key.dump() + " must be required");
      }
    }
    for (const auto& rule : node.value("x-kubernetes-validations", Json::array())) {
      if (rule.value("rule", "").empty() || rule.value("message", "").empty()) {
        problems.push_back(path + ": a CEL rule needs rule and message");
      }
    }
  });
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
}

TEST_P(CrdStructure, printer_columns_name_schema_fields_of_their_type) {
  std::vector<std::string> names;
  for (const auto& col : version()["additionalPrinterColumns"]) {
    const std::string name = col["name"], type = col["type"], path = col["jsonPath"];
    names.push_back(name);
    if (path == ".metadata.creationTimestamp") {
      EXPECT_EQ(type, "date") << name;
      continue;
    }
    ASSERT_EQ(path.front(), '.') << name;
    if (path.rfind(".metadata.annotations.", 0) == 0) {
      // An annotation commgate writes (core/annotations.h): a string in any object.
      EXPECT_EQ(type, "string") << name;
      EXPECT_NE(path.find("commgate\\.io/"), std::string::npos) << name << ": " << path;
      continue;
    }
    // A filter ([?(@.type=="Probing")]) picks an element of the list: the items' schema.
    std::string at = path.substr(1);
    for (auto open = at.find("[?("); open != std::string::npos; open = at.find("[?(")) {
      const auto close = at.find(")]", open);
      ASSERT_NE(close, std::string::npos) << name << ": " << path;
      at.replace(open, close + 2 - open, "[]");
    }
    const Json* field = schema_at(schema(), at);
    ASSERT_NE(field, nullptr) << name << ": " << path << " is not in the schema";
    if (type == "date") {
      EXPECT_EQ(field->value("format", ""), "date-time") << name;
    } else {
      EXPECT_EQ(field->value("type", ""), type) << name;
    }
    EXPECT_FALSE(col.value("description", "").empty()) << name;
  }
  EXPECT_EQ(names, GetParam().columns);
}

TEST_P(CrdStructure, conditions_follow_metav1_condition) {
  const Json* conditions = schema_at(schema(), "status.conditions");
  ASSERT_NE(conditions, nullptr);
  EXPECT_EQ((*conditions)["x-kubernetes-list-type"], "map");
  EXPECT_EQ((*conditions)["x-kubernetes-list-map-keys"], Json::array({"type"}));
  const Json& item = (*conditions)["items"];
  EXPECT_EQ(item["required"],
            Json::array({"type", "status", "lastTransitionTime", "reason", "message"}));
  EXPECT_EQ(item["properties"]["status"]["enum"], Json::array({"True", "False", "Unknown"}));
  Json good = {{"type", "Measured"},
               {"status", "True"},
               {"observedGeneration", 3},
               {"lastTransitionTime", "2026-11-30T12:00:00Z"},
               {"reason", "OverPolicyDownsized"},
               {"message", "Downsized from 4 to 2 nodes"}};
  EXPECT_TRUE(validate(item, good).empty()) << testing::to_string(validate(item, good));
  Json bad = good;
  bad["reason"] = "over policy";
  EXPECT_FALSE(validate(item, bad).empty());
}

INSTANTIATE_TEST_SUITE_P(Crds, CrdStructure, ::testing::ValuesIn(kCrds),
                         [](const ::testing::TestParamInfo<CrdCase>& p) { return p.param.kind; });

TEST(TrainingJobCrd, scale_subresource_maps_num_nodes_to_admitted_nodes) {
  Json crd = load_crd("trainingjobs.commgate.io.yaml");
  const Json& scale = crd["spec"]["versions"][0]["subresources"]["scale"];
  EXPECT_EQ(scale["specReplicasPath"], ".spec.numNodes");
  EXPECT_EQ(scale["statusReplicasPath"], ".status.admittedNodes");
  EXPECT_FALSE(scale.contains("labelSelectorPath"))
      << "no HPA selector: DDP jobs are not autoscaled";
  const Json* spec_replicas = schema_at(crd_schema(crd), "spec.numNodes");
  const Json* status_replicas = schema_at(crd_schema(crd), "status.admittedNodes");
  ASSERT_NE(spec_replicas, nullptr);
  ASSERT_NE(status_replicas, nullptr);
  // Scale.spec.replicas and Scale.status.replicas are int32.
  EXPECT_EQ((*spec_replicas)["type"], "integer");
  EXPECT_EQ((*spec_replicas)["format"], "int32");
  EXPECT_EQ((*status_replicas)["type"], "integer");
  EXPECT_EQ((*status_replicas)["format"], "int32");
  auto required = crd_schema(crd)["properties"]["spec"]["required"];
  EXPECT_NE(std::find(required.begin(), required.end(), "numNodes"), required.end());
}

TEST(TrainingJobCrd, template_keeps_the_pod_template_verbatim) {
  Json crd = load_crd("trainingjobs.commgate.io.yaml");
  for (const char* path : {"spec.template", "spec.template.metadata", "spec.template.spec",
                           "spec.template.spec.containers[]"}) {
    const Json* node = schema_at(crd_schema(crd), path);
    ASSERT_NE(node, nullptr) << path;
    EXPECT_EQ((*node)["x-kubernetes-preserve-unknown-fields"], true) << path;
  }
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
