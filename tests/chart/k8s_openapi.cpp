#include "tests/chart/k8s_openapi.h"

#include <zlib.h>

#include <filesystem>
#include <stdexcept>

namespace commgate::testing {
namespace {

using nlohmann::json;

constexpr const char* kRefPrefix = "#/components/schemas/";

std::string gunzip_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  const bool failed = n < 0;
  gzclose(f);
  if (failed) throw std::runtime_error("cannot decompress " + path);
  return out;
}

std::string gvk_key(const std::string& group, const std::string& version, const std::string& kind) {
  return (group.empty() ? version : group + "/" + version) + "/" + kind;
}

}  // namespace

std::string kube_openapi_dir() {
  return COMMGATE_K8S_OPENAPI_DIR;
}

KubeOpenApi::KubeOpenApi(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) throw std::runtime_error("no directory " + dir);
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string path = entry.path().string();
    if (path.size() < 8 || path.substr(path.size() - 8) != ".json.gz") continue;
    const json doc = json::parse(gunzip_file(path));
    for (const auto& [name, schema] : doc.at("components").at("schemas").items()) {
      components_.emplace(name, schema);
      if (!schema.contains("x-kubernetes-group-version-kind")) continue;
      for (const auto& gvk : schema["x-kubernetes-group-version-kind"])
        by_gvk_.emplace(
            gvk_key(gvk.value("group", ""), gvk.value("version", ""), gvk.value("kind", "")), name);
    }
  }
  if (components_.empty()) throw std::runtime_error("no *.json.gz schemas in " + dir);
}

std::optional<json> KubeOpenApi::schema_for(const std::string& api_version,
                                            const std::string& kind) const {
  auto it = by_gvk_.find(api_version + "/" + kind);
  if (it == by_gvk_.end()) return std::nullopt;
  return component(it->second);
}

json KubeOpenApi::component(const std::string& name) const {
  std::map<std::string, int> stack;
  return expand(json{{"$ref", kRefPrefix + name}}, stack);
}

json KubeOpenApi::expand(const json& schema, std::map<std::string, int>& stack) const {
  if (!schema.is_object()) return schema;
  json out = json::object();
  // {"allOf": [{"$ref": X}], "default": ...} is how v3 writes a field of type X.
  if (schema.contains("$ref") ||
      (schema.contains("allOf") && schema["allOf"].is_array() && schema["allOf"].size() == 1)) {
    const json& ref_holder = schema.contains("$ref") ? schema : schema["allOf"][0];
    const std::string ref = ref_holder.value("$ref", "");
    if (ref.rfind(kRefPrefix, 0) != 0) throw std::runtime_error("unsupported $ref " + ref);
    const std::string name = ref.substr(std::string(kRefPrefix).size());
    auto target = components_.find(name);
    if (target == components_.end()) throw std::runtime_error("unknown schema " + name);
    if (stack[name] > 0) return json{{"x-kubernetes-preserve-unknown-fields", true}};
    ++stack[name];
    out = expand(target->second, stack);
    --stack[name];
    return out;
  }
  for (const auto& [key, value] : schema.items()) {
    if (key == "description" || key == "default" || key == "x-kubernetes-group-version-kind")
      continue;
    if (key == "properties") {
      out[key] = json::object();
      for (const auto& [name, child] : value.items()) out[key][name] = expand(child, stack);
    } else if (key == "items" || (key == "additionalProperties" && value.is_object())) {
      out[key] = expand(value, stack);
    } else {
      out[key] = value;
    }
  }
  if (schema.value("format", "") == "int-or-string") out["x-kubernetes-int-or-string"] = true;
  if (schema.value("type", "") == "object" && !schema.contains("properties") &&
      !schema.contains("additionalProperties"))
    out["x-kubernetes-preserve-unknown-fields"] = true;
  return out;
}

}  // namespace commgate::testing
