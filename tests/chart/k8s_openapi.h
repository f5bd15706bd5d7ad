// The Kubernetes API's own OpenAPI v3 schemas (kube-apiserver 1.32, as kubectl-validate
// ships them: ../shared/fixtures/k8s/openapi-v3-1.32/), turned into the structural
// schemas tests/crds/schema_check.h validates: every $ref and one-element allOf inlined,
// IntOrString marked x-kubernetes-int-or-string, schema-less objects (FieldsV1,
// RawExtension) open. A type that contains itself (JSONSchemaProps) is open below its
// first occurrence, so CRDs are checked to that depth and the schema_check tests cover
// the rest.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace commgate::testing {

class KubeOpenApi {
 public:
  // Loads every *.json.gz in `dir`. Throws when the directory holds none.
  explicit KubeOpenApi(const std::string& dir);

  // The expanded schema of a kind ("apps/v1", "Deployment"), or nullopt when no loaded
  // document defines it.
  std::optional<nlohmann::json> schema_for(const std::string& api_version,
                                           const std::string& kind) const;
  // The expanded schema of a component by name ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").
  nlohmann::json component(const std::string& name) const;

 private:
  nlohmann::json expand(const nlohmann::json& schema, std::map<std::string, int>& stack) const;

  std::map<std::string, nlohmann::json> components_;
  std::map<std::string, std::string> by_gvk_;  // "apps/v1/Deployment" -> component name
};

// The directory of the fixtures, from COMMGATE_K8S_OPENAPI_DIR.
std::string kube_openapi_dir();

}  // namespace commgate::testing
