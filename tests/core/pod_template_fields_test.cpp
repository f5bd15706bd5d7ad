// core/pod_template_fields.h: its tables match the Kubernetes OpenAPI schemas they were
// generated from, and a TrainingJob's pod template is held to them.
#include "core/pod_template_fields.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <set>

#include "core/training_job.h"
#include "core/yaml_json.h"

namespace commgate {
namespace COMMGATE_TEST_UNIT {

using Json = nlohmann::json;

std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return "";
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return n < 0 ? "" : out;
}

// A newer Kubernetes adds fields: when the fixture changes, this fails and prints the
// table to paste into core/pod_template_fields.h.
TEST(PodTemplateFields, tables_match_the_kubernetes_openapi_schemas) {
  const std::string path = std::string(COMMGATE_K8S_OPENAPI_DIR) + "/api_v1.json.gz";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no OpenAPI fixture at " << path;
  const Json doc = Json::parse(gunzip(path));
  const Json& schemas = doc.at("components").at("schemas");
  for (const KubeSchemaFields& table : kPodTemplateSchemaFields) {
    ASSERT_TRUE(schemas.contains(table.schema)) << table.schema;
    std::set<std::string> want;
    for (const auto& [name, _] : schemas.at(table.schema).at("properties").items())
      want.insert(name);
    const std::set<std::string> have(table.fields.begin(), table.fields.end());
    EXPECT_EQ(have.size(), table.fields.size()) << table.schema << ": a name twice";
    std::string listed;
    for (const auto& name : want) listed += (listed.empty() ? "\"" : ", \"") + name + "\"";
    EXPECT_EQ(have, want) << table.schema << " in " << path << " has " << want.size()
                          << " fields: {" << listed << "}";
  }
}

// examples/jobs/resnet50-5m.yaml's shape with `extra` added at one level of the template.
TrainingJob parse_with(const std::string& container_extra, const std::string& pod_extra = "") {
  const auto docs = parse_manifests(R"(
apiVersion: commgate.io/v1alpha1
kind: TrainingJob
metadata: {name: bert, namespace: nlp}
spec:
  numNodes: 2
  model: {parameters: 5M}
  template:
    metadata: {labels: {app: bert}}
    spec:
      restartPolicy: Never
)" + pod_extra + R"(
      containers:
        - name: trainer
          image: registry.example/train:1
          resources: {limits: {cpu: "1"}}
          env: [{name: A, value: "1"}]
)" + container_extra);
  return parse_training_job(docs.at(0));
}

std::string errors_of(const std::string& container_extra, const std::string& pod_extra = "") {
  try {
    parse_with(container_extra, pod_extra);
    return "";
  } catch (const ValidationError& e) {
    return e.errors().to_string();
  }
}

TEST(PodTemplateFields, a_known_template_parses) {
  EXPECT_EQ(errors_of("          command: [torchrun, train.py]\n"
                      "          ports: [{containerPort: 29500, name: c10d}]\n"
                      "          volumeMounts: [{name: data, mountPath: /data}]\n",
                      "      volumes: [{name: data, emptyDir: {}}]\n"
                      "      initContainers: [{name: fetch, image: busybox, command: [sh]}]\n"),
            "");
}

// The user trial: `comand:` was stored, dropped from the Job, and the job ran without it.
TEST(PodTemplateFields, a_misspelt_container_field_is_refused_with_a_hint) {
  EXPECT_EQ(errors_of("          comand: [torchrun, train.py]\n"),
            "spec.template.spec.containers[0].comand: unknown field (did you mean \"command\"?)");
}

TEST(PodTemplateFields, every_checked_level_names_its_path) {
  const std::string got = errors_of(
      "          resources: {limit: {cpu: \"1\"}}\n"
      "          env: [{name: A, valu: \"1\"}]\n"
      "          ports: [{containerport: 1}]\n"
      "          volumeMounts: [{name: d, mountpath: /d}]\n"
      "          zzzzzzzzzz: 1\n",
      "      nodeSelektor: {a: b}\n"
      "      initContainers: [{name: i, image: i, imagePullPolice: Always}]\n");
  for (const char* want : {
           "spec.template.spec.nodeSelektor: unknown field (did you mean \"nodeSelector\"?)",
           "spec.template.spec.initContainers[0].imagePullPolice: unknown field (did you mean "
           "\"imagePullPolicy\"?)",
           "spec.template.spec.containers[0].resources.limit: unknown field (did you mean "
           "\"limits\"?)",
           "spec.template.spec.containers[0].env[0].valu: unknown field (did you mean \"value\"?)",
           "spec.template.spec.containers[0].ports[0].containerport: unknown field (did you mean "
           "\"containerPort\"?)",
           "spec.template.spec.containers[0].volumeMounts[0].mountpath: unknown field (did you "
           "mean \"mountPath\"?)",
           "spec.template.spec.containers[0].zzzzzzzzzz: unknown field\n",
       }) {
    EXPECT_NE((got + "\n").find(want), std::string::npos) << want << "\n" << got;
  }
}

TEST(PodTemplateFields, template_and_its_metadata_are_checked) {
  FieldErrors errors;
  reject_unknown_pod_template_fields(
      {{"metadata", {{"label", {{"a", "b"}}}}}, {"spec", Json::object()}, {"specs", 1}},
      "spec.template", errors);
  EXPECT_EQ(errors.to_string(),
            "spec.template.specs: unknown field (did you mean \"spec\"?)\n"
            "spec.template.metadata.label: unknown field (did you mean \"labels\"?)");
}

}  // namespace COMMGATE_TEST_UNIT
}  // namespace commgate
