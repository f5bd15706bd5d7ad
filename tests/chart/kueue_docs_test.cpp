// docs/kueue.md as a new admin and a researcher would use it (issue #23): every object in
// its YAML blocks is valid against the upstream CRDs it names (Kueue v0.19.2, Trainer
// v2.3.0, training-operator v1.9.4, JobSet v0.12.0: ../shared/fixtures/ecosystem/), as the
// sim's API server applies a CRD (sim/crd_schema.h: value validations, CEL rules, and no
// field it would prune), its
// AdmissionChecks are the ones the operator serves, its ClusterQueue lists them, its jobs'
// annotations parse as the operator parses them and name its LocalQueue, and the error it
// quotes is the one the operator gives.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/yaml_json.h"
#include "operator/kueue_admission_check.h"
#include "operator/kueue_check_state.h"
#include "operator/kueue_model_annotations.h"
#include "sim/crd_schema.h"
#include "tests/chart/chart_render.h"

namespace commgate::testing {
namespace COMMGATE_TEST_UNIT {

using nlohmann::json;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string kueue_doc() {
  return read_text(source_path("docs/kueue.md"));
}

// The objects of every ```yaml block, in order.
std::vector<json> doc_objects(const std::string& doc) {
  std::vector<json> out;
  const std::string open = "```yaml\n";
  for (size_t at = doc.find(open); at != std::string::npos; at = doc.find(open, at)) {
    at += open.size();
    const size_t end = doc.find("```", at);
    for (auto& o : parse_manifests(doc.substr(at, end - at))) out.push_back(std::move(o));
    at = end;
  }
  return out;
}

// The CRD of each kind the page shows: upstream's at pinned tags (beside the repository),
// and commgate's own.
const std::map<std::string, std::string> kCrdOf = {
    {"CommPolicy", "crds/commpolicies.commgate.io.yaml"},
    {"AdmissionCheck",
     "../shared/fixtures/ecosystem/kueue-v0.19.2/kueue.x-k8s.io_admissionchecks.yaml"},
    {"ClusterQueue",
     "../shared/fixtures/ecosystem/kueue-v0.19.2/kueue.x-k8s.io_clusterqueues.yaml"},
    {"LocalQueue", "../shared/fixtures/ecosystem/kueue-v0.19.2/kueue.x-k8s.io_localqueues.yaml"},
    {"ResourceFlavor",
     "../shared/fixtures/ecosystem/kueue-v0.19.2/kueue.x-k8s.io_resourceflavors.yaml"},
    {"PyTorchJob",
     "../shared/fixtures/ecosystem/training-operator-v1.9.4/kubeflow.org_pytorchjobs.yaml"},
    {"TrainJob", "../shared/fixtures/ecosystem/trainer-v2.3.0/trainer.kubeflow.org_trainjobs.yaml"},
    {"JobSet", "../shared/fixtures/ecosystem/jobset-v0.12.0/jobset.x-k8s.io_jobsets.yaml"},
};

// The openAPIV3Schema of `crd` at the apiVersion `api_version` (group/version), or null
// when the CRD does not serve it.
const json* served_schema(const json& crd, const std::string& api_version) {
  const std::string group = crd["spec"]["group"];
  for (const json& v : crd["spec"]["versions"])
    if (group + "/" + v["name"].get<std::string>() == api_version && v.value("served", false))
      return &v["schema"]["openAPIV3Schema"];
  return nullptr;
}

TEST(KueueDocs, every_object_is_valid_against_the_upstream_crds) {
  const auto objects = doc_objects(kueue_doc());
  std::map<std::string, int> kinds;
  for (const json& o : objects) {
    const std::string kind = o.value("kind", "");
    SCOPED_TRACE(kind + "/" + o["metadata"].value("name", "?"));
    ++kinds[kind];
    const auto crd_file = kCrdOf.find(kind);
    ASSERT_NE(crd_file, kCrdOf.end()) << "no upstream CRD for this kind here";
    const json crd =
        parse_manifests(read_text(std::string(COMMGATE_SOURCE_DIR) + "/" + crd_file->second)).at(0);
    const json* schema = served_schema(crd, o.value("apiVersion", ""));
    ASSERT_NE(schema, nullptr) << o.value("apiVersion", "") << " is not served";
    for (const auto& e : sim::validate(*schema, o))
      ADD_FAILURE() << e.field << ": " << e.message << " (" << e.reason << ")";
    EXPECT_EQ(sim::unknown_fields(*schema, o), std::vector<std::string>{})
        << "fields the API server would drop";
    if (crd["spec"]["group"] == "kueue.x-k8s.io") {
      EXPECT_EQ(o["apiVersion"], "kueue.x-k8s.io/v1beta2") << "the API commgate reads";
    }
  }
  EXPECT_EQ(kinds, (std::map<std::string, int>{{"AdmissionCheck", 2},
                                               {"CommPolicy", 1},
                                               {"ClusterQueue", 1},
                                               {"LocalQueue", 1},
                                               {"ResourceFlavor", 1},
                                               {"PyTorchJob", 2},
                                               {"TrainJob", 1}}));
}

TEST(KueueDocs, the_checks_are_commgates_and_the_queue_and_jobs_use_them) {
  const auto objects = doc_objects(kueue_doc());
  std::set<std::string> checks, flavors, local_queues;
  for (const json& o : objects) {
    if (o["kind"] == "AdmissionCheck") {
      const auto check = op::kueue::read_admission_check(o);
      EXPECT_TRUE(check.is_ours()) << check.controller_name;
      EXPECT_EQ(check.controller_name, op::kueue::kControllerName);
      if (check.parameters) {
        EXPECT_EQ(check.parameters->api_group, op::kueue::kParametersGroup);
        EXPECT_EQ(check.parameters->kind, op::kueue::kParametersKind);
      }
      checks.insert(check.metadata.name);
    }
    if (o["kind"] == "ResourceFlavor") flavors.insert(o["metadata"]["name"].get<std::string>());
    if (o["kind"] == "LocalQueue") local_queues.insert(o["metadata"]["name"].get<std::string>());
  }
  int queues = 0, jobs = 0;
  for (const json& o : objects) {
    if (o["kind"] == "ClusterQueue") {
      ++queues;
      for (const json& rule : o["spec"]["admissionChecksStrategy"]["admissionChecks"]) {
        EXPECT_TRUE(checks.contains(rule["name"].get<std::string>())) << rule.dump();
        for (const json& f : rule.value("onFlavors", json::array()))
          EXPECT_TRUE(flavors.contains(f.get<std::string>())) << f;
      }
    }
    if (o["kind"] == "PyTorchJob" || o["kind"] == "TrainJob") {
      ++jobs;
      SCOPED_TRACE(o["kind"].get<std::string>());
      EXPECT_TRUE(
          local_queues.contains(o["metadata"]["labels"].value("kueue.x-k8s.io/queue-name", "")));
      const auto model = op::kueue::model_from_annotations(
          o["metadata"]["annotations"].get<std::map<std::string, std::string>>());
      EXPECT_EQ(model.kind, op::kueue::ModelFromAnnotations::Kind::kModel)
          << model.errors.to_string();
    }
  }
  EXPECT_EQ(queues, 1);
  EXPECT_EQ(jobs, 3);  // the PyTorchJob and TrainJob examples, and the sim's tiny PyTorchJob
}

// The page quotes the check's message for a misspelt optimizer: the operator's own words.
TEST(KueueDocs, the_quoted_annotation_error_is_the_operators) {
  const std::string doc = kueue_doc();
  const std::string prefix = "commgate cannot check this workload: ";
  const size_t at = doc.find("\n" + prefix);
  ASSERT_NE(at, std::string::npos) << "docs/kueue.md lost its example message";
  const std::string quoted =
      doc.substr(at + 1 + prefix.size(), doc.find('\n', at + 1) - at - 1 - prefix.size());
  const auto model = op::kueue::model_from_annotations(
      {{"commgate.io/parameters", "350M"}, {"commgate.io/optimizer", "AdamW"}});
  ASSERT_EQ(model.errors.all().size(), 1u) << model.errors.to_string();
  EXPECT_EQ(quoted, model.errors.all()[0].to_string());
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate::testing
